// analysis/collectives.hpp: times by hand from the NCCL constants and the measured efficiencies.
#include <doctest/doctest.h>

#include "capplan/analysis/collectives.hpp"
#include "capplan/error.hpp"
#include "test_support.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
system_spec sys(const char* name) { return test::shipped_catalog().system(name); }
}  // namespace

TEST_CASE("nccl-tests bus factors") {
    CHECK(bus_factor(collective_op::all_reduce, 8) == 1.75);
    CHECK(bus_factor(collective_op::all_gather, 8) == 0.875);
    CHECK(bus_factor(collective_op::all_to_all, 4) == 0.75);
    CHECK(bus_factor(collective_op::broadcast, 8) == 1.0);
    CHECK(parse_collective_op("all_reduce_perf") == collective_op::all_reduce);
    CHECK(parse_collective_op("AllGather") == collective_op::all_gather);
    CHECK(parse_collective_op("alltoall") == collective_op::all_to_all);
    CHECK_THROWS_WITH_AS(parse_collective_op("allreduse"), doctest::Contains("did you mean all_reduce"), config_error);
}

TEST_CASE("8x A100 ring all-reduce of 1 GiB, by hand") {
    const auto r = collective_time(collective_op::all_reduce, 1 * GiB, sys("DGX-A100"), {8, 0});
    CHECK(r.algorithm == coll_algorithm::ring);
    CHECK(r.protocol == coll_protocol::simple);
    // latency: baseLat 8.4 + 14 steps x NVLink Simple 3.4 us + 13 us launch = 69.0 us
    CHECK(r.latency.in(us) == doctest::Approx(8.4 + 14 * 3.4 + 13.0));
    // bandwidth: 1 GiB x 1.75 / (300 GB/s x 0.80)
    CHECK(r.time.in(s) == doctest::Approx(69.0e-6 + 1073741824.0 * 1.75 / 240e9));
    CHECK(r.busbw.in(GB / s) == doctest::Approx(r.algbw.in(GB / s) * 1.75));
}

TEST_CASE("8x H100 picks NVLS for large messages and LL rings for tiny ones") {
    const auto big = collective_time(collective_op::all_reduce, 1 * GiB, sys("DGX-H100"), {8, 0});
    CHECK(big.algorithm == coll_algorithm::nvls);
    // 23 us NVLS hop + 13 us launch; 1 GiB x 1.75 / 450 GB/s
    CHECK(big.time.in(s) == doctest::Approx(36e-6 + 1073741824.0 * 1.75 / 450e9));
    const auto tiny = collective_time(collective_op::all_reduce, 8 * B, sys("DGX-H100"), {8, 0});
    CHECK(tiny.protocol == coll_protocol::ll);
    CHECK(tiny.latency.in(us) == doctest::Approx(6.6 + 14 * 0.6 + 13.0));  // 28.0 us
    collective_options no_nvls;
    no_nvls.allow_nvls = false;
    CHECK(collective_time(collective_op::all_reduce, 1 * GiB, sys("DGX-H100"), {8, 0}, no_nvls).algorithm ==
          coll_algorithm::ring);
}

TEST_CASE("across nodes the node's NICs bound the ring and the tree") {
    auto h = sys("DGX-H100");
    h.count = 32;
    collective_options ring;
    ring.algorithm = coll_algorithm::ring;
    const auto r = collective_time(collective_op::all_reduce, 4 * GiB, h, {32, 8}, ring);
    REQUIRE(r.tiers.size() == 2);
    // 8 NICs x 400 Gb/s = 400 GB/s per node x 0.94 = 376 GB/s; the NVLink ring 450 x 0.80 = 360 GB/s in one node, but
    // across nodes each GPU forwards 7/8 of the ring's bytes over NVLink (the eighth leaves through its NIC): 360 x 8/7.
    CHECK(r.tiers[0].bus_bandwidth.in(GB / s) == doctest::Approx(360.0 * 8 / 7));
    CHECK(r.tiers[1].bus_bandwidth.in(GB / s) == doctest::Approx(376.0));
    CHECK(r.busbw.in(GB / s) == doctest::Approx(376.0).epsilon(0.03));  // the NICs bind
    // One GPU per node: every byte crosses its NIC (4 nodes x 1 GPU, 50 GB/s x 0.94).
    const auto lone = collective_time(collective_op::all_reduce, 4 * GiB, h, {4, 1}, ring);
    CHECK(lone.tiers[0].bus_bandwidth.in(GB / s) == doctest::Approx(47.0));
    collective_options tree;
    tree.algorithm = coll_algorithm::tree;
    // Four nodes: the tree's bus bandwidth is the NICs' 400 GB/s line rate x 0.775 (measured NVLSTree, 4x p5en);
    // two nodes exchange once, so the bus factor 2 x 15/16 applies to the NICs' 376 GB/s.
    const auto t = collective_time(collective_op::all_reduce, 4 * GiB, h, {32, 8}, tree);
    CHECK(t.tiers[1].bus_bandwidth.in(GB / s) == doctest::Approx(400.0 * 0.775));
    h.count = 16;
    const auto two = collective_time(collective_op::all_reduce, 4 * GiB, h, {16, 8}, tree);
    CHECK(two.tiers[1].bus_bandwidth.in(GB / s) == doctest::Approx(376.0 * 2 * 15 / 16));
    CHECK(two.busbw.in(GB / s) <= 360.0);  // NVLink's ring rate binds (4 GiB: latency takes 2%)
    CHECK(two.busbw.in(GB / s) == doctest::Approx(360.0).epsilon(0.03));
}

