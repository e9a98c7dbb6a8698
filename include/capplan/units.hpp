// Strong physical quantities for capacity planning: bytes, FLOP, seconds, watts and their
// products and ratios. Values are stored in SI base units (byte, FLOP, second, watt) inside a
// type that carries the dimension, so a size cannot be added to a rate and GB cannot be mixed
// with GiB: both are named units (constants) of the same `data_size` type.
//
// Construct only through named units:   auto hbm = 80 * GB;   auto bw = 3.35 * TB / s;
// Read only through a unit:             hbm.in(GiB) == 74.505...
#pragma once

#include <compare>
#include <type_traits>

namespace capplan {

// Dimension exponents: bytes^B * FLOP^F * seconds^S * watts^W.
template <int B, int F, int S, int W>
class quantity {
public:
    constexpr quantity() = default;

    // The one door from a raw number: the value in SI base units of this dimension.
    static constexpr quantity from_si(double v) { return quantity(v); }
    constexpr double si() const { return v_; }
    // Value expressed in `unit` (a quantity of the same dimension, e.g. GiB).
    constexpr double in(quantity unit) const { return v_ / unit.v_; }

    constexpr quantity operator+(quantity o) const { return quantity(v_ + o.v_); }
    constexpr quantity operator-(quantity o) const { return quantity(v_ - o.v_); }
    constexpr quantity operator-() const { return quantity(-v_); }
    constexpr quantity& operator+=(quantity o) { v_ += o.v_; return *this; }
    constexpr quantity& operator-=(quantity o) { v_ -= o.v_; return *this; }
    constexpr quantity& operator*=(double k) { v_ *= k; return *this; }
    constexpr quantity& operator/=(double k) { v_ /= k; return *this; }
    constexpr auto operator<=>(const quantity&) const = default;

    friend constexpr quantity operator*(double k, quantity q) { return quantity(k * q.v_); }
    friend constexpr quantity operator*(quantity q, double k) { return quantity(k * q.v_); }
    friend constexpr quantity operator/(quantity q, double k) { return quantity(q.v_ / k); }

private:
    constexpr explicit quantity(double v) : v_(v) {}
    double v_ = 0.0;
};

// A dimensionless ratio collapses to double, so `a / b` of equal dimensions is a plain number.
template <int B, int F, int S, int W>
struct product_type { using type = quantity<B, F, S, W>; };
template <>
struct product_type<0, 0, 0, 0> { using type = double; };

namespace detail {
template <class T> constexpr T make(double v) {
    if constexpr (std::is_same_v<T, double>) return v; else return T::from_si(v);
}
}  // namespace detail

template <int B1, int F1, int S1, int W1, int B2, int F2, int S2, int W2>
constexpr auto operator*(quantity<B1, F1, S1, W1> a, quantity<B2, F2, S2, W2> b) {
    using R = typename product_type<B1 + B2, F1 + F2, S1 + S2, W1 + W2>::type;
    return detail::make<R>(a.si() * b.si());
}
template <int B1, int F1, int S1, int W1, int B2, int F2, int S2, int W2>
constexpr auto operator/(quantity<B1, F1, S1, W1> a, quantity<B2, F2, S2, W2> b) {
    using R = typename product_type<B1 - B2, F1 - F2, S1 - S2, W1 - W2>::type;
    return detail::make<R>(a.si() / b.si());
}
template <int B, int F, int S, int W>
constexpr auto operator/(double k, quantity<B, F, S, W> q) {
    return quantity<-B, -F, -S, -W>::from_si(k / q.si());
}

using data_size = quantity<1, 0, 0, 0>;   // bytes
using flop_count = quantity<0, 1, 0, 0>;  // floating-point (or integer) operations
using duration = quantity<0, 0, 1, 0>;    // seconds
using power = quantity<0, 0, 0, 1>;       // watts
using energy = quantity<0, 0, 1, 1>;      // joules = W * s
using byte_rate = quantity<1, 0, -1, 0>;  // bytes per second
using flop_rate = quantity<0, 1, -1, 0>;  // FLOP per second
using frequency = quantity<0, 0, -1, 0>;  // per second: clock rates
using intensity = quantity<-1, 1, 0, 0>;  // FLOP per byte (arithmetic intensity)

namespace units {
// SI prefixes as plain factors, for counts that are not physical quantities (tokens, US dollars).
inline constexpr double kilo = 1e3, mega = 1e6, giga = 1e9, tera = 1e12, peta = 1e15;

// Bytes: decimal (SI) and binary (IEC) prefixes are different units.
inline constexpr data_size B = data_size::from_si(1.0);
inline constexpr data_size kB = 1e3 * B;
inline constexpr data_size MB = 1e6 * B;
inline constexpr data_size GB = 1e9 * B;
inline constexpr data_size TB = 1e12 * B;
inline constexpr data_size PB = 1e15 * B;
inline constexpr data_size KiB = 1024.0 * B;
inline constexpr data_size MiB = 1024.0 * KiB;
inline constexpr data_size GiB = 1024.0 * MiB;
inline constexpr data_size TiB = 1024.0 * GiB;
inline constexpr data_size PiB = 1024.0 * TiB;
// Bits: network rates are quoted in bits (400 Gb/s = 50 GB/s).
inline constexpr data_size bit = B / 8.0;
inline constexpr data_size kbit = 1e3 * bit;
inline constexpr data_size Mbit = 1e6 * bit;
inline constexpr data_size Gbit = 1e9 * bit;
inline constexpr data_size Tbit = 1e12 * bit;

inline constexpr flop_count FLOP = flop_count::from_si(1.0);
inline constexpr flop_count kFLOP = 1e3 * FLOP;
inline constexpr flop_count MFLOP = 1e6 * FLOP;
inline constexpr flop_count GFLOP = 1e9 * FLOP;
inline constexpr flop_count TFLOP = 1e12 * FLOP;
inline constexpr flop_count PFLOP = 1e15 * FLOP;
inline constexpr flop_count EFLOP = 1e18 * FLOP;

inline constexpr duration s = duration::from_si(1.0);
inline constexpr duration ns = 1e-9 * s;
inline constexpr duration us = 1e-6 * s;
inline constexpr duration ms = 1e-3 * s;
inline constexpr duration minute = 60.0 * s;
inline constexpr duration hour = 3600.0 * s;
inline constexpr duration day = 24.0 * hour;

inline constexpr power W = power::from_si(1.0);
inline constexpr power kW = 1e3 * W;
inline constexpr power MW = 1e6 * W;
inline constexpr energy J = W * s;
inline constexpr energy kWh = kW * hour;
// Clock rates.
inline constexpr frequency Hz = frequency::from_si(1.0);
inline constexpr frequency kHz = 1e3 * Hz;
inline constexpr frequency MHz = 1e6 * Hz;
inline constexpr frequency GHz = 1e9 * Hz;
}  // namespace units

}  // namespace capplan
