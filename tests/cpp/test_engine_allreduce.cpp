// Serving engines' own tensor-parallel all-reduce kernels (analysis/engine_allreduce.hpp): one-shot and
// two-shot times, where each engine switches, where it hands the message to NCCL, and what a decode
// step's all-reduces cost with and without them. Expected values counted by hand from
// t1 = 5.6 us + (n - 1) S / B and t2 = 14.8 us + 2 (n - 1) / n S / B, B = 450 GB/s x 0.80 on H100/H200.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include "capplan/analysis/engine_allreduce.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/spec/engine_profile.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;
using namespace capplan::units;
using test::error_of;
using test::shipped_catalog;

namespace {

system_spec preset(const std::string& name, int count) {
    return read_system(R"({"preset": ")" + name + R"(", "count": )" + std::to_string(count) + "}", shipped_catalog(), "/system");
}

const engine_allreduce& kernel_of(const std::string& engine) { return find_engine_profile(engine, "/engine").allreduce; }

double us_of(std::optional<duration> d) { return d ? d->si() / 1e-6 : -1.0; }

}  // namespace

TEST_CASE("the kernel reads its peers at the scale-up link's rate times the ring efficiency, inside one node") {
    CHECK(engine_allreduce_bandwidth(preset("HGX-H200", 8), 8)->si() == doctest::Approx(450e9 * 0.80));
    CHECK(engine_allreduce_bandwidth(preset("DGX-H100", 8), 4)->si() == doctest::Approx(450e9 * 0.80));
    // Across nodes, or alone: no kernel (the engine calls NCCL).
    CHECK_FALSE(engine_allreduce_bandwidth(preset("DGX-H100", 16), 16));
    CHECK_FALSE(engine_allreduce_bandwidth(preset("DGX-H100", 8), 1));
    // PCIe-only GPUs pair for two, not for four (vLLM disables the kernel beyond two PCIe GPUs).
    CHECK(engine_allreduce_bandwidth(preset("L40S-PCIe-Server", 8), 2));
    CHECK_FALSE(engine_allreduce_bandwidth(preset("L40S-PCIe-Server", 8), 4));
}

TEST_CASE("vLLM's kernel: one-shot below 256 KiB on 8 GPUs, two-shot up to 8 MiB, NCCL beyond") {
    const engine_allreduce& k = kernel_of("vllm-v1");
    const auto b = engine_allreduce_bandwidth(preset("HGX-H200", 8), 8);
    // 64 KiB on 8 H200s: 5.6 + 7 x 65,536 / 360e9 s = 5.6 + 1.274 = 6.874 us (NCCL's model: about 29 us).
    CHECK(us_of(engine_allreduce_time(k, 64 * KiB, 8, b)) == doctest::Approx(6.874).epsilon(1e-3));
    // 256 KiB is two-shot on 8 GPUs: 14.8 + 1.75 x 262,144 / 360e9 = 14.8 + 1.274 = 16.074 us.
    CHECK(us_of(engine_allreduce_time(k, 256 * KiB, 8, b)) == doctest::Approx(16.074).epsilon(1e-3));
    // 4 GPUs: one-shot below 512 KiB (0.5 MiB - 1 B), two-shot at 1 MiB: 14.8 + 1.5 x 1,048,576 / 360e9 = 19.169 us.
    const auto b4 = engine_allreduce_bandwidth(preset("DGX-H100", 8), 4);
    CHECK(k.one_shot(512 * KiB - 1 * B, 4));
    CHECK_FALSE(k.one_shot(512 * KiB, 4));
    CHECK(us_of(engine_allreduce_time(k, 1 * MiB, 4, b4)) == doctest::Approx(19.169).epsilon(1e-3));
    // Two GPUs: one-shot at any size the kernel takes; 8 MiB and more go to NCCL; 3 GPUs are not supported.
    CHECK(k.one_shot(4 * MiB, 2));
    CHECK_FALSE(engine_allreduce_time(k, 8 * MiB, 8, b));
    CHECK_FALSE(engine_allreduce_time(k, 64 * KiB, 3, engine_allreduce_bandwidth(preset("DGX-H100", 8), 3)));
}

TEST_CASE("TensorRT-LLM's AUTO table switches later than vLLM: one-shot below 512 KiB on 8 GPUs") {
    const engine_allreduce& k = kernel_of("trtllm-pytorch");
    CHECK(k.one_shot(256 * KiB, 8));
    CHECK_FALSE(k.one_shot(512 * KiB, 8));
    CHECK(k.one_shot(768 * KiB, 4));
    CHECK_FALSE(k.supports(6));
    CHECK(kernel_of("trtllm-tensorrt").kernel == k.kernel);
    CHECK(kernel_of("sglang").one_shot_below == kernel_of("vllm-v1").one_shot_below);
}

