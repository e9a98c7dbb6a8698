// Text <-> quantity: "80 GB", "141 GiB", "3.35 TB/s", "400 Gb/s", "989 TFLOP/s", "25 us".
// Parsing checks the dimension and names the field on error; formatting auto-scales.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "capplan/units.hpp"

namespace capplan {

// Runtime mirror of a quantity's dimension exponents.
struct dimension {
    int bytes = 0, flops = 0, seconds = 0, watts = 0;
    friend constexpr bool operator==(const dimension&, const dimension&) = default;
};

template <class Q> struct dimension_of;
template <int B, int F, int S, int W>
struct dimension_of<quantity<B, F, S, W>> {
    static constexpr dimension value{B, F, S, W};
};

// What a dimension is called in messages: "size", "rate", "time", ...
std::string dimension_name(dimension d);
// The unit symbols accepted for a dimension, comma-separated, for error messages.
std::string allowed_units(dimension d);

struct parsed_quantity {
    double si = 0.0;  // value in SI base units of `dim`
    dimension dim;
};

// Parses "<number> <unit>" (space optional; thousands separators "1,979" allowed).
// Throws unit_error naming `field` on any problem.
parsed_quantity parse_quantity(std::string_view text, std::string_view field = "");

// Parses and checks the dimension matches `expected`.
double parse_si(std::string_view text, dimension expected, std::string_view field = "");

template <class Q>
Q parse(std::string_view text, std::string_view field = "") {
    return Q::from_si(parse_si(text, dimension_of<Q>::value, field));
}

// SI size of one `unit` (e.g. "GiB", "Gb/s"); throws unit_error if unknown or of another dimension.
double unit_si(std::string_view unit, dimension expected, std::string_view field = "");

// Auto-scaled text with 4 significant digits: 8.03e10 B -> "80.3 GB", 5e10 B/s -> "50 GB/s".
// `binary` chooses KiB/MiB/GiB/TiB for sizes.
std::string format_quantity(double si, dimension d, bool binary = false);
// Text in a given unit: format_in(80e9, size, "GiB") -> "74.51 GiB".
std::string format_in(double si, dimension d, std::string_view unit);

// A plain number with 4 significant digits ("2", "0.5195", "1.979e+04").
std::string format_number(double v);

template <class Q>
std::string format(Q q, bool binary = false) {
    return format_quantity(q.si(), dimension_of<Q>::value, binary);
}

}  // namespace capplan
