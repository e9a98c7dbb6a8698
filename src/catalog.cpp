#include "capplan/catalog.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "capplan/analysis/eager_class.hpp"
#include "catalog_readers.hpp"
#include "hf_config_json.hpp"

#ifndef CAPPLAN_SOURCE_CATALOG_DIR
#define CAPPLAN_SOURCE_CATALOG_DIR "models"
#endif

namespace capplan {

using detail::json;
using detail::object_reader;

std::string kind_name(entry_kind k) {
    switch (k) {
        case entry_kind::model: return "model";
        case entry_kind::accelerator: return "accelerator";
        case entry_kind::link: return "link";
        case entry_kind::system: return "system";
        case entry_kind::storage: return "storage";
        case entry_kind::site: return "site";
    }
    return "entry";
}

std::string kind_folder(entry_kind k) {
    switch (k) {
        case entry_kind::model: return "llm";
        case entry_kind::accelerator: return "accelerators";
        case entry_kind::link: return "links";
        case entry_kind::system: return "systems";
        case entry_kind::storage: return "storage";
        case entry_kind::site: return "sites";
    }
    return "";
}

namespace detail {

json read_json_file(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw config_error(file.string(), "", "cannot read file");
    std::stringstream ss;
    ss << in.rdbuf();
    try {
        return parse_json_text(ss.str(), "the file");
    } catch (const json_error& e) {
        throw json_error(file.string(), "", e.problem());
    }
}

}  // namespace detail

namespace detail {

header read_header(object_reader& r, bool inline_entry) {
    header h;
    h.name = inline_entry ? r.string("name").value_or("custom") : r.required_string("name");
    h.source = inline_entry ? r.string("source").value_or("inline object in the scenario") : r.required_string("source");
    const std::vector<std::string> levels{"datasheet", "config", "paper", "measured", "secondary", "derived"};
    if (inline_entry) r.choice("confidence", levels);
    else r.required_choice("confidence", levels);
    r.string("description");
    r.string("notes");
    if (const json* a = r.get("aliases"); a && !a->is_null()) {
        if (!a->is_array()) r.wrong_type("aliases", *a, "a list of strings");
        for (const auto& x : *a) {
            if (!x.is_string()) r.wrong_type("aliases", *a, "a list of strings");
            h.aliases.push_back(x.get<std::string>());
        }
    }
    return h;
}

namespace {
// A name-valued field that may be null (e.g. "link": null for no scale-up link).
std::string optional_name(object_reader& r, std::string_view key) { return r.string(key).value_or(""); }

// A text value that may be sourced ({"value": ..., "source": ...}).
void skip_text(object_reader& r, std::string_view key) {
    const json* v = r.get(key);
    if (v && v->is_object()) {
        object_reader s(*v, r.path(key));
        s.string("value");
        s.allow({"source", "confidence", "note"});
        s.finish();
    }
}

std::optional<double> sourced_count(object_reader& r, std::string_view key) {
    const json* v = r.get(key);
    if (!v || v->is_null()) return std::nullopt;
    if (v->is_object()) {
        object_reader s(*v, r.path(key));
        const auto n = s.integer("value", 0);
        s.allow({"source", "confidence", "note"});
        s.finish();
        if (!n) return std::nullopt;
        return static_cast<double>(*n);
    }
    const auto n = r.integer(key, 0);
    return n ? std::optional<double>(static_cast<double>(*n)) : std::nullopt;
}

// "compute_capability": {"value": "10.3", "source": ...}: NVIDIA's major.minor, kept as major x 10 + minor.
std::optional<int> read_compute_capability(object_reader& r) {
    const json* v = r.get("compute_capability");
    if (!v || v->is_null()) return std::nullopt;
    object_reader s(*v, r.path("compute_capability"));
    const std::string text = s.required_string("value");
    s.required_string("source");
    s.allow({"confidence", "note"});
    s.finish();
    auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    const auto dot = text.find('.');
    const bool digits = dot != std::string::npos && dot > 0 && dot <= 2 && dot + 2 == text.size() &&
                        std::all_of(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(dot), digit) && digit(text.back());
    if (!digits) throw config_error(s.path("value"), "'" + text + "'", "not a compute capability", "major.minor, e.g. \"9.0\" or \"10.3\"");
    return std::stoi(text.substr(0, dot)) * 10 + (text.back() - '0');
}

}  // namespace

// A kernel's published rates: {"points": [{"head_dim", "seq_len", "rate"}, ...], "causal": true, "source", ...}, each
// (head_dim, seq_len) once; the points returned sorted by head dimension, then sequence length, beside the source.
attention_kernel_table read_attention_rates(object_reader& r) {
    attention_kernel_table table;
    table.source = r.required_string("source");
    r.allow({"confidence", "note", "date"});
    if (r.boolean("causal") != true) r.missing("causal", "true (the rates of a causal mask, as a decoder trains)");
    const json* pts = r.get("points");
    if (!pts || !pts->is_array() || pts->empty())
        r.missing("points", "[{\"head_dim\": 64, \"seq_len\": 2048, \"rate\": \"79 TFLOP/s\"}, ...]");
    std::vector<attention_rate_point> out;
    for (std::size_t i = 0; i < pts->size(); ++i) {
        object_reader pr((*pts)[i], r.path("points") + "/" + std::to_string(i));
        attention_rate_point p;
        p.head_dim = static_cast<double>(pr.required_integer("head_dim", 1, 1024));
        p.seq_len = static_cast<double>(pr.required_integer("seq_len", 1, std::int64_t{1} << 24));
        p.rate = pr.required_quantity<flop_rate>("rate");
        if (p.rate.si() <= 0) throw config_error(pr.path("rate"), "", "must be positive", "a FLOP rate such as \"79 TFLOP/s\"");
        pr.finish();
        for (const auto& q : out)
            if (q.head_dim == p.head_dim && q.seq_len == p.seq_len)
                throw config_error(pr.path("seq_len"), std::to_string(static_cast<std::int64_t>(p.seq_len)),
                                   "a second rate for this head dimension and sequence length", "one point each");
        out.push_back(p);
    }
    std::sort(out.begin(), out.end(), [](const attention_rate_point& x, const attention_rate_point& y) {
        return x.head_dim != y.head_dim ? x.head_dim < y.head_dim : x.seq_len < y.seq_len;
    });
    r.finish();
    table.points = std::move(out);
    return table;
}

accelerator_spec read_accelerator(object_reader& r, const header& h) {
    accelerator_spec a;
    a.name = h.name;
    a.source = h.source;
    a.vendor = r.required_choice("vendor", {"NVIDIA", "AMD", "Intel", "Google", "AWS", "Huawei", "generic"});
    skip_text(r, "form_factor");
    {
        object_reader mem = r.child("memory");
        a.memory_capacity = mem.quantity<data_size>("capacity");
        a.memory_bandwidth = mem.quantity<byte_rate>("bandwidth");
        a.memory_visible = mem.quantity<data_size>("visible");
        skip_text(mem, "type");
        mem.finish();
    }
    {
        object_reader peaks = r.child("peak_dense_flops");
        for (const char* key : {"fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8", "int4"}) {
            const json* v = peaks.get(key);
            if (!v) continue;
            const json* inner = v->is_object() && v->contains("value") ? &(*v)["value"] : v;
            peak_rate p;
            if (inner->is_string() && inner->get<std::string>() == "unsupported") {
                p.status = peak_rate::state::unsupported;
            } else if (const auto q = peaks.quantity<flop_rate>(key)) {
                p.status = peak_rate::state::known;
                p.value = *q;
            }
            a.peak_dense_flops[key] = p;
        }
        if (!peaks.get("bf16")) peaks.missing("bf16", "a FLOP rate such as \"989.5 TFLOP/s\" or null");
        peaks.finish();
    }
    // A sourced number: an efficiency in (0, 1.5] unless `norm` (a p-norm exponent in [1, 64]).
    auto fraction = [](object_reader& rd, std::string_view key, bool norm = false) -> std::optional<double> {
        const json* v = rd.get(key);
        if (!v || v->is_null()) return std::nullopt;
        std::string where = rd.path(key);
        const json* num = v;
        if (v->is_object()) {
            object_reader sv(*v, where);
            num = sv.get("value");
            sv.required_string("source");
            sv.allow({"confidence", "note"});
            sv.finish();
            where += "/value";
        }
        const double x = num && num->is_number() ? num->get<double>() : -1.0;
        if (norm && (x < 1.0 || x > 64.0))
            throw config_error(where, num ? short_value(*num) : "", "not a norm exponent",
                               "a number in [1, 64] (1: compute + memory add; large: the larger alone)");
        if (!norm && (x <= 0.0 || x > 1.5))
            throw config_error(where, num ? short_value(*num) : "", "not an efficiency", "a number in (0, 1.5]");
        return num->get<double>();
    };
    // An object of fractions by key (number formats, or eager kernel classes).
    auto by_key = [&](object_reader& e, const char* field, const auto& keys, std::map<std::string, double>& out) {
        if (const json* mm = e.get(field); mm && !mm->is_null()) {
            object_reader m(*mm, e.path(field));
            for (const char* key : keys)
                if (const auto f = fraction(m, key)) out[key] = *f;
            m.finish();
        }
    };
    // Training attention kernels' published rates by kernel name.
    auto attention_kernels = [](object_reader& e) {
        std::map<std::string, attention_kernel_table> out;
        if (const json* k = e.get("attention_kernels"); k && !k->is_null()) {
            object_reader kr(*k, e.path("attention_kernels"));
            for (const char* kernel : measured_attention_kernels)
                if (const json* v = kr.get(kernel); v && !v->is_null()) {
                    object_reader vr(*v, kr.path(kernel));
                    out[kernel] = read_attention_rates(vr);
                }
            kr.finish();
        }
        return out;
    };
    constexpr std::array<const char*, 8> formats{"fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8", "int4"};
    if (const json* eff = r.get("efficiency"); eff && !eff->is_null() && eff->is_object() && eff->contains("as")) {
        // Another accelerator's measured efficiencies (the same die): a sourced name, and optionally the part's own
        // matrix fractions by format and attention kernels' rates, which replace the shared ones
        // (catalog::share_named_efficiencies).
        object_reader e(*eff, r.path("efficiency"));
        object_reader as = e.child("as");
        a.efficiency_as = as.required_string("value");
        as.required_string("source");
        as.allow({"confidence", "note"});
        as.finish();
        by_key(e, "matmul", formats, a.own_matmul_efficiency);
        by_key(e, "grouped_matmul", formats, a.own_grouped_matmul_efficiency);
        a.own_attention_kernel_rates = attention_kernels(e);
        e.finish();
    } else if (const json* eff = r.get("efficiency"); eff && !eff->is_null()) {
        object_reader e(*eff, r.path("efficiency"));
        a.memory_efficiency = fraction(e, "memory_bandwidth");
        by_key(e, "matmul", formats, a.matmul_efficiency);
        by_key(e, "grouped_matmul", formats, a.grouped_matmul_efficiency);
        by_key(e, "eager_elementwise", eager_class_names, a.eager_elementwise_efficiency);
        a.attention_kernel_rates = attention_kernels(e);
        a.kernel_launch = e.quantity<duration>("kernel_launch");
        a.prefill_step_overhead = e.quantity<duration>("prefill_step_overhead");
        a.roofline_norm = fraction(e, "roofline_norm", true);
        if (const json* f = e.get("matmul_by_size"); f && !f->is_null()) {
            object_reader fr(*f, e.path("matmul_by_size"));
            a.matmul_by_size_format = fr.required_choice("format", {"fp32", "tf32", "bf16", "fp16", "fp8"});
            fr.required_string("source");
            fr.allow({"confidence", "note"});
            const json* pts = fr.get("points");
            if (!pts || !pts->is_array() || pts->empty()) fr.missing("points", "[{\"flops\": <number>, \"efficiency\": <number>}, ...]");
            for (std::size_t i = 0; i < pts->size(); ++i) {
                object_reader pr((*pts)[i], fr.path("points") + "/" + std::to_string(i));
                const auto w = pr.number("flops", 0.0), v = pr.number("efficiency", 0.0);
                if (!w || *w <= 0 || (!a.matmul_by_size.empty() && *w <= a.matmul_by_size.back().first))
                    throw config_error(pr.path("flops"), w ? std::to_string(*w) : "", "not increasing", "increasing positive FLOPs");
                if (!v || *v <= 0 || *v > 1.5)
                    throw config_error(pr.path("efficiency"), v ? std::to_string(*v) : "", "not an efficiency", "a number in (0, 1.5]");
                pr.finish();
                a.matmul_by_size.emplace_back(*w, *v);
            }
            fr.finish();
        }
        e.finish();
    }
    a.l2_cache = r.quantity<data_size>("l2_cache");
    sourced_count(r, "compute_units");
    a.compute_capability = read_compute_capability(r);
    a.tdp = r.quantity<power>("tdp");
    if (const json* up = r.get("scale_up"); up && !up->is_null()) {
        object_reader s(*up, r.path("scale_up"));
        a.scale_up_link = optional_name(s, "link");
        sourced_count(s, "links");
        a.scale_up_bandwidth_per_direction = s.quantity<byte_rate>("bandwidth_per_direction");
        s.finish();
    }
    if (const json* host = r.get("host_link"); host && !host->is_null()) {
        object_reader s(*host, r.path("host_link"));
        a.host_link = optional_name(s, "link");
        sourced_count(s, "lanes");
        s.quantity<byte_rate>("bandwidth_per_direction");
        s.finish();
    }
    return a;
}

link_spec read_link(object_reader& r, const header& h) {
    link_spec l;
    l.name = h.name;
    l.source = h.source;
    l.kind = r.required_choice("kind", {"pcie", "nvlink", "infiniband", "ethernet", "infinity_fabric", "ici", "neuronlink", "hccs", "nvlink_c2c"});
    r.get("generation");
    l.scope = r.required_choice("scope", {"x16_slot", "per_device", "per_port", "per_link"});
    sourced_count(r, "lanes");
    r.quantity<byte_rate>("signaling_rate_per_lane");
    skip_text(r, "encoding");
    if (!r.get("bandwidth_per_direction")) r.missing("bandwidth_per_direction", "a data rate or null");
    l.bandwidth_per_direction = r.quantity<byte_rate>("bandwidth_per_direction");
    l.measured_bandwidth_per_direction = r.quantity<byte_rate>("measured_bandwidth_per_direction");
    l.latency = r.quantity<duration>("latency");
    return l;
}

void read_storage_aggregate(object_reader& r, storage_spec& s) {
    for (auto [key, rate] : {std::pair{"aggregate_read_bandwidth", &s.aggregate_read_bandwidth},
                             std::pair{"aggregate_write_bandwidth", &s.aggregate_write_bandwidth},
                             std::pair{"aggregate_bandwidth_per_tib", &s.aggregate_bandwidth_per_tib}}) {
        const auto q = r.quantity<byte_rate>(key);
        if (!q) continue;
        if (!(q->si() > 0))
            throw config_error(r.path(key), format(*q), "must be a rate > 0", "a data rate such as \"40 GB/s\", or null");
        if (s.scope == "aggregate")
            throw config_error(r.path(key), format(*q), "the tier's scope is aggregate: its bandwidth already is the "
                               "whole service's", "leave it out, or give a per-client scope");
        *rate = q;
    }
}

storage_spec read_storage(object_reader& r, const header& h) {
    storage_spec s;
    s.name = h.name;
    s.source = h.source;
    s.kind = r.required_choice("kind", {"local_nvme", "nfs", "parallel_fs", "object_store", "host_dram"});
    s.scope = r.required_choice("scope", {"per_drive", "per_node", "per_client", "per_connection", "per_socket", "aggregate"});
    sourced_count(r, "devices");
    s.capacity = r.quantity<data_size>("capacity");
    if (!r.get("read_bandwidth")) r.missing("read_bandwidth", "a data rate or null");
    s.read_bandwidth = r.quantity<byte_rate>("read_bandwidth");
    s.write_bandwidth = r.quantity<byte_rate>("write_bandwidth");
    read_storage_aggregate(r, s);
    s.read_iops = sourced_count(r, "read_iops");
    s.write_iops = sourced_count(r, "write_iops");
    sourced_count(r, "requests_per_second");
    s.latency = r.quantity<duration>("latency");
    return s;
}

system_entry read_system(object_reader& r, const header& h) {
    system_entry e;
    e.name = h.name;
    e.source = h.source;
    e.accelerator = r.required_string("accelerator");
    e.per_node = static_cast<int>(r.required_integer("per_node", 1));
    e.nodes = static_cast<int>(r.integer("nodes", 1).value_or(1));
    {
        object_reader up = r.child("scale_up");
        e.scale_up_link = up.required_string("link");
        e.scale_up_topology = up.required_choice("topology", {"nvswitch", "pcie_host", "pcie_switch", "full_mesh", "torus_2d", "torus_3d", "none"});
        e.scale_up_domain = static_cast<int>(up.required_integer("domain_size", 1));
        if (const json* shape = up.get("torus_shape"); shape && shape->is_array())
            for (const auto& d : *shape) e.torus_shape.push_back(d.get<int>());
        e.scale_up_reduction = up.boolean("in_network_reduction").value_or(false);
        up.finish();
    }
    if (const json* out = r.get("scale_out"); out && !out->is_null()) {
        object_reader s(*out, r.path("scale_out"));
        e.scale_out_link = s.required_string("link");
        e.nics_per_node = static_cast<int>(s.required_integer("nics_per_node", 1));
        e.scale_out_topology = s.choice("topology", {"rail_optimized_fat_tree", "fat_tree", "dcn"}).value_or("");
        e.oversubscription = s.number("oversubscription", 1.0).value_or(1.0);
        e.pod_nodes = static_cast<int>(s.integer("pod_nodes", 1, max_system_accelerators).value_or(0));
        e.scale_out_reduction = s.boolean("in_network_reduction").value_or(false);
        s.finish();
    }
    if (const json* host = r.get("host"); host && !host->is_null()) {
        object_reader s(*host, r.path("host"));
        skip_text(s, "cpu");
        e.host_sockets = static_cast<int>(sourced_count(s, "sockets").value_or(0));
        s.quantity<data_size>("memory");
        e.host_memory = s.string("memory_per_socket").value_or("");
        s.finish();
    }
    e.host_link = r.string("host_link").value_or("");
    e.storage = r.string("storage").value_or("");
    if (const json* net = r.get("storage_network"); net && !net->is_null()) {
        // The node's own links to a storage fabric (a reference architecture's count and port rate), sourced.
        object_reader s(*net, r.path("storage_network"));
        const auto links = s.required_integer("links", 1, 64);
        const auto rate = s.quantity<byte_rate>("bandwidth_per_direction");
        if (!rate) s.missing("bandwidth_per_direction", "each link's rate, e.g. \"200 Gb/s\"");
        if (!(rate->si() > 0)) throw config_error(s.path("bandwidth_per_direction"), format(*rate), "must be a rate > 0");
        // What the card carries across its links when less than their sum (a BlueField-3 B3240: two 400 Gb/s ports,
        // about 480 Gb/s in all): the slower of the two binds.
        const bool has_aggregate = s.get("aggregate") != nullptr;
        const auto aggregate = s.quantity<byte_rate>("aggregate");
        if (has_aggregate && !aggregate)
            throw config_error(s.path("aggregate"), "null", "must be a rate", "a rate below links x bandwidth_per_direction, or no aggregate");
        if (aggregate && !(aggregate->si() > 0)) throw config_error(s.path("aggregate"), format(*aggregate), "must be a rate > 0");
        if (s.required_string("source").empty()) throw config_error(s.path("source"), "''", "must name where the count comes from");
        s.choice("confidence", {"datasheet", "config", "paper", "measured", "secondary", "derived"});
        s.allow({"note"});
        s.finish();
        e.storage_network = static_cast<double>(links) * *rate;
        if (aggregate && !(*aggregate < *e.storage_network))
            throw config_error(s.path("aggregate"), format(*aggregate), "is not below the links' sum (" + format(*e.storage_network) + "), so it limits nothing",
                               "a rate below links x bandwidth_per_direction, or no aggregate");
        if (aggregate) e.storage_network = aggregate;
    }
    e.economics = read_system_economics(r, e.name, e.per_node, e.nodes);
    e.support = read_support_networks(r);
    return e;
}

}  // namespace detail

namespace {

// models/uncertainty.json: {"method": text, "bands": {quantity: {"p10", "p90", "rows"}}}.
uncertainty_bands read_uncertainty(const json& j) {
    object_reader r(j, "", true);
    uncertainty_bands u;
    u.method = r.required_string("method");
    r.allow({"$comment", "generated_from"});
    object_reader bands = r.child("bands");
    for (const auto& item : j.at("bands").items()) {
        object_reader b = bands.child(item.key());
        error_band e;
        for (auto [key, value] : {std::pair{"p10", &e.p10}, std::pair{"p90", &e.p90}}) {
            const auto x = b.number(key, -0.99);
            if (!x) b.missing(key, "a signed relative error > -0.99");
            *value = *x;
        }
        e.rows = static_cast<int>(b.required_integer("rows", 1, 1'000'000));
        if (e.p10 > e.p90) throw config_error(b.path("p10"), format_number(e.p10), "above p90", "p10 <= p90");
        b.finish();
        u.bands[item.key()] = e;
    }
    r.finish();
    return u;
}

const std::vector<entry_kind> all_kinds{entry_kind::model, entry_kind::accelerator, entry_kind::link,
                                        entry_kind::system, entry_kind::storage, entry_kind::site};
using namespace detail;

// Re-throws an error from inside a catalog file with the file in front of the JSON pointer.
template <class F>
auto in_file(const std::filesystem::path& file, F&& f) {
    try {
        return f();
    } catch (const unit_error& e) {
        throw unit_error(file.string() + "#" + e.field(), e.value(), e.problem(), e.allowed());
    } catch (const json_error&) {
        throw;
    } catch (const config_error& e) {
        throw config_error(file.string() + "#" + e.field(), e.value(), e.problem(), e.allowed());
    }
}

}  // namespace

catalog catalog::load(const std::filesystem::path& dir) {
    catalog c;
    c.dir_ = dir;
    if (std::ifstream in(dir / "VERSION"); in) {  // read once: every result carries it
        std::string v;
        if (in >> v) c.version_ = v;
    }
    std::error_code ec;  // a path too long or unreadable is "not found", not a filesystem_error
    if (!std::filesystem::is_directory(dir, ec))
        throw config_error(dir.string(), "", "catalog folder not found",
                           "a folder with llm/, accelerators/, links/, systems/, storage/ (set CAPPLAN_CATALOG)");
    for (entry_kind kind : all_kinds) {
        const auto folder = dir / kind_folder(kind);
        if (!std::filesystem::is_directory(folder, ec)) continue;
        std::vector<std::filesystem::path> files;
        for (const auto& f : std::filesystem::directory_iterator(folder))
            if (f.path().extension() == ".json") files.push_back(f.path());
        std::sort(files.begin(), files.end());
        for (const auto& file : files) {
            const json j = detail::read_json_file(file);
            in_file(file, [&] {
                object_reader r(j, "", true);
                const header h = read_header(r, false);
                switch (kind) {
                    case entry_kind::model: {
                        const json* config = r.get("config");
                        if (!config) r.missing("config", "the model's Hugging Face config.json fields");
                        r.string("hf_repo");
                        model_spec m = detail::model_from_hf_json(*config, h.name, "/config", true);
                        m.source = h.source;
                        c.models_[h.name] = std::move(m);
                        break;
                    }
                    case entry_kind::accelerator: c.accelerators_[h.name] = read_accelerator(r, h); break;
                    case entry_kind::link:
                        c.links_[h.name] = read_link(r, h);
                        if (auto f = read_link_fabric(r)) c.fabrics_[h.name] = std::move(*f);
                        break;
                    case entry_kind::storage: c.storage_[h.name] = read_storage(r, h); break;
                    case entry_kind::system: c.systems_[h.name] = read_system(r, h); break;
                    case entry_kind::site: c.sites_[h.name] = read_site(r, h); break;
                }
                r.finish();
                std::ifstream in(file);
                std::stringstream text;
                text << in.rdbuf();
                c.entries_.push_back({kind, h.name, file, text.str()});
                for (const auto& key : [&] { auto v = h.aliases; v.push_back(h.name); return v; }()) {
                    const auto lk = detail::lower(key);
                    c.exact_.emplace(key, c.entries_.size() - 1);
                    const auto [it, inserted] = c.index_.emplace(lk, c.entries_.size() - 1);
                    if (!inserted && c.entries_[it->second].name != h.name)
                        throw config_error("/aliases", "'" + key + "'",
                                           "name or alias already used by " + c.entries_[it->second].file.string(),
                                           "a name unique across the catalog");
                }
                return 0;
            });
        }
    }
    if (const auto file = dir / "uncertainty.json"; std::filesystem::is_regular_file(file, ec)) {
        const json j = detail::read_json_file(file);
        in_file(file, [&] {
            c.uncertainty_ = read_uncertainty(j);
            return 0;
        });
    }
    // Cross-references: a system names an accelerator, links and storage that must exist. (Plain references, not
    // structured bindings: C++20 lets lambdas capture those, clang 14 does not, and the fuzzers build with clang.)
    for (const auto& entry : c.systems_) {
        const std::string& name = entry.first;
        const system_entry& s = entry.second;
        const auto file = dir / kind_folder(entry_kind::system);
        in_file(file / (detail::lower(name) + ".json"), [&] {
            c.accelerator(s.accelerator, "/accelerator");
            c.link(s.scale_up_link, "/scale_up/link");
            if (!s.scale_out_link.empty()) c.link(s.scale_out_link, "/scale_out/link");
            if (!s.storage.empty()) c.storage(s.storage, "/storage");
            if (!s.host_link.empty()) c.link(s.host_link, "/host_link");
            if (!s.host_memory.empty()) c.storage(s.host_memory, "/host/memory_per_socket");
            if (s.support)
                for (std::size_t i = 0; i < s.support->parts.size(); ++i) {
                    const std::string& of = s.support->parts[i].switch_of;
                    const std::string field = "/support_networks/parts/" + std::to_string(i) + "/switch_of";
                    if (!of.empty() && !c.fabric(c.link(of, field).name))
                        throw config_error(field, of, "the link has no fabric parts", "a link whose catalog entry has a fabric");
                }
            return 0;
        });
    }
    for (auto& entry : c.accelerators_) {
        const std::string& name = entry.first;
        accelerator_spec& a = entry.second;
        in_file(dir / kind_folder(entry_kind::accelerator) / (detail::lower(name) + ".json"), [&] {
            c.share_named_efficiencies(a, "");
            if (!a.scale_up_link.empty()) c.link(a.scale_up_link, "/scale_up/link");
            if (!a.host_link.empty()) c.link(a.host_link, "/host_link/link");
            return 0;
        });
    }
    return c;
}

void catalog::share_named_efficiencies(accelerator_spec& a, const std::string& field) const {
    if (a.efficiency_as.empty()) return;
    const std::string where = field + "/efficiency/as/value";
    const accelerator_spec& from = accelerator(a.efficiency_as, where);
    if (!from.efficiency_as.empty())
        throw config_error(where, "'" + a.efficiency_as + "'", "shares another accelerator's efficiencies itself",
                           "an accelerator with its own efficiency block");
    // The part's own matrix fractions and kernel rates (its catalog "matmul" / "grouped_matmul" / "attention_kernels"
    // beside "as") replace the shared ones.
    share_efficiencies(a, from);
    for (const auto& [format, f] : a.own_matmul_efficiency) a.matmul_efficiency[format] = f;
    for (const auto& [format, f] : a.own_grouped_matmul_efficiency) a.grouped_matmul_efficiency[format] = f;
    for (const auto& [kernel, table] : a.own_attention_kernel_rates) a.attention_kernel_rates[kernel] = table;
}

std::filesystem::path catalog::default_dir() {
    if (const char* env = std::getenv("CAPPLAN_CATALOG"); env && *env) return env;
    return CAPPLAN_SOURCE_CATALOG_DIR;
}


const catalog::entry& catalog::find(entry_kind k, std::string_view name, std::string_view field) const {
    if (const auto e = exact_.find(name); e != exact_.end() && entries_[e->second].kind == k) return entries_[e->second];
    const auto it = index_.find(detail::lower(name));
    if (it != index_.end() && entries_[it->second].kind == k) return entries_[it->second];
    // Match against names and aliases (an alias is often what the user half-remembers),
    // then suggest canonical names.
    std::vector<std::string> keys;
    for (const auto& [key, pos] : index_)
        if (entries_[pos].kind == k) keys.push_back(key);
    std::vector<std::string> suggestions;
    for (const auto& key : detail::closest(name, keys, 8)) {
        const std::string& canonical = entries_[index_.at(key)].name;
        if (std::find(suggestions.begin(), suggestions.end(), canonical) == suggestions.end())
            suggestions.push_back(canonical);
        if (suggestions.size() == 3) break;
    }
    throw unknown_name_error(std::string(field), std::string(name), kind_name(k), suggestions);
}

const model_spec& catalog::model(std::string_view name, std::string_view field) const {
    return models_.at(find(entry_kind::model, name, field).name);
}
const accelerator_spec& catalog::accelerator(std::string_view name, std::string_view field) const {
    return accelerators_.at(find(entry_kind::accelerator, name, field).name);
}
const link_spec& catalog::link(std::string_view name, std::string_view field) const {
    return links_.at(find(entry_kind::link, name, field).name);
}
const storage_spec& catalog::storage(std::string_view name, std::string_view field) const {
    return storage_.at(find(entry_kind::storage, name, field).name);
}
const site_spec& catalog::site(std::string_view name, std::string_view field) const {
    return sites_.at(find(entry_kind::site, name, field).name);
}

const fabric_parts* catalog::fabric(std::string_view link) const {
    // By the link's name or any alias of it (lower-case, as find matches them).
    std::string name(link);
    if (const auto a = index_.find(detail::lower(link)); a != index_.end() && entries_[a->second].kind == entry_kind::link)
        name = entries_[a->second].name;
    const auto it = fabrics_.find(name);
    return it == fabrics_.end() ? nullptr : &it->second;
}

const system_entry& catalog::system_preset(std::string_view name, std::string_view field) const {
    return systems_.at(find(entry_kind::system, name, field).name);
}

system_spec catalog::system(std::string_view name, std::string_view field) const {
    const system_entry& e = system_preset(name, field);
    system_spec s;
    s.preset = e.name;
    s.accelerator = accelerator(e.accelerator);
    s.per_node = e.per_node;
    s.count = e.per_node * e.nodes;
    s.scale_up = link(e.scale_up_link);
    s.scale_up_topology = e.scale_up_topology;
    s.scale_up_domain = e.scale_up_domain;
    s.scale_up_reduction = e.scale_up_reduction;
    s.torus_shape = e.torus_shape;
    if (!e.scale_out_link.empty())
        s.scale_out = scale_out_spec{link(e.scale_out_link), e.nics_per_node, e.scale_out_topology, e.oversubscription,
                                     e.scale_out_reduction, e.pod_nodes};
    if (!e.storage.empty()) s.storage = storage(e.storage);
    s.storage_network = e.storage_network;
    return s;
}

std::vector<std::string> catalog::names(entry_kind k) const {
    std::vector<std::string> v;
    for (const auto& e : entries_)
        if (e.kind == k) v.push_back(e.name);
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return detail::lower(a) < detail::lower(b); });
    return v;
}

