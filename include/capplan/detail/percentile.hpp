// Percentiles as numpy computes them by default: linear interpolation between order statistics
// (Hyndman & Fan 1996, type 7). Shared by the serving simulation and the calibration harness.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace capplan::detail {

// p in [0, 100] of values already sorted ascending; 0 for none.
inline double percentile_of_sorted(const std::vector<double>& sorted, double p) {
    if (sorted.empty()) return 0.0;
    const double h = (static_cast<double>(sorted.size()) - 1.0) * p / 100.0;
    const auto lo = static_cast<std::size_t>(std::floor(h));
    if (lo + 1 >= sorted.size()) return sorted.back();
    return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[lo + 1] - sorted[lo]);
}

// The same percentile of a multiset given as (value, count) pairs sorted ascending by value, as if
// every value were repeated count times (counts >= 1); 0 for none. Linear in the number of pairs.
inline double percentile_of_sorted_counts(const std::vector<std::pair<double, std::int64_t>>& sorted, double p) {
    std::int64_t n = 0;
    for (const auto& [v, c] : sorted) n += c;
    if (n == 0) return 0.0;
    const double h = (static_cast<double>(n) - 1.0) * p / 100.0;
    const auto lo = static_cast<std::int64_t>(std::floor(h));
    // The values at order statistics lo and lo + 1 (0-based).
    double at_lo = sorted.back().first, at_hi = sorted.back().first;
    std::int64_t before = 0;
    bool found_lo = false;
    for (const auto& [v, c] : sorted) {
        if (!found_lo && lo < before + c) at_lo = v, found_lo = true;
        if (found_lo && lo + 1 < before + c) { at_hi = v; break; }
        before += c;
    }
    if (lo + 1 >= n) return at_lo;
    return at_lo + (h - static_cast<double>(lo)) * (at_hi - at_lo);
}

}  // namespace capplan::detail
