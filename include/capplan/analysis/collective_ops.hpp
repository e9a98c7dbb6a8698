// Collective operations and the nccl-tests bandwidth conventions.
//
// nccl-tests (NVIDIA/nccl-tests doc/PERFORMANCE.md) reports, for a buffer of S bytes and time t,
//   algbw = S / t      and      busbw = algbw x factor(op, n)
// with factor 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all
// (S is the whole gathered / scattered buffer), and 1 for broadcast, reduce and send/recv.
// busbw is the per-rank link bandwidth a ring-optimal algorithm would need, comparable across n.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace capplan {

enum class collective_op { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv };

inline const std::vector<std::pair<collective_op, std::string>>& collective_op_names() {
    static const std::vector<std::pair<collective_op, std::string>> names{
        {collective_op::all_reduce, "all_reduce"}, {collective_op::all_gather, "all_gather"},
        {collective_op::reduce_scatter, "reduce_scatter"}, {collective_op::all_to_all, "all_to_all"},
        {collective_op::broadcast, "broadcast"}, {collective_op::reduce, "reduce"},
        {collective_op::send_recv, "send_recv"}};
    return names;
}

inline std::string op_name(collective_op op) {
    for (const auto& [o, n] : collective_op_names())
        if (o == op) return n;
    return "unknown";
}

// Accepts the names above and nccl-tests' spellings (all_reduce_perf, alltoall, sendrecv, ...);
// anything else is a config_error at `field` listing the operations.
collective_op parse_collective_op(std::string_view name, const std::string& field = "/op");

inline double bus_factor(collective_op op, int n) {
    const double k = static_cast<double>(n);
    switch (op) {
        case collective_op::all_reduce: return 2.0 * (k - 1.0) / k;
        case collective_op::all_gather:
        case collective_op::reduce_scatter:
        case collective_op::all_to_all: return (k - 1.0) / k;
        default: return 1.0;
    }
}

}  // namespace capplan
