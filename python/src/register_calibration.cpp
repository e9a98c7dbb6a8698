#include <pybind11/stl.h>

#include <tuple>

#include "capplan/calibration/cpu_backend.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace capplan::python {

void register_calibration(py::module_& m) {
    m.def(
        "measure_cpu_json",
        [](const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>& shapes,
           const std::vector<std::string>& formats, double array_bytes, double max_time_s) {
            measure_options o;
            o.max_time = duration::from_si(max_time_s);
            std::vector<measurement> out;
            py::gil_scoped_release release;  // long-running: let other Python threads work
            for (const auto& f : formats)
                for (const auto& [mm, nn, kk] : shapes) out.push_back(cpu_gemm(mm, nn, kk, f, o));
            if (array_bytes > 0)
                for (const char* kind : {"copy", "triad"})
                    out.push_back(cpu_memory(kind, data_size::from_si(array_bytes), o));
            return measurements_json(cpu_provenance(), out);
        },
        py::arg("shapes"), py::arg("formats"), py::arg("array_bytes"), py::arg("max_time_s"),
        "CPU calibration measurements (GEMM by shape and format through Eigen, STREAM copy/triad) as JSON.");
    m.def("cpu_gemm_formats", [] { return cpu_gemm_formats(); });
}

}  // namespace capplan::python
