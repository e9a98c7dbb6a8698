#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include "capplan/analysis/sizing.hpp"
#include "capplan/catalog.hpp"
#include "capplan/spec/hf_config.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace capplan::python {

void register_sizing(py::module_& m) {
    m.def("size_inference_json",
          [](const std::string& model, bool is_config, std::int64_t concurrency, std::int64_t input, std::int64_t output,
             double ttft_p99_s, double tpot_p99_s, const std::vector<std::string>& accelerators,
             const std::map<std::string, double>& prices, const std::vector<std::string>& weights,
             const std::vector<std::string>& calibrations, const std::string& prefill_dispatch,
             const std::string& kv_admission, const std::string& speculative, const std::string& prefix_cache,
             bool disaggregated, const std::string& engine, std::int64_t prefill_chunk_tokens,
             std::int64_t max_num_seqs, progress* watch) {
              std::string text;
              {
                  py::gil_scoped_release release;
                  const catalog& cat = default_catalog();
                  sizing_request q;
                  q.model = resolve_model(model, is_config);
                  q.concurrency = concurrency;
                  q.input_tokens = input;
                  q.output_tokens = output;
                  q.ttft_p99 = ttft_p99_s * units::s;
                  q.tpot_p99 = tpot_p99_s * units::s;
                  q.accelerators = accelerators;
                  q.weights = weights;
                  q.prefill_dispatch = prefill_dispatch;
                  q.kv_admission = kv_admission;
                  if (!speculative.empty()) q.speculative = read_speculative(speculative, q.model, cat, "/speculative");
                  if (!prefix_cache.empty()) q.prefix_cache = read_prefix_cache(prefix_cache, input, "/prefix_cache");
                  q.disaggregated = disaggregated;
                  q.engine = engine;
                  q.prefill_chunk_tokens = prefill_chunk_tokens;
                  q.max_num_seqs = max_num_seqs;
                  for (std::size_t i = 0; i < calibrations.size(); ++i)
                      q.calibrations.push_back(read_efficiency_table(calibrations[i], "/calibrations/" + std::to_string(i)));
                  for (const auto& [k, v] : prices) q.price_per_hour[cat.accelerator(k, "/prices").name] = v;
                  const sizing_result r = size_inference(q, cat, watch);
                  nlohmann::ordered_json j;
                  j["options"] = nlohmann::ordered_json::array();
                  for (const auto& o : r.options) {
                      nlohmann::ordered_json row = {
                          {"accelerator", o.accelerator}, {"system", o.system}, {"count", o.count}, {"tp", o.tp}, {"pp", o.pp},
                          {"replicas", o.replicas}, {"weights", o.weights}, {"kv_cache", o.kv_cache},
                          {"ttft_p99_s", o.ttft_p99.si()}, {"tpot_p99_s", o.tpot_p99.si()},
                          {"output_tokens_per_s", o.output_tokens_per_s}, {"efficiency_table", o.efficiency_table},
                          {"ep", o.ep}, {"attention_dp", o.attention_dp}, {"speculative", o.speculative}};
                      if (o.cost_per_hour) row["cost_per_hour"] = *o.cost_per_hour;
                      if (!o.why_not_fewer.empty()) row["why_not_fewer"] = o.why_not_fewer;
                      if (o.prefill_replicas > 0)
                          row["disaggregation"] = {{"prefill_replicas", o.prefill_replicas}, {"decode_replicas", o.decode_replicas},
                                                   {"tp", o.tp}};
                      if (!o.prefill_accelerator.empty()) {
                          row["disaggregation"]["prefill_accelerator"] = o.prefill_accelerator;
                          row["disaggregation"]["prefill_tp"] = o.prefill_tp;
                      }
                      j["options"].push_back(row);
                  }
                  j["engine_config"] = r.engine_config;
                  j["accelerators"] = r.accelerators;
                  j["accelerators_searched"] = r.accelerators_searched;
                  j["stopped"] = r.stopped;
                  j["rejected"] = nlohmann::ordered_json::array();
                  for (const auto& [a, why] : r.rejected) j["rejected"].push_back({{"accelerator", a}, {"reason", why}});
                  text = j.dump();
              }
              return text;
          },
          py::arg("model"), py::arg("is_config"), py::arg("concurrency"), py::arg("input_tokens"),
          py::arg("output_tokens"), py::arg("ttft_p99_s"), py::arg("tpot_p99_s"),
          py::arg("accelerators") = std::vector<std::string>{}, py::arg("prices") = std::map<std::string, double>{},
          py::arg("weights") = std::vector<std::string>{}, py::arg("calibrations") = std::vector<std::string>{},
          py::arg("prefill_dispatch") = std::string(), py::arg("kv_admission") = std::string(),
          py::arg("speculative") = std::string(), py::arg("prefix_cache") = std::string(), py::arg("disaggregated") = false, py::arg("engine") = std::string("vllm-v1"),
          py::arg("prefill_chunk_tokens") = 0, py::arg("max_num_seqs") = 0, py::arg("watch") = nullptr);
}

}  // namespace capplan::python

#include "capplan/search/layout_search.hpp"
#include "capplan/spec/scenario_io.hpp"

namespace capplan::python {

void register_layout_search(py::module_& m) {
    m.def("search_training_json",
          [](const std::string& scenario_text, const std::string& base_dir, int top_k, int threads, progress* watch) {
              std::string text;
              {
                  py::gil_scoped_release release;
                  const catalog& cat = default_catalog();
                  const scenario s = read_scenario(scenario_text, cat, base_dir);
                  const layout_search_result r = search_training_layouts(s, top_k, threads, watch);
                  nlohmann::ordered_json j;
                  j["enumerated"] = r.enumerated;
                  j["fit"] = r.fit;
                  j["evaluated"] = r.evaluated;
                  j["shapes"] = r.shapes;
                  j["shapes_searched"] = r.shapes_searched;
                  j["stopped"] = r.stopped;
                  j["best"] = nlohmann::ordered_json::array();
                  for (const auto& c : r.best) {
                      const auto& p = c.parallelism;
                      nlohmann::ordered_json terms = nlohmann::ordered_json::array();
                      for (const auto& term : c.performance.terms)
                          terms.push_back({{"term", term.term}, {"time_s", term.time.si()}, {"exposed_s", term.exposed.si()}});
                      j["best"].push_back(
                          {{"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}, {"cp", p.cp}, {"ep", p.ep}, {"vpp", p.vpp},
                           {"pipeline_schedule", p.pipeline_schedule}, {"sequence_parallel", p.sequence_parallel}, {"micro_batch", c.micro_batch},
                           {"recompute", c.recompute == recompute_kind::full ? "full"
                                         : c.recompute == recompute_kind::selective ? "selective" : "none"},
                           {"zero", c.zero}, {"distributed_optimizer", c.distributed_optimizer},
                           {"shard_group", c.shard_group}, {"step_time_s", c.performance.step.si()},
                           {"tokens_per_s", c.performance.tokens_per_s}, {"mfu", c.performance.mfu},
                           {"memory_per_device_bytes", c.memory_per_device.si()}, {"breakdown", terms}});
                  }
                  text = j.dump();
              }
              return text;
          },
          py::arg("scenario"), py::arg("base_dir") = "", py::arg("top_k") = 10, py::arg("threads") = 0,
          py::arg("watch") = nullptr);
}

}  // namespace capplan::python
