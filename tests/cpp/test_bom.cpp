// analysis/bom.hpp: a cluster's bill of materials against NVIDIA's published DGX SuperPOD counts, and by hand.
#include <doctest/doctest.h>

#include <cmath>

#include "test_support.hpp"

#include "capplan/analysis/bom.hpp"
#include "capplan/error.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
const catalog& cat() { return test::shipped_catalog(); }
std::int64_t ceil_div_for_test(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::int64_t count_of(const bom_result& b, const std::string& item) {
    for (const auto& l : b.lines)
        if (l.item == item) return l.count;
    return 0;
}
}  // namespace

TEST_CASE("the rail-optimised fat tree matches the DGX SuperPOD B200 reference architecture's compute fabric table") {
    // docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-b200, "DGX SuperPOD Architecture":
    // SU count / nodes / leaf / spine / core / node-leaf / leaf-spine / spine-core cables, QM9700 (64 NDR ports),
    // eight rails (one ConnectX-7 per GPU).
    struct row { std::int64_t nodes, leaf, spine, core, node_leaf, leaf_spine, spine_core; };
    const row rows[] = {{64, 16, 8, 0, 512, 512, 0},           {128, 32, 16, 0, 1024, 1024, 0},
                        {256, 64, 32, 0, 2048, 2048, 0},        {512, 128, 128, 64, 4096, 4096, 4096},
                        {1024, 256, 256, 128, 8192, 8192, 8192}, {2048, 512, 512, 256, 16384, 16384, 16384}};
    for (const row& r : rows) {
        CAPTURE(r.nodes);
        const fat_tree_counts t = fat_tree(r.nodes, 8, 64, true, "/count");
        CHECK(t.leaf == r.leaf);
        CHECK(t.spine == r.spine);
        CHECK(t.core == r.core);
        CHECK(t.node_links == r.node_leaf);
        CHECK(t.leaf_spine_links == r.leaf_spine);
        CHECK(t.spine_core_links == r.spine_core);
        CHECK(t.tiers == (r.core ? 3 : 2));
    }
    // One scalable unit, 32 nodes: 8 leaves (one per rail) and 4 spines (256 uplinks / 64 ports).
    const fat_tree_counts su = fat_tree(32, 8, 64, true, "/count");
    CHECK(su.leaf == 8);
    CHECK(su.spine == 4);
    // Four nodes' 32 NICs fit one 64-port switch.
    CHECK(fat_tree(4, 8, 64, true, "/count").tiers == 1);
    // Beyond 64^3 / 4 = 65,536 NICs a three-tier tree of 64-port switches runs out.
    CHECK_THROWS_WITH_AS(fat_tree(8193, 8, 64, true, "/count"), doctest::Contains("three-tier"), config_error);
    CHECK_THROWS_AS(fat_tree(4, 8, 1, true, "/count"), config_error);  // no halves to split
}

