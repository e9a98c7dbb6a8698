#include <pybind11/stl.h>

#include <fstream>
#include <tuple>

#include "capplan/calibration/cpu_backend.hpp"
#include "capplan/calibration/cuda_backend.hpp"
#include "capplan/calibration/efficiency_fit.hpp"
#include "capplan/catalog.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/hf_config.hpp"
#include "register.hpp"

namespace py = pybind11;

namespace capplan::python {

void register_calibration(py::module_& m) {
    m.def(
        "measure_cpu_json",
        [](const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>& shapes,
           const std::vector<std::string>& formats, double array_bytes, double max_time_s, int threads,
           progress* watch) {
            measure_options o;
            o.max_time = duration::from_si(max_time_s);
            o.threads = threads;
            o.watch = watch;
            std::vector<measurement> out;
            py::gil_scoped_release release;  // long-running: let other Python threads work
            if (watch) watch->add_total(static_cast<std::int64_t>(formats.size() * shapes.size()) + (array_bytes > 0 ? 2 : 0));
            try {  // asked to stop: the probes measured so far
                for (const auto& f : formats)
                    for (const auto& [mm, nn, kk] : shapes) out.push_back(cpu_gemm(mm, nn, kk, f, o));
                if (array_bytes > 0)
                    for (const char* kind : {"copy", "triad"})
                        out.push_back(cpu_memory(kind, data_size::from_si(array_bytes), o));
            } catch (const stopped_early&) {
            }
            return measurements_json(cpu_provenance(threads), out);
        },
        py::arg("shapes"), py::arg("formats"), py::arg("array_bytes"), py::arg("max_time_s"), py::arg("threads") = 0,
        py::arg("watch") = nullptr,
        "CPU calibration measurements (GEMM by shape and format through Eigen, STREAM copy/triad) on `threads` "
        "threads (0: every hardware thread) as JSON, with the ISA and the CPU's peak in the provenance.");
    m.def("cpu_gemm_formats", [] { return cpu_gemm_formats(); });
    m.def("cuda_backend_built", [] { return cuda_backend_built(); });
    m.def(
        "fit_efficiency_curve",
        [](const std::vector<std::pair<double, double>>& samples, int max_knots) {
            std::vector<efficiency_point> pts;
            for (const auto& [w, e] : samples) pts.push_back({w, e});
            std::vector<std::pair<double, double>> out;
            for (const auto& p : fit_efficiency_curve(std::move(pts), max_knots).points) out.emplace_back(p.work, p.value);
            return out;
        },
        py::arg("samples"), py::arg("max_knots") = 16,
        "Least-squares linear spline in log10(work) through (work, efficiency) samples; the curve's (work, value) points.");
    m.def(
        "calibrate_cuda_json",
        [](const std::string& model, bool is_config, const std::string& name, const std::string& accelerator, std::int64_t layer_tokens,
           const std::vector<std::int64_t>& gemm_tokens, const std::vector<std::string>& formats, double max_time_s,
           int device, const std::string& command, const std::string& raw_path) {
            const catalog& cat = default_catalog();
            const model_spec spec = resolve_model(model, is_config, name);
            const accelerator_spec a = cat.accelerator(accelerator, "/accelerator");
            cuda_calibration_options o;
            o.layer_tokens = layer_tokens;
            o.gemm_tokens = gemm_tokens;
            o.formats = formats;
            o.probe.max_time = duration::from_si(max_time_s);
            o.device = device;
            std::string raw;
            o.on_measured = [&](const calibration_run& r) { raw = measurements_json(r.where, r.measurements); };
            py::gil_scoped_release release;
            try {
                return calibration_json(calibrate_cuda(spec, a, o), command);
            } catch (const config_error& e) {  // the fit: keep what the device measured
                if (raw.empty() || raw_path.empty() || !(std::ofstream(raw_path) << raw << "\n")) throw;
                throw device_error(std::string(e.what()) + "; the raw measurements are in " + raw_path);
            }
        },
        py::arg("model"), py::arg("is_config"), py::arg("name"), py::arg("accelerator"), py::arg("layer_tokens"), py::arg("gemm_tokens"),
        py::arg("formats"), py::arg("max_time_s"), py::arg("device"), py::arg("command"), py::arg("raw_path") = "",
        "Measure a CUDA device as a catalog accelerator on a model's layer shapes and fit the efficiency table; "
        "the calibration file as JSON. DeviceError without a GPU or without the CUDA backend; where the fit fails "
        "and raw_path is given, the measurements are written there first.");
    m.def(
        "calibrate_cpu_json",
        [](const std::string& model, bool is_config, const std::string& name, std::int64_t layer_tokens, const std::vector<std::int64_t>& gemm_tokens,
           const std::vector<std::string>& formats, const std::vector<double>& triad_array_bytes, int rounds,
           double max_time_s, const std::string& command, int threads, progress* watch) {
            const model_spec spec = resolve_model(model, is_config, name);
            cpu_calibration_options o;
            o.layer_tokens = layer_tokens;
            o.gemm_tokens = gemm_tokens;
            o.formats = formats;
            for (double b : triad_array_bytes) o.triad_arrays.push_back(data_size::from_si(b));
            o.rounds = rounds;
            o.probe.max_time = duration::from_si(max_time_s);
            o.probe.threads = threads;
            o.probe.watch = watch;
            py::gil_scoped_release release;
            return calibration_json(calibrate_cpu(spec, o), command);
        },
        py::arg("model"), py::arg("is_config"), py::arg("name"), py::arg("layer_tokens"), py::arg("gemm_tokens"), py::arg("formats"),
        py::arg("triad_array_bytes"), py::arg("rounds"), py::arg("max_time_s"), py::arg("command"), py::arg("threads") = 0,
        py::arg("watch") = nullptr,
        "Measure this CPU on a model's layer shapes on `threads` threads (0: every hardware thread), fit the efficiency "
        "table and check the layer; the calibration file as JSON.");
}

}  // namespace capplan::python
