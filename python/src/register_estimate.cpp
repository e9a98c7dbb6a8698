#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace capplan::python {

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
    m.def("default_scenario_json", &default_scenario_json);
}

}  // namespace capplan::python

#include <atomic>
#include <thread>

namespace capplan::python {

// Many scenarios at once, on several threads, inside the core: (ok, result JSON or error text) each.
void register_estimate_many(py::module_& m) {
    m.def("estimate_many_json", [](const std::vector<std::string>& scenarios, const std::filesystem::path& base_dir, int threads) {
            std::vector<std::pair<bool, std::string>> out(scenarios.size());
            {
                py::gil_scoped_release release;
                const catalog& cat = default_catalog();
                std::atomic<std::size_t> next{0};
                auto work = [&] {
                    for (std::size_t i = next++; i < scenarios.size(); i = next++) {
                        try {
                            out[i] = {true, to_json(estimate(read_scenario(scenarios[i], cat, base_dir), cat), -1)};
                        } catch (const std::exception& e) {
                            out[i] = {false, e.what()};
                        }
                    }
                };
                const int n = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
                std::vector<std::thread> pool;
                for (int k = 1; k < n; ++k) pool.emplace_back(work);
                work();
                for (auto& t : pool) t.join();
            }
            return out;
        }, py::arg("scenarios"), py::arg("base_dir") = std::filesystem::path{}, py::arg("threads") = 0,
        "Estimate many scenarios (JSON texts) in the core; returns (ok, result JSON or error message) per scenario.");
}

}  // namespace capplan::python