TEST_CASE("an XDR scalable unit matches the DGX SuperPOD B300 reference architecture; Ethernet and HDR fabrics") {
    // RA-11339-001 (DGX B300, Quantum-X800), Table 3: scalable units of 72 nodes, leaf and spine switches (144-port
    // Q3400-RA) and node-leaf and leaf-spine cables. A leaf's 72 uplinks spread evenly over the spines: 4 units need
    // 2304 / 144 = 16 spines' ports and get 18, 8 units 36.
    struct row { std::int64_t nodes, leaf, spine, node_leaf, leaf_spine; };
    const row rows[] = {{72, 8, 4, 576, 576},        {144, 16, 8, 1152, 1152},      {288, 32, 18, 2304, 2304},
                        {576, 64, 36, 4608, 4608},   {1296, 144, 72, 10368, 10368}};
    for (const row& r : rows) {
        CAPTURE(r.nodes);
        const fat_tree_counts t = fat_tree(r.nodes, 8, 144, true, "/count");
        CHECK(t.tiers == 2);
        CHECK(t.leaf == r.leaf);
        CHECK(t.spine == r.spine);
        CHECK(t.node_links == r.node_leaf);
        CHECK(t.leaf_spine_links == r.leaf_spine);
    }
    const bom_result b300 = cluster_bom(cat(), "HGX-B300", 576, std::nullopt);
    CHECK(count_of(b300, "leaf switches") == 8);
    CHECK(count_of(b300, "spine switches") == 4);
    // The Q3400-RA has no citable power: the note names it and the known power leaves it out.
    bool unpowered = false;
    for (const auto& n : b300.notes) unpowered = unpowered || n.find("no figure for the leaf switches (NVIDIA Quantum-X800 Q3400-RA") != std::string::npos;
    CHECK(unpowered);
    // RoCE-400G on the SN5600 as 128 x 400GbE: 32 MI355X nodes' 256 NICs (not rail-optimised) take ceil(256 / 64) = 4
    // leaves and ceil(256 / 128) = 2 spines; switch ends 256 + 2 x 256 = 768 ports of twin-port optics (384 modules at
    // 15 W), node ends 256 single-port modules at 8 W, 6 switches at 940 W typical (the platform itself has no power
    // figure in the catalog: the known power is the network's).
    const bom_result mi = cluster_bom(cat(), "MI355X-Platform", 256, std::nullopt);
    CHECK(count_of(mi, "leaf switches") == 4);
    CHECK(count_of(mi, "spine switches") == 2);
    CHECK(count_of(mi, "optics at switches") == 384);
    CHECK(count_of(mi, "optics at nodes") == 256);
    CHECK_FALSE(cat().system_preset("MI355X-Platform").economics.max_power.has_value());
    CHECK(mi.known_power.in(W) == doctest::Approx(6 * 940.0 + 384 * 15.0 + 256 * 8.0));
    // HDR: counts without power or price (DGX A100, 8 rails of 40-port QM8700s; 32 nodes: 8 x ceil(32 / 20) = 16 leaves;
    // the spines need ceil(256 / 40) = 7 switches' ports, and a full leaf's 20 uplinks spread evenly over them: 10).
    const bom_result a100 = cluster_bom(cat(), "DGX-A100", 256, std::nullopt);
    CHECK(count_of(a100, "leaf switches") == 16);
    CHECK(count_of(a100, "spine switches") == 10);
}

