// Number formats and their storage cost per element, including block-scale overhead.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace capplan {

struct number_format {
    std::string name;             // canonical name used in scenarios: "bf16", "int4", "nvfp4", ...
    double element_bits;          // bits of one stored element
    int block_size;               // elements sharing one scale (0 = no block scale)
    double scale_bits;            // bits of the per-block scale (plus zero-point where the format has one)
    std::string peak_key;         // which accelerator peak_dense_flops entry runs it ("bf16", "fp8", "fp4", ...)
    std::string source;           // where the layout comes from

    // Bytes per element, block-scale overhead included: (element_bits + scale_bits / block) / 8.
    constexpr double bytes_per_element() const {
        return (element_bits + (block_size > 0 ? scale_bits / block_size : 0.0)) / 8.0;
    }
    constexpr bool quantized() const { return element_bits < 16.0; }
};

// The catalog of formats; `find_format` throws config_error naming `field` with the allowed names.
const std::vector<number_format>& number_formats();
const number_format& find_format(std::string_view name, std::string_view field = "");

}  // namespace capplan
