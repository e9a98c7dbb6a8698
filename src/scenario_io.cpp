#include "capplan/spec/scenario_io.hpp"
#include "capplan/spec/scenario_value.hpp"

#include "capplan/analysis/cold_start.hpp"
#include "capplan/analysis/host_link.hpp"
#include "capplan/analysis/inference_memory.hpp"
#include "capplan/analysis/lora.hpp"
#include "capplan/analysis/storage_io.hpp"
#include "capplan/spec/engine_profile.hpp"

#include <bit>
#include <fstream>
#include <sstream>

#include "capplan/analysis/serving_sim.hpp"
#include "capplan/spec/hf_config.hpp"
#include "catalog_readers.hpp"
#include "hf_config_json.hpp"

namespace capplan {

using detail::json;
using detail::object_reader;

namespace {

// A duration the serving simulation adds to its clock: bounded, so that sums of them stay finite (1e308 s of host work
// per step made every time infinite and the error named the simulation's internal step_time).
std::optional<duration> bounded_duration(object_reader& r, std::string_view key, double max_s, const std::string& allowed) {
    const std::optional<duration> d = r.quantity<duration>(key);
    if (d && d->si() > max_s) throw config_error(r.path(key), format(*d), "out of range", allowed);
    return d;
}

model_spec read_model(const json& v, const catalog& cat, const std::filesystem::path& base_dir,
                      const std::string& field = "/model") {
    if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s.empty())
            throw config_error(field, "''", "empty model name", "a catalog model name or a path to a Hugging Face config.json");
        try {
            return cat.model(s, field);
        } catch (const unknown_name_error&) {
            std::filesystem::path p(s);
            if (p.is_relative() && !base_dir.empty()) p = base_dir / p;
            // error_code overloads: a name too long for a path is an unknown name, not a filesystem_error.
            std::error_code ec;
            const bool directory = std::filesystem::is_directory(p, ec);
            const bool looks_like_path = s.find(".json") != std::string::npos || directory;
            if (directory) p /= "config.json";
            if (!std::filesystem::is_regular_file(p, ec)) {
                if (looks_like_path) throw config_error(field, "'" + s + "'", "config.json file not found", "a catalog model name or a path to a Hugging Face config.json");
                throw;
            }
            std::ifstream in(p);
            std::stringstream text;
            text << in.rdbuf();
            const json config = detail::parse_json_text(text.str(), p.string());
            std::string name = p.parent_path().filename().string();
            if (name.empty()) name = p.stem().string();
            auto m = detail::model_from_hf_json(config, name, field, false);
            m.source = "Hugging Face config " + p.string();
            return m;
        }
    }
    if (!v.is_object())
        throw config_error(field, detail::short_value(v), "expected a catalog name, a path to a config.json or an object",
                           "e.g. \"Llama-3.1-8B\", \"path/to/config.json\", or {\"model_type\": \"llama\", ...}");
    if (v.contains("config")) {  // catalog-format object: {"name": ..., "config": {...}}
        object_reader r(v, field, true);
        const auto h = detail::read_header(r, true);
        r.string("hf_repo");
        auto m = detail::model_from_hf_json(*r.get("config"), h.name, field + "/config", true);
        m.source = h.source;
        r.finish();
        return m;
    }
    std::string name = v.contains("name") && v["name"].is_string() ? v["name"].get<std::string>() : "custom";
    auto m = detail::model_from_hf_json(v, name, field, false);
    m.source = "inline Hugging Face config fields";
    return m;
}

template <class Spec, class Lookup, class Reader>
Spec name_or_inline(const json& v, const std::string& field, Lookup lookup, Reader reader) {
    if (v.is_string()) return lookup(v.get<std::string>(), field);
    object_reader r(v, field, true);
    const auto h = detail::read_header(r, true);
    Spec s = reader(r, h);
    r.finish();
    return s;
}

// {"preset": a catalog tier, ...}: that tier with the deployment's own figures over it (its aggregate limits
// above all, which depend on how many servers the file system or bucket has).
storage_spec read_storage_preset(const json& v, const std::string& field, const catalog& cat) {
    object_reader r(v, field, true);
    storage_spec s = cat.storage(r.required_string("preset"), r.path("preset"));
    for (auto [key, rate] : {std::pair{"read_bandwidth", &s.read_bandwidth}, std::pair{"write_bandwidth", &s.write_bandwidth}})
        if (const auto q = r.quantity<byte_rate>(key)) {
            if (!(q->si() > 0)) throw config_error(r.path(key), format(*q), "must be a rate > 0");
            *rate = q;
        }
    if (const auto l = r.quantity<duration>("latency")) s.latency = l;
    if (const auto c = r.quantity<data_size>("capacity")) {
        if (!(c->si() > 0)) throw config_error(r.path("capacity"), format(*c), "must be a size > 0");
        s.capacity = c;
    }
    detail::read_storage_aggregate(r, s);
    r.finish();
    return s;
}

// Scale-up topology assumed for an accelerator's own link when no system preset says otherwise.
std::string default_topology(const link_spec& l) {
    if (l.kind == "nvlink") return "nvswitch";
    if (l.kind == "pcie") return "pcie_host";
    if (l.kind == "ici") return "torus_2d";
    return "full_mesh";  // Infinity Fabric, Gaudi RoCE, NeuronLink, HCCS: point-to-point links between peers
}

