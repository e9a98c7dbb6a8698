// Disaggregated serving (inference.disaggregation): each pool as an engine of its own, and the time a
// request's KV cache takes to cross from the prefill pool to the decode pool.
//
//   pool      the scenario on the pool's accelerator (or the system's), count devices, tp-wide replicas,
//             experts over ep = tp when set, one pipeline stage
//   transfer  the prompt's whole cache, bytes = tokens x KV bytes per token of every layer (all heads);
//             each of the min(tp_prefill, tp_decode) rank pairs moves its share at once over its own link:
//             a send of bytes / min(tp) between two ranks (the collective model's send/recv, §11) —
//             NVLink when both pools fit one node, the scale-out NICs otherwise — or over the named link
//             (latency + share / bandwidth). Not overlapped with the prefill (vLLM's NixlConnector and
//             SGLang's Mooncake transfer send once the prompt is done; layer-wise overlap would hide most of it).
#pragma once

#include <algorithm>
#include <cstdint>

#include "capplan/analysis/collectives.hpp"
#include "capplan/analysis/kv_cache.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/scenario.hpp"

namespace capplan {

// The scenario one pool of a disaggregated deployment runs.
inline scenario pool_scenario(const scenario& s, const serving_pool& pool) {
    scenario p = s;
    if (pool.node && pool.node->accelerator.name != s.system.accelerator.name) {
        // Another accelerator: its own nodes and scale-up links; the cluster's network and storage.
        p.system = *pool.node;
        p.system.scale_out = s.system.scale_out;
        p.system.storage = s.system.storage;
    }
    p.system.count = pool.count;
    p.system.per_node = std::min(p.system.per_node, pool.count);
    p.parallelism.tp = pool.tp;
    p.parallelism.pp = 1;
    p.parallelism.vpp = 1;
    p.parallelism.ep = pool.ep;
    p.parallelism.etp = pool.ep > 1 ? 1 : pool.tp;
    p.parallelism.dp = pool.replicas();
    p.inference->disaggregation.reset();
    return p;
}

// Both pools fit one node of the same accelerator: their caches cross its scale-up links.
inline bool pools_share_a_node(const scenario& s) {
    const disaggregation_spec& d = *s.inference->disaggregation;
    auto name = [&](const serving_pool& p) { return p.accelerator ? p.accelerator->name : s.system.accelerator.name; };
    return name(d.prefill) == name(d.decode) && d.prefill.count + d.decode.count <= s.system.per_node;
}

// Time for one request's cache of `tokens` tokens to reach the decode pool: what the request holds (windowed layers
// their window, linear-attention layers their fixed state), split over the rank pairs that send it.
inline duration kv_transfer_time(const scenario& s, std::int64_t tokens) {
    const disaggregation_spec& d = *s.inference->disaggregation;
    const data_size request = kv_bytes_per_request(s.model, 1, s.precision.kv_cache, all_layers(s.model), tokens, 1);
    const int pairs = std::min(d.prefill.tp, d.decode.tp);
    const data_size share = request / static_cast<double>(pairs);
    if (d.kv_transfer) {
        const link_spec& l = *d.kv_transfer;
        const auto bw = l.measured_bandwidth_per_direction ? l.measured_bandwidth_per_direction : l.bandwidth_per_direction;
        if (!bw) throw config_error("/inference/disaggregation/kv_transfer", "'" + l.name + "'", "the catalog does not know its bandwidth");
        return l.latency.value_or(duration{}) + share / *bw;
    }
    // Pools of different accelerators sit on different nodes: their caches cross the scale-out network.
    const bool one_node = pools_share_a_node(s);
    if (!one_node && !s.system.scale_out)
        throw config_error("/inference/disaggregation/kv_transfer", "",
                           "the pools' caches must cross between nodes and the system has no scale-out network",
                           "a system with scale_out, or kv_transfer: a catalog link");
    return collective_time(collective_op::send_recv, share, s.system, collective_group{2, one_node ? 2 : 1}).time;
}

}  // namespace capplan
