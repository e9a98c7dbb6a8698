#include "capplan/analysis/collectives.hpp"

#include "capplan/analysis/engine_allreduce.hpp"

#include "capplan/detail/ceil_div.hpp"
#include "capplan/detail/closest.hpp"
#include "capplan/error.hpp"
#include "capplan/units_parse.hpp"

namespace capplan {

coll_algorithm parse_algorithm(std::string_view name, const std::string& field) {
    const std::string key = detail::lower(name);
    std::vector<std::string> names;
    for (auto a : {coll_algorithm::ring, coll_algorithm::tree, coll_algorithm::nvls, coll_algorithm::nvls_tree,
                   coll_algorithm::collnet, coll_algorithm::direct, coll_algorithm::torus, coll_algorithm::one_shot,
                   coll_algorithm::two_shot}) {
        if (algorithm_name(a) == key) return a;
        names.push_back(algorithm_name(a));
    }
    std::string allowed;
    for (const auto& n : names) allowed += (allowed.empty() ? "" : ", ") + n;
    throw config_error(field, "'" + std::string(name) + "'", "unknown algorithm", allowed);
}

namespace {

struct candidate {
    coll_algorithm algorithm;
    coll_protocol protocol;
    duration latency;
    byte_rate bus_bandwidth;
    byte_rate up_tier, out_tier;  // what each tier allows this algorithm (zero: tier not crossed)
};

double protocol_efficiency(coll_protocol p, collective_op op) {
    switch (p) {
        case coll_protocol::simple: return 1.0;
        case coll_protocol::ll128: return collective_efficiency::ll128;
        case coll_protocol::ll:
            return op == collective_op::all_reduce || op == collective_op::reduce ? 0.25 : 1.0 / 3.0;
    }
    return 1.0;
}

}  // namespace

std::optional<byte_rate> engine_allreduce_bandwidth(const system_spec& system, int gpus) {
    if (gpus < 2 || gpus > system.per_node || !system.scale_up) return std::nullopt;
    const detail::topology_view v = detail::view(system, gpus);
    const std::string& topo = system.scale_up_topology;
    const bool every_peer = topo == "nvswitch" || topo == "full_mesh";
    if (!every_peer && gpus != 2) return std::nullopt;
    // On a full mesh v.up already adds the peers' links (each peer is read over its own).
    if (v.up.si() <= 0) return std::nullopt;
    return v.up * v.up_efficiency;
}

collective_result engine_allreduce_result(const engine_allreduce& k, const std::string& engine, data_size bytes,
                                          const system_spec& system, int gpus, std::optional<allreduce_algorithm> forced) {
    const auto bandwidth = engine_allreduce_bandwidth(system, gpus);
    if (k.kernel.empty() || !bandwidth || !k.supports(gpus))
        throw config_error("/engine", "'" + engine + "'",
                           "its all-reduce kernel does not run on " + std::to_string(gpus) + " GPUs of this system",
                           "a group of a supported size inside one node whose GPUs all reach each other (NVSwitch or a full mesh; two GPUs over any peer link), or no engine (NCCL)");
    if (bytes >= k.max_size)
        throw config_error("/size", format(bytes, true), "at or beyond " + engine + "'s all-reduce kernel limit (" + format(k.max_size, true) + "): the engine calls NCCL",
                           "a smaller message, or no engine (NCCL)");
    const auto a = forced.value_or(k.one_shot(bytes, gpus) ? allreduce_algorithm::one_shot : allreduce_algorithm::two_shot);
    collective_result r;
    r.op = collective_op::all_reduce;
    r.size = bytes;
    r.gpus = r.per_node = gpus;
    r.nodes = 1;
    r.algorithm = a == allreduce_algorithm::one_shot ? coll_algorithm::one_shot : coll_algorithm::two_shot;
    r.time = engine_allreduce_time(a, bytes, gpus, *bandwidth);
    r.latency = engine_allreduce_time(a, data_size{}, gpus, *bandwidth);
    r.algbw = bytes / r.time;
    r.busbw = r.algbw * bus_factor(collective_op::all_reduce, gpus);
    r.tiers.push_back({"scale-up", system.scale_up ? system.scale_up->name : "", *bandwidth, r.time - r.latency});
    return r;
}

collective_result collective_time(collective_op op, data_size size, const system_spec& system, collective_group group,
                                  const collective_options& options) {
    using namespace units;
    const int n = group.gpus;
    if (n < 1) throw config_error("/gpus", std::to_string(n), "a collective needs at least one GPU", "an integer >= 1");
    if (n > system.count)
        throw config_error("/gpus", std::to_string(n),
                           "larger than the system's " + std::to_string(system.count) + " accelerators",
                           "at most " + std::to_string(system.count) + " (raise system.count)");
    const int g = group.per_node > 0 ? group.per_node : std::min(n, system.per_node);
    if (g > system.per_node)
        throw config_error("/per_node", std::to_string(g),
                           "more GPUs per node than the system's nodes hold (" + std::to_string(system.per_node) + ")",
                           "at most " + std::to_string(system.per_node));
    if (g > n || n % g != 0)
        throw config_error("/per_node", std::to_string(g), "the group does not fill whole nodes",
                           "a divisor of gpus (" + std::to_string(n) + ")");
    if (size.si() < 0) throw config_error("/size", format(size), "must not be negative", "a size >= 0");
    if (options.imbalance < 1.0)
        throw config_error("/imbalance", format_number(options.imbalance), "the busiest rank cannot carry less than the average",
                           "a number >= 1");
    if (op == collective_op::send_recv && n < 2)
        throw config_error("/gpus", "1", "send/recv needs a peer", "an integer >= 2");

    collective_result r;
    r.op = op;
    r.size = size;
    r.gpus = n;
    r.per_node = g;
    r.nodes = n / g;
    // GPUs of the group inside one scale-up domain: a node, or several nodes when NVLink spans trays (NVL72). The group
    // touches as many domains as the nodes its ranks range over fill, at most one per node it has ranks on: 128 GB200
    // over NVL72 racks are 2 x 64; a strided group (one rank per tray of 32 trays, tp 4) spans two racks, not one.
    // The nodes are taken as spread evenly over those domains, and the smaller share, in whole nodes (fewest NICs), sets
    // the pace (76 GB200: 19 trays over two racks, 9 in the smaller share). A real placement can be less even (8 ranks at
    // a stride of 4 trays over 32 trays sit 5 and 3): not modelled.
    const int group_nodes = n / g;
    const int span = std::max(group.span_nodes, group_nodes);
    const int nodes_per_domain = system.scale_up_domain > system.per_node ? system.scale_up_domain / system.per_node : 1;
    const int parts = std::min(group_nodes, static_cast<int>(detail::ceil_div(span, nodes_per_domain)));  // > 1: scale-out
    const int domain = std::max(1, group_nodes / parts) * g;
    const detail::topology_view v = detail::view(system, domain);
    if (parts > 1 && !v.nic_per_gpu)
        throw config_error("/system/scale_out", "", "the group spans " + std::to_string(parts) +
                                                        " nodes but the system has no scale-out network",
                           "a scale_out link (e.g. IB-NDR) or a group within one node");
    if (n > 1 && v.up.si() <= 0 && domain > 1)
        throw config_error("/system/scale_up", "", "the group spans several GPUs of a node without a scale-up link",
                           "a system whose accelerator has a scale-up link, or per_node = 1");

    const double f = bus_factor(op, n);
    const byte_rate up = v.up * v.up_efficiency;
    // Pods (scale_out.pod_nodes): full bisection inside one, `oversubscription` above. A group spanning P pods:
    // a ring or tree crosses each pod's uplinks twice per group, and when every GPU of a pod runs such a group at once
    // (data-parallel groups do) the crossings share the pod's uplinks, pod GPUs x NIC / oversubscription: each gets
    // min(1, n / (2 P oversubscription)) of a NIC. An all-to-all sends (P - 1)/P of its bytes to other pods, all at the
    // uplinks' 1 / oversubscription.
    const int pod_nodes = system.scale_out ? system.scale_out->pod_nodes : 0;
    const int pods = pod_nodes > 0 && parts > 1 ? static_cast<int>(std::min<std::int64_t>(group_nodes, detail::ceil_div(span, pod_nodes))) : 1;
    const double oversub = system.scale_out ? system.scale_out->oversubscription : 1.0;
    const double pod_share = pods > 1 ? std::min(1.0, n / (2.0 * pods * oversub)) : 1.0;
    r.pods = pods;
    const byte_rate out = v.nic_per_gpu ? *v.nic_per_gpu * static_cast<double>(domain) * collective_efficiency::network * pod_share
                                        : byte_rate{};
    // Tree and NVLS-tree all-reduce across nodes: two nodes exchange once (the bus factor applies to the NICs);
    // across more, measured tree bandwidth stays below the NICs' line rate (collective_efficiency::tree_network).
    const byte_rate tree_out = parts == 2 ? out * f : out / collective_efficiency::network * collective_efficiency::tree_network;
    const duration overhead = launch_overhead(system.accelerator);

    std::vector<candidate> cands;
    cands.reserve(16);  // every algorithm and protocol this op may try: one allocation a call
    byte_rate tier_up = up, tier_out = parts > 1 ? out : byte_rate{};  // set per algorithm before add()
    auto add = [&](coll_algorithm a, coll_protocol p, double lat_us, byte_rate bw) {
        if (options.algorithm && *options.algorithm != a) return;
        cands.push_back({a, p, lat_us * us + overhead, bw * protocol_efficiency(p, op), tier_up, tier_out});
    };
    const auto protocols = {coll_protocol::ll, coll_protocol::ll128, coll_protocol::simple};
    const int log_parts = detail::log2_ceil(parts);
    auto hop = [&](const double* table, coll_protocol p) { return table[static_cast<int>(p)]; };

    if (op == collective_op::all_to_all) {
        // Point-to-point to every peer: intra-domain bytes over the scale-up link, the rest over this GPU's NICs.
        double intra = static_cast<double>(domain - 1) / n, inter = static_cast<double>(n - domain) / n;
        if (options.node_dedup_topk > 0 && parts > 1) {
            // k uniform picks over `parts` domains reach (parts - 1)(1 - (1 - 1/parts)^k) others on average (DeepEP
            // README: tokens go to each node once over RDMA and are forwarded over NVLink); per routed copy:
            const double k = options.node_dedup_topk, P = parts;
            inter = (P - 1.0) * (1.0 - std::pow(1.0 - 1.0 / P, k)) / k;
            intra = static_cast<double>(domain - 1) / domain;  // forwarded inside the receiving domain
        }
        duration t_intra = intra > 0 ? (size * intra) / up : duration{};
        duration t_inter = inter > 0 ? (size * inter) / (*v.nic_per_gpu * collective_efficiency::network) : duration{};
        if (pods > 1) {  // of the other nodes' peers, those in other pods behind the oversubscribed uplinks
            const double others = static_cast<double>(n - domain), own_pod = static_cast<double>(n) / pods - domain;
            t_inter = t_inter * ((std::max(0.0, own_pod) + oversub * (others - std::max(0.0, own_pod))) / others);
        }
        const duration t_bw = std::max(t_intra, t_inter) * options.imbalance;
        const auto& L = detail::latency_table(coll_algorithm::ring);
        const double lat = L.base[2] + (v.nvlink ? L.nvlink[2] : L.pci[2]) + (parts > 1 ? L.net[2] : 0.0);
        const byte_rate bw = t_bw.si() > 0 ? (size * f) / t_bw : up;
        if (!options.algorithm || *options.algorithm == coll_algorithm::direct)
            cands.push_back({coll_algorithm::direct, coll_protocol::simple, lat * us + overhead, bw, up,
                             parts > 1 ? *v.nic_per_gpu * collective_efficiency::network : byte_rate{}});
    } else if (op == collective_op::send_recv) {
        // Each rank sends to the next: a pair link inside a domain, this GPU's NIC share across.
        // NCCL's point-to-point path opens fewer channels than its rings: its own measured efficiency on
        // switched NVLink; on meshes and PCIe the ring efficiency of the link.
        const double eff = system.scale_up_topology == "nvswitch" ? collective_efficiency::p2p_nvswitch : v.up_efficiency;
        const byte_rate pair = v.pair * eff;
        tier_up = pair;
        if (parts > 1) tier_out = *v.nic_per_gpu * collective_efficiency::network * pod_share;
        const byte_rate bw = parts > 1 ? std::min(pair, tier_out) : pair;
        const auto& L = detail::latency_table(coll_algorithm::ring);
        for (auto p : protocols) {
            const double hw = parts > 1 ? hop(L.net, p) : hop(v.nvlink ? L.nvlink : L.pci, p);
            add(coll_algorithm::ring, p, hop(L.base, p) + hw, bw);
        }
    } else {
        // Ring (every operation): the slower of the scale-up ring and the node's NICs. Across domains each channel's ring
        // leaves a domain through one GPU's NIC, a different GPU per channel, so a GPU forwards (d - 1)/d of the ring's
        // bytes over the scale-up link: that tier allows d/(d - 1) x its one-domain rate (one GPU per node: NICs only).
        const double d = domain;
        const byte_rate ring_up = parts > 1 ? (domain > 1 ? up * (d / (d - 1.0)) : out) : up;
        const byte_rate ring_bw = parts > 1 ? std::min(ring_up, out) : up;
        tier_up = ring_up;
        const bool ar = op == collective_op::all_reduce;
        const int steps = ar ? 2 * (n - 1) : n - 1;
        const int inter = parts > 1 ? (ar ? 2 * (parts - 1) : parts - 1) : 0;
        const auto& R = detail::latency_table(coll_algorithm::ring);
        for (auto p : protocols) {
            double intra_hw = hop(v.nvlink ? R.nvlink : R.pci, p);
            // Multi-node rings pay the network proxy's overhead on every step (tuning.cc: 1 us, x3 Simple).
            if (parts > 1) intra_hw = std::max(intra_hw, p == coll_protocol::simple ? 3.0 : 1.0);
            add(coll_algorithm::ring, p, hop(R.base, p) + (steps - inter) * intra_hw + inter * hop(R.net, p), ring_bw);
        }
        tier_up = up;
        if (ar && parts > 1) {
            // Double binary tree across nodes (tree_out above).
            const byte_rate tree_bw = std::min(up, tree_out);
            tier_out = tree_out;
            const auto& T = detail::latency_table(coll_algorithm::tree);
            for (auto p : protocols)
                add(coll_algorithm::tree, p,
                    hop(T.base, p) + 2.0 * ((domain - 1) * hop(v.nvlink ? T.nvlink : T.pci, p) + log_parts * hop(T.net, p)),
                    tree_bw);
            if (v.collnet) {  // in-network reduction (SHARP): one pass through the switches, no log-depth tree, at
                              // the NICs' rate (CoreWeave 8x H100 IB SHARP: 386.6 GB/s busbw on 400 GB/s of NICs)
                const auto& C = detail::latency_table(coll_algorithm::collnet);
                const byte_rate collnet_bw = std::min(up, out);
                tier_out = out;
                add(coll_algorithm::collnet, coll_protocol::simple, C.nvlink[2] + C.net[2], collnet_bw);
                tier_out = tree_out;
            }
        }
        if (ar && v.nvls && options.allow_nvls && domain > 4) {
            // NVLink SHARP: the NVSwitch reduces; NCCL enables it from 5 GPUs on a switch (8x H200: 4 GPUs ring, 5+ NVLS).
            const byte_rate nvls_bw = v.up * collective_efficiency::nvls;
            tier_up = nvls_bw;
            const auto& N = detail::latency_table(coll_algorithm::nvls);
            if (parts == 1) {
                add(coll_algorithm::nvls, coll_protocol::simple, N.nvlink[2], nvls_bw);
            } else {  // the tree across nodes (tree_out above)
                tier_out = tree_out;
                add(coll_algorithm::nvls_tree, coll_protocol::simple, N.nvlink[2] + 2.0 * log_parts * N.net[2],
                    std::min(nvls_bw, tree_out));
            }
        }
    }
    const bool torus = (system.scale_up_topology == "torus_2d" || system.scale_up_topology == "torus_3d") &&
                       !system.torus_shape.empty() && parts == 1 &&
                       (op == collective_op::all_reduce || op == collective_op::all_gather ||
                        op == collective_op::reduce_scatter);
    if (torus) {
        // Dimension by dimension, a bidirectional ring over the two ports of each dimension
        // (Google TPU docs: 2D/3D torus ICI; reduce-scatter down the dimensions, all-gather back),
        // with the data split into one part per dimension that walks the dimensions in a rotated
        // order, so every port is busy:
        //   t = passes x sum_d (k_d - 1)/k_d x S_d / (2 x port bandwidth x dims),  S_d = S / prod_{e<d} k_e.
        // Bandwidth then matches a ring over all ports; latency needs sum_d (k_d - 1) hops, not n - 1.
        // The group is taken as the whole slice (its torus_shape). Efficiency: the NVSwitch ring factor,
        // an assumption (no TPU collective measurement in the tests).
        const double dims = static_cast<double>(system.torus_shape.size());
        const byte_rate port = v.up / (2.0 * dims);
        const double passes = op == collective_op::all_reduce ? 2.0 : 1.0;
        double shard = 1.0, seconds_per_byte = 0.0;
        for (int k : system.torus_shape) {
            seconds_per_byte += (k - 1.0) / k * shard / (2.0 * dims * port * collective_efficiency::ring_nvswitch).si();
            shard /= k;
        }
        const byte_rate bw = f / (passes * seconds_per_byte) * units::B / units::s;
        tier_up = bw;
        const auto& R = detail::latency_table(coll_algorithm::ring);
        int hops = 0;
        for (int k : system.torus_shape) hops += k - 1;
        for (auto p : protocols) add(coll_algorithm::torus, p, hop(R.base, p) + passes * hops * hop(R.nvlink, p), bw);
    }
    if (cands.empty())
        throw config_error("/algorithm", algorithm_name(*options.algorithm),
                           "not available for " + op_name(op) + " on this system and group",
                           "ring; tree/collnet/nvls_tree for multi-node all_reduce; nvls on NVSwitch systems with "
                           "in-network reduction; direct for all_to_all");

    const candidate* best = nullptr;
    duration best_time;
    for (const auto& c : cands) {
        const duration t = c.latency + (c.bus_bandwidth.si() > 0 ? (size * f) / c.bus_bandwidth : duration{});
        if (!best || t < best_time) best = &c, best_time = t;
    }
    r.algorithm = best->algorithm;
    r.protocol = best->protocol;
    r.latency = best->latency;
    r.time = best_time;
    if (options.calibrated_latency && options.calibrated_bus_bandwidth) {
        r.calibrated = true;
        r.latency = *options.calibrated_latency;
        r.time = r.latency + (size * f) / *options.calibrated_bus_bandwidth;
    }
    const double load = op == collective_op::send_recv ? 1.0 : f;
    const bool up_tier = n > 1 && domain > 1 && best->up_tier.si() > 0, out_tier = best->out_tier.si() > 0;
    r.tiers.reserve(static_cast<std::size_t>(up_tier) + static_cast<std::size_t>(out_tier));
    if (up_tier) r.tiers.push_back({"scale-up", std::string(v.up_link), best->up_tier, (size * load) / best->up_tier});
    if (out_tier) r.tiers.push_back({"scale-out", std::string(v.out_link), best->out_tier, (size * load) / best->out_tier});
    r.algbw = r.time.si() > 0 ? size / r.time : byte_rate{};
    r.busbw = r.algbw * f;
    return r;
}

}  // namespace capplan