system_spec read_system(object_reader& sys, const catalog& cat) {
    system_spec s;
    const auto preset = sys.string("preset");
    if (preset) s = cat.system(*preset, sys.path("preset"));
    const int preset_per_node = s.per_node;

    if (const json* a = sys.get("accelerator"); a && !a->is_null()) {
        s.accelerator = name_or_inline<accelerator_spec>(
            *a, sys.path("accelerator"), [&](const std::string& n, const std::string& f) { return cat.accelerator(n, f); },
            detail::read_accelerator);
        // An inline one may name a catalog one's efficiencies; a named one was resolved when the catalog was read.
        if (a->is_object()) cat.share_named_efficiencies(s.accelerator, sys.path("accelerator"));
        if (!preset) s.scale_up.reset();
    } else if (!preset) {
        sys.missing("accelerator", "an accelerator name (see `capplan list accelerators`) or a system preset");
    }
    const auto count = sys.integer("count", 1, max_system_accelerators);
    const auto per_node = sys.integer("per_node", 1, max_system_accelerators);
    if (count) s.count = static_cast<int>(*count);
    if (per_node) {
        s.per_node = static_cast<int>(*per_node);
        if (!count && !preset) s.count = s.per_node;  // one node of per_node
    } else if (!preset || s.count < s.per_node) {
        s.per_node = s.count;  // no preset: one node holds them all; a preset node partly used
    }
    if (s.per_node > s.count)
        throw config_error(sys.path("per_node"), std::to_string(s.per_node), "more accelerators per node than in total",
                           "at most count (" + std::to_string(s.count) + ")");
    if (s.count % s.per_node != 0)
        throw config_error(sys.path("count"), std::to_string(s.count),
                           "not a whole number of nodes of " + std::to_string(s.per_node),
                           "a multiple of per_node (" + std::to_string(s.per_node) + ")");
    if (preset && s.scale_up_domain == preset_per_node) s.scale_up_domain = s.per_node;  // the node is the domain
    if (!preset && s.per_node > 1) {
        // GPUs of a node talk over the accelerator's own scale-up link, or else through the host's
        // PCIe (PCIe-only cards such as L40S, L4).
        const std::string& link = !s.accelerator.scale_up_link.empty() ? s.accelerator.scale_up_link : s.accelerator.host_link;
        if (!link.empty()) {
            s.scale_up = cat.link(link, sys.path("accelerator"));
            s.scale_up_topology = default_topology(*s.scale_up);
            s.scale_up_domain = s.per_node;
        }
    }
    if (const json* out = sys.get("scale_out")) {
        const std::string f = sys.path("scale_out");
        if (out->is_null()) {
            s.scale_out.reset();
        } else if (out->is_string()) {
            scale_out_spec so = s.scale_out.value_or(scale_out_spec{{}, s.per_node, "fat_tree", 1.0});
            so.link = cat.link(out->get<std::string>(), f);
            s.scale_out = so;
        } else {
            // An object overrides the preset's fields it names and inherits the others.
            object_reader r(*out, f, true);
            scale_out_spec so = s.scale_out.value_or(scale_out_spec{{}, s.per_node, "fat_tree", 1.0});
            const json* link = r.get("link");
            if (link && !link->is_null())
                so.link = name_or_inline<link_spec>(
                    *link, r.path("link"), [&](const std::string& n, const std::string& lf) { return cat.link(n, lf); },
                    detail::read_link);
            else if (!s.scale_out)
                r.missing("link", "a link name such as IB-NDR or an inline link object");
            if (const auto n = r.integer("nics_per_node", 1)) so.nics_per_node = static_cast<int>(*n);
            if (const auto t = r.choice("topology", {"rail_optimized_fat_tree", "fat_tree", "dcn"})) so.topology = *t;
            if (const auto o = r.number("oversubscription", 1.0)) so.oversubscription = *o;
            if (const auto pn = r.integer("pod_nodes", 1, max_system_accelerators)) so.pod_nodes = static_cast<int>(*pn);
            if (const auto red = r.boolean("in_network_reduction")) so.in_network_reduction = *red;
            r.finish();
            s.scale_out = so;
        }
    }
    // The node's own links to remote storage: a rate overrides the preset's; null: they share the compute NICs.
    if (const json* net = sys.get("storage_network"); net && net->is_null()) {
        s.storage_network.reset();
    } else if (const auto rate = sys.quantity<byte_rate>("storage_network")) {
        if (!(rate->si() > 0)) throw config_error(sys.path("storage_network"), format(*rate), "must be a rate > 0");
        s.storage_network = rate;
    }
    if (const json* st = sys.get("storage")) {
        if (st->is_null()) s.storage.reset();
        else if (st->is_object() && st->contains("preset"))
            s.storage = read_storage_preset(*st, sys.path("storage"), cat);
        else
            s.storage = name_or_inline<storage_spec>(
                *st, sys.path("storage"), [&](const std::string& n, const std::string& f) { return cat.storage(n, f); },
                detail::read_storage);
    }
    sys.finish();
    return s;
}

precision_spec read_precision(object_reader& r) {
    precision_spec p;
    const auto fmt = [&](std::string_view key) -> std::optional<number_format> {
        const auto s = r.string(key);
        if (!s) return std::nullopt;
        return find_format(*s, r.path(key));
    };
    if (auto w = fmt("weights")) p.weights = *w;
    p.expert_weights = fmt("expert_weights");
    if (auto a = fmt("activations")) p.activations = *a;
    p.kv_cache = fmt("kv_cache").value_or(p.activations);
    // Weight-only formats (W4A16, W8A16, QLoRA's NF4) compute in the activation format.
    const bool weight_only = p.weights.name == "int4" || p.weights.name == "int8" || p.weights.peak_key == "nf4";
    p.compute = fmt("compute").value_or(weight_only ? p.activations : p.weights);
    r.finish();
    return p;
}

// Whether some FFN has a gated unit whose input activation_func_fp8_input_store keeps (dense or routed experts).
bool has_gated_mlp(const model_spec& m) {
    return (m.gated_mlp && m.dense_ffn_layer_count() > 0) || (m.is_moe() && m.moe.gated);
}

// Block-scaled FP8 training GEMMs by Transformer Engine's support checks (serving engines have kernels of their own). MXFP8: compute capability 10.0 or higher ("blackwell
// and above") and, in its recent releases, below 12.0 ("not supported on 12.0+ architectures yet"). FP8 block scaling:
// 9.0 or higher (with CUDA 12.9). Another NVIDIA part is told so; other vendors (no compute capability): their fp8 peak
// decides.
void check_block_scaled_fp8_hardware(const precision_spec& p, const accelerator_spec& a) {
    const std::string& f = p.compute.name;
    if ((f != "mxfp8" && f != "fp8_blockwise") || !a.compute_capability) return;
    const int cc = *a.compute_capability;
    const bool mx = f == "mxfp8";
    if (mx ? cc >= 100 && cc < 120 : cc >= 90) return;
    throw config_error("/precision/compute", f,
                       std::string(mx ? "MXFP8 GEMMs need compute capability 10.x or 11.x (data-centre Blackwell"
                                      : "FP8 block-scaled GEMMs need compute capability 9.0 or higher (Hopper, Blackwell") +
                           "; Transformer Engine's support check); " + a.name + " is " + std::to_string(cc / 10) + "." +
                           std::to_string(cc % 10),
                       mx ? "fp8 (per-tensor scaling), or B200, B300, GB200 or GB300"
                          : "fp8 (per-tensor scaling) where the accelerator has an fp8 peak, or a Hopper or Blackwell part");
}

parallelism_spec read_parallelism(object_reader& r, const system_spec& sys) {
    parallelism_spec p;
    auto degree = [&](std::string_view key, int& out) {
        if (const auto v = r.integer(key, 1, max_system_accelerators)) out = static_cast<int>(*v);
    };
    degree("tp", p.tp);
    degree("pp", p.pp);
    degree("cp", p.cp);
    degree("ep", p.ep);
    degree("vpp", p.vpp);
    p.etp = p.ep > 1 ? 1 : p.tp;
    degree("etp", p.etp);
    p.sequence_parallel = r.boolean("sequence_parallel").value_or(false);
    p.expert_imbalance = r.number("expert_imbalance", 1.0).value_or(1.0);
    p.attention_dp = r.boolean("attention_dp").value_or(false);
    p.cp_algorithm = r.choice("cp_algorithm", {"ring", "all_gather", "all_to_all"}).value_or("ring");
    p.pipeline_schedule = r.choice("pipeline_schedule", {"1f1b", "dualpipe"}).value_or("1f1b");
    p.rank_order = r.choice("rank_order", {"tp-cp-ep-dp-pp", "tp-cp-pp-dp"}).value_or("tp-cp-ep-dp-pp");
    if (p.dualpipe() && (p.pp < 2 || p.pp % 2 != 0 || p.vpp > 1))
        throw config_error(r.path("pipeline_schedule"), "dualpipe",
                           "pairs stage i with stage pp - 1 - i on each rank: needs an even pp >= 2 and no interleaving (got pp " +
                               std::to_string(p.pp) + ", vpp " + std::to_string(p.vpp) + ")",
                           "1f1b, or an even pp with vpp 1");
    if (p.attention_dp && (p.ep != p.tp || p.tp < 2 || p.pp != 1 || p.cp != 1))
        throw config_error(r.path("attention_dp"), "true",
                           "needs ep = tp >= 2 with pp = 1 and cp = 1 (got tp " + std::to_string(p.tp) + ", ep " +
                               std::to_string(p.ep) + ", pp " + std::to_string(p.pp) + ", cp " + std::to_string(p.cp) + ")",
                           "false, or the routed experts spread over the tp group: ep = tp");
    const auto dp = r.integer("dp", 1, max_system_accelerators);
    // Products in int64: each degree is at most 2^20, so three of them fit; model_parallel() (int)
    // is safe once mp is known to divide the system's count.
    const std::int64_t mp = std::int64_t{p.tp} * p.pp * p.cp;
    if (dp) {
        p.dp = static_cast<int>(*dp);
        // mp is checked against the count first: each factor is at most 2^20, so mp x dp could overflow.
        const std::string product = mp > sys.count ? "tp x pp x cp = " + std::to_string(mp)
                                                   : "tp x pp x cp x dp = " + std::to_string(mp * p.dp);
        if (mp > sys.count || mp * p.dp != sys.count)
            throw config_error(r.path("dp"), std::to_string(p.dp),
                               product + " does not equal the system's " + std::to_string(sys.count) + " accelerators",
                               "dp = count / (tp x pp x cp)");
    } else {
        if (mp > sys.count || sys.count % mp != 0)
            throw config_error(r.path().empty() ? "/" : r.path(), "tp=" + std::to_string(p.tp) + " pp=" + std::to_string(p.pp) + " cp=" + std::to_string(p.cp),
                               "tp x pp x cp = " + std::to_string(mp) + " does not divide the system's " +
                                   std::to_string(sys.count) + " accelerators",
                               "degrees whose product divides system.count");
        p.dp = static_cast<int>(sys.count / mp);
    }
    if (std::int64_t{p.ep} * p.etp > std::int64_t{p.tp} * p.dp * p.cp)
        throw config_error(r.path("ep"), std::to_string(p.ep), "ep x etp = " + std::to_string(std::int64_t{p.ep} * p.etp) +
                           " is larger than the tp x dp x cp = " + std::to_string(p.tp * p.dp * p.cp) + " ranks of a pipeline stage",
                           "ep x etp <= tp x dp x cp");
    r.finish();
    return p;
}

