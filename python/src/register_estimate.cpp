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
