#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include "capplan/analysis/sizing.hpp"
#include "capplan/catalog.hpp"
#include "capplan/spec/hf_config.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace capplan::python {

void register_sizing(py::module_& m) {
    m.def("size_inference_json",
          [](const std::string& model, bool is_config, std::int64_t concurrency, std::int64_t input, std::int64_t output,
             double ttft_p99_s, double tpot_p99_s, const std::vector<std::string>& accelerators,
             const std::map<std::string, double>& prices) {
              std::string text;
              {
                  py::gil_scoped_release release;
                  const catalog& cat = default_catalog();
                  sizing_request q;
                  q.model = is_config ? model_from_hf_config(model, "custom", "/model") : cat.model(model, "/model");
                  q.concurrency = concurrency;
                  q.input_tokens = input;
                  q.output_tokens = output;
                  q.ttft_p99 = ttft_p99_s * units::s;
                  q.tpot_p99 = tpot_p99_s * units::s;
                  q.accelerators = accelerators;
                  for (const auto& [k, v] : prices) q.price_per_hour[cat.accelerator(k, "/prices").name] = v;
                  const sizing_result r = size_inference(q, cat);
                  nlohmann::ordered_json j;
                  j["options"] = nlohmann::ordered_json::array();
                  for (const auto& o : r.options) {
                      nlohmann::ordered_json row = {
                          {"accelerator", o.accelerator}, {"system", o.system}, {"count", o.count}, {"tp", o.tp},
                          {"replicas", o.replicas}, {"weights", o.weights}, {"kv_cache", o.kv_cache},
                          {"ttft_p99_s", o.ttft_p99.si()}, {"tpot_p99_s", o.tpot_p99.si()},
                          {"output_tokens_per_s", o.output_tokens_per_s}};
                      if (o.cost_per_hour) row["cost_per_hour"] = *o.cost_per_hour;
                      j["options"].push_back(row);
                  }
                  j["rejected"] = nlohmann::ordered_json::array();
                  for (const auto& [a, why] : r.rejected) j["rejected"].push_back({{"accelerator", a}, {"reason", why}});
                  text = j.dump();
              }
              return text;
          },
          py::arg("model"), py::arg("is_config"), py::arg("concurrency"), py::arg("input_tokens"),
          py::arg("output_tokens"), py::arg("ttft_p99_s"), py::arg("tpot_p99_s"),
          py::arg("accelerators") = std::vector<std::string>{}, py::arg("prices") = std::map<std::string, double>{});
}

}  // namespace capplan::python