// training.lora: {"rank": r, "targets": [...] or "all_linear", "dropout": p, "dropout_position": "pre" or "post"}.
lora_spec read_lora(object_reader& r) {
    std::string names;
    for (const auto& n : lora_projections) names += (names.empty() ? "" : ", ") + n;
    lora_spec l;
    l.rank = r.required_integer("rank", 1, 65536);
    const json* t = r.get("targets");
    const std::string field = r.path("targets");
    const std::string allowed = "\"all_linear\" or a list of " + names;
    if (!t) r.missing("targets", allowed);
    std::vector<std::string> targets;
    if (t->is_string() && t->get<std::string>() == "all_linear") {
        targets = lora_all_linear;
        l.all_linear = true;
    } else if (t->is_array() && !t->empty()) {
        for (std::size_t i = 0; i < t->size(); ++i) {
            const std::string& name = lora_projections[detail::name_index(
                (*t)[i], field + "/" + std::to_string(i), lora_projections, "a projection LoRA targets here")];
            if (std::find(targets.begin(), targets.end(), name) == targets.end()) targets.push_back(name);
        }
    } else {
        throw config_error(field, detail::short_value(*t), "expected \"all_linear\" or a non-empty list", allowed);
    }
    l.set_targets(targets);
    // A fused projection's adapter replaces its parts' adapters: both would adapt the same weights twice.
    auto fused = [&](lora_target whole, std::initializer_list<lora_target> parts, const std::string& what) {
        if (!l.has(whole)) return;
        for (const lora_target part : parts)
            if (l.has(part))
                throw config_error(field, lora_projections[static_cast<std::size_t>(whole)] + " with " +
                                              lora_projections[static_cast<std::size_t>(part)],
                                   lora_projections[static_cast<std::size_t>(whole)] + " is one adapter over the fused " + what,
                                   "either the fused projection or its parts");
    };
    fused(lora_target::qkv_proj, {lora_target::q_proj, lora_target::k_proj, lora_target::v_proj}, "q, k and v");
    fused(lora_target::gate_up_proj, {lora_target::gate_proj, lora_target::up_proj}, "gate and up projections");
    const auto d = r.number("dropout", 0.0);
    if (d && *d >= 1.0) throw config_error(r.path("dropout"), format_number(*d), "must be below 1", "a probability in [0, 1)");
    l.dropout = d.value_or(0.0);
    l.dropout_on_output = r.choice("dropout_position", {"pre", "post"}).value_or("pre") == "post";
    r.finish();
    return l;
}

// Megatron-Core's recompute_modules: a non-empty list of recompute_module_names.
unsigned read_recompute_modules(const json& v, const std::string& field) {
    std::string allowed;
    for (const auto& n : recompute_module_names) allowed += (allowed.empty() ? "" : ", ") + n;
    if (!v.is_array() || v.empty())
        throw config_error(field, detail::short_value(v), "expected a non-empty list of module names", allowed);
    unsigned mask = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
        const std::string at = field + "/" + std::to_string(i);
        const std::size_t k = detail::name_index(v[i], at, recompute_module_names, "a module selective recompute reruns");
        const unsigned bit = 1u << static_cast<unsigned>(k);
        if (mask & bit) throw config_error(at, "'" + recompute_module_names[k] + "'", "named twice", "each module once");
        mask |= bit;
    }
    return mask;
}

// A module the model lacks would rerun nothing: say so rather than accept it silently.
void check_training_model(const model_spec& m, const parallelism_spec& p, const training_spec& t) {
    const std::string field = "/training/recompute_modules";
    auto lacks = [&](recompute_module r, bool has, const std::string& what) {
        if (t.recomputes(r) && !has)
            throw config_error(field, recompute_module_names[static_cast<std::size_t>(std::countr_zero(static_cast<unsigned>(r)))],
                               m.name + " has no " + what, "modules the model has");
    };
    const bool dense_mlp = m.dense_ffn_layer_count() > 0;
    lacks(recompute_module::mla_up_proj, m.mla, "multi-head latent attention (MLA) up-projections");
    lacks(recompute_module::mlp, dense_mlp, "dense MLP layers (mlp reruns those; MoE layers are moe, moe_act)");
    lacks(recompute_module::moe, m.is_moe(), "MoE layers");
    lacks(recompute_module::moe_act, m.is_moe(), "MoE layers");
    lacks(recompute_module::shared_experts, m.is_moe() && m.moe.shared_experts > 0, "shared experts");
    if (t.moe_dispatcher != "alltoall" && !m.is_moe())
        throw config_error("/training/moe_dispatcher", t.moe_dispatcher, m.name + " has no experts to dispatch to",
                           "alltoall (or leave it out) for a dense model");
    if (t.moe_dispatcher != "alltoall" && p.ep == 1)
        throw config_error("/training/moe_dispatcher", t.moe_dispatcher, "dispatches over expert parallelism, and ep is 1",
                           "ep > 1, or alltoall (or leave it out)");
}

