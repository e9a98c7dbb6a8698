// Speed of the training layout search: GPT-3 175B on 512 A100s (issue 6's reference space), and
// one layout's step time. Run: build/cpp/capplan_bench_search (measured, never asserted).
#include <benchmark/benchmark.h>

#include "bench_catalog_dir.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/catalog.hpp"
#include "capplan/search/inference_grid.hpp"
#include "capplan/search/layout_search.hpp"
#include "capplan/search/scenario_sweep.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;

namespace {
const catalog& cat() { return bench_catalog(); }
const scenario& gpt3() {
    static const scenario s = read_scenario(R"({"model": "GPT-3-175B", "system": {"preset": "DGX-A100", "count": 512},
        "parallelism": {"tp": 8, "pp": 8, "vpp": 3, "sequence_parallel": true},
        "training": {"seq_len": 2048, "global_batch": 1536, "recompute": "selective"}})", cat());
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

// The same search for a QLoRA fine-tune (issue #20: the search covers LoRA): Llama-3.1-70B in NF4, rank 16 on every
// projection, 64 H100s, sequence 4096, 256 sequences a step.
static void search_qlora_70b_64(benchmark::State& state) {
    static const scenario qlora = read_scenario(R"({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 64},
        "precision": {"weights": "nf4"},
        "training": {"seq_len": 4096, "global_batch": 256, "kernels": "eager",
                     "lora": {"rank": 16, "targets": "all_linear"}}})", cat());
    static const scenario full = read_scenario(R"({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 64},
        "training": {"seq_len": 4096, "global_batch": 256}})", cat());
    const scenario& s = state.range(1) != 0 ? qlora : full;
    std::int64_t n = 0;
    for (auto _ : state) {
        const auto r = search_training_layouts(s, 10, static_cast<int>(state.range(0)));
        n = r.enumerated;
        benchmark::DoNotOptimize(r);
    }
    state.counters["layouts"] = static_cast<double>(n);
}
BENCHMARK(search_qlora_70b_64)->Args({1, 1})->Args({1, 0})->Unit(benchmark::kMillisecond);

static void one_layout_step_time(benchmark::State& state) {
    for (auto _ : state) benchmark::DoNotOptimize(estimate_training_performance(gpt3()));
}
BENCHMARK(one_layout_step_time)->Unit(benchmark::kMicrosecond);

// One roofline estimate (a static batch's prefill steps and a decode step), Llama-3.1-70B on 8x H200,
// plain and with an EAGLE head (issue #18 target: under 10 us a call).
static void roofline_latency(benchmark::State& state) {
    const bool eagle = state.range(0) != 0;
    static const std::string base = R"({"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200"}, "parallelism": {"tp": 8},
        "inference": {"input_tokens": 2000, "output_tokens": 300, "batch": 32)";
    const scenario s = read_scenario(base + (eagle ? R"(, "speculative": {"method": "eagle", "tokens": 3, "acceptance": 0.7}}})" : "}}"), cat());
    const perf_setup setup = perf_setup::from(s);
    prefill_plan plan;
    plan.step_tokens = 8192;
    for (auto _ : state) benchmark::DoNotOptimize(estimate_latency(setup, 2000, 300, 32, plan));
}
BENCHMARK(roofline_latency)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

// A million static-batch inference points (4 tp layouts x 1000 prompt lengths x 250 batches) for
// Llama-3.1-70B on 8x H200, on 1 and 2 threads.
static void inference_grid_1m(benchmark::State& state) {
    static const std::vector<scenario> layouts = [] {
        std::vector<scenario> v;
        for (int tp : {1, 2, 4, 8})
            v.push_back(read_scenario(R"({"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200"}, "parallelism": {"tp": )" +
                                          std::to_string(tp) +
                                          R"(}, "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 1}})",
                                      cat()));
        return v;
    }();
    std::vector<grid_axis> axes{{"inference.input_tokens", {}}, {"inference.batch", {}}};
    for (std::int64_t t = 100; t <= 100000; t += 100) axes[0].values.push_back(t);
    for (std::int64_t b = 1; b <= 250; ++b) axes[1].values.push_back(b);
    const std::vector<std::string> no_errors(layouts.size());
    std::size_t n = 0;
    for (auto _ : state) n = sweep_inference_grid(layouts, no_errors, axes, static_cast<int>(state.range(0))).size();
    state.counters["points"] = static_cast<double>(n);
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}
BENCHMARK(inference_grid_1m)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// The sweep over any keys (issue #23 item 1), one thread, every column (second argument 0) or four headline ones (1): 1,024 points of a static batch (Llama-3.1-70B on
// 8x H200: 4 tp x 256 batches) and of a training step (Llama-3.1-8B on 64 H100s: 4 tp x 256 global batches), per point
// a patched copy of the parsed scenario, read, estimated and written to columns.
static void scenario_sweep(benchmark::State& state) {
    const bool training = state.range(0) == 1, headline = state.range(1) == 1;
    const char* base = training ? R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 64},
        "training": {"seq_len": 4096, "global_batch": 512}})"
                                : R"({"model": "Llama-3.1-70B", "system": "HGX-H200",
        "inference": {"input_tokens": 2000, "output_tokens": 500, "batch": 50}})";
    std::vector<sweep_axis> axes{{"parallelism.tp", {"1", "2", "4", "8"}}, {training ? "training.global_batch" : "inference.batch", {}}};
    for (int b = 1; b <= 256; ++b) axes[1].values.push_back(std::to_string(training ? 64 * b : b));
    std::size_t n = 0;
    // Headline columns: a static batch's latency, throughput and fit; a training step's time, MFU and fit.
    const std::vector<std::string> columns =
        !headline ? std::vector<std::string>{}
        : training ? std::vector<std::string>{"training.step_time_s", "training.mfu", "training.tokens_per_s", "memory.fits"}
                   : std::vector<std::string>{"inference.ttft_s", "inference.tpot_s", "inference.throughput_tokens_per_s",
                                              "memory.fits"};
    for (auto _ : state) n = sweep_scenario(base, {}, axes, columns, 1, nullptr, cat()).points;
    state.counters["points"] = static_cast<double>(n);
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}
BENCHMARK(scenario_sweep)->Args({0, 0})->Args({0, 1})->Args({1, 0})->Args({1, 1})->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