entry_kind catalog::kind_of(std::string_view name) const {
    const auto it = index_.find(detail::lower(name));
    if (it != index_.end()) return entries_[it->second].kind;
    std::vector<std::string> all;
    for (const auto& e : entries_) all.push_back(e.name);
    throw unknown_name_error("/name", std::string(name), "entry", detail::closest(name, all));
}

std::string catalog::raw_json(std::string_view name) const {
    kind_of(name);  // throws unknown_name_error with suggestions
    return entries_[index_.at(detail::lower(name))].text;
}

std::string catalog::canonical_name(std::string_view name) const {
    kind_of(name);
    return entries_[index_.at(detail::lower(name))].name;
}

namespace {
std::mutex catalog_mutex;
std::unique_ptr<catalog> the_catalog;
std::filesystem::path catalog_path;  // empty: catalog::default_dir()
}  // namespace

const catalog& default_catalog() {
    std::lock_guard lock(catalog_mutex);
    if (!the_catalog)
        the_catalog = std::make_unique<catalog>(catalog::load(catalog_path.empty() ? catalog::default_dir() : catalog_path));
    return *the_catalog;
}

void set_catalog_dir(const std::filesystem::path& dir) {
    std::lock_guard lock(catalog_mutex);
    catalog_path = dir;
    the_catalog.reset();
}

system_spec accelerator_node(const catalog& cat, const accelerator_spec& acc, std::string* preset) {
    for (const auto& sys : cat.names(entry_kind::system))
        if (cat.system_preset(sys).accelerator == acc.name) {
            if (preset) *preset = sys;
            return cat.system(sys);
        }
    if (preset) preset->clear();
    system_spec node;
    node.accelerator = acc;
    node.per_node = 8;
    if (!acc.scale_up_link.empty()) {
        node.scale_up = cat.link(acc.scale_up_link);
        node.scale_up_topology = node.scale_up->kind == "nvlink" ? "nvswitch" : "pcie_host";
        node.scale_up_domain = 8;
    }
    return node;
}

}  // namespace capplan