training_spec read_training(object_reader& r) {
    training_spec t;
    t.seq_len = r.required_integer("seq_len", 1);
    t.global_batch = r.required_integer("global_batch", 1);
    t.micro_batch = r.integer("micro_batch", 1).value_or(1);
    const auto rc_given = r.choice("recompute", {"none", "selective", "full"});
    const std::string rc = rc_given.value_or("none");
    t.recompute = rc == "full" ? recompute_kind::full : rc == "selective" ? recompute_kind::selective : recompute_kind::none;
    if (const json* mods = r.get("recompute_modules"); mods && !mods->is_null()) {
        if (rc_given && *rc_given != "selective")
            throw config_error(r.path("recompute_modules"), detail::short_value(*mods),
                               "names what selective recompute reruns, but recompute is \"" + *rc_given + "\"",
                               "recompute: \"selective\" (or leave recompute out), or no recompute_modules");
        t.recompute = recompute_kind::selective;
        t.recompute_modules = read_recompute_modules(*mods, r.path("recompute_modules"));
    }
    t.zero = static_cast<int>(r.integer("zero", 0).value_or(0));
    if (t.zero > 3) throw config_error(r.path("zero"), std::to_string(t.zero), "no such ZeRO stage", "0, 1, 2, 3");
    t.shard_group = static_cast<int>(r.integer("shard_group", 1).value_or(0));
    t.distributed_optimizer = r.boolean("distributed_optimizer").value_or(false);
    t.grad_reduce_in_fp32 = r.boolean("grad_reduce_in_fp32");
    t.optimizer = r.choice("optimizer", {"adamw", "adam", "sgd", "adafactor"}).value_or("adamw");
    t.master_weights = r.boolean("master_weights").value_or(true);
    t.optimizer_state_format = r.choice("optimizer_state_format", {"fp32", "bf16"}).value_or("fp32");
    t.offload_optimizer = r.boolean("offload_optimizer").value_or(false);
    t.async_checkpoint = r.boolean("async_checkpoint").value_or(true);
    t.ckpt_fully_parallel_save = r.boolean("ckpt_fully_parallel_save").value_or(true);
    t.ckpt_fully_parallel_load = r.boolean("ckpt_fully_parallel_load").value_or(false);
    t.straggler_factor = r.number("straggler_factor", 1.0).value_or(1.0);
    t.tp_comm_overlap = r.boolean("tp_comm_overlap").value_or(false);
    t.overlap_grad_reduce = r.boolean("overlap_grad_reduce").value_or(true);
    t.overlap_param_gather = r.boolean("overlap_param_gather").value_or(true);
    t.flash_attention = r.boolean("flash_attention").value_or(true);
    std::vector<std::string_view> kernels{"fused"};
    kernels.insert(kernels.end(), measured_attention_kernels.begin(), measured_attention_kernels.end());
    t.attention_kernel = r.choice("attention_kernel", kernels).value_or("fused");
    if (!t.flash_attention && t.attention_kernel != "fused")
        throw config_error(r.path("attention_kernel"), "'" + t.attention_kernel + "'",
                           "names a fused attention kernel, but flash_attention is false (scores materialised)",
                           "leave attention_kernel out, or flash_attention: true");
    if (const auto m = r.integer("packed_sample_tokens", 1)) {
        if (*m > t.seq_len)
            throw config_error(r.path("packed_sample_tokens"), std::to_string(*m), "a packed sample longer than the sequence",
                               "at most seq_len = " + std::to_string(t.seq_len) + " (or leave it out: one sample a sequence)");
        if (!t.flash_attention)
            throw config_error(r.path("packed_sample_tokens"), std::to_string(*m),
                               "packed samples attend within themselves through a fused kernel, but flash_attention is false",
                               "flash_attention: true, or leave packed_sample_tokens out");
        t.packed_sample_tokens = *m;
    }
    t.dropout = r.boolean("dropout").value_or(false);
    t.ep_comm_overlap = r.boolean("ep_comm_overlap").value_or(false);
    t.moe_dispatcher = r.choice("moe_dispatcher", {"alltoall", "deepep", "hybridep"}).value_or("alltoall");
    t.fp8_params = r.boolean("fp8_params").value_or(false);
    t.activation_func_fp8_input_store = r.boolean("activation_func_fp8_input_store").value_or(false);
    t.eager_kernels = r.choice("kernels", {"fused", "eager"}).value_or("fused") == "eager";
    t.autocast = r.boolean("autocast").value_or(false);
    t.fused_cross_entropy = r.choice("cross_entropy", {"fused", "unfused"}).value_or(t.eager_kernels ? "unfused" : "fused") == "fused";
    if (const json* l = r.get("lora"); l && !l->is_null()) {
        object_reader lr(*l, r.path("lora"), true);
        t.lora = read_lora(lr);
    }
    if (const json* d = r.get("data"); d && !d->is_null()) {
        object_reader dr(*d, r.path("data"), true);
        t.data_bytes_per_token = dr.quantity<data_size>("bytes_per_token");
        t.data_sample_size = dr.quantity<data_size>("sample_size");
        t.data_files_per_sample = dr.number("files_per_sample", 0.0).value_or(0.0);
        t.data_decode_samples_per_s_per_node = dr.number("decode_samples_per_s_per_node", 0.0);
        dr.finish();
    }
    t.mtp_layers = static_cast<int>(r.integer("mtp_layers", 0, 16).value_or(0));
    t.tokens = r.number("tokens", 1.0);
    t.price_per_device_hour = r.number("price_per_device_hour", 0.0);
    if (t.global_batch % t.micro_batch != 0)
        throw config_error(r.path("global_batch"), std::to_string(t.global_batch), "not a multiple of micro_batch",
                           "a multiple of " + std::to_string(t.micro_batch));
    r.finish();
    return t;
}

length_spec read_length(const json* v, const std::string& field) {
    length_spec l;
    if (!v || v->is_null()) return l;
    if (v->is_string()) {
        l.kind = v->get<std::string>();
        if (l.kind != "fixed" && l.kind != "trace")
            throw config_error(field, "'" + l.kind + "'", "not a length distribution",
                               "\"fixed\", \"trace\", {\"kind\": \"uniform\", \"min\", \"max\"} or {\"kind\": \"lognormal\", \"sigma\"}");
        return l;
    }
    object_reader r(*v, field, true);
    l.kind = r.required_choice("kind", {"fixed", "uniform", "lognormal", "trace"});
    if (l.kind == "uniform") {
        l.min = r.required_integer("min", 1);
        l.max = r.required_integer("max", l.min);
    } else if (l.kind == "lognormal") {
        const auto sigma = r.number("sigma", 0.0);
        if (!sigma) r.missing("sigma", "a number >= 0 (the standard deviation of ln(length))");
        l.sigma = *sigma;
        l.max = r.integer("max", 1).value_or(0);
    }
    r.finish();
    return l;
}

workload_input read_workload(object_reader& r, const std::filesystem::path& base_dir) {
    workload_input w;
    w.arrival = r.choice("arrival", {"closed_loop", "poisson", "constant_rate", "trace"}).value_or("closed_loop");
    if (w.arrival == "poisson" || w.arrival == "constant_rate") {
        const auto rate = r.number("rate_per_s", 0.0);
        if (!rate || *rate <= 0) r.missing("rate_per_s", "requests per second > 0 for an open-loop arrival");
        w.rate_per_s = *rate;
    } else {
        r.number("rate_per_s", 0.0);
    }
    w.think_time = bounded_duration(r, "think_time", 1e6, "at most 1e6 s (11.6 days)").value_or(duration{});
    w.turnaround = bounded_duration(r, "turnaround", 1e6, "at most 1e6 s (11.6 days)");
    w.input = read_length(r.get("input"), r.path("input"));
    w.output = read_length(r.get("output"), r.path("output"));
    w.requests = r.integer("requests", 1).value_or(0);
    w.warmup_requests = r.integer("warmup_requests", 0);
    w.seed = static_cast<std::uint64_t>(r.integer("seed", 0).value_or(1));
    if (const auto path = r.string("trace")) {
        std::filesystem::path p(*path);
        if (p.is_relative() && !base_dir.empty()) p = base_dir / p;
        std::ifstream in(p);
        if (!in) throw config_error(r.path("trace"), "'" + *path + "'", "trace file not found", "a CSV file: input_tokens,output_tokens[,arrival_s]");
        std::stringstream text;
        text << in.rdbuf();
        for (const auto& row : read_trace_csv(text.str(), p.string()))
            w.trace.push_back({row.input_tokens, row.output_tokens, row.arrival});
    }
    const bool wants_trace = w.arrival == "trace" || w.input.kind == "trace" || w.output.kind == "trace";
    if (wants_trace && w.trace.empty()) r.missing("trace", "a CSV trace file for trace arrivals or lengths");
    r.finish();
    return w;
}

