// A cluster's bill of materials (docs/formulas.md §20).
#include "capplan/analysis/bom.hpp"

#include <algorithm>
#include <cmath>

#include "capplan/detail/ceil_div.hpp"
#include "capplan/error.hpp"
#include "capplan/units_parse.hpp"

namespace capplan {

namespace {

using detail::ceil_div;

// The smallest divisor of n that is at least `least` (n itself when none below it is).
std::int64_t smallest_divisor_at_least(std::int64_t n, std::int64_t least) {
    for (std::int64_t d = std::max<std::int64_t>(1, least); d < n; ++d)
        if (n % d == 0) return d;
    return n;
}

// The systems themselves, and the racks their maximum power fills.
void add_systems(const system_entry& e, std::optional<power> rack_power, bom_result& b) {
    const system_economics& econ = e.economics;
    bom_line systems;
    systems.item = "systems";
    systems.model = e.name + " (" + std::to_string(econ.devices) + " x " + e.accelerator + ")";
    systems.count = b.units;
    if (econ.max_power) systems.power_each = econ.max_power->value;
    if (econ.price) systems.usd_each = econ.price->usd;
    b.lines.push_back(systems);
    if (!econ.max_power) b.notes.push_back("systems: the catalog has no power figure for " + e.name);
    if (!econ.price) b.notes.push_back("systems: the catalog has no purchase price for " + e.name);
    if (!rack_power) return;
    if (!econ.max_power) {
        b.notes.push_back("racks: not counted without the system's power");
        return;
    }
    // Whole units a rack holds, capped at the units bought before the conversion (a tiny unit power would overflow it).
    const double fit = std::floor(rack_power->si() / econ.max_power->value.si());
    const std::int64_t per_rack = fit >= static_cast<double>(b.units) ? b.units : static_cast<std::int64_t>(fit);
    if (per_rack < 1) {
        b.notes.push_back("racks: one " + e.name + " draws up to " + format(econ.max_power->value) + ", more than a rack's " +
                          format(*rack_power));
        return;
    }
    b.racks = ceil_div(b.units, per_rack);
    b.notes.push_back("racks: " + std::to_string(per_rack) + " x " + e.name + " per rack of " + format(*rack_power) +
                      " (compute racks only; network and storage racks are not counted)");
}

// Counts from ratios of whole numbers may land a rounding error off the integer in floating point (48 / 3): a
// relative slack far below one part in 4,096 keeps floor and ceil on the right side of it.
constexpr double rounding_slack = 1e-12;

// A line of `count` parts with the part's power and price where the catalog has them (none for a count of 0).
void add_line(const std::string& item, const fabric_part& part, std::int64_t count, bool in_systems, bom_result& b) {
    if (count == 0) return;
    bom_line l;
    l.item = item;
    l.model = part.model;
    l.count = count;
    if (part.power) l.power_each = part.power->value;
    if (part.price) l.usd_each = part.price->usd;
    l.in_systems = in_systems;
    b.lines.push_back(l);
}

// The storage and management networks the preset's reference architecture counts, per scalable unit (whole units:
// each fabric is built for a full unit) or per node.
void add_support_networks(const catalog& cat, const system_entry& e, bom_result& b) {
    if (b.nodes < 2) return;
    if (!e.support) {
        b.notes.push_back("storage and management networks: the catalog has no reference counts for " + e.name +
                          "; not counted");
        return;
    }
    const support_networks& s = *e.support;
    const std::int64_t units = ceil_div(b.nodes, static_cast<std::int64_t>(s.unit_nodes));
    for (const support_part& p : s.parts) {
        const fabric_parts* of = p.switch_of.empty() ? nullptr : cat.fabric(p.switch_of);
        if (!p.switch_of.empty() && !of) continue;  // checked at load: not reached with a loaded catalog
        add_line(p.item, of ? of->switch_ : p.part, p.per_unit > 0 ? p.per_unit * units : p.per_node * b.nodes, false, b);
    }
    b.notes.push_back("storage and management networks: " + std::to_string(units) + " scalable unit" +
                      (units == 1 ? "" : "s") + " of " + std::to_string(s.unit_nodes) + " nodes, counted as " +
                      s.reference + " does (" + s.from.date + "; representative counts: the storage partner sizes the "
                      "storage fabric; the storage itself only with a storage system named)");
}

// The read and write rates a level of the preset's reference storage guideline asks of `nodes` nodes: the guideline
// is per scalable unit, so a cluster asks its share of units (33 nodes of 32-node units: 33/32 of a unit's rates).
storage_level guideline_rates(const system_entry& e, const std::string& level, std::int64_t nodes) {
    const support_networks* s = e.support ? &*e.support : nullptr;
    std::string levels;
    if (s)
        for (const auto& [name, rates] : s->storage_levels) levels += (levels.empty() ? "" : ", ") + name;
    const auto it = s ? s->storage_levels.find(level) : std::map<std::string, storage_level>::const_iterator{};
    if (levels.empty() || it == s->storage_levels.end())
        throw config_error("/storage_level", level, "the catalog has no reference storage guideline of that level for " + e.name,
                           levels.empty() ? "read and write rates instead" : levels);
    const double units = static_cast<double>(nodes) / s->unit_nodes;
    return {units * it->second.read, units * it->second.write};
}

// Whole storage systems for the asked rates and capacity: the most any one of them needs.
void add_storage(const catalog& cat, const system_entry& e, const bom_storage& req, bom_result& b) {
    const storage_spec& st = cat.storage(req.entry, "/storage");
    if (st.scope != "aggregate")
        throw config_error("/storage", req.entry, "its figures are " + st.scope + ", not a whole storage system's",
                           "a catalog storage entry of scope aggregate (one appliance or building block), such as "
                           "NetApp-BeeGFS-BB");
    std::optional<byte_rate> read = req.read, write = req.write;
    std::string basis = "as asked";
    if (!req.level.empty()) {
        if (read || write)
            throw config_error("/storage_level", req.level, "given with read or write rates", "a level or rates, not both");
        const storage_level rates = guideline_rates(e, req.level, b.nodes);
        read = rates.read;
        write = rates.write;
        basis = "'" + req.level + "' of " + e.support->reference + "'s storage guideline per scalable unit of " +
                std::to_string(e.support->unit_nodes) + " nodes, x " + std::to_string(b.nodes) + " / " +
                std::to_string(e.support->unit_nodes);
    }
    if (!read && !write && !req.capacity)
        throw config_error("/storage_level", "none", "nothing to size the storage for",
                           "a level (good, better, best) or read / write rates or a capacity");
    std::int64_t count = 1;
    std::string needs;
    // Systems for one target: ceil(target / each), each a figure above 0 (else the catalog gives none).
    const auto need = [&](const auto& target, const auto& each, const std::string& what, const std::string& field) {
        if (!target) return;
        if (!(target->si() > 0) || !std::isfinite(target->si()))
            throw config_error(field, format(*target), "out of range", "a quantity above 0");
        if (!each || !(each->si() > 0))
            throw config_error("/storage", req.entry, "the catalog gives no " + what + " for it", "another storage entry");
        const double n = std::ceil(target->si() / each->si() * (1.0 - rounding_slack));
        if (!(n <= static_cast<double>(max_system_accelerators)))
            throw config_error(field, format(*target), "more than " + std::to_string(max_system_accelerators) +
                               " systems of " + req.entry + " each " + format(*each), "a smaller target");
        count = std::max(count, static_cast<std::int64_t>(n));
        needs += (needs.empty() ? "" : ", ") + what + " " + format(*target) + " / " + format(*each) + " each: " +
                 format_number(n);
    };
    need(read, st.read_bandwidth, "read", "/storage_read");
    need(write, st.write_bandwidth, "write", "/storage_write");
    need(req.capacity, st.capacity, "capacity", "/storage_capacity");
    add_line("storage systems", fabric_part{st.name, 1, std::nullopt, std::nullopt}, count, false, b);
    b.notes.push_back("storage: " + std::to_string(count) + " x " + st.name + ", the most of " + needs + " (" + basis + ")");
}

// The user's prices for lines by item, over the catalog's; each must name a line of this bill and be a price.
void apply_part_prices(const std::map<std::string, usd_range>& prices, bom_result& b) {
    std::string given;
    for (const auto& price : prices) {  // not a structured binding: clang 14 cannot capture one in the lambda below
        const std::string& item = price.first;
        const usd_range& usd = price.second;
        const std::string field = "/part_prices/" + item;
        const auto line = std::find_if(b.lines.begin(), b.lines.end(), [&](const bom_line& l) { return l.item == item; });
        if (line == b.lines.end()) {
            std::string items;
            for (const bom_line& l : b.lines) items += (items.empty() ? "" : ", ") + l.item;
            throw config_error(field, item, "not a line of this bill of materials", items);
        }
        if (line->in_systems)
            throw config_error(field, item, "inside the systems' price (not added to the total)",
                               "a quote for the systems line instead");
        if (!(usd.low > 0.0 && usd.low <= usd.high && usd.high < max_usd))
            throw config_error(field, format_number(usd.low) + ".." + format_number(usd.high), "not a price",
                               "US dollars above 0 and below " + format_number(max_usd) + ", low <= high");
        line->usd_each = usd;
        line->quoted = true;
        given += (given.empty() ? "" : ", ") + item;
    }
    if (!given.empty()) b.notes.push_back("price: as given for the " + given + " (over the catalog's, where it has one)");
}

// How the fabric is built: the leaves' split of their ports, or the pods.
std::string fabric_shape_note(const fat_tree_counts& t) {
    if (t.pods > 1)
        return std::to_string(t.pods) + " pods of up to " + std::to_string(t.pod_nodes) +
               " nodes, each a non-blocking leaf-spine tree; a full pod's spines " + std::to_string(t.spine_down) +
               " ports down and " + std::to_string(t.spine_up) + " up to the core (" + format_number(t.oversubscription) +
               ":1 asked above the pods, rounded up per spine)";
    if (t.pods == 1) return "one pod holds every node: full bisection (an oversubscription applies only between pods)";
    if (t.tiers == 1) return "one switch";
    const std::string split = std::to_string(t.leaf_down) + " ports down and " + std::to_string(t.leaf_up) + " up a leaf";
    if (t.leaf_down <= t.leaf_up) return "non-blocking (" + split + ")";
    return "oversubscribed at the leaves, " + split + " (" + format_number(t.oversubscription) +
           ":1 asked; a part-full leaf takes one uplink per " + format_number(t.oversubscription) +
           " NICs, rounded up), the tiers above non-blocking";
}

void add_fabric(const catalog& cat, const system_entry& e, double oversubscription, std::int64_t pod_nodes,
                bom_result& b) {
    if (e.scale_out_link.empty()) return;
    if (b.nodes < 2) {
        b.notes.push_back("fabric: one node needs no scale-out switches");
        return;
    }
    const fabric_parts* f = cat.fabric(e.scale_out_link);
    if (!f) {
        b.notes.push_back("fabric: the catalog lists no switch, NIC or optics for " + e.scale_out_link +
                          " (models/links, key fabric)");
        return;
    }
    const bool rails = e.scale_out_topology == "rail_optimized_fat_tree";
    const fat_tree_counts t =
        pod_nodes > 0 ? fat_tree_pods(b.nodes, e.nics_per_node, f->switch_.ports, rails, "/count", oversubscription, pod_nodes)
                      : fat_tree(b.nodes, e.nics_per_node, f->switch_.ports, rails, "/count", oversubscription);
    b.fabric = t;
    add_line("NICs", f->nic, t.node_links, true, b);
    b.notes.push_back("NICs: inside the systems' power and price (each NIC's figures are shown, not added again)");
    add_line("leaf switches", f->switch_, t.leaf, false, b);
    add_line("spine switches", f->switch_, t.spine, false, b);
    add_line("core switches", f->switch_, t.core, false, b);
    const fabric_part fibre = f->cable.value_or(fabric_part{"fibre cable, one per link", 1, std::nullopt, std::nullopt});
    add_line("cables node-leaf", fibre, t.node_links, false, b);
    add_line("cables leaf-spine", fibre, t.leaf_spine_links, false, b);
    add_line("cables spine-core", fibre, t.spine_core_links, false, b);
    const std::int64_t switch_ends = t.node_links + 2 * (t.leaf_spine_links + t.spine_core_links);
    add_line("optics at switches", f->switch_optic, ceil_div(switch_ends, f->switch_optic.ports), false, b);
    add_line("optics at nodes", f->node_optic, ceil_div(t.node_links, f->node_optic.ports), false, b);
    b.notes.push_back("fabric: " + std::to_string(t.tiers) + "-tier " + (rails ? "rail-optimised " : "") +
                      "fat tree of " + std::to_string(f->switch_.ports) + "-port switches, " + fabric_shape_note(t) +
                      "; parts as of " + f->from.date + "; node ends take " + f->node_optic.model +
                      (f->node_optic.ports > 1 ? " (a PCIe NIC with its own cage takes a single-port module: twice as many)"
                                               : ""));
}

void add_totals(bom_result& b) {
    bool priced_network = false;
    for (const bom_line& l : b.lines) {
        if (l.in_systems) continue;
        if (l.power_each) b.known_power += static_cast<double>(l.count) * *l.power_each;
        if (l.usd_each) {
            usd_range sum = b.known_usd.value_or(usd_range{});
            sum.low += static_cast<double>(l.count) * l.usd_each->low;
            sum.high += static_cast<double>(l.count) * l.usd_each->high;
            b.known_usd = sum;
            priced_network = priced_network || l.item != "systems";
        }
    }
    // A network without any price says so once; otherwise each unpriced line is named (cables draw no power).
    const bool no_network_prices = b.fabric && !priced_network;
    if (no_network_prices) b.notes.push_back("price: the catalog has no network prices; the total is the systems' alone");
    std::string unpowered, unpriced;
    for (const bom_line& l : b.lines) {
        if (l.in_systems) continue;
        const std::string what = "the " + l.item + " (" + l.model + ")";
        if (!l.power_each && l.item.find("cables") == std::string::npos)
            unpowered += (unpowered.empty() ? "" : "; ") + what;
        if (!no_network_prices && !l.usd_each && l.item != "systems") unpriced += (unpriced.empty() ? "" : "; ") + what;
    }
    if (!unpowered.empty())
        b.notes.push_back("power: the catalog has no figure for " + unpowered + ": the total leaves them out");
    if (!unpriced.empty())
        b.notes.push_back("price: the catalog has no figure for " + unpriced + ": the known price leaves them out");
}

// A switch's ports split o:1 between down and up: ports down, and the uplinks m ports down need (one at least).
struct port_split {
    double o;
    static constexpr double slack = rounding_slack;
    std::int64_t down(int ports) const { return static_cast<std::int64_t>(std::floor(ports * o / (o + 1.0) * (1.0 + slack))); }
    std::int64_t uplinks(std::int64_t m) const {
        return m > 0 ? std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(m / o * (1.0 - slack)))) : 0;
    }
};