TEST_CASE("a decode step's tensor-parallel all-reduces run the engine's kernel unless custom_allreduce is false") {
    // Llama-3.1-70B, tp 8 on 8 H200s, one request decoding: 80 layers x 2 all-reduces of 8,192 x 2 bytes =
    // 16 KiB, each one-shot: 5.6 + 7 x 16,384 / 360e9 = 5.6 + 0.3186 = 5.9186 us; 160 of them = 946.97 us.
    auto scenario_with = [](const std::string& extra) {
        return read_scenario(R"({"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200", "count": 8},
                                 "parallelism": {"tp": 8},
                                 "inference": {"input_tokens": 100, "output_tokens": 10)" + extra + "}}",
                             shipped_catalog());
    };
    batch_step one;
    one.decode_requests = 1;
    one.context_tokens = 100;
    const scenario custom = scenario_with("");
    const step_breakdown own = step_time_breakdown(perf_setup::from(custom), one);
    CHECK(own.tp_allreduce.si() / 1e-6 == doctest::Approx(946.97).epsilon(1e-3));
    // With NCCL every one of them costs the collective model's 16 KiB time.
    const system_spec sys = preset("HGX-H200", 8);
    const double nccl = collective_time(collective_op::all_reduce, 16 * KiB, sys, {8, 8}).time.si();
    const scenario nccl_only = scenario_with(R"(, "custom_allreduce": false)");
    const step_breakdown off = step_time_breakdown(perf_setup::from(nccl_only), one);
    CHECK(off.tp_allreduce.si() == doctest::Approx(160.0 * nccl));
    CHECK(nccl > 3.0 * 5.9186e-6);  // NCCL's launch and protocol latency: several times the kernel's
}

TEST_CASE("capplan collective --engine: the engine's kernel as a collective result, or a clear error") {
    const engine_allreduce& k = kernel_of("vllm-v1");
    const collective_result r = engine_allreduce_result(k, "vllm-v1", 64 * KiB, preset("HGX-H200", 8), 8);
    CHECK(r.algorithm == coll_algorithm::one_shot);
    CHECK(r.time.si() / 1e-6 == doctest::Approx(6.874).epsilon(1e-3));
    CHECK(r.latency.si() / 1e-6 == doctest::Approx(5.6));
    CHECK(r.busbw.si() == doctest::Approx(65536.0 / r.time.si() * 2.0 * 7.0 / 8.0));
    // Forced two-shot at 64 KiB: 14.8 + 1.75 x 65,536 / 360e9 = 15.119 us.
    const auto two = engine_allreduce_result(k, "vllm-v1", 64 * KiB, preset("HGX-H200", 8), 8, allreduce_algorithm::two_shot);
    CHECK(two.time.si() / 1e-6 == doctest::Approx(15.119).epsilon(1e-3));
    CHECK(error_of([&] { engine_allreduce_result(k, "vllm-v1", 8 * MiB, preset("HGX-H200", 8), 8); }).field() == "/size");
    CHECK(error_of([&] { engine_allreduce_result(k, "vllm-v1", 1 * KiB, preset("DGX-H100", 16), 16); }).field() == "/engine");
}

TEST_CASE("the step model prices an engine all-reduce at its exact size, not across the kernel's switch points") {
    // 384 KiB on 4 H100s (h = 8,192, 24 decode tokens): one-shot below 512 KiB: 5.6 + 3 x 393,216 / 360e9 = 8.877 us;
    // 500 KiB: 5.6 + 3 x 512,000 / 360e9 = 9.867 us. A grid interpolated between 256 KiB and 512 KiB would blend in
    // the two-shot time at 512 KiB.
    const scenario sc = read_scenario(
        R"({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 4}, "parallelism": {"tp": 4},
            "inference": {"input_tokens": 100, "output_tokens": 10}})", shipped_catalog());
    const perf_setup su = perf_setup::from(sc);
    CHECK(su.allreduce(384 * KiB).si() / 1e-6 == doctest::Approx(8.877).epsilon(1e-3));
    CHECK(su.allreduce(500 * KiB).si() / 1e-6 == doctest::Approx(9.867).epsilon(1e-3));
    // From 8 MiB the engine calls NCCL: the collective model's time.
    CHECK(su.allreduce(8 * MiB).si() == doctest::Approx(
        collective_time(collective_op::all_reduce, 8 * MiB, preset("DGX-H100", 4), {4, 4}).time.si()).epsilon(1e-9));
}
