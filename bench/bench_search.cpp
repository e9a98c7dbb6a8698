// Speed of the training layout search: GPT-3 175B on 512 A100s (issue 6's reference space), and
// one layout's step time. Run: build/cpp/capplan_bench_search (measured, never asserted).
#include <benchmark/benchmark.h>

#include "capplan/catalog.hpp"
#include "capplan/search/layout_search.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;

namespace {
const scenario& gpt3() {
    static const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    static const scenario s = read_scenario(R"({"model": "GPT-3-175B", "system": {"preset": "DGX-A100", "count": 512},
        "parallelism": {"tp": 8, "pp": 8, "vpp": 3, "sequence_parallel": true},
        "training": {"seq_len": 2048, "global_batch": 1536, "recompute": "selective"}})", c);
    return s;
}
}  // namespace

static void search_gpt3_512(benchmark::State& state) {
    std::int64_t n = 0;
    for (auto _ : state) {
        const auto r = search_training_layouts(gpt3(), 10, static_cast<int>(state.range(0)));
        n = r.enumerated;
        benchmark::DoNotOptimize(r);
    }
    state.counters["layouts"] = static_cast<double>(n);
}
BENCHMARK(search_gpt3_512)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

static void one_layout_step_time(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(estimate_training_performance(gpt3()));
}
BENCHMARK(one_layout_step_time)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
