// Speed of the serving simulator: 100,000 requests end to end (issue target: under 1 s on one
// core with a cheap step_time_fn). Run: build/cpp/capplan_bench_serving_sim (measured, never asserted).
#include <benchmark/benchmark.h>

#include "capplan/analysis/serving_sim.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
// A cheap affine step: overhead + per prefill token + per decode + per context token.
duration step(const batch_step& b) {
    return 5 * ms + b.prefill_tokens * 0.05 * ms + b.decode_requests * 0.05 * ms + b.context_tokens * 0.00001 * ms;
}

workload_spec chat(double rate) {
    workload_spec w;
    w.arrival = workload_spec::arrival_kind::poisson;
    w.rate_per_s = rate;
    w.requests = 100'000;
    w.input = length_dist::lognormal(512, 1.0, 8192);   // mean ~845 tokens
    w.output = length_dist::lognormal(128, 1.0, 2048);  // mean ~210 tokens: ~21M decode tokens in all
    w.seed = 1;
    return w;
}
}  // namespace

// Poisson arrivals below saturation: many small steps (~0.9M), KV cache never full.
static void poisson_100k(benchmark::State& state) {
    const workload_spec w = chat(10);
    scheduler_spec s;
    s.kv_capacity_tokens = 400'000;
    for (auto _ : state) benchmark::DoNotOptimize(simulate(w, s, step));
    state.SetItemsProcessed(state.iterations() * w.requests);
}
BENCHMARK(poisson_100k)->Unit(benchmark::kMillisecond);

// Overloaded with a small cache: full batches and constant preemption.
static void overloaded_preempting_100k(benchmark::State& state) {
    const workload_spec w = chat(20);
    scheduler_spec s;
    s.kv_capacity_tokens = 200'000;
    for (auto _ : state) benchmark::DoNotOptimize(simulate(w, s, step));
    state.SetItemsProcessed(state.iterations() * w.requests);
}
BENCHMARK(overloaded_preempting_100k)->Unit(benchmark::kMillisecond);

// Closed loop, 256 users over 4 replicas.
static void closed_loop_4_replicas_100k(benchmark::State& state) {
    workload_spec w = chat(1);
    w.arrival = workload_spec::arrival_kind::closed_loop;
    w.users = 256;
    w.think_time = 1 * s;
    scheduler_spec sc;
    sc.replicas = 4;
    sc.kv_capacity_tokens = 400'000;
    for (auto _ : state) benchmark::DoNotOptimize(simulate(w, sc, step));
    state.SetItemsProcessed(state.iterations() * w.requests);
}
BENCHMARK(closed_loop_4_replicas_100k)->Unit(benchmark::kMillisecond);

// Disaggregated: poisson_100k's load on one prefill and one decode replica, each cache crossing in
// 1 ms + 20 ns a token (issue #18 target: a 100k-request simulation under 0.5 s). More replicas cost
// more: every idle decode replica still steps for its few requests.
static void disaggregated_100k(benchmark::State& state) {
    const workload_spec w = chat(10);
    disaggregated_scheduler d;
    d.prefill.kv_capacity_tokens = 100'000, d.decode.kv_capacity_tokens = 400'000;
    d.kv_transfer = [](std::int64_t tokens) { return 1 * ms + tokens * 20e-9 * s; };
    for (auto _ : state) benchmark::DoNotOptimize(simulate_disaggregated(w, d, step, step));
    state.SetItemsProcessed(state.iterations() * w.requests);
}
BENCHMARK(disaggregated_100k)->Unit(benchmark::kMillisecond);

// Speculative decoding (4 drafted tokens, acceptance 0.7) with a prefix cache (half of each prompt).
static void speculative_prefix_cache_100k(benchmark::State& state) {
    workload_spec w = chat(10);
    w.prefix_cache.hit_rate = 0.5;
    scheduler_spec sc;
    sc.kv_capacity_tokens = 400'000;
    sc.draft_tokens = 4, sc.acceptance = 0.7;
    for (auto _ : state) benchmark::DoNotOptimize(simulate(w, sc, step));
    state.SetItemsProcessed(state.iterations() * w.requests);
}
BENCHMARK(speculative_prefix_cache_100k)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
