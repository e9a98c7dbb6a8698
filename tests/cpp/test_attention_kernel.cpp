// A training attention kernel's published rate (include/capplan/analysis/attention_kernel.hpp, training.attention_kernel):
// the catalog's points from FlashAttention-2's benchmark (Dao 2023, Fig. 4 and 7), interpolated by hand.
#include <doctest/doctest.h>

#include <algorithm>

#include "capplan/analysis/attention_kernel.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/training_perf.hpp"
#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "test_support.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {

const catalog& cat() { return test::shipped_catalog(); }

double tflops(flop_rate r) { return r.si() / 1e12; }

// A GPT-2-shaped decoder (LayerNorm, GeLU, learned positions) of `hidden` in `heads` heads on one accelerator.
scenario decoder(const std::string& accelerator, int hidden, int heads, const std::string& training) {
    return read_scenario(R"({"model": {"model_type": "gpt2", "n_embd": )" + std::to_string(hidden) + R"(, "n_head": )" +
                             std::to_string(heads) + R"(, "n_layer": 4, "n_positions": 2048, "vocab_size": 50368},
        "system": {"accelerator": ")" + accelerator + R"(", "count": 1},
        "training": {"seq_len": 2048, "global_batch": 4, "micro_batch": 4)" + training + "}}",
                         cat());
}

const op_time& op_named(const step_breakdown& b, std::string_view name) {
    return *std::find_if(b.ops.begin(), b.ops.end(), [&](const op_time& o) { return o.op == name; });
}

