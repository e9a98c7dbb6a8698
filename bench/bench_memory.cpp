// Speed of the memory model: one full inference breakdown, the max-concurrency solver, one
// training-memory breakdown. Run: build/cpp/capplan_bench_memory (measured, never asserted).
#include <benchmark/benchmark.h>

#include "capplan/analysis/inference_memory.hpp"
#include "capplan/analysis/training_memory.hpp"
#include "capplan/catalog.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;

namespace {
const catalog& cat() {
    static const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    return c;
}
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

BENCHMARK_MAIN();