// The switches' ports and the oversubscription a tree can be built with (a switch keeps one port up at least).
void check_tree(std::int64_t nodes, int rails, int ports, const std::string& field, double o) {
    if (ports < 2 || ports > max_switch_ports)
        throw config_error(field, std::to_string(ports) + " ports", "a fat tree needs switches of 2 ports or more",
                           "an even switch port count from 2 to " + std::to_string(max_switch_ports));
    if (nodes < 1 || nodes > max_system_accelerators || rails < 1 || rails > max_switch_ports)
        throw config_error(field, std::to_string(nodes) + " nodes of " + std::to_string(rails) + " NICs", "out of range",
                           "1 to " + std::to_string(max_system_accelerators) + " nodes of 1 to " +
                               std::to_string(max_switch_ports) + " NICs");
    if (!std::isfinite(o) || o < 1.0 || o > ports - 1)
        throw config_error("/oversubscription", format_number(o),
                           o < 1.0 ? "a switch cannot have more bandwidth up than down"
                                   : "a switch of " + std::to_string(ports) + " ports keeps one port up at least",
                           "a number from 1 (non-blocking) to " + std::to_string(ports - 1));
}

// One non-blocking pod of n nodes under spines split by `split`: its leaves, spines and links up and to the core.
struct pod_counts {
    std::int64_t leaf = 0, spine = 0, leaf_spine_links = 0, core_links = 0, spine_down = 0, spine_up = 0;
};
pod_counts pod_tree(std::int64_t n, int rails, int ports, bool rail_optimized, const port_split& split) {
    const std::int64_t half = ports / 2, per_group = rail_optimized ? n : n * rails, groups = rail_optimized ? rails : 1;
    pod_counts p;
    p.leaf = groups * ceil_div(per_group, half);
    p.leaf_spine_links = n * rails;  // non-blocking leaves: one uplink a NIC
    const std::int64_t least = ceil_div(p.leaf_spine_links, split.down(ports));
    const std::int64_t fullest = std::min(per_group, half);  // the uplinks of the pod's fullest leaf
    if (least > fullest) return p;                          // spine == 0: more than two tiers (the caller says so)
    p.spine = smallest_divisor_at_least(fullest, least);
    p.spine_down = ceil_div(p.leaf_spine_links, p.spine);
    p.spine_up = split.uplinks(p.spine_down);
    p.core_links = p.spine * p.spine_up;
    return p;
}

}  // namespace