std::string error_of(const std::string& text) {
    try {
        (void)read_scenario(text, cat());
    } catch (const config_error& e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST_CASE("a kernel's rate: the published points, linear in head dimension and in log2 of the sequence, clamped") {
    const auto& triton = cat().accelerator("A100-80GB-SXM").attention_kernel_rates.at("flash_attention_triton").points;
    // Fig. 4 (c, d), causal: head dimension 64: 59, 75, 79, 76, 79, 80 TFLOP/s at 512 ... 16k; 128: 50, 61, 68, 74, 78, 80.
    CHECK(tflops(attention_kernel_rate(triton, 64, 2048)) == doctest::Approx(79));
    CHECK(tflops(attention_kernel_rate(triton, 128, 2048)) == doctest::Approx(68));
    CHECK(tflops(attention_kernel_rate(triton, 96, 2048)) == doctest::Approx((79 + 68) / 2.0));
    // 2^11.5 tokens: half way from 2k (79) to 4k (76) in log2.
    CHECK(tflops(attention_kernel_rate(triton, 64, 2896.309375740099)) == doctest::Approx(77.5));
    // 3k at 128: log2(1.5) = 0.585 of the way from 68 to 74.
    CHECK(tflops(attention_kernel_rate(triton, 128, 3072)) == doctest::Approx(68 + 0.5849625007 * 6).epsilon(1e-9));
    // Beyond the measured: the nearest point, not an extrapolation.
    CHECK(tflops(attention_kernel_rate(triton, 64, 100)) == doctest::Approx(59));
    CHECK(tflops(attention_kernel_rate(triton, 128, 1 << 20)) == doctest::Approx(80));
    CHECK(tflops(attention_kernel_rate(triton, 32, 2048)) == doctest::Approx(79));
    CHECK(tflops(attention_kernel_rate(triton, 256, 512)) == doctest::Approx(50));
}

TEST_CASE("a named kernel runs the training step's attention core at its rate") {
    // H100 (no roofline norm: max(compute, memory)), head dimension 2048 / 16 = 128 at 2,048 tokens: FlashAttention v1's
    // 108 TFLOP/s (Fig. 7 (d)), the Triton port standing in with the same. The core's FLOPs do not change.
    const scenario fused = decoder("H100-SXM", 2048, 16, "");
    const scenario triton = decoder("H100-SXM", 2048, 16, R"(, "attention_kernel": "flash_attention_triton")");
    const batch_step mb = training_micro_batch(4, 2048, 1);
    const perf_setup setup = training_perf_setup(triton);
    const step_breakdown a = step_time_breakdown(training_perf_setup(fused), mb);
    const step_breakdown b = step_time_breakdown(setup, mb);
    const op_time &core_a = op_named(a, "attention core"), &core_b = op_named(b, "attention core");
    CHECK(core_b.flops.si() == core_a.flops.si());
    REQUIRE(core_b.compute_bound);
    // ... plus the launches of its two kernels a layer (as every operator of §14).
    const double launches = 4 * 2 * setup.efficiency.per_kernel.si();
    CHECK(core_b.time.si() == doctest::Approx(core_b.flops.si() / 108e12 + launches).epsilon(1e-12));
    // The default: the matrix units' efficiency of the bf16 peak, faster than the 2023 kernel.
    CHECK(core_a.time.si() < core_b.time.si());
    // The step pays it forward and backward (2.5 x forward) and says so.
    const training_performance pa = estimate_training_performance(fused), pb = estimate_training_performance(triton);
    CHECK(pb.step.si() > pa.step.si());
    const bool noted = std::any_of(pb.notes.begin(), pb.notes.end(), [](const std::string& n) {
        return n.find("flash_attention_triton's published forward + backward rate, 108 TFLOP/s at head dimension 128") !=
               std::string::npos;
    });
    CHECK(noted);
    // ... and cites the part's catalog entry for those rates: the figure they were read from.
    const bool cited = std::any_of(pb.notes.begin(), pb.notes.end(), [](const std::string& n) {
        return n.find("the catalog's flash_attention_triton rates on H100-SXM: Dao 2023, FlashAttention-2 "
                      "(arXiv:2307.08691) Sec. 4.1 Fig. 7") != std::string::npos;
    });
    CHECK(cited);
}

TEST_CASE("FP8 training with a named kernel: the kernel's rate, not the FP8 peak's efficiency") {
    const scenario s = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 8},
        "precision": {"weights": "bf16", "compute": "fp8"},
        "training": {"seq_len": 8192, "global_batch": 8, "attention_kernel": "flash_attention_2"}})",
                                     cat());
    // Llama-3.1-8B: head dimension 128; 8k tokens: FlashAttention-2's 308 TFLOP/s on H100 (Fig. 7 (d)).
    const perf_setup setup = training_perf_setup(s);
    const step_breakdown b = step_time_breakdown(setup, training_micro_batch(1, 8192, 1));
    const op_time& core = op_named(b, "attention core");
    const double launches = 32 * 2 * setup.efficiency.per_kernel.si();
    CHECK(core.time.si() == doctest::Approx(core.flops.si() / 308e12 + launches).epsilon(1e-12));
}

TEST_CASE("attention_kernel: a kernel the accelerator has no rate for, or beside materialised scores, names the field") {
    const std::string gpt = R"({"model": "Llama-3.1-8B", "system": {"accelerator": ")";
    auto run = [&](const std::string& accel, const std::string& training) {
        return error_of(gpt + accel + R"(", "count": 8}, "training": {"seq_len": 4096, "global_batch": 8)" + training + "}}");
    };
    const std::string b200 = run("B200", R"(, "attention_kernel": "flash_attention_triton")");
    CHECK(b200.find("/training/attention_kernel") == 0);
    CHECK(b200.find("no published rate for this kernel on B200") != std::string::npos);
    const std::string h100 = run("H100-SXM", R"(, "attention_kernel": "flash_attention_4")");
    CHECK(h100.find("/training/attention_kernel") == 0);
    CHECK(h100.find("flash_attention_triton") != std::string::npos);  // the allowed names
    CHECK(run("H100-SXM", R"(, "attention_kernel": "flash_attention_1", "flash_attention": false)").find("/training/attention_kernel") == 0);
    CHECK(run("H100-SXM", R"(, "attention_kernel": "flash_attention_1")").empty());
    CHECK(run("B200", R"(, "attention_kernel": "fused")").empty());
}