// inference.speculative: the method, its drafter and the acceptance that sets tokens per step.
speculative_spec read_speculative(object_reader& r, const model_spec& target, const catalog& cat,
                                  const std::filesystem::path& base_dir) {
    speculative_spec sp;
    sp.method = r.required_choice("method", speculative_methods);
    // At most 64 drafted tokens: published drafters propose 1-10 (EAGLE-3 trees up to 60 nodes).
    sp.tokens = r.required_integer("tokens", 1, 64);
    const auto a = r.number("acceptance", 0.0);
    if (!a) r.missing("acceptance", "the chance a drafted token is accepted, a number in [0, 1]");
    if (!(*a <= 1.0)) throw config_error(r.path("acceptance"), format_number(*a), "not a probability", "a number in [0, 1]");
    sp.acceptance = *a;
    const json* draft = r.get("draft_model");
    if (sp.method == "draft") {
        if (!draft || draft->is_null()) r.missing("draft_model", "the draft model: a catalog name, a config.json path or config fields");
        sp.draft_model = read_model(*draft, cat, base_dir, r.path("draft_model"));
        if (sp.draft_model->vocab != target.vocab)
            throw config_error(r.path("draft_model"), "'" + sp.draft_model->name + "'",
                               "has a vocabulary of " + std::to_string(sp.draft_model->vocab) + " tokens, the target " +
                                   target.name + " " + std::to_string(target.vocab),
                               "a draft model of the target's tokenizer (the same family)");
    } else {
        if (draft && !draft->is_null())
            throw config_error(r.path("draft_model"), detail::short_value(*draft), "only method \"draft\" takes a draft model",
                               "method \"draft\", or no draft_model");
        if (sp.method != "ngram") sp.draft_model = drafter_head(target, sp.method);
    }
    r.finish();
    return sp;
}

// inference.prefix_cache: the share of prompt tokens found cached and a prefix every request shares.
prefix_cache_spec read_prefix_cache(object_reader& r, std::int64_t input_tokens) {
    prefix_cache_spec pc;
    const auto h = r.number("hit_rate", 0.0);
    if (h && !(*h <= 1.0)) throw config_error(r.path("hit_rate"), format_number(*h), "not a share", "a number in [0, 1]");
    pc.hit_rate = h.value_or(0.0);
    pc.shared_prefix_tokens = r.integer("shared_prefix_tokens", 0, input_tokens).value_or(0);
    if (!h && !r.present("shared_prefix_tokens")) r.missing("hit_rate", "hit_rate and/or shared_prefix_tokens");
    r.finish();
    return pc;
}

// inference.disaggregation: two pools of engines and the link between them.
serving_pool read_pool(object_reader& r, const catalog& cat) {
    serving_pool p;
    p.count = static_cast<int>(r.required_integer("count", 1, max_system_accelerators));
    p.tp = static_cast<int>(r.integer("tp", 1, max_system_accelerators).value_or(1));
    p.ep = static_cast<int>(r.integer("ep", 1, max_system_accelerators).value_or(1));
    if (p.count % p.tp != 0)
        throw config_error(r.path("count"), std::to_string(p.count), "is not a whole number of tp = " + std::to_string(p.tp) + " replicas",
                           "a multiple of tp");
    if (p.ep > 1 && p.ep != p.tp)
        throw config_error(r.path("ep"), std::to_string(p.ep), "a pool spreads its experts over its tp ranks",
                           "ep = tp (" + std::to_string(p.tp) + ") or 1");
    if (const auto a = r.string("accelerator")) {
        p.accelerator = cat.accelerator(*a, r.path("accelerator"));
        p.node = accelerator_node(cat, *p.accelerator);
    }
    r.finish();
    return p;
}

// A site figure the scenario replaces: a plain number within the site's bounds, its source "the scenario".
std::optional<sourced_number> site_override(object_reader& r, const detail::site_figure& f) {
    const auto x = r.number(f.key, f.low);
    if (!x) return std::nullopt;
    if (*x > f.high)
        throw config_error(r.path(f.key), format_number(*x), "must be at most " + format_number(f.high),
                           "a number from " + format_number(f.low) + " to " + format_number(f.high));
    return sourced_number{*x, {"the scenario", ""}};
}

// The scenario's `cost` object: a catalog site with the scenario's overrides, and the economics of the preset the
// system is (or, for a system given by accelerator, of the accelerator's first preset), with its price overridden.
cost_spec read_cost(object_reader& r, const catalog& cat, const system_spec& sys) {
    cost_spec c;
    c.site = cat.site(r.string("site").value_or(default_cost_site), r.path("site"));
    site_spec& s = c.site;
    for (const detail::site_figure& f : detail::site_figures)
        if (auto x = site_override(r, f)) s.*f.member = *x;
    if (auto carbon = site_override(r, detail::carbon_figure)) s.carbon_kg_per_kwh = *carbon;
    std::string preset = sys.preset;
    if (preset.empty()) accelerator_node(cat, sys.accelerator, &preset);
    if (!preset.empty() && cat.system_preset(preset).accelerator == sys.accelerator.name) {
        c.economics = cat.system_preset(preset).economics;
    } else {
        c.economics.preset = "";
        c.economics.devices = sys.per_node;
    }
    if (r.get("system_price")) c.economics.price = purchase_price{detail::read_usd_range(r, "system_price"), "given", {"the scenario", ""}};
    if (const auto p = r.quantity<power>("system_power")) {
        if (!(p->si() > 0 && *p <= max_unit_power))
            throw config_error(r.path("system_power"), format(*p), "out of range",
                               "a power above 0 and at most " + format(max_unit_power) +
                                   ", such as \"10.2 kW\"");
        c.economics.max_power = sourced_power{*p, {"the scenario", ""}};
        c.economics.measured_power.reset();
    }
    c.usd_per_device_hour = detail::read_usd(r, "price_per_device_hour");
    c.commitment = r.choice("commitment", {"on_demand", "reserved", "1y", "3y"}).value_or("on_demand");
    c.power_basis = r.choice("power", {"measured", "max"}).value_or("measured");
    if (const auto u = r.number("utilization", 0.0)) {
        if (!(*u > 0.0) || *u > 1.0)
            throw config_error(r.path("utilization"), format_number(*u), "must be in (0, 1]",
                               "the share of hours the hardware does this work, e.g. 0.6");
        c.utilization = *u;
    }
    c.other_capex_usd = detail::read_usd(r, "other_capex").value_or(0.0);
    if (const auto p = r.quantity<power>("other_power")) {
        if (!(p->si() >= 0) || *p > max_unit_power)
            throw config_error(r.path("other_power"), format(*p), "out of range",
                               "a power from 0 to " + format(max_unit_power) + ", such as \"7.7 kW\"");
        c.other_power = *p;
    }
    return c;
}