fat_tree_counts fat_tree(std::int64_t nodes, int rails, int ports, bool rail_optimized, const std::string& field,
                         double oversubscription) {
    check_tree(nodes, rails, ports, field, oversubscription);
    const double o = oversubscription;
    fat_tree_counts t;
    t.oversubscription = o;
    const std::int64_t nics = nodes * rails;
    t.node_links = nics;
    if (nics <= ports) {  // one switch joins them all
        t.tiers = 1;
        t.leaf = 1;
        return t;
    }
    // A leaf's ports down (o = 1: half; the rest of its ports idle) and the uplinks m NICs on a leaf need.
    const port_split split{o};
    const auto uplinks = [&split](std::int64_t m) { return split.uplinks(m); };
    t.leaf_down = split.down(ports);
    t.leaf_up = uplinks(t.leaf_down);
    // Leaves per rail (rail-optimised: each holds leaf_down nodes' NIC i) or over all NICs, the last one part full.
    const std::int64_t per_group = rail_optimized ? nodes : nics, groups = rail_optimized ? rails : 1;
    const std::int64_t full = per_group / t.leaf_down, rest = per_group % t.leaf_down;
    t.leaf = groups * ceil_div(per_group, t.leaf_down);
    t.leaf_spine_links = groups * (full * t.leaf_up + uplinks(rest));
    const std::int64_t k = ports, half = ports / 2, up = t.leaf_spine_links;
    if (t.leaf <= k) {
        // Two tiers: every leaf reaches every spine, its uplinks spread evenly over them, so the spines are the
        // smallest divisor of the fullest leaf's uplinks that gives them the ports (NVIDIA's reference architectures:
        // DGX B300 XDR, 72 uplinks a leaf, 4 units 18 spines, 8 units 36).
        t.tiers = 2;
        t.spine = smallest_divisor_at_least(full > 0 ? t.leaf_up : uplinks(rest), ceil_div(up, k));
        return t;
    }
    // Three tiers: `ports` pods of half-port spines, each pod ports/2 leaves of leaf_down NICs (exact when the pods
    // are full; a part-full pod's rounding is not counted).
    const std::int64_t most = k * half * t.leaf_down;
    if (nics > most)
        throw config_error(field, std::to_string(nics) + " NICs",
                           "more than a three-tier fat tree of " + std::to_string(ports) + "-port switches joins (" +
                               std::to_string(most) + " with " + std::to_string(t.leaf_down) + " ports down a leaf)",
                           "fewer accelerators, or a link whose switch has more ports");
    t.tiers = 3;
    t.spine = ceil_div(up, half);  // non-blocking above the leaves: half of a spine's ports down, half up
    t.core = ceil_div(up, k);
    t.spine_core_links = up;
    return t;
}