TEST_CASE("a group one rank a tray spans as many NVL72 racks as its trays fill") {
    auto rack = sys("GB200-NVL72");
    rack.count = 144;  // two racks of 18 trays
    collective_options ring;
    ring.algorithm = coll_algorithm::ring;
    // 16 ranks on 16 trays (tp 4 beside them): one rack, NVLink alone.
    const auto inside = collective_time(collective_op::all_reduce, 4 * GiB, rack, {16, 1}, ring);
    CHECK(inside.tiers.size() == 1);
    // 32 ranks on 32 trays: ceil(32 / 18) = 2 racks, taken as 16 ranks each (an even split; filling racks would give
    // 18 + 14); each rack's ring leaves through 16 GPUs' NICs,
    // 16 x 400 Gb/s x 0.94 = 752 GB/s (it was modelled inside one NVLink domain, as 32 / 72 < 1).
    const auto across = collective_time(collective_op::all_reduce, 4 * GiB, rack, {32, 1}, ring);
    REQUIRE(across.tiers.size() == 2);
    CHECK(across.tiers[1].bus_bandwidth.in(GB / s) == doctest::Approx(16 * 50.0 * 0.94));
    // 8 ranks at a stride of 4 trays range over 32 trays: two racks, taken as 4 ranks each (they sit 5 and 3), 4 x 47 =
    // 188 GB/s.
    const auto strided = collective_time(collective_op::all_reduce, 4 * GiB, rack, {8, 1, 32}, ring);
    REQUIRE(strided.tiers.size() == 2);
    CHECK(strided.tiers[1].bus_bandwidth.in(GB / s) == doctest::Approx(4 * 47.0));
    // On 8-GPU nodes a domain is a node whatever the stride: 4 ranks, one a node, over 4 nodes (the NICs alone).
    auto h = sys("DGX-H100");
    h.count = 256;
    const auto nodes = collective_time(collective_op::all_reduce, 4 * GiB, h, {4, 1, 32}, ring);
    REQUIRE(nodes.tiers.size() == 1);
    CHECK(nodes.tiers[0].bus_bandwidth.in(GB / s) == doctest::Approx(47.0));
}

TEST_CASE("ranging over more NVL72 trays never speeds a group up") {
    // Property: with its ranks and ranks a tray fixed, a group whose ranks range over more trays touches as many racks
    // or more, so each all-reduce and all-to-all is no faster (four racks, every group shape that fills whole trays).
    auto racks = sys("GB200-NVL72");
    racks.count = 288;
    for (const int g : {1, 2, 4})
        for (int n = g; n <= racks.count; n += g * 5) {
            const int nodes = n / g;
            for (const auto op : {collective_op::all_reduce, collective_op::all_to_all}) {
                double last = 0.0;
                for (int span = nodes; span <= 72; span += 7) {
                    const double t = collective_time(op, 1 * GiB, racks, {n, g, span}).time.in(s);
                    CHECK(t > 0.0);
                    CHECK(t >= last * (1 - 1e-12));
                    last = t;
                }
            }
        }
}

TEST_CASE("a full mesh drives one link per peer") {
    const auto two = collective_time(collective_op::all_reduce, 1 * GiB, sys("MI300X-Platform"), {2, 0});
    const auto eight = collective_time(collective_op::all_reduce, 1 * GiB, sys("MI300X-Platform"), {8, 0});
    REQUIRE(two.tiers.size() == 1);
    CHECK(two.tiers[0].bus_bandwidth.in(GB / s) == doctest::Approx(64.0 * 0.70));      // one xGMI link
    CHECK(eight.tiers[0].bus_bandwidth.in(GB / s) == doctest::Approx(7 * 64.0 * 0.70));  // seven
}

TEST_CASE("all-to-all: intra-node share over NVLink, the rest over this GPU's NIC") {
    auto h = sys("DGX-H100");
    h.count = 16;
    const auto r = collective_time(collective_op::all_to_all, 1 * GiB, h, {16, 8});
    // 7/16 of 1 GiB at 360 GB/s = 1.305 ms; 8/16 at 50 x 0.94 GB/s = 11.42 ms -> the NIC decides
    const double expected_bw_s = 1073741824.0 * 8 / 16 / 47e9;
    CHECK(r.time.in(s) == doctest::Approx(expected_bw_s + r.latency.in(s)));
}

