// units.hpp: conversions checked at compile time, and the dimension algebra.
#include <doctest/doctest.h>

#include <type_traits>

#include "capplan/units.hpp"

using namespace capplan;
using namespace capplan::units;

// Decimal prefixes are not exact in binary floating point: compare to 1 part in 10^12.
constexpr bool near(double a, double b) { return (a > b ? a - b : b - a) <= 1e-12 * (a > b ? a : b); }

// GB is 10^9 bytes, GiB is 2^30 bytes (IEC 80000-13); they are different units of one type.
static_assert((1 * GB).si() == 1'000'000'000.0);
static_assert((1 * GiB).si() == 1'073'741'824.0);
static_assert((1 * TiB).in(GiB) == 1024.0);
// 400 Gb/s (bits) is 50 GB/s (bytes): network rates are quoted in bits.
static_assert(near((400 * Gbit / s).in(GB / s), 50.0));
static_assert((8 * bit).in(B) == 1.0);
// 5 TB/s for 2 seconds moves 10 TB.
static_assert(near(((5 * TB / s) * (2 * s)).in(TB), 10.0));
static_assert((1 * hour).in(minute) == 60.0);
static_assert(near((25 * us).in(ns), 25'000.0));
static_assert(near((1 * kWh).in(J), 3.6e6));
// Ratios of equal dimensions are plain numbers; other products carry their dimension.
static_assert(std::is_same_v<decltype((80 * GB) / (40 * GB)), double>);
static_assert(std::is_same_v<decltype((80 * GB) / (2 * s)), byte_rate>);
static_assert(std::is_same_v<decltype((989 * TFLOP / s) * (1 * s)), flop_count>);
static_assert(std::is_same_v<decltype((1 * TFLOP) / (1 * GB)), intensity>);
static_assert(std::is_same_v<decltype(1.0 / (1 * s)), quantity<0, 0, -1, 0>>);
// A size and a rate cannot be added: the expression does not compile.
template <class A, class Bq>
concept addable = requires(A a, Bq b) { a + b; };
static_assert(addable<data_size, data_size>);
static_assert(!addable<data_size, byte_rate>);
static_assert(!addable<flop_rate, byte_rate>);
static_assert(!std::is_constructible_v<data_size, double>, "no construction from a bare number");

TEST_CASE("time to move 80 GB over PCIe Gen5 x16 (63 GB/s per direction)") {
    // 80e9 / 63e9 = 1.2698... s (hand calculation)
    const duration t = (80 * GB) / (63 * GB / s);
    CHECK(t.in(s) == doctest::Approx(1.26984127).epsilon(1e-9));
}

TEST_CASE("roofline arithmetic: ridge point of an H100 SXM in BF16") {
    // 989.5 TFLOP/s / 3.35 TB/s = 295.37 FLOP/B (hand calculation)
    const intensity ridge = (989.5 * TFLOP / s) / (3.35 * TB / s);
    CHECK(ridge.in(FLOP / B) == doctest::Approx(295.3731).epsilon(1e-6));
}

TEST_CASE("comparison and accumulation") {
    data_size total;
    total += 141 * GB;
    total += 1 * GiB;
    CHECK(total > 141 * GB);
    CHECK(total.in(B) == 141e9 + 1073741824.0);
    CHECK((2 * (3 * s)).in(s) == 6.0);
    CHECK(-(1 * s) < 0 * s);
}
