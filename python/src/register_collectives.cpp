#include <nlohmann/json.hpp>
#include <pybind11/stl.h>

#include "capplan/analysis/collectives.hpp"
#include "capplan/analysis/engine_allreduce.hpp"
#include "capplan/spec/engine_profile.hpp"
#include "capplan/calibration/nccl_tests.hpp"
#include "capplan/error.hpp"
#include "capplan/catalog.hpp"
#include "capplan/report/result.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace capplan::python {

namespace {
nlohmann::ordered_json result_json(const collective_result& r) {
    nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
    for (const auto& t : r.tiers)
        tiers.push_back({{"tier", t.tier}, {"link", t.link}, {"bus_bandwidth_bytes_per_s", t.bus_bandwidth.si()},
                         {"time_s", t.time.si()}});
    return {{"op", op_name(r.op)},          {"size_bytes", r.size.si()},
            {"gpus", r.gpus},               {"per_node", r.per_node},
            {"nodes", r.nodes},             {"pods", r.pods},               {"time_s", r.time.si()},
            {"latency_s", r.latency.si()},  {"algbw_bytes_per_s", r.algbw.si()},
            {"busbw_bytes_per_s", r.busbw.si()}, {"algorithm", algorithm_name(r.algorithm)},
            {"protocol", protocol_name(r.protocol)}, {"calibrated", r.calibrated},
            {"tiers", tiers}};
}
// All-reduces through a serving engine's own kernel (engine_allreduce.hpp).
nlohmann::ordered_json engine_rows(collective_op o, const std::vector<double>& sizes, const system_spec& sys, int gpus,
                                   const std::string& algorithm, const std::string& engine) {
    if (o != collective_op::all_reduce)
        throw config_error("/engine", "'" + engine + "'", "engines have their own kernel for all_reduce only", "op all_reduce, or no engine");
    std::optional<allreduce_algorithm> forced;
    if (!algorithm.empty()) {
        const coll_algorithm a = parse_algorithm(algorithm, "/algorithm");
        if (a != coll_algorithm::one_shot && a != coll_algorithm::two_shot)
            throw config_error("/algorithm", "'" + algorithm + "'", "not one of the engine's kernels", "one_shot or two_shot");
        forced = a == coll_algorithm::one_shot ? allreduce_algorithm::one_shot : allreduce_algorithm::two_shot;
    }
    const engine_profile& p = find_engine_profile(engine, "/engine");
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (double size : sizes) {
        auto row = result_json(engine_allreduce_result(p.allreduce, p.name, size * units::B, sys, gpus, forced));
        row["protocol"] = p.allreduce.kernel;
        rows.push_back(row);
    }
    return rows;
}
}  // namespace

void register_collectives(py::module_& m) {
    m.def("calibrate_collectives",
          [](const std::string& file, const std::string& system, const std::string& op, int ranks, bool in_place) {
              const nccl_tests_run run = read_nccl_tests_file(file);
              default_catalog().system_preset(system, "/system");  // must be a catalog system
              if (op.empty() && !run.op)
                  throw config_error("/op", "", "the output does not say which operation it measured",
                                     "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv");
              const collective_op o = op.empty() ? *run.op : parse_collective_op(op, "/op");
              const int n = ranks > 0 ? ranks : run.ranks;
              if (n < 1)
                  throw config_error("/ranks", "", "the output does not list its ranks", "give --ranks N");
              return calibration_json(fit_collective(run, o, n, in_place), default_catalog().canonical_name(system), run);
          },
          py::arg("file"), py::arg("system"), py::arg("op") = "", py::arg("ranks") = 0, py::arg("in_place") = false,
          "Fit latency and bus bandwidth from an nccl-tests output file; returns a calibration entry (JSON text).");
    m.def("collective_op_name", [](const std::string& op) { return op_name(parse_collective_op(op, "/op")); }, py::arg("op"));
    m.def("system_object_json", [](const std::string& text) { return to_json(read_system(text, default_catalog(), "/system")); },
          py::arg("system"), "A system given as a scenario's system value (JSON text), resolved.");
    m.def("collective_json",
          [](const std::string& op, const std::vector<double>& sizes, const std::string& system_json, int gpus, int per_node,
             const std::string& algorithm, bool allow_nvls, double imbalance, double calibrated_latency_s,
             double calibrated_busbw, const std::string& engine) {
              std::string out;
              {
                  py::gil_scoped_release release;
                  const collective_op o = parse_collective_op(op, "/op");
                  const system_spec sys = read_system(system_json, default_catalog(), "/system");
                  if (!engine.empty()) {
                      out = engine_rows(o, sizes, sys, gpus, algorithm, engine).dump();
                      return out;
                  }
                  collective_options opt;
                  if (!algorithm.empty()) opt.algorithm = parse_algorithm(algorithm, "/algorithm");
                  if (opt.algorithm == coll_algorithm::one_shot || opt.algorithm == coll_algorithm::two_shot)
                      throw config_error("/algorithm", "'" + algorithm + "'", "a serving engine's kernel, not NCCL's",
                                         "name the engine too (engine=\"vllm-v1\", --engine), or ring, tree, nvls, nvls_tree, collnet, direct");
                  opt.allow_nvls = allow_nvls;
                  opt.imbalance = imbalance;
                  if (calibrated_busbw > 0) {
                      opt.calibrated_latency = calibrated_latency_s * units::s;
                      opt.calibrated_bus_bandwidth = calibrated_busbw * units::B / units::s;
                  }
                  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
                  for (double size : sizes) rows.push_back(result_json(collective_time(o, size * units::B, sys, {gpus, per_node}, opt)));
                  out = rows.dump();
              }
              return out;
          },
          py::arg("op"), py::arg("sizes"), py::arg("system"), py::arg("gpus"), py::arg("per_node") = 0,
          py::arg("algorithm") = "", py::arg("allow_nvls") = true, py::arg("imbalance") = 1.0,
          py::arg("calibrated_latency_s") = 0.0, py::arg("calibrated_busbw") = 0.0, py::arg("engine") = "",
          "Collective cost for each size (bytes); system is JSON text (a preset name string or an object).");
}

}  // namespace capplan::python
