// The per-kernel roofline of inference_perf.hpp against published GEMM times on both sides of the
// ridge: time = ||(FLOPs / (peak x gemm efficiency), bytes / (bandwidth x memory efficiency))||_p
// + one launch, with the catalog's efficiencies and p (efficiency.roofline_norm: A100 2, Hopper
// none = max(), its small-kernel losses being in the by-size curve). At max() the A100 rows would be
// up to 14% fast; at p = 2 the Hopper rows up to 24% slow (DeepGEMM M = 128).
#include <doctest/doctest.h>

#include "capplan/analysis/inference_perf.hpp"
#include "capplan/dtype.hpp"
#include "test_support.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
struct gemm_row {
    const char* accelerator;
    const char* format;  // fp16 / bf16: 2-byte A, B and C; fp8: 1-byte A and B, bf16 C
    double m, n, k, tflops;
};

double predicted_tflops(const gemm_row& g) {
    const accelerator_spec& a = test::shipped_catalog().accelerator(g.accelerator);
    const number_format& f = find_format(g.format);
    const perf_efficiency e = default_perf_efficiency(a, f);
    const double ab = f.bytes_per_element();
    const double flops = 2.0 * g.m * g.n * g.k;
    const double bytes = (g.m * g.k + g.n * g.k) * ab + g.m * g.n * 2.0;
    const duration c = (flops * FLOP) / (a.peak(f.peak_key).value * e.gemm_at(flops));
    const duration m = (bytes * B) / (*a.memory_bandwidth * e.memory_at(bytes));
    const duration t = overlapped_roofline(c, m, e.roofline_norm) + e.per_kernel;
    return flops / t.si() / 1e12;
}
}  // namespace

TEST_CASE("GEMM times across the ridge: A100 cuBLAS, H100 bf16 and FP8, H800 FP8 within 12%") {
    const gemm_row rows[] = {
        // ml-explore/mlx PR #3255 "[CUDA] Pipelined QMM", table "A100:", CUBLAS column (fp16 dense),
        // e.g. "| 64 | 4096 | 4096 | 245.7 | 1282.7 | 27.95 | 79.61 | 0.35 |".
        {"A100-80GB-SXM", "fp16", 16, 4096, 4096, 22.24},
        {"A100-80GB-SXM", "fp16", 64, 4096, 4096, 79.61},
        {"A100-80GB-SXM", "fp16", 16, 16384, 16384, 26.52},
        {"A100-80GB-SXM", "fp16", 64, 16384, 16384, 100.14},
        // vllm-project/vllm PR #49363 (H100 benchmarks, google/gemma-4-31B-it shapes), TFLOP/s:
        // torch-bf16 and fp8-tensor-w-tensor-a-noquant (CUTLASS scaled_mm).
        {"H100-SXM", "bf16", 64, 12288, 5376, 182.588263},
        {"H100-SXM", "bf16", 128, 12288, 5376, 352.560566},
        {"H100-SXM", "bf16", 128, 43008, 5376, 364.745064},
        {"H100-SXM", "fp8", 128, 12288, 5376, 581.821280},
        {"H100-SXM", "fp8", 64, 43008, 5376, 356.667172},
        {"H100-SXM", "fp8", 128, 43008, 5376, 647.281778},
        // deepseek-ai/DeepGEMM README, "Normal GEMMs for dense models" (H800: H100 SXM's FP8 and HBM3),
        // e.g. "| 128  | 4096  | 7168  | 533 TFLOPS  |    2221 GB/s     |  2.0x   |".
        {"H100-SXM", "fp8", 64, 4096, 7168, 287},
        {"H100-SXM", "fp8", 128, 4096, 7168, 533},
        {"H100-SXM", "fp8", 128, 7168, 16384, 645},
    };
    for (const auto& g : rows) {
        const double p = predicted_tflops(g);
        INFO(g.accelerator << " " << g.format << " M=" << g.m << " N=" << g.n << " K=" << g.k << ": measured "
                           << g.tflops << ", model " << p << " TFLOP/s");
        CHECK(p == doctest::Approx(g.tflops).epsilon(0.12));
    }
}

TEST_CASE("the p-norm of compute and memory: the larger away from the ridge, 2^(1/p) of it at the ridge") {
    CHECK(overlapped_roofline(3.0 * s, 4.0 * s, 2.0).si() == doctest::Approx(5.0));  // 3-4-5
    CHECK(overlapped_roofline(1.0 * s, 1.0 * s, 3.0).si() == doctest::Approx(std::cbrt(2.0)));
    CHECK(overlapped_roofline(1.0 * s, 2.0 * s, std::numeric_limits<double>::infinity()).si() == 2.0);
    CHECK(overlapped_roofline(0.0 * s, 2.0 * s, 2.0).si() == 2.0);
    CHECK(overlapped_roofline(1.0 * s, 100.0 * s, 2.0).si() == doctest::Approx(100.005).epsilon(1e-6));
}
