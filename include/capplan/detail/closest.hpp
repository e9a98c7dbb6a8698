// Closest-name suggestions for error messages ("did you mean H100-SXM?").
#pragma once

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace capplan::detail {

inline std::string lower(std::string_view s) {
    std::string r(s);
    for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
}

// Levenshtein distance, case-insensitive.
inline std::size_t edit_distance(std::string_view a_in, std::string_view b_in) {
    const std::string a = lower(a_in), b = lower(b_in);
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

// Up to `limit` candidates ranked by closeness to `query`: a candidate that contains the query
// (or is contained in it) ranks first, then by edit distance; far-off names are dropped.
inline std::vector<std::string> closest(std::string_view query, const std::vector<std::string>& candidates,
                                        std::size_t limit = 3) {
    const std::string q = lower(query);
    std::vector<std::pair<std::size_t, std::string>> scored;
    for (const auto& c : candidates) {
        const std::string lc = lower(c);
        const bool contains = !q.empty() && (lc.find(q) != std::string::npos || q.find(lc) != std::string::npos);
        const std::size_t d = edit_distance(q, lc);
        const std::size_t budget = std::max<std::size_t>(2, std::max(q.size(), lc.size()) / 2);
        if (contains) scored.emplace_back(d / 4, c);
        else if (d <= budget) scored.emplace_back(d, c);
    }
    std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<std::string> out;
    for (const auto& [score, name] : scored) {
        if (out.size() == limit) break;
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    return out;
}

}  // namespace capplan::detail