TEST_CASE("bad groups are errors naming the field") {
    const auto h = sys("DGX-H100");
    CHECK_THROWS_WITH_AS(collective_time(collective_op::all_reduce, 1 * GiB, h, {9, 0}),
                         doctest::Contains("/gpus: larger than the system's 8 accelerators"), config_error);
    CHECK_THROWS_WITH_AS(collective_time(collective_op::all_reduce, 1 * GiB, h, {0, 0}), doctest::Contains("/gpus"),
                         config_error);
    CHECK_THROWS_WITH_AS(collective_time(collective_op::all_reduce, 1 * GiB, h, {8, 3}), doctest::Contains("/per_node"),
                         config_error);
    CHECK_THROWS_AS(collective_time(collective_op::all_reduce, -1 * GiB, h, {8, 0}), config_error);
    auto single = h;
    single.count = 16;
    single.scale_out.reset();
    CHECK_THROWS_WITH_AS(collective_time(collective_op::all_reduce, 1 * GiB, single, {16, 8}),
                         doctest::Contains("/system/scale_out"), config_error);
}

TEST_CASE("TPU v5p 4x4x4 torus: dimension-wise rings over all ports") {
    const auto r = collective_time(collective_op::all_reduce, 1 * GiB, sys("TPU-v5p-Slice"), {64, 0});
    CHECK(r.algorithm == coll_algorithm::torus);
    // ICI 600 GB/s per chip and direction over 6 ports = 100 GB/s each; per byte
    // 2 passes x (3/4)(1 + 1/4 + 1/16) / (2 x 3 x 100 GB/s x 0.80) -> busbw = 2(63/64) / that = 480 GB/s
    REQUIRE(r.tiers.size() == 1);
    CHECK(r.tiers[0].bus_bandwidth.in(GB / s) == doctest::Approx(480.0));
    const auto tiny = collective_time(collective_op::all_reduce, 8 * B, sys("TPU-v5p-Slice"), {64, 0});
    // LL: 6.6 + 2 passes x (3 + 3 + 3) hops x 0.6 + 13 launch; a ring would take 2 x 63 hops
    CHECK(tiny.latency.in(us) == doctest::Approx(6.6 + 2 * 9 * 0.6 + 13.0));
}

TEST_CASE("pods: oversubscription only above a pod (scale_out.pod_nodes)") {
    auto h = sys("DGX-H100");
    h.count = 64;  // 8 nodes of 8
    collective_options ring;
    ring.algorithm = coll_algorithm::ring;
    auto bw_part = [](const collective_result& r) { return (r.time - r.latency).si(); };
    const auto flat = collective_time(collective_op::all_to_all, 4 * GiB, h, {64, 8});
    h.scale_out->oversubscription = 4.0;
    const auto over = collective_time(collective_op::all_to_all, 4 * GiB, h, {64, 8});
    h.scale_out->pod_nodes = 4;  // two pods of 4 nodes
    const auto pods = collective_time(collective_op::all_to_all, 4 * GiB, h, {64, 8});
    CHECK(pods.pods == 2);
    // Without pods every crossing is oversubscribed: 4x the NIC time. With pods, of a GPU's 56 peers on other nodes
    // 24 share its pod and 32 sit behind the 1:4 uplinks: (24 + 4 x 32) / 56 = 2.714 x.
    CHECK(bw_part(over) == doctest::Approx(4.0 * bw_part(flat)).epsilon(1e-6));
    CHECK(bw_part(pods) == doctest::Approx(152.0 / 56.0 * bw_part(flat)).epsilon(1e-6));
    // A ring of all 64 crosses each pod's uplinks twice: 64 / (2 x 2 x 4) = 4 >= 1, no slowdown. A data-parallel ring
    // of one GPU per node (8 ranks over 8 nodes) with every GPU in such a ring: 8 / (2 x 2 x 4) = 0.5 of a NIC.
    const auto all = collective_time(collective_op::all_reduce, 4 * GiB, h, {64, 8}, ring);
    h.scale_out->pod_nodes = 0;
    h.scale_out->oversubscription = 1.0;
    const auto all_flat = collective_time(collective_op::all_reduce, 4 * GiB, h, {64, 8}, ring);
    const auto dp_flat = collective_time(collective_op::all_reduce, 4 * GiB, h, {8, 1}, ring);
    h.scale_out->pod_nodes = 4;
    h.scale_out->oversubscription = 4.0;
    const auto dp_pods = collective_time(collective_op::all_reduce, 4 * GiB, h, {8, 1}, ring);
    CHECK(all.time.si() == doctest::Approx(all_flat.time.si()));
    CHECK(bw_part(dp_pods) == doctest::Approx(2.0 * bw_part(dp_flat)).epsilon(1e-6));
    // Within one pod nothing changes.
    auto plain = sys("DGX-H100");
    plain.count = 64;
    CHECK(collective_time(collective_op::all_to_all, 4 * GiB, h, {32, 8}).time.si() ==
          doctest::Approx(collective_time(collective_op::all_to_all, 4 * GiB, plain, {32, 8}).time.si()));
}