TEST_CASE("oversubscribed leaves: fewer uplinks, spines and cores, by hand") {
    // 64-port switches, by hand:
    // - 2:1, one scalable unit (32 nodes, 8 rails): floor(64 x 2/3) = 42 ports down, ceil(42 / 2) = 21 up; one leaf a
    //   rail holding 32 NICs, ceil(32 / 2) = 16 uplinks each; 128 uplinks over 64-port spines: 2.
    // - 3:1 (48 down, 16 up), 128 nodes: 3 leaves a rail (48 + 48 + 32 nodes), 16 + 16 + ceil(32 / 3) = 43 uplinks a
    //   rail, 344 in all; 24 leaves stay two tiers; the spines need ceil(344 / 64) = 6 switches' ports, and a full
    //   leaf's 16 uplinks spread evenly over them: 8 (non-blocking: 32 leaves, 16 spines).
    // - 2:1, 512 nodes: 4,096 NICs, 104 leaves > 64: three tiers. A rail: 12 full leaves and one of 8 nodes,
    //   12 x 21 + 4 = 256 uplinks; 2,048 in all: spines ceil(2048 / 32) = 64, cores 2048 / 64 = 32 (non-blocking:
    //   128 leaves, 128 spines, 64 cores, 4,096 links a tier).
    // - 1.5:1 is floor(38.4) = 38 down, ceil(38 / 1.5) = 26 up, all 64 ports used; 64 nodes: 2 leaves a rail
    //   (38 + 26 nodes), 26 + ceil(26 / 1.5) = 44 uplinks a rail, 352 in all, 16 leaves: ceil(352 / 64) = 6 spines'
    //   ports, 26 uplinks of a full leaf spread over 13.
    // - Not rail-optimised, 2:1 over 100 NICs: 3 leaves (42, 42, 16 NICs), 21 + 21 + 8 = 50 uplinks, one spine.
    struct row { std::int64_t nodes; int rails; bool rails_optimised; double o;
                 std::int64_t down, up, tiers, leaf, leaf_spine, spine, core; };
    const row rows[] = {{32, 8, true, 2.0, 42, 21, 2, 8, 128, 2, 0},      {128, 8, true, 3.0, 48, 16, 2, 24, 344, 8, 0},
                        {512, 8, true, 2.0, 42, 21, 3, 104, 2048, 64, 32}, {64, 8, true, 1.5, 38, 26, 2, 16, 352, 13, 0},
                        {100, 1, false, 2.0, 42, 21, 2, 3, 50, 1, 0}};
    for (const row& r : rows) {
        CAPTURE(r.nodes);
        CAPTURE(r.o);
        const fat_tree_counts t = fat_tree(r.nodes, r.rails, 64, r.rails_optimised, "/count", r.o);
        CHECK(t.leaf_down == r.down);
        CHECK(t.leaf_up == r.up);
        CHECK(t.tiers == r.tiers);
        CHECK(t.leaf == r.leaf);
        CHECK(t.leaf_spine_links == r.leaf_spine);
        CHECK(t.spine == r.spine);
        CHECK(t.core == r.core);
        CHECK(t.spine_core_links == (r.tiers == 3 ? r.leaf_spine : 0));
        CHECK(t.node_links == r.nodes * r.rails);
    }
    // A three-tier tree of 64-port switches at 2:1 joins 64 x 32 x 42 = 86,016 NICs: 10,752 nodes of 8, not 10,753.
    CHECK(fat_tree(10752, 8, 64, true, "/count", 2.0).tiers == 3);
    CHECK_THROWS_WITH_AS(fat_tree(10753, 8, 64, true, "/count", 2.0), doctest::Contains("86016"), config_error);
    // Non-blocking by default; below 1, above ports - 1 (no port left up) or not a number is the user's error.
    CHECK(fat_tree(32, 8, 64, true, "/count").leaf_up == 32);
    const fat_tree_counts most = fat_tree(128, 1, 64, false, "/count", 63.0);  // 63 down, 1 up
    CHECK(most.leaf_down == 63);
    CHECK(most.leaf_up == 1);
    CHECK(most.leaf_spine_links == 3);  // leaves of 63, 63 and 2 NICs: one uplink each
    for (double bad : {0.5, 63.5, 1e12, std::nan("")})
        CHECK_THROWS_WITH_AS(fat_tree(32, 8, 64, true, "/count", bad), doctest::Contains("/oversubscription"), config_error);
    // Barely above 1 is still 32 down and 32 up: built, and said, non-blocking.
    CHECK(fat_tree(32, 8, 64, true, "/count", 1.01).leaf_up == 32);
    // The bill of materials follows: a 2:1 HGX B200 unit has 2 spines, 128 leaf-spine cables, and its switch ends
    // take 256 + 2 x 128 = 512 ports of twin-port optics (256 modules; non-blocking 384); the note says how it is built.
    const bom_result b = cluster_bom(cat(), "HGX-B200", 256, std::nullopt, 2.0);
    CHECK(count_of(b, "spine switches") == 2);
    CHECK(count_of(b, "cables leaf-spine") == 128);
    CHECK(count_of(b, "optics at switches") == 256);
    bool noted = false;
    for (const auto& n : b.notes) noted = noted || n.find("oversubscribed at the leaves, 42 ports down and 21 up a leaf (2:1 asked") != std::string::npos;
    CHECK(noted);
    CHECK_THROWS_WITH_AS(cluster_bom(cat(), "HGX-B200", 256, std::nullopt, 0.9), doctest::Contains("/oversubscription"),
                         config_error);
}

