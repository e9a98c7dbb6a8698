// Exits 77 (ctest: skipped) without a GPU; with one, checks the device query and the CUDA probes.
#include <cstdio>

#include "capplan/calibration/cuda_backend.hpp"
#include "capplan/device.hpp"

int main() {
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
    return 0;
}
