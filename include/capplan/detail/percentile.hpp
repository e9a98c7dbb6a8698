// Percentiles as numpy computes them by default: linear interpolation between order statistics
// (Hyndman & Fan 1996, type 7). Shared by the serving simulation and the calibration harness.
#pragma once

#include <algorithm>
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

using value_counts = std::vector<std::pair<double, std::int64_t>>;

// The values at 0-based positions ks (ascending) of a multiset given as (value, count) pairs, as if
// written out in ascending order. One quickselect (std::nth_element) descends into every part that
// holds a wanted position, so a million pairs need no sort. Reorders [first, last).
inline void order_statistics(value_counts::iterator first, value_counts::iterator last, const std::int64_t* k,
                             const std::int64_t* k_end, std::int64_t offset, double* out) {
    while (k != k_end) {
        const auto mid = first + (last - first) / 2;
        std::nth_element(first, mid, last);  // [first, mid) <= *mid <= (mid, last)
        std::int64_t before = offset;
        for (auto it = first; it != mid; ++it) before += it->second;
        const std::int64_t after = before + mid->second;
        const std::int64_t* left_end = std::lower_bound(k, k_end, before);
        const std::int64_t* right = std::lower_bound(left_end, k_end, after);
        if (k != left_end) order_statistics(first, mid, k, left_end, offset, out);
        for (const std::int64_t* i = left_end; i != right; ++i) out[i - k] = mid->first;
        out += right - k, k = right, first = mid + 1, offset = after;  // the right part, in this loop
    }
}

// Percentiles p (in [0, 100]) of such a multiset, in the order given; zeros for none. Reorders the pairs.
inline std::vector<double> percentiles_of_counts(value_counts& pairs, const std::vector<double>& ps) {
    std::int64_t n = 0;
    for (const auto& [v, c] : pairs) n += c;
    std::vector<double> out(ps.size(), 0.0);
    if (n == 0) return out;
    std::vector<std::int64_t> ks;  // the two order statistics around each percentile's position
    for (double p : ps) {
        const auto lo = static_cast<std::int64_t>(std::floor((static_cast<double>(n) - 1.0) * p / 100.0));
        ks.push_back(lo), ks.push_back(std::min(lo + 1, n - 1));
    }
    std::vector<std::int64_t> sorted = ks;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::vector<double> values(sorted.size());
    order_statistics(pairs.begin(), pairs.end(), sorted.data(), sorted.data() + sorted.size(), 0, values.data());
    auto at = [&](std::int64_t k) { return values[static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), k) - sorted.begin())]; };
    for (std::size_t i = 0; i < ps.size(); ++i) {
        const double h = (static_cast<double>(n) - 1.0) * ps[i] / 100.0;
        const double a = at(ks[2 * i]), b = at(ks[2 * i + 1]);
        out[i] = a + (h - static_cast<double>(ks[2 * i])) * (b - a);
    }
    return out;
}

}  // namespace capplan::detail