TEST_CASE("a scalable unit of HGX B200: switches, cables, optics, power and price by hand") {
    const bom_result b = cluster_bom(cat(), "HGX-B200", 256, std::nullopt);
    CHECK(b.units == 32);
    CHECK(count_of(b, "systems") == 32);
    CHECK(count_of(b, "NICs") == 256);
    CHECK(count_of(b, "leaf switches") == 8);
    CHECK(count_of(b, "spine switches") == 4);
    CHECK(count_of(b, "core switches") == 0);
    CHECK(count_of(b, "cables node-leaf") == 256);
    CHECK(count_of(b, "cables leaf-spine") == 256);
    // Twin-port (2 x 400G) optics: switch ends 256 + 2 x 256 = 768 ports -> 384 modules; node ends 256 / 2 = 128.
    CHECK(count_of(b, "optics at switches") == 384);
    CHECK(count_of(b, "optics at nodes") == 128);
    // Known power: 32 x 14.3 kW + 512 optics x 15 W + 12 QM9700 x 747 W (typical with passive cables: the optics are
    // their own lines) = 457.6 + 7.68 + 8.964 kW; the NICs are inside the systems' 14.3 kW.
    CHECK(b.known_power.in(kW) == doctest::Approx(32 * 14.3 + 512 * 0.015 + 12 * 0.747));
    // Known price: the systems, 12 QM9700 at $36,000-50,000 and 512 twin-port optics at $879 (models/links/ib-ndr.json);
    // the NICs' price is inside the systems', the cables have none.
    const usd_range each = cat().system_preset("HGX-B200").economics.price->usd;
    REQUIRE(b.known_usd.has_value());
    CHECK(b.known_usd->low == doctest::Approx(32 * each.low + 12 * 36000.0 + 512 * 879.0));
    CHECK(b.known_usd->high == doctest::Approx(32 * each.high + 12 * 50000.0 + 512 * 879.0));
    for (const bom_line& l : b.lines) {
        if (l.item == "NICs") CHECK((l.in_systems && l.usd_each && l.usd_each->low == 1599.0 && l.usd_each->high == 2188.0));
        if (l.item.rfind("cables", 0) == 0) CHECK(!l.usd_each);
    }
    int unpriced = 0;  // one note names the two cable lines
    for (const auto& n : b.notes)
        if (n.rfind("price: the catalog has no figure for the cables node-leaf", 0) == 0) {
            ++unpriced;
            CHECK(n.find("; the cables leaf-spine (") != std::string::npos);
        }
    CHECK(unpriced == 1);
    bool nic_note = false;
    for (const auto& n : b.notes) {
        CHECK(n.find("no network prices") == std::string::npos);
        nic_note = nic_note || n.rfind("NICs: inside the systems' power and price", 0) == 0;
    }
    CHECK(nic_note);
    bool power_note = false;  // every powered part has its figure (cables draw none and are not noted)
    for (const auto& n : b.notes) power_note = power_note || n.rfind("power: the catalog has no figure", 0) == 0;
    CHECK_FALSE(power_note);
}

TEST_CASE("racks hold whole systems up to the rack's power; a rack too small says so") {
    // 32 DGX H100 of 10.2 kW in 40 kW racks: 3 a rack (30.6 kW), 11 racks.
    const bom_result b = cluster_bom(cat(), "DGX-H100", 256, 40 * kW);
    REQUIRE(b.racks.has_value());
    CHECK(*b.racks == 11);
    const bom_result small = cluster_bom(cat(), "DGX-H100", 8, 8 * kW);
    CHECK_FALSE(small.racks.has_value());
    CHECK(small.notes.size() >= 2);
    // One node: no fabric.
    CHECK_FALSE(small.fabric.has_value());
    // A rack-scale unit is bought whole: 100 GB200s are two NVL72 racks.
    CHECK(cluster_bom(cat(), "GB200-NVL72", 100, std::nullopt).units == 2);
}

