// units_parse.hpp: text to quantities and back, and the errors for bad text.
#include <doctest/doctest.h>

#include "capplan/error.hpp"
#include "capplan/units_parse.hpp"

using namespace capplan;
using namespace capplan::units;

TEST_CASE("the strings of the issue parse to the right SI values") {
    CHECK(parse<data_size>("80 GB").in(B) == 80e9);
    CHECK(parse<data_size>("141 GiB").in(B) == 141.0 * 1073741824.0);
    CHECK(parse<byte_rate>("3.35 TB/s").in(B / s) == doctest::Approx(3.35e12));
    CHECK(parse<byte_rate>("400 Gb/s").in(GB / s) == doctest::Approx(50.0));  // bits / 8
    CHECK(parse<flop_rate>("989 TFLOP/s").in(FLOP / s) == doctest::Approx(989e12));
    CHECK(parse<duration>("25 us").in(s) == doctest::Approx(25e-6));
}

TEST_CASE("spellings and separators") {
    CHECK(parse<data_size>("80GB").in(GB) == 80.0);
    CHECK(parse<flop_rate>("1,979 TFLOP/s").in(TFLOP / s) == doctest::Approx(1979.0));
    CHECK(parse<flop_rate>("1979 TOPS").in(TFLOP / s) == doctest::Approx(1979.0));
    CHECK(parse<byte_rate>("819 GBps").in(GB / s) == doctest::Approx(819.0));
    CHECK(parse<byte_rate>("100 Gbps").in(GB / s) == doctest::Approx(12.5));
    CHECK(parse<byte_rate>("7000 MB/s").in(GB / s) == doctest::Approx(7.0));
    CHECK(parse<duration>("0.6 \xC2\xB5s").in(ns) == doctest::Approx(600.0));
    CHECK(parse<power>("700 W").in(W) == 700.0);
    CHECK(parse<data_size>("1.5e3 MB").in(GB) == doctest::Approx(1.5));
}

TEST_CASE("bad quantity strings are unit_errors naming the field") {
    CHECK_THROWS_AS(parse<data_size>("80 GX", "/system/accelerator/memory"), unit_error);
    try {
        parse<data_size>("80 GX", "/memory/capacity");
        FAIL("expected unit_error");
    } catch (const unit_error& e) {
        const std::string m = e.what();
        CHECK(m.find("/memory/capacity") == 0);
        CHECK(m.find("'GX'") != std::string::npos);
        CHECK(m.find("did you mean GB") != std::string::npos);
    }
    CHECK_THROWS_AS(parse<data_size>("80"), unit_error);            // no unit
    CHECK_THROWS_AS(parse<data_size>("GB"), unit_error);            // no number
    CHECK_THROWS_AS(parse<data_size>("1,5 GB"), unit_error);        // not a thousands separator
    CHECK_THROWS_AS(parse<data_size>("3.35 TB/s"), unit_error);     // a rate where a size is expected
    CHECK_THROWS_AS(parse<byte_rate>("989 TFLOP/s"), unit_error);   // FLOP rate is not a data rate
    try {
        parse<data_size>("4 KB");
        FAIL("KB is ambiguous");
    } catch (const unit_error& e) {
        CHECK(std::string(e.what()).find("KiB") != std::string::npos);
    }
}

TEST_CASE("formatting auto-scales with 4 significant digits") {
    CHECK(format(80 * GB) == "80 GB");
    CHECK(format(141 * GB, true) == "131.3 GiB");  // 141e9 / 2^30 = 131.32
    CHECK(format(50 * GB / s) == "50 GB/s");
    CHECK(format(989.5 * TFLOP / s) == "989.5 TFLOP/s");
    CHECK(format(1979 * TFLOP / s) == "1.979 PFLOP/s");
    CHECK(format(25 * us) == "25 us");
    CHECK(format(90 * s) == "90 s");
    CHECK(format(150 * s) == "2.5 min");
    CHECK(format(36 * hour) == "36 h");          // days only from two of them
    CHECK(format(1.812e4 * hour) == "755 d");    // 18,120 h / 24: not "1.812e+04 h"
    CHECK(parse<duration>("3 d").in(hour) == 72.0);
    CHECK(format(3 * hour) == "3 h");
    CHECK(format_in(80e9, dimension_of<data_size>::value, "GiB") == "74.51 GiB");
    CHECK_THROWS_AS(format_in(80e9, dimension_of<data_size>::value, "GB/s"), unit_error);
}

TEST_CASE("format_number: 4 significant digits, no trailing zeros") {
    CHECK(format_number(2.0) == "2");
    CHECK(format_number(0.51953125) == "0.5195");
    CHECK(format_number(989.5) == "989.5");
    CHECK(format_number(123456.0) == "1.235e+05");
}

TEST_CASE("unit_si checks the dimension") {
    CHECK(unit_si("GiB", dimension_of<data_size>::value) == 1073741824.0);
    CHECK(unit_si("Gb/s", dimension_of<byte_rate>::value) == 1.25e8);
    CHECK_THROWS_AS(unit_si("s", dimension_of<data_size>::value), unit_error);
}

TEST_CASE("a quantity that overflows once its unit is applied is a unit_error, not infinity") {
    // 1e308 is a double, 1e308 kB = 1e311 B is not.
    CHECK_THROWS_WITH_AS(parse<data_size>("1e308 kB", "/memory"), doctest::Contains("beyond the range"), unit_error);
    CHECK_THROWS_AS(parse<flop_rate>("1e300 EFLOP/s", "/peak"), unit_error);
    CHECK(parse<data_size>("1e300 kB").in(B) == doctest::Approx(1e303));
}

TEST_CASE("clock rates parse and print as frequencies") {
    CHECK(parse<frequency>("2.6 GHz").in(Hz) == doctest::Approx(2.6e9));
    CHECK(parse<frequency>("3700 MHz").in(GHz) == doctest::Approx(3.7));
    CHECK(format(2.596152 * GHz) == "2.596 GHz");
    CHECK_THROWS_AS(parse<frequency>("2.6 GB"), unit_error);
}
