// Speed of the collective model: one estimate, and a 30-point size sweep (8 B .. 4 GiB).
// Run: build/cpp/capplan_bench_collectives (measured here, never asserted by a test).
#include <benchmark/benchmark.h>

#include "capplan/analysis/collectives.hpp"
#include "capplan/catalog.hpp"

using namespace capplan;

namespace {
system_spec cluster() {
    static const catalog c = catalog::load(CAPPLAN_BENCH_CATALOG_DIR);
    system_spec s = c.system("DGX-H100");
    s.count = 64;
    return s;
}
}  // namespace

static void one_all_reduce(benchmark::State& state) {
    const system_spec s = cluster();
    for (auto _ : state)
        benchmark::DoNotOptimize(collective_time(collective_op::all_reduce, 1 * units::GiB, s, {64, 8}));
}
BENCHMARK(one_all_reduce);

static void sweep_30_sizes(benchmark::State& state) {
    const system_spec s = cluster();
    for (auto _ : state) {
        data_size size = 8 * units::B;
        for (int i = 0; i < 30; ++i, size *= 2.0)
            benchmark::DoNotOptimize(collective_time(collective_op::all_reduce, size, s, {64, 8}));
    }
}
BENCHMARK(sweep_30_sizes)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