fat_tree_counts fat_tree_pods(std::int64_t nodes, int rails, int ports, bool rail_optimized, const std::string& field,
                              double oversubscription, std::int64_t pod_nodes) {
    check_tree(nodes, rails, ports, field, oversubscription);
    if (pod_nodes < 1 || pod_nodes > max_system_accelerators)
        throw config_error("/pod_nodes", std::to_string(pod_nodes), "out of range",
                           "an integer from 1 to " + std::to_string(max_system_accelerators));
    // One pod (or one switch's worth of NICs): full bisection throughout, nothing above a pod to oversubscribe.
    if (pod_nodes >= nodes || nodes * rails <= ports) {
        fat_tree_counts t = fat_tree(nodes, rails, ports, rail_optimized, field, 1.0);
        t.pods = 1;
        t.pod_nodes = nodes;
        return t;
    }
    // A pod fills a leaf at least (a rail's leaf holds ports / 2 nodes; a plain one ports / 2 NICs).
    const std::int64_t leaf_nodes = rail_optimized ? ports / 2 : ceil_div(static_cast<std::int64_t>(ports / 2), rails);
    if (pod_nodes < leaf_nodes)
        throw config_error("/pod_nodes", std::to_string(pod_nodes), "a pod smaller than a leaf's " +
                               std::to_string(leaf_nodes) + " nodes", "at least " + std::to_string(leaf_nodes) + " nodes a pod");
    const port_split split{oversubscription};
    const std::int64_t pods = ceil_div(nodes, pod_nodes), last_nodes = nodes - (pods - 1) * pod_nodes;
    const pod_counts full = pod_tree(pod_nodes, rails, ports, rail_optimized, split);
    if (full.spine == 0) {
        const std::int64_t most = (ports / 2) * split.down(ports);
        throw config_error("/pod_nodes", std::to_string(pod_nodes),
                           "a pod of " + std::to_string(pod_nodes * rails) + " NICs is more than two tiers of " +
                               std::to_string(ports) + "-port switches join with spines at " +
                               format_number(oversubscription) + ":1 (" + std::to_string(most) + " NICs)",
                           "at most " + std::to_string(most / rails) + " nodes a pod");
    }
    if (pods > ports)
        throw config_error("/pod_nodes", std::to_string(pod_nodes),
                           std::to_string(pods) + " pods: more than a " + std::to_string(ports) +
                               "-port core switch reaches",
                           "pods of at least " + std::to_string(ceil_div(nodes, ports)) + " nodes");
    const pod_counts last = pod_tree(last_nodes, rails, ports, rail_optimized, split);
    fat_tree_counts t;
    t.tiers = 3;
    t.oversubscription = oversubscription;
    t.pods = pods;
    t.pod_nodes = pod_nodes;
    t.node_links = nodes * rails;
    t.leaf_down = t.leaf_up = ports / 2;
    t.spine_down = full.spine_down;
    t.spine_up = full.spine_up;
    t.leaf = (pods - 1) * full.leaf + last.leaf;
    t.spine = (pods - 1) * full.spine + last.spine;
    t.leaf_spine_links = t.node_links;
    t.spine_core_links = (pods - 1) * full.core_links + last.core_links;
    t.core = ceil_div(t.spine_core_links, static_cast<std::int64_t>(ports));
    return t;
}

