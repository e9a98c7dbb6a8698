#pragma once
// Whole units needed for a count: ceil(a / b) for a >= 0, b > 0 (blocks for tokens, nodes for GPUs, pods for nodes).
#include <cstdint>

namespace capplan::detail {

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace capplan::detail
