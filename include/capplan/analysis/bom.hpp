// A cluster's bill of materials (issue #22 item 3; docs/formulas.md §20): for a system preset and an accelerator count,
// the units bought, the racks their power fills, and the scale-out fabric that joins them, a (rail-optimised) fat tree
// of the link's switches as NVIDIA's DGX SuperPOD reference architectures build it (non-blocking, or with its leaves'
// uplinks oversubscribed), with its links and optics; power and price per line where the catalog has them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "capplan/catalog.hpp"

namespace capplan {

// The switches and links of a fat tree joining `nodes` nodes of `rails` NICs each with `ports`-port switches.
// Rail-optimised: NIC i of every node joins rail i's own leaves. Oversubscription o >= 1 at the leaves: each leaf
// has `leaf_down` = floor(ports o / (o + 1)) ports to NICs and ceil(NICs on it / o) uplinks (o = 1: non-blocking,
// half down and half up); the tiers above carry what the uplinks bring, non-blocking.
struct fat_tree_counts {
    int tiers = 0;  // 1: one switch; 2: leaf-spine; 3: leaf-spine-core
    std::int64_t leaf = 0, spine = 0, core = 0;
    std::int64_t node_links = 0, leaf_spine_links = 0, spine_core_links = 0;
    std::int64_t leaf_down = 0, leaf_up = 0;  // a full leaf's ports to NICs and up (two tiers or more)
    double oversubscription = 1.0;            // as asked (one pod: 1); a full leaf's own is leaf_down / leaf_up
    // Pods (fat_tree_pods): their count and size, and a full pod's spines' ports down and up; 0 without pods.
    std::int64_t pods = 0, pod_nodes = 0, spine_down = 0, spine_up = 0;
};

// Throws config_error (naming `field`) beyond a three-tier tree of such switches (ports^2 x leaf_down / 2 NICs:
// ports^3 / 4 non-blocking) or for switches outside 2..max_switch_ports (cost_spec.hpp) ports, and for an oversubscription below 1,
// above ports - 1 (a leaf keeps one port up) or not finite (naming "/oversubscription").
fat_tree_counts fat_tree(std::int64_t nodes, int rails, int ports, bool rail_optimized, const std::string& field,
                         double oversubscription = 1.0);

// A fat tree of pods (as Meta's Llama 3 clusters: full bisection inside a pod, oversubscribed only above it): every
// pod of `pod_nodes` nodes (the last one part full) a non-blocking leaf-spine tree whose spines give floor(ports o /
// (o + 1)) ports to its leaves and one uplink per o of them (rounded up) to a core tier that joins the pods. A pod's
// spines: the smallest divisor of a full leaf's uplinks that gives its leaves the ports (as fat_tree's two tiers).
// Throws config_error naming "/pod_nodes" for a pod beyond two tiers of such switches, more pods than a core
// switch has ports, or pod_nodes < 1; as fat_tree for the switches and the oversubscription.
fat_tree_counts fat_tree_pods(std::int64_t nodes, int rails, int ports, bool rail_optimized, const std::string& field,
                              double oversubscription, std::int64_t pod_nodes);

struct bom_line {
    std::string item;    // "systems", "leaf switches", "optics at switches"...
    std::string model;
    std::int64_t count = 0;
    std::optional<power> power_each;
    std::optional<usd_range> usd_each;
    bool in_systems = false;  // counted inside the systems' power and price (the NICs): not added again
    bool quoted = false;      // its price is the user's (part_prices), not the catalog's
};

struct bom_result {
    std::string preset;
    std::int64_t devices = 0, units = 0, nodes = 0;
    std::optional<std::int64_t> racks;  // with a rack power limit
    std::optional<fat_tree_counts> fabric;
    std::vector<bom_line> lines;
    power known_power;                  // the lines whose power is known, NICs inside the systems not again
    std::optional<usd_range> known_usd; // the lines whose price is known
    std::vector<std::string> notes;     // what is missing or assumed
};

// Storage bought with the cluster: whole storage systems of a catalog storage entry of scope aggregate (one appliance
// or building block), as many as the read and write rates and the capacity asked need; the rates are given, or the
// preset's reference architecture's guideline `level` ("good", "better", "best") per scalable unit.
struct bom_storage {
    std::string entry;   // a catalog storage entry
    std::string level;   // empty: the rates below
    std::optional<byte_rate> read, write;
    std::optional<data_size> capacity;
};

// The bill of materials of `devices` accelerators of the catalog `preset`, racks filled up to `rack_power`, the
// fabric oversubscribed by `oversubscription` (none: the preset's scale_out.oversubscription) at its leaves, or with
// pods of `pod_nodes` nodes (none: the preset's scale_out.pod_nodes; 0: no pods) above the pods. `part_prices`: the
// user's price for a line by its item ("spine switches"), over the catalog's (a quote where the catalog has none);
// an item the bill does not have is a config_error naming "/part_prices/<item>".
bom_result cluster_bom(const catalog& cat, const std::string& preset, std::int64_t devices,
                       std::optional<power> rack_power, std::optional<double> oversubscription = std::nullopt,
                       std::optional<std::int64_t> pod_nodes = std::nullopt,
                       const std::optional<bom_storage>& storage = std::nullopt,
                       const std::map<std::string, usd_range>& part_prices = {});

// As JSON text: {preset, devices, units, nodes, racks, fabric {tiers, leaf, spine, core, node_links, leaf_spine_links,
// spine_core_links, leaf_down_ports, leaf_up_ports, oversubscription; with pods: pods, pod_nodes, spine_down_ports,
// spine_up_ports}, lines [{item, model, count, power_w, usd, usd_range, in_systems, quoted}], known_power_w,
// known_usd(_range), notes}.
std::string to_json(const bom_result& b, int indent = 2);

}  // namespace capplan
