// Speed of the foundation: loading the catalog, parsing a scenario, counting parameters.
// Run: build/cpp/capplan_bench   (numbers are measured here, never asserted by a test)
#include <benchmark/benchmark.h>

#include "capplan/analysis/parameters.hpp"
#include "capplan/catalog.hpp"
#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "capplan/units_parse.hpp"

using namespace capplan;

static void catalog_load(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(catalog::load(CAPPLAN_BENCH_CATALOG_DIR));
}
BENCHMARK(catalog_load)->Unit(benchmark::kMillisecond);

static void parameter_count(benchmark::State& state) {
    const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    const model_spec& m = c.model("DeepSeek-V3");
    for (auto _ : state) benchmark::DoNotOptimize(count_parameters(m).total());
}
BENCHMARK(parameter_count);

static void parse_quantity_string(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(parse<byte_rate>("3.35 TB/s"));
}
BENCHMARK(parse_quantity_string);

static void scenario_to_estimate(benchmark::State& state) {
    const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    const std::string text = default_scenario_json();
    for (auto _ : state) benchmark::DoNotOptimize(estimate(read_scenario(text, c), c));
}
BENCHMARK(scenario_to_estimate)->Unit(benchmark::kMicrosecond);  // 50 users: includes the serving simulation

// A static batch (no simulation): memory, roofline speed, FLOPs, cold start and the result.
static void scenario_to_estimate_static_batch(benchmark::State& state) {
    const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    const std::string text = R"({"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200", "count": 8},
        "parallelism": {"tp": 8}, "inference": {"input_tokens": 2000, "output_tokens": 500, "batch": 50}})";
    for (auto _ : state) benchmark::DoNotOptimize(estimate(read_scenario(text, c), c));
}
BENCHMARK(scenario_to_estimate_static_batch)->Unit(benchmark::kMicrosecond);

// Its parts: reading the scenario (JSON text to the typed scenario), the estimate alone, and the result's JSON.
static const char* static_batch_text = R"({"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200", "count": 8},
    "parallelism": {"tp": 8}, "inference": {"input_tokens": 2000, "output_tokens": 500, "batch": 50}})";
static void read_scenario_static_batch(benchmark::State& state) {
    const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    for (auto _ : state) benchmark::DoNotOptimize(read_scenario(static_batch_text, c));
}
BENCHMARK(read_scenario_static_batch)->Unit(benchmark::kMicrosecond);
static void estimate_only_static_batch(benchmark::State& state) {
    const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    const scenario sc = read_scenario(static_batch_text, c);
    for (auto _ : state) benchmark::DoNotOptimize(estimate(sc, c));
}
BENCHMARK(estimate_only_static_batch)->Unit(benchmark::kMicrosecond);
// A training step (Llama-3.1-8B on 64 H100s): bench/python_calls.py times the same from Python.
static void estimate_only_training(benchmark::State& state) {
    const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    const scenario sc = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 64},
        "training": {"seq_len": 4096, "global_batch": 512}})", c);
    for (auto _ : state) benchmark::DoNotOptimize(estimate(sc, c));
}
BENCHMARK(estimate_only_training)->Unit(benchmark::kMicrosecond);
// The same two with none of the optional parts (what capplan.estimate of a capplan.Scenario computes first: the
// memory limits, cold start, checkpoint, FLOPs, ranges, cost, data reading and notes wait until read).
static void estimate_headline_static_batch(benchmark::State& state) {
    const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    const scenario sc = read_scenario(static_batch_text, c);
    const estimate_parts none = estimate_parts::headline();
    for (auto _ : state) benchmark::DoNotOptimize(estimate(sc, c, none));
}
BENCHMARK(estimate_headline_static_batch)->Unit(benchmark::kMicrosecond);
static void estimate_headline_training(benchmark::State& state) {
    const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    const scenario sc = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 64},
        "training": {"seq_len": 4096, "global_batch": 512}})", c);
    const estimate_parts none = estimate_parts::headline();
    for (auto _ : state) benchmark::DoNotOptimize(estimate(sc, c, none));
}
BENCHMARK(estimate_headline_training)->Unit(benchmark::kMicrosecond);
static void result_json_static_batch(benchmark::State& state) {
    const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    const estimate_result r = estimate(read_scenario(static_batch_text, c), c);
    for (auto _ : state) benchmark::DoNotOptimize(to_json(r, -1));
}
BENCHMARK(result_json_static_batch)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