disaggregation_spec read_disaggregation(object_reader& r, const catalog& cat) {
    disaggregation_spec d;
    for (const char* key : {"prefill", "decode"}) {
        const json* v = r.get(key);
        if (!v || v->is_null()) r.missing(key, "an object {count, tp, ep, accelerator}");
        object_reader pr(*v, r.path(key), true);
        (std::string(key) == "prefill" ? d.prefill : d.decode) = read_pool(pr, cat);
    }
    if (const auto l = r.string("kv_transfer")) d.kv_transfer = cat.link(*l, r.path("kv_transfer"));
    if (static_cast<std::int64_t>(d.prefill.count) + d.decode.count > max_system_accelerators)
        throw config_error(r.path("decode") + "/count", std::to_string(d.decode.count),
                           "the two pools hold more than " + std::to_string(max_system_accelerators) + " accelerators",
                           "prefill.count + decode.count <= " + std::to_string(max_system_accelerators));
    r.finish();
    return d;
}

inference_spec read_inference(object_reader& r, const model_spec& target, const catalog& cat,
                              const std::filesystem::path& base_dir) {
    inference_spec i;
    i.input_tokens = r.required_integer("input_tokens", 1);
    i.output_tokens = r.required_integer("output_tokens", 1);
    if (const json* b = r.get("batch"); b && !b->is_null()) {
        if (b->is_string()) {
            if (b->get<std::string>() != "max")
                throw config_error(r.path("batch"), detail::short_value(*b), "not a batch size", "a positive integer or \"max\"");
            i.batch_max = true;
        } else {
            i.batch = r.integer("batch", 1);
        }
    }
    i.concurrency = r.integer("concurrency", 1);
    // The engine profile gives the defaults; each key below overrides its value.
    const engine_profile& engine = find_engine_profile(r.string("engine").value_or("vllm-v1"), r.path("engine"));
    i.engine = engine.name;
    i.memory_utilization = engine.memory_utilization;
    if (const auto u = r.number("memory_utilization", 0.0)) {
        if (*u <= 0.0 || *u > 1.0)
            throw config_error(r.path("memory_utilization"), format_number(*u), "not a share of memory", "a number in (0, 1]");
        i.memory_utilization = *u;
    }
    i.kv_block_tokens = r.integer("kv_block_tokens", 1).value_or(engine.kv_block_tokens);
    i.prefill_chunk_tokens = r.integer("prefill_chunk_tokens", 1).value_or(0);
    i.max_num_seqs = r.integer("max_num_seqs", 1).value_or(0);
    i.kv_admission = r.choice("kv_admission", kv_admission_policies).value_or(engine.kv_admission);
    i.runtime_reserve = r.quantity<data_size>("runtime_reserve");
    i.prefill_dispatch = r.choice("prefill_dispatch", prefill_dispatches).value_or(engine.prefill_dispatch);
    i.chunked_prefill = r.boolean("chunked_prefill").value_or(engine.chunked_prefill);
    i.custom_allreduce = r.boolean("custom_allreduce").value_or(true);
    if (const json* e = r.get("engine_overhead"); e && !e->is_null()) {
        object_reader er(*e, r.path("engine_overhead"), true);
        // Host work per step or kernel: milliseconds in every engine measured; 10 s bounds the simulation's sums.
        i.engine_overhead.step = bounded_duration(er, "step", 10.0, "at most 10 s");
        i.engine_overhead.prefill_step = bounded_duration(er, "prefill_step", 10.0, "at most 10 s");
        i.engine_overhead.prefill_kernel = bounded_duration(er, "prefill_kernel", 10.0, "at most 10 s");
        er.finish();
    }
    if (const json* w = r.get("workload"); w && !w->is_null()) {
        object_reader wr(*w, r.path("workload"), true);
        i.workload = read_workload(wr, base_dir);
        if (i.workload->arrival == "closed_loop" && !i.concurrency)
            throw config_error(r.path("concurrency"), "", "a closed-loop workload needs the number of users",
                               "inference.concurrency, or an open-loop workload.arrival (poisson, constant_rate, trace)");
    }
    if (const json* sp = r.get("speculative"); sp && !sp->is_null()) {
        object_reader sr(*sp, r.path("speculative"), true);
        i.speculative = read_speculative(sr, target, cat, base_dir);
    }
    if (const json* d = r.get("disaggregation"); d && !d->is_null()) {
        object_reader dr(*d, r.path("disaggregation"), true);
        i.disaggregation = read_disaggregation(dr, cat);
    }
    if (const json* o = r.get("kv_offload"); o && !o->is_null()) {
        object_reader orr(*o, r.path("kv_offload"), true);
        kv_offload_spec k;
        k.tier = orr.string("tier").value_or("");
        if (k.tier.empty()) orr.missing("tier", "\"host\" or a catalog storage name (e.g. a local NVMe tier)");
        const auto c = orr.quantity<data_size>("capacity");
        if (!c) orr.missing("capacity", "the tier's size per node, e.g. \"1 TB\"");
        if (!(c->si() > 0)) throw config_error(orr.path("capacity"), format(*c), "must be more than nothing", "e.g. \"1 TB\"");
        k.capacity = *c;
        orr.finish();
        i.kv_offload = k;
    }
    if (const json* pc = r.get("prefix_cache"); pc && !pc->is_null()) {
        object_reader pr(*pc, r.path("prefix_cache"), true);
        i.prefix_cache = read_prefix_cache(pr, i.input_tokens);
    }
    if ((i.batch || i.batch_max) && i.concurrency)
        throw config_error(r.path("concurrency"), std::to_string(*i.concurrency), "give batch or concurrency, not both",
                           "batch (requests decoded together) or concurrency (users with a request in flight)");
    r.finish();
    return i;
}

}  // namespace

speculative_spec read_speculative(std::string_view json_text, const model_spec& target, const catalog& cat,
                                  const std::string& field) {
    const json j = detail::parse_json_text(json_text, field);
    object_reader r(j, field, true);
    return read_speculative(r, target, cat, {});
}

cost_spec read_cost(std::string_view json_text, const catalog& cat, const system_spec& sys, const std::string& field) {
    const json j = detail::parse_json_text(json_text, field);
    object_reader r(j, field, true);
    cost_spec c = read_cost(r, cat, sys);
    r.finish();
    return c;
}

prefix_cache_spec read_prefix_cache(std::string_view json_text, std::int64_t input_tokens, const std::string& field) {
    const json j = detail::parse_json_text(json_text, field);
    object_reader r(j, field, true);
    return read_prefix_cache(r, input_tokens);
}

// The rate at which one device gets offloaded KV blocks back: its host link (measured, or raw x PCIe's
// measured efficiency); from a storage tier also that tier's read rate per node shared by the node's
// devices, and from a remote tier the node's network to it (its storage links, else its NICs) shared
// likewise, whichever is slowest.
void resolve_kv_offload(scenario& sc, const catalog& cat) {
    kv_offload_spec& k = *sc.inference->kv_offload;
    const std::string field = "/inference/kv_offload/tier";
    const cold_start_host_entries host = cold_start_host_in(sc.system, cat);
    std::optional<byte_rate> link;
    if (host.host_link) link = host_link_rate(*host.host_link, cat, &k.how);
    if (!link || !(link->si() > 0))
        throw config_error(field, "'" + k.tier + "'", "the catalog does not know " + sc.system.accelerator.name + "'s host link rate",
                           "a system whose preset or accelerator names a host_link");
    k.reload = *link;
    if (k.tier == "host") return;
    const storage_spec& st = cat.storage(k.tier, field);
    storage_scope scope;
    scope.drives = std::min(sc.system.per_node, sc.system.count);
    scope.drives_assumed = true;
    scope.nodes = sc.system.nodes();
    std::vector<std::string> notes;
    const auto node = storage_node_rate(st, false, scope, detail::note_sink(notes));
    if (!node) throw config_error(field, "'" + st.name + "'", "the catalog does not know its read bandwidth");
    const double sharing = node->aggregate ? sc.system.count : std::min(sc.system.per_node, sc.system.count);
    const byte_rate per_device = node->rate / sharing;
    if (per_device < k.reload) {
        k.reload = per_device;
        k.how = notes.empty() ? st.name : notes.front() + ", over " + std::to_string(static_cast<int>(sharing)) + " devices";
    }
    if (!detail::is_remote_storage(st.kind)) return;
    std::vector<std::string> net_notes;
    if (const auto net = detail::node_storage_network(sc.system, std::nullopt, detail::note_sink(net_notes))) {
        const int devices = std::min(sc.system.per_node, sc.system.count);
        const byte_rate net_per_device = *net / static_cast<double>(devices);
        if (net_per_device < k.reload) {
            k.reload = net_per_device;
            k.how = net_notes.front() + ", over " + std::to_string(devices) + " devices";
        }
    }
}

