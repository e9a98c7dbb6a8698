// Exits 77 (ctest: skipped) without a GPU; with one, checks the device query and the CUDA probes.
// `capplan_gpu_check --calibrate MODEL ACCELERATOR FILE` then also runs the CUDA calibration of the
// model's layer shapes as that catalog accelerator and writes the calibration file: the device run's
// way to a calibration where the Python module cannot be built (scripts/device_check.sh).
#include <cstdio>
#include <cstring>
#include <fstream>

#include "capplan/calibration/cuda_backend.hpp"
#include "capplan/catalog.hpp"
#include "capplan/device.hpp"
#include "capplan/error.hpp"

namespace {

int calibrate(const char* model, const char* accelerator, const char* file) {
    const capplan::catalog& cat = capplan::default_catalog();
    capplan::cuda_calibration_options o;
    o.probe.max_time = capplan::duration::from_si(0.3);
    const auto run = capplan::calibrate_cuda(cat.model(model), cat.accelerator(accelerator, "/accelerator"), o);
    std::ofstream out(file);
    out << capplan::calibration_json(run, std::string("capplan_gpu_check --calibrate ") + model + " " + accelerator + " " +
                                              file)
        << "\n";
    out.close();
    if (!out) {  // a full disk or an unwritable path: the measured run is lost, so say it and fail
        std::fprintf(stderr, "calibration: could not write %s\n", file);
        return 1;
    }
    std::printf("calibration of %s as %s written to %s\n", model, accelerator, file);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const auto s = capplan::query_devices();
    if (s.devices.empty()) {
        std::printf("no GPU: %s\n", s.reason.c_str());
        return 77;
    }
    for (const auto& d : s.devices) {
        std::printf("%s sm_%d%d %.1f GB\n", d.name.c_str(), d.compute_major, d.compute_minor, d.memory_bytes / 1e9);
        if (d.memory_bytes <= 0 || d.compute_major < 3) return 1;
    }
    // The probes on device 0: a bf16 GEMM (compute capability 8.0+), a device copy, the launch latency.
    capplan::measure_options quick;
    quick.max_time = capplan::duration::from_si(0.2);
    const auto copy = capplan::cuda_memory_copy(capplan::data_size::from_si(64.0 * 1048576.0), quick);
    const auto launch = capplan::cuda_launch_latency(quick);
    std::printf("device copy %.0f GB/s, launch %.2f us\n", copy.achieved_bandwidth().si() / 1e9, launch.time.si() * 1e6);
    if (copy.achieved_bandwidth().si() <= 0 || launch.time.si() <= 0 || launch.time.si() > 1e-3) return 1;
    if (s.devices[0].compute_major >= 8) {
        const auto g = capplan::cuda_gemm(4096, 4096, 4096, "bf16", quick);
        std::printf("bf16 GEMM 4096^3 %.0f TFLOP/s\n", g.achieved_flops().si() / 1e12);
        if (g.achieved_flops().si() <= 0) return 1;
    }
    if (argc == 5 && std::strcmp(argv[1], "--calibrate") == 0) {
        try {
            return calibrate(argv[2], argv[3], argv[4]);
        } catch (const capplan::error& e) {
            std::fprintf(stderr, "calibration: %s\n", e.what());
            return 1;
        }
    }
    return 0;
}
