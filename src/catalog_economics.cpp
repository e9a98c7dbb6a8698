// The catalog's money and power (issue #22 item 1): a system's purchase price, power and cloud offers, and sites.
// Every figure carries its source and the date it held (models/schema/common.schema.json#/$defs/dated).
#include <cctype>

#include "capplan/error.hpp"
#include "catalog_readers.hpp"

namespace capplan::detail {

namespace {

// "2025", "2025-06" or "2025-06-14": when the figure held.
std::string read_date(object_reader& r) {
    const std::string d = r.required_string("date");
    const auto digits = [&](std::size_t from, std::size_t n) {
        for (std::size_t i = from; i < from + n; ++i)
            if (i >= d.size() || !std::isdigit(static_cast<unsigned char>(d[i]))) return false;
        return true;
    };
    const bool ok = digits(0, 4) && (d.size() == 4 || (d.size() >= 7 && d[4] == '-' && digits(5, 2) &&
                                                       (d.size() == 7 || (d.size() == 10 && d[7] == '-' && digits(8, 2)))));
    if (!ok) throw config_error(r.path("date"), "'" + d + "'", "not a date", "YYYY, YYYY-MM or YYYY-MM-DD");
    return d;
}

dated_source read_dated(object_reader& r) {
    // The optional keys first: a missing required one is then reported as missing, not as a near-miss of an
    // optional key not yet read ("note: unknown key; did you mean 'date'?").
    r.choice("confidence", {"datasheet", "config", "paper", "measured", "secondary", "derived"});
    r.string("note");
    dated_source s;
    s.source = r.required_string("source");
    s.date = read_date(r);
    return s;
}

std::optional<sourced_power> read_power_figure(object_reader& parent, std::string_view key) {
    const json* v = parent.get(key);
    if (!v || v->is_null()) return std::nullopt;
    object_reader r(*v, parent.path(key));
    sourced_power p;
    p.value = r.required_quantity<power>("value");
    if (!(p.value.si() > 0 && p.value <= max_unit_power))
        throw config_error(r.path("value"), format(p.value), "out of range",
                           "a power above 0 and at most " + format(max_unit_power) + ", such as \"10.2 kW\"");
    r.string("load");  // what ran while it was measured
    p.from = read_dated(r);
    r.finish();
    return p;
}

cloud_offer read_offer(object_reader& r, int devices) {
    cloud_offer o;
    o.provider = r.required_string("provider");
    o.instance = r.required_string("instance");
    o.region = r.string("region").value_or("");
    o.commitment = r.required_choice("commitment", {"on_demand", "reserved", "1y", "3y"});
    o.devices = static_cast<int>(r.integer("devices", 1, max_system_accelerators).value_or(devices));
    const auto price = read_usd(r, "usd_per_hour");
    if (!price) r.missing("usd_per_hour", "US dollars an hour > 0");
    if (!(*price > 0.0)) throw config_error(r.path("usd_per_hour"), format_number(*price), "must be > 0", "US dollars an hour > 0");
    o.usd_per_hour = *price;
    o.from = read_dated(r);
    r.finish();
    return o;
}

sourced_number read_site_number(object_reader& parent, std::string_view key, double low, double high) {
    object_reader r = parent.child(key);
    sourced_number n;
    const auto x = r.number("value", low);
    if (!x) r.missing("value", "a number");
    if (*x > high)
        throw config_error(r.path("value"), format_number(*x), "must be at most " + format_number(high),
                           "a number from " + format_number(low) + " to " + format_number(high));
    n.value = *x;
    n.from = read_dated(r);
    r.finish();
    return n;
}

}  // namespace


std::optional<double> read_usd(object_reader& r, std::string_view key) {
    const auto x = r.number(key, 0.0);
    if (x && !(*x < max_usd))
        throw config_error(r.path(key), format_number(*x), "not a price", "US dollars from 0 to " + format_number(max_usd));
    return x;
}

usd_range read_usd_range(object_reader& r, std::string_view key) {
    const json* usd = r.get(key);
    if (!usd) r.missing(key, "a price in US dollars, or [low, high]");
    const auto check = [&](const json& x) {
        if (!x.is_number() || x.is_boolean() || !(x.get<double>() > 0.0) || !(x.get<double>() < max_usd))
            r.wrong_type(key, *usd, "a price in US dollars > 0, or [low, high]");
        return x.get<double>();
    };
    if (!usd->is_array()) {
        const double x = check(*usd);
        return {x, x};
    }
    if (usd->size() != 2) r.wrong_type(key, *usd, "[low, high]");
    const usd_range range{check((*usd)[0]), check((*usd)[1])};
    if (range.low > range.high) r.wrong_type(key, *usd, "[low, high] with low <= high");
    return range;
}

purchase_price read_purchase_price(object_reader& parent, std::string_view key) {
    object_reader r = parent.child(key);
    purchase_price p;
    p.usd = read_usd_range(r, "usd");
    p.kind = r.required_choice("kind", {"list", "street", "estimate"});
    p.from = read_dated(r);
    r.finish();
    return p;
}

namespace {
// A part's power and price where published (a fabric part's, a support network part's).
void read_part_figures(object_reader& r, fabric_part& p) {
    p.power = read_power_figure(r, "power");
    if (const json* v = r.get("price"); v && !v->is_null()) p.price = read_purchase_price(r, "price");
}

fabric_part read_fabric_part(object_reader& parent, std::string_view key, bool ported, int min_ports) {
    object_reader r = parent.child(key);
    fabric_part p;
    p.model = r.required_string("model");
    if (ported) p.ports = static_cast<int>(r.required_integer("ports", min_ports, max_switch_ports));
    if (min_ports > 1 && p.ports % 2 != 0)  // a non-blocking fat tree splits a switch's ports half down, half up
        throw config_error(r.path("ports"), std::to_string(p.ports), "not even", "an even port count >= 2");
    read_part_figures(r, p);
    r.finish();
    return p;
}
}  // namespace

std::optional<fabric_parts> read_link_fabric(object_reader& parent) {
    const json* v = parent.get("fabric");
    if (!v || v->is_null()) return std::nullopt;
    object_reader r(*v, parent.path("fabric"));
    fabric_parts f;
    f.switch_ = read_fabric_part(r, "switch", true, 2);
    f.nic = read_fabric_part(r, "nic", false, 1);
    f.switch_optic = read_fabric_part(r, "switch_optic", true, 1);
    f.node_optic = read_fabric_part(r, "node_optic", true, 1);
    if (const json* c = r.get("cable"); c && !c->is_null()) f.cable = read_fabric_part(r, "cable", false, 1);
    f.from = read_dated(r);
    r.finish();
    return f;
}

namespace {
support_part read_support_part(object_reader& r) {
    support_part p;
    p.item = r.required_string("item");
    const auto unit = r.integer("per_scalable_unit", 1, max_system_accelerators);
    const auto node = r.integer("per_node", 1, max_system_accelerators);
    if (unit.has_value() == node.has_value())
        throw config_error(r.path("per_scalable_unit"), unit ? "both" : "neither", "a count per scalable unit or per node",
                           "one of per_scalable_unit and per_node, an integer >= 1");
    p.per_unit = unit.value_or(0);
    p.per_node = node.value_or(0);
    p.switch_of = r.string("switch_of").value_or("");
    const bool own = r.get("model") != nullptr;
    if (own == !p.switch_of.empty())
        throw config_error(r.path("model"), own ? "both" : "neither", "a part's own model or a link's switch",
                           "one of model (with power and price where published) and switch_of (a catalog link)");
    if (own) {
        p.part.model = r.required_string("model");
        read_part_figures(r, p.part);
    }
    r.finish();
    return p;
}
}  // namespace

std::optional<support_networks> read_support_networks(object_reader& parent) {
    const json* v = parent.get("support_networks");
    if (!v || v->is_null()) return std::nullopt;
    object_reader r(*v, parent.path("support_networks"));
    support_networks n;
    n.reference = r.required_string("reference");
    n.unit_nodes = static_cast<int>(r.required_integer("scalable_unit_nodes", 1, max_system_accelerators));
    const json* parts = r.get("parts");
    if (!parts) r.missing("parts", "a non-empty array of parts");
    if (!parts->is_array() || parts->empty()) r.wrong_type("parts", *parts, "a non-empty array of parts");
    for (std::size_t i = 0; i < parts->size(); ++i) {
        object_reader pr((*parts)[i], r.path("parts") + "/" + std::to_string(i));
        n.parts.push_back(read_support_part(pr));
    }
    if (const json* levels = r.get("storage_levels"); levels && !levels->is_null()) {
        object_reader lr(*levels, r.path("storage_levels"));
        for (const char* level : {"good", "better", "best"}) {
            const json* l = lr.get(level);
            if (!l) continue;
            object_reader g(*l, lr.path(level));
            storage_level sl;
            for (auto [key, rate] : {std::pair{"read", &sl.read}, std::pair{"write", &sl.write}}) {
                const auto q = g.required_quantity<byte_rate>(key);
                if (!(q.si() > 0))
                    throw config_error(g.path(key), format(q), "must be a rate > 0", "a data rate such as \"15 GB/s\"");
                *rate = q;
            }
            g.finish();
            n.storage_levels[level] = sl;
        }
        lr.finish();
        n.storage_levels_source = r.required_string("storage_levels_source");
    }
    n.from = read_dated(r);
    r.finish();
    return n;
}

system_economics read_system_economics(object_reader& r, const std::string& preset, int per_node, int nodes) {
    system_economics e;
    e.preset = preset;
    e.devices = per_node * nodes;
    if (const json* v = r.get("price"); v && !v->is_null()) e.price = read_purchase_price(r, "price");
    if (const json* v = r.get("power"); v && !v->is_null()) {
        object_reader p(*v, r.path("power"));
        e.max_power = read_power_figure(p, "max");
        e.measured_power = read_power_figure(p, "measured");
        p.finish();
    }
    if (const json* v = r.get("cloud"); v && !v->is_null()) {
        if (!v->is_array()) r.wrong_type("cloud", *v, "a list of cloud offers");
        for (std::size_t i = 0; i < v->size(); ++i) {
            object_reader o((*v)[i], r.path("cloud") + "/" + std::to_string(i));
            e.cloud.push_back(read_offer(o, per_node));  // an instance is a node unless it says otherwise
        }
    }
    return e;
}

site_spec read_site(object_reader& r, const header& h) {
    site_spec s;
    s.name = h.name;
    s.source = h.source;
    for (const site_figure& f : site_figures) s.*f.member = read_site_number(r, f.key, f.low, f.high);
    if (const json* v = r.get(carbon_figure.key); v && !v->is_null())
        s.carbon_kg_per_kwh = read_site_number(r, carbon_figure.key, carbon_figure.low, carbon_figure.high);
    return s;
}

}  // namespace capplan::detail
