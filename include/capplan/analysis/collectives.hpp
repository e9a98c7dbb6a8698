// Collective communication time by topology, the way NCCL picks and costs its algorithms.
//
//   time = latency(algorithm, protocol, hops) + S x factor(op, n) / (bus bandwidth x protocol efficiency)
//
// Latency terms are NCCL 2.20.3's tuner constants (NVIDIA/nccl src/graph/tuning.cc @b6475625:
// baseLat and hwLat per algorithm and protocol, ring/tree step counts), plus a per-vendor launch
// overhead measured from nccl-tests small-message times. Bus bandwidth is the slowest tier the
// algorithm crosses: the scale-up link per GPU (NVLink / Infinity Fabric / PCIe / ICI) or the
// scale-out NICs of the GPUs' node, each times a measured efficiency. The cheapest (algorithm,
// protocol) pair is chosen per message size, as NCCL's tuner does, and reported.
// Sources of every constant: docs/formulas.md §11 and tests/data/published_collectives.json.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capplan/analysis/collective_ops.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/units.hpp"

namespace capplan {

// one_shot and two_shot are serving engines' own all-reduce kernels (engine_allreduce.hpp), not NCCL's.
enum class coll_algorithm { ring, tree, nvls, nvls_tree, collnet, direct, torus, one_shot, two_shot };
enum class coll_protocol { ll, ll128, simple };

inline std::string algorithm_name(coll_algorithm a) {
    switch (a) {
        case coll_algorithm::ring: return "ring";
        case coll_algorithm::tree: return "tree";
        case coll_algorithm::nvls: return "nvls";
        case coll_algorithm::nvls_tree: return "nvls_tree";
        case coll_algorithm::collnet: return "collnet";
        case coll_algorithm::direct: return "direct";
        case coll_algorithm::torus: return "torus";
        case coll_algorithm::one_shot: return "one_shot";
        case coll_algorithm::two_shot: return "two_shot";
    }
    return "unknown";
}
inline std::string protocol_name(coll_protocol p) {
    return p == coll_protocol::ll ? "LL" : p == coll_protocol::ll128 ? "LL128" : "Simple";
}
coll_algorithm parse_algorithm(std::string_view name, const std::string& field = "/algorithm");

// Where the group sits: `gpus` ranks, `per_node` of them on each node (0 = as many as fit).
struct collective_group {
    int gpus = 0;
    int per_node = 0;
    // Nodes the group's ranks range over (strided groups, e.g. data parallelism outside tp, spread wider than their
    // own nodes); 0: its own nodes, contiguous. Sets how many NVLink domains (NVL72 racks) and pods
    // (scale_out_spec::pod_nodes) it spans.
    int span_nodes = 0;
};

struct collective_options {
    std::optional<coll_algorithm> algorithm;  // force one (NCCL_ALGO); empty = cheapest
    bool allow_nvls = true;                    // NCCL_NVLS_ENABLE
    double imbalance = 1.0;                    // all-to-all: busiest rank's bytes / average (>= 1)
    // All-to-all as a node-deduplicating MoE dispatcher runs it (DeepEP's normal kernels, HybridEP): the bytes are
    // `node_dedup_topk` copies per token, and each token crosses the network once per other node holding one of its
    // experts, then the scale-up link carries the copies to their GPUs. 0: a plain all-to-all.
    int node_dedup_topk = 0;
    // A fitted calibration for this system and operation replaces the modelled latency and bus
    // bandwidth (capplan calibrate-collectives; models/calibration/).
    std::optional<duration> calibrated_latency;
    std::optional<byte_rate> calibrated_bus_bandwidth;
};

struct collective_tier {
    std::string tier;       // "scale-up" or "scale-out"
    std::string link;       // catalog link name
    byte_rate bus_bandwidth;  // what this tier allows, efficiency included
    duration time;          // S x factor / bus_bandwidth: this tier alone
};

struct collective_result {
    collective_op op = collective_op::all_reduce;
    data_size size;
    int gpus = 0, per_node = 0, nodes = 0;
    int pods = 1;  // pods of the scale-out fabric the group spans (scale_out.pod_nodes)
    coll_algorithm algorithm = coll_algorithm::ring;
    coll_protocol protocol = coll_protocol::simple;
    duration time, latency;
    byte_rate algbw, busbw;
    std::vector<collective_tier> tiers;
    bool calibrated = false;
};

// Efficiency factors, measured (tests/data/published_collectives.json rows named in docs/formulas.md §11).
namespace collective_efficiency {
inline constexpr double ring_nvswitch = 0.80;  // 8x A100 231.6/300, 8x H200 367.2/450, 8x H100 ~370/450 GB/s
inline constexpr double ring_mesh = 0.70;      // 8x MI300X 315.7 / 448 GB/s (7 Infinity Fabric links)
inline constexpr double ring_pcie = 0.44;      // 8x RTX 5090 on PCIe 5.0: 28 / 63 GB/s (one secondary row)
inline constexpr double nvls = 1.00;           // 8x H100 478.9, 8x H200 480.0, 8x B200 838.0, NVL72 834.6 GB/s
inline constexpr double network = 0.94;        // 46-48 GB/s per 400 Gb/s NDR NIC (NCCL maintainers)
// Tree and NVLS-tree all-reduce across more than two nodes: bus bandwidth over the node's NIC line rate. Fitted on
// 4x AWS p5en (8x H200, 16x 200 Gb/s EFA, NCCL 2.27.7) NVLSTree 4 GiB: 310.07 / 400 GB/s (stas00/ml-engineering
// network/README.md); held out: 4x H100 on 8x 400G RoCE 320 (NVIDIA/nccl#1221), 8x AWS P5 NVLSTree 279.78
// (NVIDIA/nccl PR #1112). Two nodes exchange once and reach more (430-487 GB/s): the bus factor applies there.
inline constexpr double tree_network = 0.775;
inline constexpr double p2p_nvswitch = 0.65;   // 8x A100 send_recv 1 GiB: 195.1 / 300 GB/s (li-plus/playground)
// NCCL protocol factors (tuning.cc): LL128 0.92 of Simple; LL 1/4 (all-reduce, reduce) or 1/3.
inline constexpr double ll128 = 0.92;
}  // namespace collective_efficiency

// Launch and synchronisation overhead per operation not in NCCL's tuner latencies, measured:
// NVIDIA (NCCL) 13 us = mean of 8x H100 1 KiB (25.6 us), 8x H200 1 KiB (29.9 us), 4x H100 1 KiB
// (23.9 us) minus the tuner's LL ring latency; AMD (RCCL) 0: 8x MI300X 1 KiB is 13.7 us, below it.
inline duration launch_overhead(const accelerator_spec& a) {
    return (a.vendor == "AMD" ? 0.0 : 13.0) * units::us;
}

namespace detail {

// NCCL 2.20.3 tuning.cc baseLat[algo][proto] and hwLat[link][algo][proto] in microseconds
// (proto order LL, LL128, Simple; 0 where NCCL has no such pair).
struct nccl_latency {
    double base[3];
    double nvlink[3], pci[3], net[3];
};
inline const nccl_latency& latency_table(coll_algorithm a) {
    static const nccl_latency ring{{6.6, 14.0, 8.4}, {0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}};
    static const nccl_latency tree{{6.8, 14.0, 0.0}, {0.6, 1.25, 28.0}, {1.0, 1.9, 28.0}, {5.0, 8.5, 28.0}};
    static const nccl_latency nvls{{0, 0, 0}, {0, 0, 23.0}, {0, 0, 0}, {0, 0, 18.0}};
    static const nccl_latency collnet{{0, 0, 0}, {0, 0, 3.7}, {0, 0, 3.7}, {0, 0, 14.0}};
    switch (a) {
        case coll_algorithm::tree: return tree;
        case coll_algorithm::nvls:
        case coll_algorithm::nvls_tree: return nvls;
        case coll_algorithm::collnet: return collnet;
        default: return ring;
    }
}

inline int log2_ceil(int n) {
    int k = 0;
    while ((1 << k) < n) ++k;
    return k;
}

// The system's links as bandwidths per GPU and per direction.
struct topology_view {
    byte_rate up;              // scale-up bandwidth one GPU can drive to its peers
    byte_rate pair;            // one GPU to one peer (a single Infinity Fabric link on a mesh)
    double up_efficiency = collective_efficiency::ring_nvswitch;
    bool nvlink = false;       // NCCL's NVLink latency class: direct GPU-to-GPU links (else PCI)
    bool nvls = false;
    int domain = 1;            // GPUs sharing the scale-up fabric (NVL72: 72 across trays)
    std::string_view up_link;              // names in the system_spec viewed (no copy a call)
    std::optional<byte_rate> nic_per_gpu;  // scale-out share of one GPU
    bool collnet = false;
    std::string_view out_link;
};

inline byte_rate link_rate(const link_spec& l) { return l.bandwidth_per_direction.value_or(byte_rate{}); }

// The view names the system's links without owning them: it lives no longer than `s`.
inline topology_view view(system_spec&& s, int group_gpus_in_domain) = delete;
inline topology_view view(const system_spec& s, int group_gpus_in_domain) {
    topology_view v;
    const auto& a = s.accelerator;
    v.domain = std::max(1, s.scale_up_domain);
    if (s.scale_up) {
        v.up_link = s.scale_up->name;
        const byte_rate link = link_rate(*s.scale_up);
        const std::string& topo = s.scale_up_topology;
        if (topo == "full_mesh") {
            // A ring over a full mesh drives one link per peer at once (RCCL opens channels on all of them).
            v.pair = s.scale_up->scope == "per_link" ? link : a.scale_up_bandwidth_per_direction.value_or(link);
            v.up = v.pair * static_cast<double>(std::max(1, group_gpus_in_domain - 1));
            if (a.scale_up_bandwidth_per_direction) v.up = std::min(v.up, *a.scale_up_bandwidth_per_direction);
            v.up_efficiency = collective_efficiency::ring_mesh;
            v.nvlink = true;  // xGMI peer links: NVLink's per-hop class (8x MI300X 1 KiB: 13.7 us measured)
        } else if (topo == "pcie_host" || topo == "pcie_switch") {
            v.up = v.pair = link;
            v.up_efficiency = collective_efficiency::ring_pcie;
        } else {
            v.up = v.pair = a.scale_up_bandwidth_per_direction.value_or(link);
            v.nvlink = s.scale_up->kind == "nvlink";
            v.nvls = topo == "nvswitch" && s.scale_up_reduction;
        }
    }
    if (s.scale_out) {
        v.out_link = s.scale_out->link.name;
        const double nics = s.scale_out->nics_per_node;
        // Oversubscription on every crossing, or with pods only between them (collective_time).
        const double over = s.scale_out->pod_nodes > 0 ? 1.0 : s.scale_out->oversubscription;
        v.nic_per_gpu = link_rate(s.scale_out->link) * nics / s.per_node / over;
        v.collnet = s.scale_out->in_network_reduction;
    }
    return v;
}

}  // namespace detail

// The cost of one collective. Bad groups (more GPUs than the system, zero, per_node larger than a
// node) are config_errors naming the field; see collectives.cpp.
collective_result collective_time(collective_op op, data_size size, const system_spec& system, collective_group group,
                                  const collective_options& options = {});

}  // namespace capplan
