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

// The values at 0-based positions k..k_end (ascending) of a multiset given as (value, count) pairs,
// as if written out in ascending order; `offset` is how many values come before [first, last).
// A quickselect over the pairs (Hoare's FIND, CACM 4(7) 1961, Algorithm 65) that descends into every
// part holding a wanted position: each pass splits the range three ways around a pivot value (below,
// equal, above; the equal part is never empty, so every pass shrinks the range) and sums the counts
// below, so a million pairs need no sort. The pivot is the median of three pairs drawn by a fixed
// generator (`draw`), not the range's first or middle, so no order of the pairs the simulation can
// produce makes the passes quadratic. Reorders [first, last).
inline void order_statistics(value_counts::iterator first, value_counts::iterator last, const std::int64_t* k,
                             const std::int64_t* k_end, std::int64_t offset, double* out, std::uint64_t& draw) {
    auto pick = [&] {  // splitmix64 (Steele et al., OOPSLA 2014) step, scaled to the range
        std::uint64_t z = (draw += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return (first + static_cast<std::ptrdiff_t>((z ^ (z >> 31)) % static_cast<std::uint64_t>(last - first)))->first;
    };
    while (k != k_end) {
        const double a = pick(), b = pick(), c = pick();
        const double pivot = std::max(std::min(a, b), std::min(std::max(a, b), c));
        // [first, lt) < pivot, [lt, i) == pivot, [gt, last) > pivot (Dijkstra's three-way partition).
        auto lt = first, i = first, gt = last;
        std::int64_t below = 0, equal = 0;
        while (i != gt) {
            if (i->first < pivot) below += i->second, std::iter_swap(lt++, i++);
            else if (pivot < i->first) std::iter_swap(i, --gt);
            else equal += i->second, ++i;
        }
        const std::int64_t before = offset + below, after = before + equal;
        const std::int64_t* left_end = std::lower_bound(k, k_end, before);
        const std::int64_t* right = std::lower_bound(left_end, k_end, after);
        if (k != left_end) order_statistics(first, lt, k, left_end, offset, out, draw);
        for (const std::int64_t* j = left_end; j != right; ++j) out[j - k] = pivot;
        out += right - k, k = right, first = gt, offset = after;  // the part above, in this loop
    }
}

// The 0-based order statistics a type-7 percentile reads: for each p, the one at floor((n-1) p / 100)
// and the next (both the last one at p = 100).
inline std::vector<std::int64_t> percentile_positions(std::int64_t n, const std::vector<double>& ps) {
    std::vector<std::int64_t> ks;
    for (double p : ps) {
        const double q = std::clamp(p, 0.0, 100.0);  // (NaN and out-of-range p read as the nearest end; callers pass 0-100)
        const double at = (static_cast<double>(n) - 1.0) * (q == q ? q : 0.0) / 100.0;
        const std::int64_t lo = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(at)), 0, n - 1);
        ks.push_back(lo), ks.push_back(std::min(lo + 1, n - 1));
    }
    return ks;
}

// Percentiles ps of n values from their order statistics: select(wanted, values) fills values[i]
// with the order statistic at wanted[i] (wanted ascending, no repeats). Zeros for none.
template <class Select>
std::vector<double> interpolate_percentiles(std::int64_t n, const std::vector<double>& ps, Select select) {
    std::vector<double> out(ps.size(), 0.0);
    if (n == 0) return out;
    const std::vector<std::int64_t> ks = percentile_positions(n, ps);
    std::vector<std::int64_t> wanted = ks;
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    std::vector<double> values(wanted.size());
    select(wanted, values);
    auto at = [&](std::int64_t k) {
        return values[static_cast<std::size_t>(std::lower_bound(wanted.begin(), wanted.end(), k) - wanted.begin())];
    };
    for (std::size_t i = 0; i < ps.size(); ++i) {
        const double h = (static_cast<double>(n) - 1.0) * ps[i] / 100.0;
        const double a = at(ks[2 * i]), b = at(ks[2 * i + 1]);
        out[i] = a + (h - static_cast<double>(ks[2 * i])) * (b - a);
    }
    return out;
}

// Percentiles p (in [0, 100]) of such a multiset, in the order given; zeros for none. Reorders the pairs.
inline std::vector<double> percentiles_of_counts(value_counts& pairs, const std::vector<double>& ps) {
    std::int64_t n = 0;
    for (const auto& [v, c] : pairs) n += c;
    return interpolate_percentiles(n, ps, [&](const std::vector<std::int64_t>& wanted, std::vector<double>& values) {
        std::uint64_t draw = 0;
        order_statistics(pairs.begin(), pairs.end(), wanted.data(), wanted.data() + wanted.size(), 0, values.data(), draw);
    });
}

// The same percentiles of plain values, each order statistic found by selection (std::nth_element,
// every one in the part after the one before): linear time where a sort takes n log n, and the
// same values as percentile_of_sorted over the sorted list. Reorders `values`.
inline std::vector<double> percentiles_of(std::vector<double>& values, const std::vector<double>& ps) {
    return interpolate_percentiles(static_cast<std::int64_t>(values.size()), ps,
                                   [&](const std::vector<std::int64_t>& wanted, std::vector<double>& out) {
                                       auto first = values.begin();
                                       for (std::size_t i = 0; i < wanted.size(); ++i) {
                                           const auto kth = values.begin() + wanted[i];
                                           std::nth_element(first, kth, values.end());
                                           out[i] = *kth;
                                           first = kth + 1;
                                       }
                                   });
}

}  // namespace capplan::detail