TEST_CASE("bad bill-of-materials input names its field") {
    CHECK_THROWS_WITH_AS(cluster_bom(cat(), "DGX-H100", 0, std::nullopt), doctest::Contains("/count"), config_error);
    CHECK_THROWS_WITH_AS(cluster_bom(cat(), "DGX-H999", 8, std::nullopt), doctest::Contains("/system"),
                         unknown_name_error);
    CHECK_THROWS_WITH_AS(cluster_bom(cat(), "DGX-H100", 8, 0 * kW), doctest::Contains("/rack_power"), config_error);
    // A rack power that would overflow the units-per-rack count: beyond 100 MW is a typo.
    CHECK_THROWS_WITH_AS(cluster_bom(cat(), "DGX-H100", 8, 1e300 * kW), doctest::Contains("/rack_power"), config_error);
}

TEST_CASE("pods: full bisection inside, oversubscribed only above them, by hand and against the B200 three-tier row") {
    // - Non-blocking pods of 128 nodes rebuild the SuperPOD B200 RA's 16-unit row (512 nodes: 128 leaves, 128 spines,
    //   64 cores, 4,096 cables a tier): a pod's 1,024 uplinks over spines of 32 down give 32 spines, 32 up each.
    // - 3:1 above pods of 64 nodes, 256 nodes: a pod's leaves 8 rails x ceil(64 / 32) = 16, its 512 uplinks need
    //   ceil(512 / 48) = 11 spines of floor(64 x 3 / 4) = 48 ports down; a full leaf's 32 uplinks spread evenly: 16
    //   spines of 32 down and ceil(32 / 3) = 11 up, 176 core links a pod; 4 pods: 704 core links, 11 cores.
    // - A part-full last pod: 200 nodes are 3 pods of 64 and one of 8 (8 leaves, one a rail; 64 uplinks; a leaf's 8
    //   uplinks over the smallest divisor of 8 at least ceil(64 / 48) = 2: 2 spines of 32 down, 11 up).
    // - Meta's Llama 3 cluster shape (24,576 GPUs in 8 pods of 3,072, 1:7 above the pods) on 144-port switches: a
    //   pod's 6 leaves a rail (5 full of 72, one of 24) = 48; 3,072 uplinks over spines of floor(144 x 7 / 8) = 126
    //   down need 25, spread evenly over a divisor of 72: 36, each ceil(3072 / 36) = 86 down and ceil(86 / 7) = 13 up.
    // - Not rail-optimised, 256 single-NIC nodes, 3:1 above pods of 64: a pod's 2 leaves, 64 uplinks over the smallest
    //   divisor of 32 at least ceil(64 / 48) = 2: 2 spines of 32 down and 11 up; 4 pods: 88 core links, 2 cores.
    struct row { std::int64_t nodes; int rails; bool rail_optimised; int ports; double o;
                 std::int64_t pod_nodes, pods, leaf, spine, spine_up, spine_core, core; };
    const row rows[] = {{512, 8, true, 64, 1.0, 128, 4, 128, 128, 32, 4096, 64},
                        {256, 8, true, 64, 3.0, 64, 4, 64, 64, 11, 704, 11},
                        {200, 8, true, 64, 3.0, 64, 4, 3 * 16 + 8, 3 * 16 + 2, 11, 3 * 176 + 2 * 11, ceil_div_for_test(550, 64)},
                        {3072, 8, true, 144, 7.0, 384, 8, 8 * 48, 8 * 36, 13, 8 * 36 * 13, ceil_div_for_test(8 * 36 * 13, 144)},
                        {256, 1, false, 64, 3.0, 64, 4, 8, 8, 11, 88, 2}};
    for (const row& r : rows) {
        CAPTURE(r.nodes);
        const fat_tree_counts t = fat_tree_pods(r.nodes, r.rails, r.ports, r.rail_optimised, "/count", r.o, r.pod_nodes);
        CHECK(t.tiers == 3);
        CHECK(t.pods == r.pods);
        CHECK(t.leaf == r.leaf);
        CHECK(t.spine == r.spine);
        CHECK(t.spine_up == r.spine_up);
        CHECK(t.leaf_spine_links == r.nodes * r.rails);
        CHECK(t.spine_core_links == r.spine_core);
        CHECK(t.core == r.core);
    }
    CHECK(fat_tree_pods(256, 8, 64, true, "/count", 3.0, 64).spine_down == 32);
    // One pod is the whole cluster: full bisection, two tiers (16 leaves; 512 uplinks over the smallest divisor of 32
    // at least 8: 8 spines), nothing oversubscribed; so is a cluster one switch joins, whatever the pods asked.
    const fat_tree_counts one = fat_tree_pods(64, 8, 64, true, "/count", 4.0, 64);
    CHECK(one.pods == 1);
    CHECK(one.tiers == 2);
    CHECK(one.leaf == 16);
    CHECK(one.spine == 8);
    CHECK(one.oversubscription == 1.0);
    CHECK(fat_tree_pods(8, 8, 64, true, "/count", 4.0, 32).tiers == 1);
    // A pod smaller than a leaf (a rail's leaf holds 32 nodes of 64-port switches) is refused.
    CHECK_THROWS_WITH_AS(fat_tree_pods(256, 8, 64, true, "/count", 3.0, 16), doctest::Contains("at least 32 nodes a pod"),
                         config_error);
    // A pod beyond two tiers (64-port switches at 1:1 join 32 x 32 = 1,024 NICs: 128 nodes of 8), more pods than a
    // core switch's ports, and a pod size out of range name /pod_nodes.
    CHECK_THROWS_WITH_AS(fat_tree_pods(512, 8, 64, true, "/count", 1.0, 129), doctest::Contains("at most 128 nodes a pod"),
                         config_error);
    CHECK_THROWS_WITH_AS(fat_tree_pods(2080, 8, 64, true, "/count", 1.0, 32), doctest::Contains("65 pods"), config_error);
    CHECK_THROWS_WITH_AS(fat_tree_pods(64, 8, 64, true, "/count", 1.0, 0), doctest::Contains("/pod_nodes"), config_error);
    CHECK_THROWS_WITH_AS(cluster_bom(cat(), "DGX-H100", 256, std::nullopt, 3.0, -1), doctest::Contains("/pod_nodes"),
                         config_error);
    // The bill of materials builds the pods when asked, and says how.
    const bom_result b = cluster_bom(cat(), "DGX-H100", 2048, std::nullopt, 3.0, 64);
    CHECK(count_of(b, "spine switches") == 64);
    CHECK(count_of(b, "core switches") == 11);
    CHECK(count_of(b, "cables spine-core") == 704);
    bool noted = false;
    for (const auto& n : b.notes) noted = noted || n.find("4 pods of up to 64 nodes") != std::string::npos;
    CHECK(noted);
}