TEST_CASE("bad attention_kernels rates in an accelerator name their field") {
    auto accelerator = [](const std::string& kernels) {
        return R"({"model": "Llama-3.1-8B", "system": {"accelerator": {"vendor": "generic", "memory":
            {"capacity": "80 GB", "bandwidth": "3 TB/s"}, "peak_dense_flops": {"bf16": "1 PFLOP/s"},
            "efficiency": {"attention_kernels": {"flash_attention_2": )" + kernels + "}}}}}";
    };
    const std::string field = "/system/accelerator/efficiency/attention_kernels/flash_attention_2";
    auto point = [](const std::string& head_dim, const std::string& seq, const std::string& rate) {
        return R"({"head_dim": )" + head_dim + R"(, "seq_len": )" + seq + R"(, "rate": )" + rate + "}";
    };
    auto kernel = [](const std::string& points, const std::string& causal = "true") {
        return R"({"points": [)" + points + R"(], "causal": )" + causal + R"(, "source": "a test"})";
    };
    const std::string good = point("64", "2048", R"("100 TFLOP/s")");
    CHECK(error_of(accelerator(kernel(good))).empty());
    CHECK(error_of(accelerator(kernel(good, "false"))).find(field + "/causal") == 0);
    CHECK(error_of(accelerator(kernel(good + ", " + good))).find(field + "/points/1/seq_len") == 0);
    CHECK(error_of(accelerator(kernel(point("0", "2048", R"("100 TFLOP/s")")))).find(field + "/points/0/head_dim") == 0);
    CHECK(error_of(accelerator(kernel(point("64", "2048", R"("100 GB/s")")))).find(field + "/points/0/rate") == 0);
    CHECK(error_of(accelerator(kernel(point("64", "2048", R"("0 TFLOP/s")")))).find(field + "/points/0/rate") == 0);
    CHECK(error_of(accelerator(kernel(point("64", "1e30", R"("1 TFLOP/s")")))).find(field + "/points/0/seq_len") == 0);
    CHECK(error_of(accelerator(R"({"points": []} )")).find(field) == 0);
}

TEST_CASE("interpolation where the head dimensions were measured at different lengths") {
    // Head dimension 64 at 1k and 4k, 128 at 2k only: at (96, 2k) the 64 line is half way in log2 (100 + 200) / 2 = 150,
    // the 128 line 400; half way between them 275.
    std::vector<attention_rate_point> pts{{64, 1024, 100e12 * FLOP / s}, {64, 4096, 200e12 * FLOP / s},
                                          {128, 2048, 400e12 * FLOP / s}};
    CHECK(tflops(attention_kernel_rate(pts, 96, 2048)) == doctest::Approx(275));
    CHECK(tflops(attention_kernel_rate(pts, 64, 2048)) == doctest::Approx(150));
    CHECK(tflops(attention_kernel_rate(pts, 128, 100)) == doctest::Approx(400));
    CHECK(tflops(attention_kernel_rate(pts, 80, 8192)) == doctest::Approx(200 + 0.25 * 200));
}

TEST_CASE("ring context parallelism runs the kernel over a rank's chunks; all-gather over whole sequences") {
    // Llama-3.1-8B (head dimension 128), 4,096 tokens on H100 with FlashAttention v1: ring over cp 2 looks the rate up
    // at 2,048 tokens (108 TFLOP/s, Fig. 7 (d)), all-gather at 4,096 (126).
    auto run = [&](const std::string& algorithm) {
        return read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 8},
            "parallelism": {"tp": 1, "cp": 2, "cp_algorithm": ")" + algorithm + R"("},
            "training": {"seq_len": 4096, "global_batch": 8, "attention_kernel": "flash_attention_1"}})",
                             cat());
    };
    CHECK(tflops(*training_attention_rate(run("ring"))) == doctest::Approx(108));
    CHECK(tflops(*training_attention_rate(run("all_gather"))) == doctest::Approx(126));
}