bom_result cluster_bom(const catalog& cat, const std::string& preset, std::int64_t devices,
                       std::optional<power> rack_power, std::optional<double> oversubscription,
                       std::optional<std::int64_t> pod_nodes, const std::optional<bom_storage>& storage,
                       const std::map<std::string, usd_range>& part_prices) {
    const system_entry& e = cat.system_preset(preset, "/system");
    if (devices < 1 || devices > max_system_accelerators)
        throw config_error("/count", std::to_string(devices), "out of range",
                           "an integer from 1 to " + std::to_string(max_system_accelerators));
    if (rack_power && !(rack_power->si() > 0 && *rack_power <= max_unit_power))
        throw config_error("/rack_power", format(*rack_power), "out of range",
                           "a power above 0 and at most " + format(max_unit_power) +
                               ", such as \"40 kW\"");
    if (pod_nodes && (*pod_nodes < 0 || *pod_nodes > max_system_accelerators))
        throw config_error("/pod_nodes", std::to_string(*pod_nodes), "out of range",
                           "an integer from 0 (no pods) to " + std::to_string(max_system_accelerators));
    bom_result b;
    b.preset = e.name;
    b.devices = devices;
    b.units = ceil_div(devices, e.economics.devices);
    b.nodes = b.units * e.nodes;
    if (b.units * e.economics.devices != devices)
        b.notes.push_back(std::to_string(devices) + " accelerators: " + std::to_string(b.units) + " whole units of " +
                          std::to_string(e.economics.devices));
    add_systems(e, rack_power, b);
    add_fabric(cat, e, oversubscription.value_or(e.oversubscription), pod_nodes.value_or(e.pod_nodes), b);
    add_support_networks(cat, e, b);
    if (storage) add_storage(cat, e, *storage, b);
    apply_part_prices(part_prices, b);
    add_totals(b);
    return b;
}

}  // namespace capplan
