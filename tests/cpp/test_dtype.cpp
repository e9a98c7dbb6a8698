// dtype.hpp: bytes per element including block-scale overhead.
#include <doctest/doctest.h>

#include "capplan/dtype.hpp"
#include "capplan/error.hpp"

using namespace capplan;

TEST_CASE("bytes per element, by hand from the format definitions") {
    CHECK(find_format("fp32").bytes_per_element() == 4.0);
    CHECK(find_format("bf16").bytes_per_element() == 2.0);
    CHECK(find_format("fp16").bytes_per_element() == 2.0);
    CHECK(find_format("fp8").bytes_per_element() == 1.0);
    CHECK(find_format("int8").bytes_per_element() == 1.0);
    // int4, group 128, fp16 scale + 4-bit zero: (4 + 20/128) / 8 = 0.51953125
    CHECK(find_format("int4").bytes_per_element() == 0.51953125);
    // MXFP4: (4 + 8/32) / 8 = 0.53125 (OCP MX v1.0: 32-element blocks, E8M0 scale)
    CHECK(find_format("mxfp4").bytes_per_element() == 0.53125);
    CHECK(find_format("mxfp6").bytes_per_element() == 0.78125);  // (6 + 8 / 32) / 8
    CHECK(find_format("mxfp8").bytes_per_element() == 1.03125);  // (8 + 8 / 32) / 8
    CHECK(find_format("mxfp8").peak_key == "fp8");
    // Fine-grained FP8: weights (8 + 32 / 16384) / 8 (an fp32 scale a 128 x 128 block), activations (8 + 32 / 128) / 8.
    CHECK(find_format("fp8_blockwise").bytes_per_element() == doctest::Approx(1.000244140625));
    CHECK(find_format("fp8_blockwise").saved_activation_bytes() == 1.03125);
    CHECK(find_format("fp8").saved_activation_bytes() == 1.0);
    CHECK(find_format("fp6").peak_key == "fp6");
    // NVFP4: (4 + 8/16) / 8 = 0.5625 (16-element blocks, E4M3 scale)
    CHECK(find_format("nvfp4").bytes_per_element() == 0.5625);
}

TEST_CASE("names, aliases and errors") {
    CHECK(find_format("BF16").name == "bf16");
    CHECK(find_format("bfloat16").name == "bf16");
    CHECK(find_format("fp4").name == "mxfp4");
    CHECK(find_format("nvfp4").peak_key == "fp4");
    CHECK(find_format("int4").quantized());
    CHECK_FALSE(find_format("bf16").quantized());
    try {
        find_format("bf61", "/precision/weights");
        FAIL("expected config_error");
    } catch (const config_error& e) {
        const std::string m = e.what();
        CHECK(m.find("/precision/weights") == 0);
        CHECK(m.find("did you mean bf16") != std::string::npos);
        CHECK(m.find("int4") != std::string::npos);  // lists the allowed formats
    }
}
