#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <pybind11/stl/filesystem.h>

#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "capplan/analysis/bom.hpp"
#include "capplan/analysis/cost.hpp"
#include "capplan/report/result_object.hpp"
#include "capplan/error.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace capplan::python {

// A JSON value as the Python object json.loads would give (dicts keep their order).
py::object to_python(const nlohmann::ordered_json& v) {
    switch (v.type()) {
        case nlohmann::ordered_json::value_t::object: {
            py::dict d;
            for (const auto& [k, x] : v.items()) d[py::str(k)] = to_python(x);
            return d;
        }
        case nlohmann::ordered_json::value_t::array: {
            py::list l;
            for (const auto& x : v) l.append(to_python(x));
            return l;
        }
        case nlohmann::ordered_json::value_t::string: return py::str(v.get_ref<const std::string&>());
        case nlohmann::ordered_json::value_t::boolean: return py::bool_(v.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return py::int_(v.get<std::int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: return py::int_(v.get<std::uint64_t>());
        case nlohmann::ordered_json::value_t::number_float: {  // NaN and infinity as the JSON text writes them: null
            const double x = v.get<double>();
            return std::isfinite(x) ? py::object(py::float_(x)) : py::object(py::none());
        }
        default: return py::none();
    }
}

namespace {

// {"memory": {"fits": true}} -> {"memory.fits": True}, as capplan.result.flatten does (lists stay Python lists here;
// the caller writes them as JSON text).
void flatten_into(py::dict& out, const nlohmann::ordered_json& v, const std::string& prefix,
                  const std::vector<std::string>& skip) {
    for (const auto& [k, x] : v.items()) {
        const std::string key = prefix + k;
        if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
        if (x.is_object())
            flatten_into(out, x, key + ".", skip);
        else
            out[py::str(key)] = to_python(x);
    }
}

}  // namespace

void register_estimate(py::module_& m) {
    m.def("estimate_json", [](const std::string& scenario_text, const std::filesystem::path& base_dir) {
            std::string out;
            {
                py::gil_scoped_release release;
                const catalog& cat = default_catalog();
                out = to_json(estimate(read_scenario(scenario_text, cat, base_dir), cat));
            }
            return out;
        }, py::arg("scenario"), py::arg("base_dir") = std::filesystem::path{},
        "Estimate a scenario given as JSON text; returns the result as JSON text.");
    m.def("estimate_object", [](const std::string& scenario_text, const std::filesystem::path& base_dir) {
            nlohmann::ordered_json out;
            {
                py::gil_scoped_release release;
                const catalog& cat = default_catalog();
                out = result_object(estimate(read_scenario(scenario_text, cat, base_dir), cat));
            }
            return to_python(out);
        }, py::arg("scenario"), py::arg("base_dir") = std::filesystem::path{},
        "Estimate a scenario given as JSON text; returns the result as the dict json.loads would give for "
        "estimate_json's text, without writing or reading that text.");
    m.def("default_scenario_json", &default_scenario_json);
    m.def("hourly_cost_json", [](const std::string& system_text, int devices, const std::string& cost_text,
                                 std::optional<double> work_s) {
            const catalog& cat = default_catalog();
            system_spec sys = read_system(system_text, cat);
            if (devices < 1 || devices > max_system_accelerators)
                throw config_error("/count", std::to_string(devices), "out of range",
                                   "an integer from 1 to " + std::to_string(max_system_accelerators));
            sys.count = devices;
            const cost_spec spec = read_cost(cost_text, cat, sys);
            cost_result c = hourly_cost(spec, devices);
            if (work_s && *work_s > 0 && std::isfinite(*work_s))
                c.per_million_output_tokens = cost_of_work(c, spec, *work_s * units::s);
            return to_json(c);
        }, py::arg("system"), py::arg("devices"), py::arg("cost") = "{}", py::arg("work_s") = std::nullopt,
        "What `devices` accelerators of `system` (a preset name or system object, as JSON) cost an hour to own and "
        "to rent, under a scenario's cost object (JSON text); with work_s, what work of that many seconds costs "
        "(in per_million_output_tokens).");
    m.def("bom_json", [](const std::string& preset, std::int64_t devices, std::optional<double> rack_power_w,
                         std::optional<double> oversubscription, std::optional<std::int64_t> pod_nodes,
                         std::optional<std::string> storage, std::optional<std::string> storage_level,
                         std::optional<double> storage_read_bps, std::optional<double> storage_write_bps,
                         std::optional<double> storage_capacity_bytes,
                         const std::map<std::string, std::pair<double, double>>& part_prices) {
            const std::optional<power> rack =
                rack_power_w ? std::optional<power>(power::from_si(*rack_power_w)) : std::nullopt;
            std::optional<bom_storage> st;
            if (storage) {
                st = bom_storage{*storage, storage_level.value_or(""), std::nullopt, std::nullopt, std::nullopt};
                if (storage_read_bps) st->read = byte_rate::from_si(*storage_read_bps);
                if (storage_write_bps) st->write = byte_rate::from_si(*storage_write_bps);
                if (storage_capacity_bytes) st->capacity = data_size::from_si(*storage_capacity_bytes);
            }
            std::map<std::string, usd_range> prices;
            for (const auto& [item, usd] : part_prices) prices[item] = usd_range{usd.first, usd.second};
            return to_json(cluster_bom(default_catalog(), preset, devices, rack, oversubscription, pod_nodes, st, prices));
        }, py::arg("preset"), py::arg("devices"), py::arg("rack_power_w") = std::nullopt,
        py::arg("oversubscription") = std::nullopt, py::arg("pod_nodes") = std::nullopt,
        py::arg("storage") = std::nullopt, py::arg("storage_level") = std::nullopt,
        py::arg("storage_read_bps") = std::nullopt, py::arg("storage_write_bps") = std::nullopt,
        py::arg("storage_capacity_bytes") = std::nullopt,
        py::arg("part_prices") = std::map<std::string, std::pair<double, double>>{},
        "A cluster's bill of materials (systems, racks, fabric switches, cables, optics) as JSON text; the fabric "
        "oversubscribed by `oversubscription` (none: the preset's) at its leaves, or above pods of `pod_nodes` nodes "
        "(none: the preset's; 0: no pods); with `storage` (a catalog storage entry of scope aggregate), as many of it "
        "as `storage_level` (the preset's reference guideline per scalable unit) or the rates and capacity need; "
        "`part_prices` {item: (low, high) USD} over the catalog's prices.");
}

}  // namespace capplan::python

#include <atomic>

#include "capplan/detail/threads.hpp"

namespace capplan::python {


// Many scenarios at once, on several threads, inside the core: (ok, result JSON or error text) each.
void register_estimate_many(py::module_& m) {
    m.def("estimate_many_flat", [](const std::vector<std::string>& scenarios, const std::filesystem::path& base_dir,
                                   int threads, const std::vector<std::string>& skip) {
            std::vector<nlohmann::ordered_json> results(scenarios.size());
            std::vector<std::string> errors(scenarios.size());
            {
                py::gil_scoped_release release;
                const catalog& cat = default_catalog();
                std::atomic<std::size_t> next{0};
                auto work = [&] {
                    for (std::size_t i = next++; i < scenarios.size(); i = next++) {
                        try {
                            results[i] = result_object(estimate(read_scenario(scenarios[i], cat, base_dir), cat));
                        } catch (const std::exception& e) {
                            errors[i] = e.what();
                            if (errors[i].empty()) errors[i] = "error";
                        }
                    }
                };
                detail::run_threads(threads, [&](int, int) { work(); });
            }
            py::list out;
            for (std::size_t i = 0; i < scenarios.size(); ++i) {
                if (!errors[i].empty()) {
                    out.append(py::make_tuple(false, errors[i]));
                    continue;
                }
                py::dict flat;
                flatten_into(flat, results[i], "", skip);
                out.append(py::make_tuple(true, flat));
            }
            return out;
        }, py::arg("scenarios"), py::arg("base_dir") = std::filesystem::path{}, py::arg("threads") = 0,
        py::arg("skip") = std::vector<std::string>{},
        "Estimate many scenarios (JSON texts) in the core; returns (ok, the result flattened to dotted keys, or an "
        "error message) per scenario, without writing or reading JSON text: lists stay lists, keys in `skip` are left "
        "out.");
}

}  // namespace capplan::python

#include "capplan/search/inference_grid.hpp"

namespace capplan::python {

// A static-batch inference grid on typed scenarios: columns as Python lists (no JSON per point).
void register_inference_grid(py::module_& m) {
    m.def("inference_grid", [](const std::vector<std::string>& scenario_texts, const std::filesystem::path& base_dir,
                               const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& axes, int threads) {
            inference_grid g;
            {
                py::gil_scoped_release release;
                const catalog& cat = default_catalog();
                std::vector<scenario> layouts(scenario_texts.size());
                std::vector<std::string> errors(scenario_texts.size());
                for (std::size_t i = 0; i < scenario_texts.size(); ++i) {
                    try {
                        layouts[i] = read_scenario(scenario_texts[i], cat, base_dir);
                    } catch (const std::exception& e) {
                        errors[i] = e.what();
                    }
                }
                std::vector<grid_axis> as;
                for (const auto& [k, v] : axes) as.push_back({k, v});
                g = sweep_inference_grid(layouts, errors, as, threads);
            }
            py::dict out;
            out["layout"] = g.layout;
            for (std::size_t a = 0; a < g.keys.size(); ++a) out[py::str(g.keys[a])] = g.inputs[a];
            out["fits"] = std::vector<bool>(g.fits.begin(), g.fits.end());
            out["per_device_bytes"] = g.per_device_bytes;
            out["ttft_s"] = g.ttft_s;
            out["tpot_s"] = g.tpot_s;
            out["output_tokens_per_s"] = g.output_tokens_per_s;
            out["error"] = g.errors;
            return out;
        }, py::arg("scenarios"), py::arg("base_dir"), py::arg("axes"), py::arg("threads") = 0,
        "Static-batch inference estimates for each scenario (a layout) over a grid of inference.input_tokens, "
        "inference.output_tokens and inference.batch, as columns (layout = the scenario's index).");
    m.def("inference_grid_keys", &inference_grid_keys);
}

}  // namespace capplan::python