TEST_CASE("an accelerator borrowing another's efficiencies scales the kernels' absolute rates by its 16-bit peak") {
    // H800 is H100's die at the same peaks: the same 108 TFLOP/s. An inline part at half H100's bf16 peak: half.
    CHECK(tflops(attention_kernel_rate(cat().accelerator("H800").attention_kernel_rates.at("flash_attention_1").points, 128, 2048)) ==
          doctest::Approx(108));
    const scenario half = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": {"vendor": "generic",
        "memory": {"capacity": "80 GB", "bandwidth": "3.35 TB/s"}, "peak_dense_flops": {"bf16": "494.75 TFLOP/s"},
        "efficiency": {"as": {"value": "H100-SXM", "source": "a test"}}}, "count": 1},
        "training": {"seq_len": 2048, "global_batch": 1, "attention_kernel": "flash_attention_1"}})",
                                        cat());
    CHECK(tflops(*training_attention_rate(half)) == doctest::Approx(54));
    // Their source says whose rates they are, and how scaled.
    CHECK(cat().accelerator("H800").attention_kernel_rates.at("flash_attention_1").source.rfind("as H100-SXM's: Dao 2023", 0) == 0);
    CHECK(half.system.accelerator.attention_kernel_rates.at("flash_attention_1").source.rfind(
              "as H100-SXM's x 0.5 (the bf16 peaks' ratio): Dao 2023", 0) == 0);
    // A part with no bf16 peak keeps the rates as published and says so.
    const scenario fp16_only = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": {"vendor": "generic",
        "memory": {"capacity": "80 GB", "bandwidth": "3.35 TB/s"}, "peak_dense_flops": {"bf16": null, "fp16": "494.75 TFLOP/s"},
        "efficiency": {"as": {"value": "H100-SXM", "source": "a test"}}}, "count": 1},
        "precision": {"weights": "fp16", "activations": "fp16", "compute": "fp16"},
        "inference": {"input_tokens": 100, "output_tokens": 10}})",
                                             cat());
    const auto& unscaled = fp16_only.system.accelerator.attention_kernel_rates.at("flash_attention_1");
    CHECK(unscaled.source.rfind("as H100-SXM's, unscaled (no bf16 peak to scale by): Dao 2023", 0) == 0);
    CHECK(tflops(attention_kernel_rate(unscaled.points, 128, 2048)) == doctest::Approx(108));
}