scenario read_scenario(std::string_view json_text, const catalog& cat, const std::filesystem::path& base_dir) {
    return read_scenario_value(detail::parse_json_text(json_text, "scenario"), cat, base_dir);
}

nlohmann::json parse_scenario_json(std::string_view text, const std::string& what) {
    return detail::parse_json_text(text, what);
}

void set_scenario_key(nlohmann::json& doc, std::string_view key, const nlohmann::json& value) {
    json* node = &doc;
    for (std::size_t start = 0;;) {
        const std::size_t dot = key.find('.', start);
        const std::string part(key.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
        if (dot == std::string_view::npos) {
            (*node)[part] = value;
            return;
        }
        json& child = (*node)[part];
        if (!child.is_object()) child = child.is_null() ? json::object() : json{{"preset", child}};
        node = &child;
        start = dot + 1;
    }
}

void scenario_sections::keep_docs(const nlohmann::json& doc, bool model, bool system) {
    if (const json& m = doc.at("model"); model && model_doc != m) model_doc = m;
    if (const json& sys = doc.at("system"); system && system_doc != sys) system_doc = sys;
}

void scenario_sections::keep(scenario&& s, const nlohmann::json& doc) {
    keep_docs(doc);
    model = std::move(s.model);
    system = std::move(s.system);
}

void scenario_sections::keep(const scenario& s, const nlohmann::json& doc, bool keep_model, bool keep_system) {
    keep_docs(doc, keep_model, keep_system);
    if (keep_model) model = s.model;
    if (keep_system) system = s.system;
}

scenario read_scenario_value(const nlohmann::json& j, const catalog& cat, const std::filesystem::path& base_dir,
                             scenario_sections* reuse) {
    object_reader root(j, "", true);
    scenario sc;
    root.string("name");
    root.string("description");
    // A section kept from an earlier reading of the same JSON is taken (and its place emptied) instead of read again.
    auto take = [&](auto& kept, const nlohmann::json& kept_doc, const json& now) {
        std::remove_reference_t<decltype(kept)> out;  // an optional spec
        if (kept && now == kept_doc) {
            out = std::move(kept);
            kept.reset();
        }
        return out;
    };
    const json* model = root.get("model");
    if (!model) root.missing("model", "a catalog model name, a path to a config.json, or an object of HF config fields");
    if (auto kept = reuse ? take(reuse->model, reuse->model_doc, *model) : std::nullopt) sc.model = std::move(*kept);
    else sc.model = read_model(*model, cat, base_dir);

    const json* sys = root.get("system");
    if (!sys) root.missing("system", "an object {accelerator, count, per_node, scale_out, storage} or {preset, ...}");
    if (auto kept = reuse ? take(reuse->system, reuse->system_doc, *sys) : std::nullopt) {
        sc.system = std::move(*kept);
    } else if (sys->is_string()) {
        sc.system = cat.system(sys->get<std::string>(), "/system");
    } else {
        object_reader sr(*sys, "/system", true);
        sc.system = read_system(sr, cat);
    }
    if (const json* p = root.get("precision"); p && !p->is_null()) {
        object_reader r(*p, "/precision", true);
        sc.precision = read_precision(r);
    }
    if (const json* t = root.get("training"); t && !t->is_null()) check_block_scaled_fp8_hardware(sc.precision, sc.system.accelerator);
    if (const json* p = root.get("parallelism"); p && !p->is_null()) {
        object_reader r(*p, "/parallelism", true);
        sc.parallelism = read_parallelism(r, sc.system);
    } else {
        sc.parallelism.dp = sc.system.count;
    }
    if (const json* t = root.get("training"); t && !t->is_null()) {
        object_reader r(*t, "/training", true);
        sc.training = read_training(r);
        const int dp = sc.parallelism.dp;
        if (sc.training->shard_group == 0) sc.training->shard_group = dp;
        if (sc.training->shard_group > dp || dp % sc.training->shard_group != 0)
            throw config_error("/training/shard_group", std::to_string(sc.training->shard_group),
                               "must divide the data-parallel degree " + std::to_string(dp), "a divisor of dp");
        // Megatron-LM: --tp-comm-overlap requires --sequence-parallel (its all-gathers and reduce-scatters).
        // FP8 primary weights exist only with FP8 GEMMs, and are modelled with unsharded weights.
        if (sc.training->fp8_params && (sc.precision.compute.peak_key != "fp8" || sc.training->zero >= 3))
            throw config_error("/training/fp8_params", "true",
                               sc.training->zero >= 3 ? "not modelled with ZeRO-3 / FSDP weight sharding"
                                                      : "needs FP8 GEMMs (precision.compute fp8, mxfp8 or fp8_blockwise)",
                               "false, or precision.compute: fp8 (or mxfp8, fp8_blockwise) with zero < 3");
        // Megatron-Core's fused bias_swiglu stores its input in FP8 (transformer_config.py: "supported only for SwiGLU").
        if (sc.training->activation_func_fp8_input_store && (!has_gated_mlp(sc.model) || sc.training->eager_kernels))
            throw config_error("/training/activation_func_fp8_input_store", "true",
                               sc.training->eager_kernels ? "is Megatron-Core's fused SwiGLU; kernels 'eager' has none"
                                                          : "needs a gated MLP (SwiGLU): " + sc.model.name + " has none",
                               "false, or a SwiGLU model with fused kernels");
        const parallelism_spec& par = sc.parallelism;
        const std::int64_t per_pipeline = sc.training->global_batch / (std::int64_t{par.dp} * sc.training->micro_batch);
        // deepseek-ai/DualPipe dualpipe.py step(): num_chunks % 2 == 0 and num_chunks >= num_ranks * 2.
        if (par.dualpipe() && (per_pipeline < 2 * std::int64_t{par.pp} || per_pipeline % 2 != 0))
            throw config_error("/parallelism/pipeline_schedule", "dualpipe",
                               "feeds half of each pipeline's micro-batches from each end: needs an even number of them, at "
                               "least 2 x pp = " + std::to_string(2 * par.pp) + " (global_batch / (dp x micro_batch) = " +
                                   std::to_string(per_pipeline) + ")",
                               "1f1b, or a global_batch giving an even count >= 2 x pp");
        if (par.cp > 1 && par.cp_algorithm == "all_to_all" && (sc.model.heads / par.tp) % par.cp != 0)
            throw config_error("/parallelism/cp_algorithm", "all_to_all",
                               "Ulysses splits the " + std::to_string(sc.model.heads / par.tp) +
                                   " heads of a tensor-parallel rank over cp = " + std::to_string(par.cp) + ": they do not divide",
                               "ring or all_gather, or a cp that divides the heads per tensor-parallel rank");
        check_training_model(sc.model, sc.parallelism, *sc.training);
        if (sc.training->lora) {
            resolve_all_linear(sc.model, *sc.training->lora);
            check_lora_model(sc.model, *sc.training->lora);
            // FP8 GEMMs read an FP8 or a 16-bit base (Transformer Engine); a narrower or integer one dequantises to 16 bits.
            const number_format& compute = sc.precision.compute;
            auto read_as_is = [&](const number_format& base) { return base.name == compute.name || !base.quantized(); };
            if (compute.element_bits < 8.0 ||
                (compute.quantized() && !(read_as_is(sc.precision.weights) && read_as_is(sc.precision.experts()))))
                throw config_error("/precision/compute", compute.name,
                                   "LoRA fine-tuning is modelled with 16-bit GEMMs (the base dequantised to them) or 8-bit GEMMs "
                                   "over a base in the same format or in 16 bits, experts included (Transformer Engine)",
                                   "precision.compute: bf16 (or fp16, fp32), or " + compute.name + " with precision.weights (and "
                                   "expert_weights) " + compute.name + " or bf16");
            if (sc.training->fp8_params)
                throw config_error("/training/fp8_params", "true",
                                   "a LoRA base is frozen in precision.weights: FP8 primary weights are precision.weights: fp8",
                                   "precision.weights: fp8 (and leave fp8_params out)");
        } else if (sc.precision.weights.peak_key == "nf4") {
            throw config_error("/precision/weights", sc.precision.weights.name,
                               "an NF4 base is frozen: only LoRA / QLoRA trains on it",
                               "training.lora {rank, targets}, or 16-bit weights for full training");
        }
        const std::string& kernel = sc.training->attention_kernel;
        if (kernel != "fused" && !sc.system.accelerator.attention_kernel_rates.count(kernel)) {
            std::string published;
            for (const auto& [name, rates] : sc.system.accelerator.attention_kernel_rates) published += ", " + name;
            throw config_error("/training/attention_kernel", "'" + kernel + "'",
                               "no published rate for this kernel on " + sc.system.accelerator.name +
                                   " (catalog efficiency.attention_kernels)",
                               "fused" + published);
        }
        // FP8 attention runs inside FP8 training (Transformer Engine's fp8_dpa needs its FP8 autocast).
        if (kernel == "cudnn_fp8" && sc.precision.compute.peak_key != "fp8")
            throw config_error("/training/attention_kernel", "'cudnn_fp8'",
                               "FP8 attention runs in FP8 training only, and precision.compute is " + sc.precision.compute.name,
                               "an FP8 precision.compute (fp8, mxfp8, fp8_blockwise), or attention_kernel: cudnn");
        if (sc.parallelism.attention_dp)
            throw config_error("/parallelism/attention_dp", "true", "is a serving layout, not modelled for training",
                               "false for a training scenario");
        if (sc.training->tp_comm_overlap && sc.parallelism.tp > 1 && !sc.parallelism.sequence_parallel)
            throw config_error("/training/tp_comm_overlap", "true", "needs parallelism.sequence_parallel with tp > 1",
                               "false, or sequence_parallel: true");
    }
    if (const json* i = root.get("inference"); i && !i->is_null()) {
        object_reader r(*i, "/inference", true);
        sc.inference = read_inference(r, sc.model, cat, base_dir);
        if (sc.inference->kv_offload) resolve_kv_offload(sc, cat);
        const inference_spec& inf = *sc.inference;
        const std::int64_t step = inf.prefill_chunk_tokens > 0
                                      ? inf.prefill_chunk_tokens
                                      : default_engine_limits(sc.system.accelerator, inf.engine).step_tokens;
        if (!inf.chunked_prefill && inf.input_tokens > step)
            throw config_error("/inference/input_tokens", std::to_string(inf.input_tokens),
                               "without chunked prefill (engine " + inf.engine + ") a prompt must fit one step of " +
                                   std::to_string(step) + " tokens",
                               "at most " + std::to_string(step) + " tokens, a larger prefill_chunk_tokens, or chunked_prefill: true");
        const auto& sp = sc.inference->speculative;
        if (sp && sp->method == "draft" && sc.parallelism.attention_dp)
            throw config_error("/inference/speculative/draft_model", "'" + sp->draft_model->name + "'",
                               "a separate draft model beside attention data parallelism is not modelled (each rank "
                               "would hold it whole and run every request's drafts)",
                               "method eagle or mtp, or parallelism.attention_dp false");
    }
    if (const json* c = root.get("calibration"); c && !c->is_null()) {
        if (c->is_string()) {
            std::filesystem::path p(c->get<std::string>());
            if (p.is_relative() && !base_dir.empty()) p = base_dir / p;
            std::error_code ec;
            if (!std::filesystem::is_regular_file(p, ec))
                throw config_error("/calibration", "'" + c->get<std::string>() + "'", "calibration file not found",
                                   "a file written by `capplan calibrate`, or its JSON object");
            sc.calibration = load_efficiency_table(p);
        } else if (c->is_object()) {
            sc.calibration = read_efficiency_table(c->dump(), "/calibration");
        } else {
            throw config_error("/calibration", detail::short_value(*c), "expected a file path or an object",
                               "a file written by `capplan calibrate`, or its JSON object");
        }
    }
    if (const json* c = root.get("cost"); c && !c->is_null()) {
        object_reader r(*c, "/cost", true);
        sc.cost = read_cost(r, cat, sc.system);
        r.finish();
    }
    if (const json* c = root.get("cold_start"); c && !c->is_null()) {
        object_reader r(*c, "/cold_start", true);
        auto& cs = sc.cold_start;
        cs.page_cache_warm = r.boolean("page_cache_warm").value_or(false);
        cs.pinned = r.boolean("pinned").value_or(false);
        cs.gpudirect_storage = r.boolean("gpudirect_storage").value_or(false);
        cs.overlapped = r.boolean("overlapped").value_or(false);
        const auto connections = r.integer("connections", 1).value_or(16);
        if (connections > 65536)
            throw config_error("/cold_start/connections", std::to_string(connections), "too many connections",
                               "an integer from 1 to 65536");
        cs.connections = static_cast<int>(connections);
        cs.engine_init = r.quantity<duration>("engine_init");
        r.finish();
    }
    if (sc.training && sc.inference)
        throw config_error("/inference", "", "a scenario describes training or inference, not both",
                           "either a training or an inference object");
    if (sc.inference && sc.parallelism.rank_order != "tp-cp-ep-dp-pp")
        throw config_error("/parallelism/rank_order", sc.parallelism.rank_order, "places training's data-parallel groups",
                           "leave it out for a serving scenario");
    if (sc.inference && sc.parallelism.dualpipe())
        throw config_error("/parallelism/pipeline_schedule", "dualpipe", "is a training schedule (a serving pipeline has no backward)",
                           "1f1b, or leave it out");
    apply_released_expert_format(sc);
    root.finish();
    return sc;
}

system_spec read_system(std::string_view json_text, const catalog& cat, const std::string& field) {
    const json j = detail::parse_json_text(json_text, "the system");
    if (j.is_string()) return cat.system(j.get<std::string>(), field);
    object_reader r(j, field, true);
    return read_system(r, cat);
}

std::string default_scenario_json() {
    return R"({
  "name": "internal-assistant-50-users",
  "description": "An internal AI assistant for about 50 colleagues on one 8-GPU server.",
  "model": "Llama-3.1-70B",
  "system": {"preset": "HGX-H200", "count": 8},
  "precision": {"weights": "bf16", "kv_cache": "bf16"},
  "parallelism": {"tp": 8},
  "inference": {"input_tokens": 2000, "output_tokens": 500, "concurrency": 50}
})";
}

}  // namespace capplan
