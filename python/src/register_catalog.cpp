#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "capplan/analysis/kv_cache.hpp"
#include "capplan/catalog.hpp"
#include "capplan/device.hpp"
#include "capplan/error.hpp"
#include "capplan/report/result.hpp"
#include "capplan/spec/engine_profile.hpp"
#include "capplan/spec/hf_config.hpp"
#include <nlohmann/json.hpp>
#include "register.hpp"

namespace py = pybind11;

namespace capplan::python {

namespace {
entry_kind kind_from(const std::string& k) {
    for (entry_kind e : {entry_kind::model, entry_kind::accelerator, entry_kind::link, entry_kind::system, entry_kind::storage,
                         entry_kind::site})
        if (kind_name(e) == k || kind_folder(e) == k || kind_name(e) + "s" == k) return e;
    throw config_error("/kind", "'" + k + "'", "unknown catalog kind", "models, accelerators, links, systems, storage, sites");
}
}  // namespace

void register_catalog(py::module_& m) {
    m.def("set_catalog_dir", &set_catalog_dir, py::arg("path"), "Load the catalog from a folder (replaces the current one).");
    m.def("catalog_dir", [] { return default_catalog().dir(); });
    m.def("catalog_version", [] { return default_catalog().version(); });
    m.def("uncertainty_json", [] {
            // models/uncertainty.json as the core read it: the validated quantities' error bands.
            const uncertainty_bands& u = default_catalog().uncertainty();
            nlohmann::ordered_json bands = nlohmann::ordered_json::object();
            for (const auto& [q, b] : u.bands) bands[q] = {{"p10", b.p10}, {"p90", b.p90}, {"rows", b.rows}};
            return nlohmann::ordered_json{{"method", u.method}, {"bands", bands}}.dump();
        }, "The error bands of the validated quantities (models/uncertainty.json) as JSON text.");
    m.def("uncertainty_band", [](const std::string& quantity, bool moe) -> std::optional<std::pair<double, double>> {
            // The band an estimate of a model of that family takes (uncertainty_bands::find): (p10, p90), or none.
            const error_band* b = default_catalog().uncertainty().find(quantity, moe);
            if (!b) return std::nullopt;
            return std::pair{b->p10, b->p90};
        }, py::arg("quantity"), py::arg("moe"),
        "(p10, p90) of the band an estimate of a dense (moe False) or mixture-of-experts model takes for `quantity`, "
        "or None: the model family's band, none where only the other family has one, else the quantity's.");
    m.def("catalog_names", [](const std::string& kind) { return default_catalog().names(kind_from(kind)); }, py::arg("kind"));
    m.def("engine_profiles_json", [] {
        // The serving-engine profiles (inference.engine) with their defaults and sources.
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const auto& p : engine_profiles()) {
            nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
            for (const auto& t : p.tiers)
                tiers.push_back({{"min_memory_gib", t.min_memory_gib}, {"excludes_a100", t.excludes_a100},
                                 {"step_tokens", t.step_tokens}, {"max_num_seqs", t.max_num_seqs}});
            out.push_back({{"name", p.name}, {"engine", p.engine}, {"prefill_dispatch", p.prefill_dispatch},
                           {"kv_admission", p.kv_admission}, {"chunked_prefill", p.chunked_prefill},
                           {"kv_block_tokens", p.kv_block_tokens}, {"memory_utilization", p.memory_utilization},
                           {"limits", tiers}, {"source", p.source},
                           {"allreduce", {{"kernel", p.allreduce.kernel},
                                          {"group_sizes", p.allreduce.group_sizes},
                                          {"nccl_from_bytes", p.allreduce.max_size.si()},
                                          {"source", p.allreduce.source}}}});
        }
        return out.dump();
    });
    m.def("catalog_kind", [](const std::string& name) { return kind_name(default_catalog().kind_of(name)); }, py::arg("name"));
    m.def("catalog_entry_json", [](const std::string& name) { return default_catalog().raw_json(name); }, py::arg("name"));
    m.def("canonical_name", [](const std::string& name) { return default_catalog().canonical_name(name); }, py::arg("name"));
    m.def("model_json", [](const std::string& name) { return to_json(default_catalog().model(name, "/model")); }, py::arg("name"));
    m.def("model_from_hf_config_json", [](const std::string& text, const std::string& name) {
            return to_json(model_from_hf_config(text, name, "/model"));
        }, py::arg("text"), py::arg("name") = "custom");
    m.def("accelerator_json", [](const std::string& name) { return to_json(default_catalog().accelerator(name, "/accelerator")); }, py::arg("name"));
    m.def("model_kv_cache_bytes", [](const std::string& model, bool is_config, const std::vector<std::int64_t>& contexts,
                                             int tp, const std::string& fmt, std::int64_t block) {
            if (tp < 1) throw config_error("/tp", std::to_string(tp), "must be at least 1", "an integer >= 1");
            if (block < 1) throw config_error("/block_tokens", std::to_string(block), "must be at least 1", "an integer >= 1");
            for (auto c : contexts)
                if (c < 0) throw config_error("/contexts", std::to_string(c), "a negative context length", "token counts >= 0");
            const model_spec m = resolve_model(model, is_config);
            return kv_bytes_for_batch(m, tp, find_format(fmt, "/kv_cache"), all_layers(m), contexts, block).si();
        }, py::arg("model"), py::arg("is_config"), py::arg("contexts"), py::arg("tp"), py::arg("fmt"), py::arg("block_tokens"));
    m.def("model_weight_bytes", [](const std::string& model, bool is_config, const std::string& fmt, const std::string& experts) {
            const model_spec m = resolve_model(model, is_config);
            // The routed experts: the format asked for, else the release's own (gpt-oss: mxfp4), else fmt.
            const std::string e = !experts.empty() ? experts : m.released_expert_format;
            const number_format* ef = e.empty() ? nullptr : &find_format(e, "/expert_weights");
            return weight_bytes(count_parameters(m), find_format(fmt, "/weights"), ef).si();
        }, py::arg("model"), py::arg("is_config"), py::arg("fmt"), py::arg("experts") = "");
    m.def("system_json", [](const std::string& name) { return to_json(default_catalog().system(name, "/system")); }, py::arg("name"));
    m.def("supported_model_types", &supported_model_types);
    m.def("hf_config_known_keys", &hf_config_known_keys);
    // training.attention_kernel's values: "fused" and the kernels the catalog can carry published rates for.
    m.def("training_attention_kernels", [] {
        std::vector<std::string> out{"fused"};
        out.insert(out.end(), measured_attention_kernels.begin(), measured_attention_kernels.end());
        return out;
    });
    m.def("query_devices", [] {
        const auto s = query_devices();
        py::list devices;
        for (const auto& d : s.devices)
            devices.append(py::dict(py::arg("name") = d.name, py::arg("compute_capability") = std::to_string(d.compute_major) + "." + std::to_string(d.compute_minor),
                                    py::arg("memory_bytes") = d.memory_bytes));
        return py::dict(py::arg("built_with_cuda") = s.built_with_cuda, py::arg("devices") = devices, py::arg("reason") = s.reason);
    });
}

}  // namespace capplan::python