TEST_CASE("cuDNN's fused attention at the rates cuDNN frontend's SDPA training benchmark measured") {
    // H200, FP8 inputs, 8,192 tokens, 64 query heads of 128, batch 1, causal (results/h200_919_only_cudnn/
    // llama3.1_20260227_034703.csv): forward 1.141 ms, backward 6.392 ms. Forward FLOPs 4 x 128 x 8192 x 8193 / 2 x 64
    // = 1.0996e12, the backward 2.5 x that: 3.5 x 1.0996e12 / 7.533 ms = 511 TFLOP/s. BF16: 1.708 + 5.083 ms, 567.
    const double forward = 4.0 * 128 * 8192.0 * 8193.0 / 2.0 * 64;
    const auto& h200 = cat().accelerator("H200").attention_kernel_rates;
    CHECK(tflops(attention_kernel_rate(h200.at("cudnn_fp8").points, 128, 8192)) == doctest::Approx(3.5 * forward / 7.533e-3 / 1e12).epsilon(0.002));
    CHECK(tflops(attention_kernel_rate(h200.at("cudnn").points, 128, 8192)) == doctest::Approx(3.5 * forward / 6.791e-3 / 1e12).epsilon(0.002));
    // H100 SXM takes H200's (the same die and peaks); GB300 carries its own beside "as": GB200: 2,001, not GB200's 1,585.
    CHECK(tflops(attention_kernel_rate(cat().accelerator("H100-SXM").attention_kernel_rates.at("cudnn_fp8").points, 128, 8192)) ==
          doctest::Approx(511));
    const double gb300 = tflops(attention_kernel_rate(cat().accelerator("GB300").attention_kernel_rates.at("cudnn_fp8").points, 128, 8192));
    CHECK(gb300 == doctest::Approx(2001));
    CHECK(tflops(attention_kernel_rate(cat().accelerator("GB200").attention_kernel_rates.at("cudnn_fp8").points, 128, 8192)) ==
          doctest::Approx(1585));
    // B300: GB300's at B300's bf16 peak over GB300's, 2,250 / 2,500, within the rounding to whole TFLOP/s.
    CHECK(tflops(attention_kernel_rate(cat().accelerator("B300").attention_kernel_rates.at("cudnn_fp8").points, 128, 8192)) ==
          doctest::Approx(0.9 * gb300).epsilon(0.001));
    // A part's own rates beside "as" keep their own source.
    CHECK(cat().accelerator("B300").attention_kernel_rates.at("cudnn_fp8").source.rfind("GB300's measured rates x 2,250 / 2,500", 0) == 0);
    CHECK(cat().accelerator("H200").attention_kernel_rates.at("cudnn").source.rfind("NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training", 0) == 0);
}

TEST_CASE("FP8 attention (cudnn_fp8) runs the FP8 step's attention core at its measured rate, and needs FP8 compute") {
    auto llama = [](const std::string& compute, const std::string& kernel) {
        return R"({"model": "Llama-3.1-8B", "system": {"accelerator": "B200", "count": 8},
            "precision": {"weights": "bf16", "compute": ")" + compute + R"("},
            "training": {"seq_len": 8192, "global_batch": 8, "attention_kernel": ")" + kernel + R"("}})";
    };
    // B200 (cuDNN 9.13.1, artifacts/sdpa_fp8_benchmark_results_NVIDIA_B200.csv): FP8 at 8k 1.464 + 4.382 ms for
    // 128 heads of 128 at batch 1: 3.5 x 4 x 128 x 8192 x 8193 / 2 x 128 / 5.846 ms = 1,317 TFLOP/s.
    const scenario s = read_scenario(llama("fp8", "cudnn_fp8"), cat());
    const perf_setup setup = training_perf_setup(s);
    const step_breakdown b = step_time_breakdown(setup, training_micro_batch(1, 8192, 1));
    const op_time& core = op_named(b, "attention core");
    const double launches = 32 * 2 * setup.efficiency.per_kernel.si();
    CHECK(core.time.si() == doctest::Approx(core.flops.si() / 1317e12 + launches).epsilon(1e-3));
    // Faster than the default's 16-bit attention core at FP8's matrix fraction (B200: 0.45 x 2,250 = 1,012.5 TFLOP/s).
    const scenario fused = read_scenario(llama("fp8", "fused"), cat());
    CHECK(estimate_training_performance(s).step.si() < estimate_training_performance(fused).step.si());
    const std::string bf16 = error_of(llama("bf16", "cudnn_fp8"));
    CHECK(bf16.find("/training/attention_kernel") == 0);
    CHECK(bf16.find("FP8 training only") != std::string::npos);
    CHECK(error_of(llama("mxfp8", "cudnn_fp8")).empty());
    CHECK(error_of(llama("bf16", "cudnn")).empty());
}