TEST_CASE("storage and management networks follow the DGX SuperPOD H100 reference architecture's counts") {
    // RA-11333-001 V11 Table 7 (4 scalable units, 127 DGX H100): 16 storage QM9700, 8 SN4600C, 8 SN2201, 4 UFM
    // appliances, 4 management servers; Table 8: 254 in-band AOCs and 254 storage transceivers (2 a DGX), 127
    // out-of-band cables to the DGX. The catalog's per-unit counts are Table 7's / 4, so this checks the scaling and
    // the per-node rules, not a prediction.
    const bom_result b = cluster_bom(cat(), "DGX-H100", 1016, std::nullopt);
    CHECK(b.nodes == 127);
    CHECK(count_of(b, "storage fabric switches") == 16);
    CHECK(count_of(b, "in-band management switches") == 8);
    CHECK(count_of(b, "out-of-band management switches") == 8);
    CHECK(count_of(b, "UFM appliances") == 4);
    CHECK(count_of(b, "management servers") == 4);
    CHECK(count_of(b, "in-band cables (nodes)") == 254);
    CHECK(count_of(b, "storage fabric links (nodes)") == 254);
    CHECK(count_of(b, "out-of-band cables (nodes)") == 127);
    // Whole units: 33 nodes are two units' networks. The storage switches are the compute fabric's QM9700, priced and
    // powered as it is: 8 of them add 8 x 747 W and 8 x $36,000-50,000 to the totals.
    const bom_result two = cluster_bom(cat(), "DGX-H100", 264, std::nullopt);
    CHECK(count_of(two, "storage fabric switches") == 8);
    CHECK(count_of(two, "in-band management switches") == 4);
    double storage_w = 0.0, storage_usd_low = 0.0;
    for (const bom_line& l : two.lines)
        if (l.item == "storage fabric switches") {
            REQUIRE(l.power_each.has_value());
            REQUIRE(l.usd_each.has_value());
            CHECK(l.model.find("QM9700") != std::string::npos);
            storage_w = static_cast<double>(l.count) * l.power_each->in(W);
            storage_usd_low = static_cast<double>(l.count) * l.usd_each->low;
        }
    CHECK(storage_w == doctest::Approx(8 * 747.0));
    CHECK(storage_usd_low == doctest::Approx(8 * 36000.0));
    // One node has no cluster networks; a preset without reference counts says so.
    CHECK(count_of(cluster_bom(cat(), "DGX-H100", 8, std::nullopt), "storage fabric switches") == 0);
    const bom_result mi = cluster_bom(cat(), "MI300X-Platform", 64, std::nullopt);
    bool noted = false;
    for (const auto& n : mi.notes) noted = noted || n.find("storage and management networks: the catalog has no") == 0;
    CHECK(noted);
}

