// Percentiles as numpy computes them by default: linear interpolation between order statistics
// (Hyndman & Fan 1996, type 7). Shared by the serving simulation and the calibration harness.
#pragma once

#include <cmath>
#include <cstddef>
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

}  // namespace capplan::detail
