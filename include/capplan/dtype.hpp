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
    std::string_view source;      // where the layout comes from (a literal of the format table: copies do not allocate)
    // Bytes per element of a tensor saved for the backward in this format where it is scaled otherwise than the weights
    // (fp8_blockwise: 1 x 128 activation tiles against 128 x 128 weight blocks); 0: as bytes_per_element.
    double activation_bytes_per_element = 0.0;

    // Bytes per element, block-scale overhead included: (element_bits + scale_bits / block) / 8.
    constexpr double bytes_per_element() const {
        return (element_bits + (block_size > 0 ? scale_bits / block_size : 0.0)) / 8.0;
    }
    constexpr bool quantized() const { return element_bits < 16.0; }
    constexpr double saved_activation_bytes() const {
        return activation_bytes_per_element > 0.0 ? activation_bytes_per_element : bytes_per_element();
    }
};

// The entry of `by_format` (a map keyed by peak key) for `peak_key`, or for the format that runs at
// the same tensor-core rate (bf16 <-> fp16) when only that one is there; end() when neither is.
template <class Map>
typename Map::const_iterator find_by_peak(const Map& by_format, const std::string& peak_key) {
    auto it = by_format.find(peak_key);
    if (it == by_format.end() && (peak_key == "bf16" || peak_key == "fp16"))
        it = by_format.find(peak_key == "bf16" ? "fp16" : "bf16");
    return it;
}

// Vector operations per weight element to turn a weight-only format into what the GEMM runs (`compute_key`, the
// compute format's peak key), on the vector units before the 16-bit multiply. Assumed counts (not measured):
// 8-bit integers 2 (convert, scale) unless the GEMM runs int8; 4-bit formats 3 (unpack, convert or look up,
// scale) unless the GEMM takes them whole (int4 also by an int8 GEMM); wider formats 0.
inline double dequant_ops_per_weight(const number_format& w, const std::string& compute_key) {
    if (w.name == "int8") return compute_key == "int8" ? 0.0 : 2.0;
    if (w.name == "int4") return compute_key == "int8" || compute_key == "int4" ? 0.0 : 3.0;
    if (w.element_bits == 4.0) return compute_key == w.peak_key ? 0.0 : 3.0;
    return 0.0;
}

// The catalog of formats; `find_format` throws config_error naming `field` with the allowed names.
const std::vector<number_format>& number_formats();
const number_format& find_format(std::string_view name, std::string_view field = "");

}  // namespace capplan
