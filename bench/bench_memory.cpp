// Speed of the memory and speed models: one full inference memory breakdown, the solvers, one
// training-memory breakdown, one prefill + decode latency estimate. Run: build/cpp/capplan_bench_memory (measured, never asserted).
#include <benchmark/benchmark.h>

#include "capplan/analysis/inference_memory.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/training_memory.hpp"
#include "bench_catalog_dir.hpp"
#include "capplan/catalog.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;

namespace {
const catalog& cat() { return bench_catalog(); }
const scenario& llama70b() {
    static const scenario s = read_scenario(default_scenario_json(), cat());
    return s;
}
}  // namespace

static void inference_breakdown(benchmark::State& state) {
    const inference_setup s = inference_setup::from(llama70b());
    for (auto _ : state) benchmark::DoNotOptimize(inference_budget(s, 50, 2500));
}
BENCHMARK(inference_breakdown);

static void max_concurrency_solver(benchmark::State& state) {
    const inference_setup s = inference_setup::from(llama70b());
    for (auto _ : state) benchmark::DoNotOptimize(max_concurrency(s, 2500));
}
BENCHMARK(max_concurrency_solver)->Unit(benchmark::kMicrosecond);

static void max_context_solver(benchmark::State& state) {
    const inference_setup s = inference_setup::from(llama70b());
    for (auto _ : state) benchmark::DoNotOptimize(max_context(s, 50));
}
BENCHMARK(max_context_solver)->Unit(benchmark::kMicrosecond);

static void training_breakdown(benchmark::State& state) {
    static const scenario s = read_scenario(R"({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 64},
        "parallelism": {"tp": 8, "pp": 4, "sequence_parallel": true},
        "training": {"seq_len": 8192, "global_batch": 512, "recompute": "selective", "distributed_optimizer": true}})", cat());
    const weight_sharding w = shard_weights(s.model, s.parallelism);
    for (auto _ : state)
        benchmark::DoNotOptimize(estimate_training_memory(s.model, w, s.precision, s.parallelism, *s.training));
}
BENCHMARK(training_breakdown)->Unit(benchmark::kMicrosecond);

// One prefill + one decode estimate (TTFT, TPOT) for Llama-3.1-70B over tp 8 (issue 5: < 20 us).
static void prefill_and_decode_estimate(benchmark::State& state) {
    const perf_setup s = perf_setup::from(llama70b());
    for (auto _ : state) benchmark::DoNotOptimize(estimate_latency(s, 2000, 500, 50));
}
BENCHMARK(prefill_and_decode_estimate)->Unit(benchmark::kMicrosecond);

// The same with a calibration's efficiency-by-size curves (a lookup per kernel instead of one value).
static void prefill_and_decode_estimate_calibrated(benchmark::State& state) {
    scenario sc = llama70b();
    sc.calibration = read_efficiency_table(R"({"kind": "efficiency_calibration", "name": "bench", "accelerator": ")" +
                                               sc.system.accelerator.name + R"(", "source": "bench",
        "peaks": {"flops": {"bf16": "989.5 TFLOP/s"}, "memory_bandwidth": "4.8 TB/s"},
        "curves": {"gemm": {"bf16": [{"flops": 1e8, "efficiency": 0.05}, {"flops": 1e10, "efficiency": 0.5},
                                     {"flops": 1e12, "efficiency": 0.8}]},
                   "memory": [{"bytes": 1e5, "efficiency": 0.3}, {"bytes": 1e9, "efficiency": 0.9}]}})",
                                           "");
    const perf_setup s = perf_setup::from(sc);
    for (auto _ : state) benchmark::DoNotOptimize(estimate_latency(s, 2000, 500, 50));
}
BENCHMARK(prefill_and_decode_estimate_calibrated)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