TEST_CASE("packed samples attend within themselves: (L + 1) / 2 keys a token, the kernel's rate at L") {
    auto llama = [](const std::string& extra, const std::string& parallelism = "") {
        return read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 8}, )" + parallelism +
                                 R"("training": {"seq_len": 4096, "global_batch": 8)" + extra + "}}",
                             cat());
    };
    auto breakdown = [&](const scenario& s) {
        const training_spec& t = *s.training;
        return step_time_breakdown(training_perf_setup(s),
                                   training_micro_batch(t.micro_batch, t.seq_len, s.parallelism.cp, t.packed_sample_tokens));
    };
    auto core = [&](const scenario& s) { return op_named(breakdown(s), "attention core").flops.si(); };
    // Llama-3.1-8B: 32 layers, 32 query heads of 128: 4 x 128 x 32 FLOPs a key and layer forward. 4,096 tokens as one
    // sequence: (4096 + 1) / 2 keys a token; as 16 packed samples of 256: (256 + 1) / 2.
    const double per_key = 4.0 * 128 * 32 * 32;
    CHECK(core(llama("")) == doctest::Approx(4096 * 4097 / 2.0 * per_key));
    CHECK(core(llama(R"(, "packed_sample_tokens": 256)")) == doctest::Approx(4096 * 257 / 2.0 * per_key));
    // A mean that does not divide the sequence counts as it is (13.65 samples of 300), and micro-batches add up.
    CHECK(core(llama(R"(, "packed_sample_tokens": 300)")) == doctest::Approx(4096 * 301 / 2.0 * per_key));
    CHECK(core(llama(R"(, "micro_batch": 2, "packed_sample_tokens": 300)")) == doctest::Approx(2 * 4096 * 301 / 2.0 * per_key));
    // Nothing else of the step counts samples: the LM head and embedding op is the unpacked one.
    CHECK(op_named(breakdown(llama(R"(, "packed_sample_tokens": 16)")), "lm head and embedding").time.si() ==
          doctest::Approx(op_named(breakdown(llama("")), "lm head and embedding").time.si()));
    // Ring context parallelism over 2 ranks splits each sample as it splits a sequence: half the pairs a rank.
    CHECK(core(llama(R"(, "packed_sample_tokens": 256)", R"("parallelism": {"tp": 1, "cp": 2}, )")) ==
          doctest::Approx(4096 * 257 / 4.0 * per_key));
    // A named kernel at the sample's length: FlashAttention-2 on H100 at head dimension 128, 2k: 265 TFLOP/s (Fig. 7 (d)),
    // not 8k's 308.
    const scenario fa2 = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 8},
        "training": {"seq_len": 8192, "global_batch": 8, "attention_kernel": "flash_attention_2", "packed_sample_tokens": 2048}})",
                                       cat());
    CHECK(tflops(*training_attention_rate(fa2)) == doctest::Approx(265));
    // The step is faster packed (LoRA, where the attention core is a larger share); the memory does not change.
    const std::string lora = R"(, "lora": {"rank": 16, "targets": ["qkv_proj"]})";
    const scenario whole = llama(lora), packed = llama(lora + R"(, "packed_sample_tokens": 256)");
    CHECK(estimate_training_performance(packed).step.si() < estimate_training_performance(whole).step.si());
    CHECK(estimate(packed, cat()).memory.per_device->si() == doctest::Approx(estimate(whole, cat()).memory.per_device->si()));
}

TEST_CASE("packed_sample_tokens beyond the sequence, or with materialised scores, names the field") {
    const std::string head = R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 8}, "training": {"seq_len": 4096, "global_batch": 8, )";
    const std::string longer = error_of(head + R"("packed_sample_tokens": 4097}})");
    CHECK(longer.find("/training/packed_sample_tokens") == 0);
    CHECK(longer.find("at most seq_len = 4096") != std::string::npos);
    CHECK(error_of(head + R"("packed_sample_tokens": 0}})").find("/training/packed_sample_tokens") == 0);
    CHECK(error_of(head + R"("packed_sample_tokens": 512, "flash_attention": false}})").find("/training/packed_sample_tokens") == 0);
    CHECK(error_of(head + R"("packed_sample_tokens": 4096}})").empty());
}