TEST_CASE("storage systems are sized for the reference architecture's guideline, rates or capacity") {
    // One scalable unit of DGX H100 at the RA's 'best' (Table 6: 125 GB/s read, 62 GB/s write a unit) on NetApp BeeGFS
    // building blocks (62 GiB/s = 66.57 GB/s read, 21 GiB/s = 22.55 GB/s write each): read needs ceil(1.88) = 2,
    // write ceil(2.75) = 3, so 3 - the count NetApp's DGX SuperPOD design lists per unit (NetAppDocs/netapp-solutions
    // ai/ai-dgx-superpod.adoc Table 1), which enters nothing here.
    const auto blocks = [](std::int64_t devices, const bom_storage& s) {
        return count_of(cluster_bom(cat(), "DGX-H100", devices, std::nullopt, std::nullopt, std::nullopt, s),
                        "storage systems");
    };
    CHECK(blocks(256, {"NetApp-BeeGFS-BB", "best", {}, {}, {}}) == 3);
    // 'good' (15 / 7 GB/s a unit): one block; four units at 'best' (500 / 248 GB/s): ceil(7.51) = 8 read,
    // ceil(10.998) = 11 write.
    CHECK(blocks(256, {"NetApp-BeeGFS-BB", "good", {}, {}, {}}) == 1);
    CHECK(blocks(1016, {"NetApp-BeeGFS-BB", "best", {}, {}, {}}) == 11);
    // A part-full unit asks its share: 33 nodes at 'best' read 125 x 33/32 = 128.9 GB/s (2 blocks) and write 63.9
    // GB/s (ceil(2.84) = 3); one node 3.9 / 1.9 GB/s, one block.
    CHECK(blocks(264, {"NetApp-BeeGFS-BB", "best", {}, {}, {}}) == 3);
    CHECK(blocks(8, {"NetApp-BeeGFS-BB", "best", {}, {}, {}}) == 1);
    // Rates and capacity as asked: 2 PB of 460.6 TB blocks is ceil(4.34) = 5; 200 GB/s read alone ceil(3.004) = 4.
    CHECK(blocks(256, {"NetApp-BeeGFS-BB", "", {}, {}, 2 * units::PB}) == 5);
    CHECK(blocks(256, {"NetApp-BeeGFS-BB", "", 200 * units::GB / units::s, {}, {}}) == 4);
    const bom_result b = cluster_bom(cat(), "DGX-H100", 256, std::nullopt, std::nullopt, std::nullopt,
                                     bom_storage{"NetApp-BeeGFS-BB", "best", {}, {}, {}});
    bool noted = false;
    for (const auto& n : b.notes) noted = noted || (n.rfind("storage: 3 x NetApp-BeeGFS-BB", 0) == 0 && n.find("'best' of NVIDIA's DGX SuperPOD H100 reference architecture (RA-11333-001 V11)'s storage guideline per scalable unit of 32 nodes, x 32 / 32") != std::string::npos);
    CHECK(noted);
    // A per-client tier is not a storage system; a level needs the preset's guideline; a level and rates, or nothing to
    // size for, are the user's errors.
    const auto refuses = [](const std::string& preset, const bom_storage& s, const char* field) {
        CHECK_THROWS_WITH_AS(cluster_bom(cat(), preset, 256, std::nullopt, std::nullopt, std::nullopt, s),
                             doctest::Contains(field), config_error);
    };
    refuses("DGX-H100", {"ParallelFS", "best", {}, {}, {}}, "/storage");
    refuses("MI300X-Platform", {"NetApp-BeeGFS-BB", "best", {}, {}, {}}, "/storage_level");
    refuses("DGX-H100", {"NetApp-BeeGFS-BB", "best", 1 * units::GB / units::s, {}, {}}, "/storage_level");
    refuses("DGX-H100", {"NetApp-BeeGFS-BB", "", {}, {}, {}}, "/storage_level");
    refuses("DGX-H100", {"NetApp-BeeGFS-BB", "", -1 * units::GB / units::s, {}, {}}, "/storage_read");
    refuses("DGX-H100", {"NetApp-BeeGFS-BB", "", {}, 1e300 * units::GB / units::s, {}}, "/storage_write");
    refuses("DGX-H100", {"NetApp-BeeGFS-BB", "excellent", {}, {}, {}}, "best, better, good");
    CHECK_THROWS_AS(cluster_bom(cat(), "DGX-H100", 256, std::nullopt, std::nullopt, std::nullopt,
                                bom_storage{"NoSuchStorage", "best", {}, {}, {}}), unknown_name_error);
}

