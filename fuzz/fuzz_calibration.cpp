// A calibration file (capplan calibrate's efficiency tables) through its reader, then a curve evaluated across sizes.
#include "capplan/spec/efficiency_table.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    return capplan::fuzz::run(data, size, [](std::string_view text) {
        const capplan::efficiency_table t = capplan::read_efficiency_table(text, "");
        for (const auto& [format, curve] : t.gemm)
            for (double w = 1.0; w < 1e16; w *= 10.0) (void)curve.at(w);
    });
}