TEST_CASE("a price the user gives for a line replaces the catalog's and enters the total") {
    // One HGX B200 unit: the catalog prices the 12 QM9700 at $36,000-50,000; a quote of $40,000 for the 4 spines and
    // $150 for each of the 256 leaf-spine cables (no catalog price) move the known low total by 4 x (40,000 - 36,000)
    // + 256 x 150 and its high one by 4 x (40,000 - 50,000) + 256 x 150.
    const bom_result base = cluster_bom(cat(), "HGX-B200", 256, std::nullopt);
    const std::map<std::string, usd_range> quote{{"spine switches", {40000, 40000}}, {"cables leaf-spine", {150, 150}}};
    const bom_result quoted = cluster_bom(cat(), "HGX-B200", 256, std::nullopt, std::nullopt, std::nullopt, std::nullopt, quote);
    REQUIRE(base.known_usd.has_value());
    REQUIRE(quoted.known_usd.has_value());
    CHECK(quoted.known_usd->low - base.known_usd->low == doctest::Approx(4 * 4000.0 + 256 * 150.0));
    CHECK(quoted.known_usd->high - base.known_usd->high == doctest::Approx(4 * -10000.0 + 256 * 150.0));
    bool noted = false;
    for (const auto& n : quoted.notes) noted = noted || n == "price: as given for the cables leaf-spine, spine switches (over the catalog's, where it has one)";
    CHECK(noted);
    // A line the bill does not have (no core tier here) or a price that is not one names the item.
    CHECK_THROWS_WITH_AS(cluster_bom(cat(), "HGX-B200", 256, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                     {{"core switches", {1, 1}}}),
                         doctest::Contains("/part_prices/core switches"), config_error);
    CHECK_THROWS_WITH_AS(cluster_bom(cat(), "HGX-B200", 256, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                     {{"spine switches", {5, 3}}}),
                         doctest::Contains("/part_prices/spine switches"), config_error);
}
