// PyTorch's eager element-wise kernels of a training micro-batch (include/capplan/analysis/eager_kernels.hpp), by
// hand: bytes per element from each kernel's operands' dtypes (docs/formulas.md §15, "Eager element-wise kernels").
#include <doctest/doctest.h>

#include <algorithm>

#include "capplan/analysis/eager_kernels.hpp"
#include "capplan/analysis/kv_cache.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/training_perf.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "test_support.hpp"

using namespace capplan;

namespace {

scenario tiny(const std::string& model, const std::string& training) {
    return read_scenario(R"({"model": )" + model + R"(, "system": {"accelerator": "H200", "count": 1},
        "training": {"seq_len": 10, "global_batch": 1, "kernels": "eager")" + training + "}}",
                         test::shipped_catalog());
}

double at(const std::array<double, eager_classes>& a, eager_class c) { return a[static_cast<std::size_t>(c)]; }

}  // namespace

TEST_CASE("eager kernels under autocast: a LayerNorm decoder's fp32 residual, casts and gradient sums") {
    // GPT-2 shape: 2 layers, h 8, 2 heads of 4, learned positions (no rotary), GeLU; 10 tokens: N = 80 elements of the
    // hidden state, 5 LayerNorms (2 a layer and the final one) over 400, 4 residual adds over 320, q 80 a layer.
    const scenario s = tiny(R"({"model_type": "gpt2", "n_embd": 8, "n_head": 2, "n_layer": 2, "n_positions": 16, "vocab_size": 32})",
                            R"(, "autocast": true)");
    const eager_step_traffic k = eager_elementwise_traffic(s, 10.0, 100.0);
    // Forward: the fp32 norm kernel 8 B (reduction); its output's cast for the GEMM 6 B, the fp32 + bf16 adds 10 B and
    // the 100 weights' casts 6 B (mixed dtype); attention's output copy 4 B a q element (strided).
    CHECK(at(k.forward.bytes, eager_class::reduction) == doctest::Approx(8.0 * 400));
    CHECK(at(k.forward.bytes, eager_class::mixed_dtype) == doctest::Approx(6.0 * 400 + 10.0 * 320 + 6.0 * 100));
    CHECK(at(k.forward.bytes, eager_class::strided) == doctest::Approx(4.0 * 2 * 80));
    CHECK(at(k.forward.bytes, eager_class::contiguous) == 0.0);
    // Backward: the casts' gradients (6 B each: the norms', the adds' branches, the weights'); the norm's grad-input 12 B
    // and weight 8 B; the fp32 sums at the branch points 12 B; q, k and v's gradient copies 4 B (240 elements a layer).
    CHECK(at(k.backward.bytes, eager_class::mixed_dtype) == doctest::Approx(6.0 * 400 + 6.0 * 320 + 6.0 * 100));
    CHECK(at(k.backward.bytes, eager_class::reduction) == doctest::Approx(20.0 * 400));
    CHECK(at(k.backward.bytes, eager_class::contiguous) == doctest::Approx(12.0 * 320));
    CHECK(at(k.backward.bytes, eager_class::strided) == doctest::Approx(4.0 * 2 * 240));
    // Kernels: one norm kernel a norm forward, two backward; casts a norm, an add each, one a weight matrix (4 a layer and
    // the head: 9); the copies one forward, three backward a layer.
    CHECK(at(k.forward.kernels, eager_class::reduction) == 5.0);
    CHECK(at(k.forward.kernels, eager_class::mixed_dtype) == 5.0 + 4.0 + 9.0);
    CHECK(at(k.backward.kernels, eager_class::reduction) == 10.0);
    CHECK(at(k.backward.kernels, eager_class::strided) == 6.0);
}

TEST_CASE("eager kernels under autocast: Hugging Face's fp32 RMSNorm chain and rotary with fp32 tables") {
    // A one-layer Llama shape: h 8, 2 heads of 4, 1 KV head, gated MLP; 10 tokens: N = 80, 3 RMSNorms over 240
    // elements, 2 adds over 160, q 80 and k 40 elements (rotary over 120), no weights cast (0 given).
    const scenario s = tiny(R"({"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 32, "max_position_embeddings": 16})",
                            R"(, "autocast": true)");
    const eager_step_traffic k = eager_elementwise_traffic(s, 10.0, 0.0);
    // Forward: RMSNorm pow 8 (contiguous), mean 4 (reduction), x * rsqrt 8 and weight * x 8 (broadcast), the GEMM's
    // cast 6 (mixed); adds 10 (mixed); attention copy 4 a q element (strided); rotary 36 a q/k element: neg, cat,
    // q * cos over the strided view and the sum 24 (strided), rot * sin 6 (broadcast), SDPA's cast 6 (mixed).
    CHECK(at(k.forward.bytes, eager_class::contiguous) == doctest::Approx(8.0 * 240));
    CHECK(at(k.forward.bytes, eager_class::reduction) == doctest::Approx(4.0 * 240));
    CHECK(at(k.forward.bytes, eager_class::broadcast) == doctest::Approx(16.0 * 240 + 6.0 * 120));
    CHECK(at(k.forward.bytes, eager_class::strided) == doctest::Approx(4.0 * 80 + 24.0 * 120));
    CHECK(at(k.forward.bytes, eager_class::mixed_dtype) == doctest::Approx(6.0 * 240 + 10.0 * 160 + 6.0 * 120));
    // Backward: RMSNorm 98 a element (the cast 6 mixed; the weight's product 12, gradient * x 12, pow's copy, scaling
    // and product 28 and the paths' sum 12 contiguous; two row sums 8; times the weight 8, the row's scale 8 and mean's
    // 4 broadcast); adds 6 (mixed) + 12 (contiguous); copies 4 a q, k, v element (160); rotary 46 (products 16
    // broadcast, casts 18 mixed, negation and halves 6 strided, sum 6 contiguous); gate and up's input gradients
    // summed, 6 a hidden element (contiguous).
    CHECK(at(k.backward.bytes, eager_class::mixed_dtype) == doctest::Approx(6.0 * 240 + 6.0 * 160 + 18.0 * 120));
    CHECK(at(k.backward.bytes, eager_class::contiguous) == doctest::Approx(64.0 * 240 + 12.0 * 160 + 6.0 * 120 + 6.0 * 80));
    CHECK(at(k.backward.bytes, eager_class::reduction) == doctest::Approx(8.0 * 240));
    CHECK(at(k.backward.bytes, eager_class::broadcast) == doctest::Approx(20.0 * 240 + 16.0 * 120));
    CHECK(at(k.backward.bytes, eager_class::strided) == doctest::Approx(4.0 * 160 + 6.0 * 120));
}

TEST_CASE("autocast casts each Hugging Face module's weight: Llama's q, k, v and gate, up apart, Phi-3's fused") {
    // One layer of the same shape as LlamaForCausalLM (q, k, v, o, gate, up, down: 7 casts + the head) and as
    // Phi3ForCausalLM (qkv_proj, o_proj, gate_up_proj, down_proj: 4 + the head): 3 kernels more each way.
    auto kernels = [](const std::string& type) {
        const scenario s = tiny(R"({"model_type": ")" + type + R"(", "hidden_size": 8, "intermediate_size": 16,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 32,
            "max_position_embeddings": 16})", R"(, "autocast": true)");
        const eager_step_traffic k = eager_elementwise_traffic(s, 10.0, 100.0);
        return std::pair{at(k.forward.kernels, eager_class::mixed_dtype), at(k.backward.kernels, eager_class::mixed_dtype)};
    };
    const auto llama = kernels("llama"), phi3 = kernels("phi3");
    CHECK(llama.first - phi3.first == 3.0);
    CHECK(llama.second - phi3.second == 3.0);
    // Counted whole: a Llama layer 3 + 1 + 3 and the head; a Phi-3 layer 1 + 1 + 2 and the head.
    CHECK(hf_weight_matrices(tiny(R"("Llama-3.1-8B")", "").model) == 32 * 7 + 1);
    const auto& cat = test::shipped_catalog();
    // Mixtral-8x7B: 32 layers of q, k, v, o, the router and 8 experts' w1, w2, w3: 32 x (4 + 1 + 24) + 1 = 929.
    CHECK(hf_weight_matrices(cat.model("Mixtral-8x7B")) == 929.0);
    // DeepSeek-V3: MLA's q_a, q_b, kv_a, kv_b, o in 61 layers; 3 dense MLPs (3 each); 58 MoE layers of 256 routed and
    // 1 shared expert (3 each) and the router: 61 x 5 + 3 x 3 + 58 x (257 x 3 + 1) + 1 = 45,091.
    CHECK(hf_weight_matrices(cat.model("DeepSeek-V3")) == 45091.0);
}

TEST_CASE("eager kernels under autocast with LoRA: no weight-gradient casts, a forward cast of an fp32 base only") {
    // Llama-3.1-8B's shape on one H200 rank: the base frozen in fp32 (cast a forward), bf16 (autocast's cached_cast
    // leaves a 16-bit weight as it is) or nf4 (dequantised instead).
    auto casts = [](const std::string& weights) {
        const scenario s = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H200", "count": 1},
            "precision": {"weights": ")" + weights + R"("}, "training": {"seq_len": 10, "global_batch": 1, "kernels": "eager",
            "autocast": true, "lora": {"rank": 8, "targets": "all_linear"}}})", test::shipped_catalog());
        // The same step with 1,000 weights to cast and with none: the difference is the casts alone.
        const eager_step_traffic with = eager_elementwise_traffic(s, 10.0, 1000.0), without = eager_elementwise_traffic(s, 10.0, 0.0);
        return std::pair{at(with.forward.bytes, eager_class::mixed_dtype) - at(without.forward.bytes, eager_class::mixed_dtype),
                         at(with.backward.bytes, eager_class::mixed_dtype) - at(without.backward.bytes, eager_class::mixed_dtype)};
    };
    CHECK(casts("fp32").first == doctest::Approx(6.0 * 1000));  // the 1,000 given weights cast once, 6 B each
    CHECK(casts("fp32").second == 0.0);
    CHECK(casts("bf16").first == 0.0);
    CHECK(casts("bf16").second == 0.0);
    CHECK(casts("nf4").first == 0.0);
    CHECK(casts("nf4").second == 0.0);
}

TEST_CASE("eager kernels price by class: the H200's measured shares of its bandwidth, the memory efficiency elsewhere") {
    // models/accelerators/h200.json efficiency.eager_elementwise (a micro-benchmark on this project's H200).
    const scenario on_h200 = tiny(R"("Llama-3.1-8B")", "");
    const perf_setup h200 = perf_setup::from(on_h200);
    CHECK(h200.efficiency.eager_at(eager_class::contiguous, 1e9) == doctest::Approx(0.795));
    CHECK(h200.efficiency.eager_at(eager_class::mixed_dtype, 1e9) == doctest::Approx(0.551));
    CHECK(h200.efficiency.eager_at(eager_class::strided, 1e9) == doctest::Approx(0.283));
    CHECK(h200.efficiency.eager_at(eager_class::broadcast, 1e9) == doctest::Approx(0.518));
    CHECK(h200.efficiency.eager_at(eager_class::reduction, 1e9) == doctest::Approx(0.611));
    // An accelerator without the block: each class at its kernels' memory efficiency.
    const scenario on_h100 = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 1},
        "training": {"seq_len": 10, "global_batch": 1}})", test::shipped_catalog());
    const perf_setup h100 = perf_setup::from(on_h100);
    CHECK(h100.efficiency.eager_at(eager_class::strided, 1e9) == h100.efficiency.memory_at(1e9));
}

TEST_CASE("a training scenario's autocast flag is read, and defaults off") {
    CHECK(tiny(R"("Llama-3.1-8B")", R"(, "autocast": true)").training->autocast);
    CHECK_FALSE(tiny(R"("Llama-3.1-8B")", "").training->autocast);
    CHECK_THROWS_WITH_AS(tiny(R"("Llama-3.1-8B")", R"(, "autocast": "yes")"), doctest::Contains("/training/autocast"), config_error);
}

TEST_CASE("autocast with fused kernels changes nothing, and a note says so") {
    auto run = [](const std::string& extra) {
        return estimate_training_performance(read_scenario(R"({"model": "Llama-3.2-1B", "system": {"accelerator": "H200",
            "count": 1}, "training": {"seq_len": 2048, "global_batch": 4)" + extra + "}}", test::shipped_catalog()));
    };
    const auto fused = run(R"(, "autocast": true)"), plain = run("");
    CHECK(fused.step == plain.step);
    bool noted = false;
    for (const auto& n : fused.notes) noted = noted || n.find("training.autocast") != std::string::npos;
    CHECK(noted);
}

TEST_CASE("bad eager_elementwise efficiencies name their field") {
    auto error_of = [](const std::string& eager) {
        try {
            (void)read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": {"vendor": "generic", "memory":
                {"capacity": "80 GB", "bandwidth": "3 TB/s"}, "peak_dense_flops": {"bf16": "1 PFLOP/s"},
                "efficiency": {"eager_elementwise": )" + eager + "}}}}", test::shipped_catalog());
        } catch (const config_error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CHECK(error_of(R"({"strided": 2})").find("/system/accelerator/efficiency/eager_elementwise/strided: not an efficiency") == 0);
    CHECK(error_of(R"({"strided": 0})").find("/system/accelerator/efficiency/eager_elementwise/strided: not an efficiency") == 0);
    CHECK(error_of(R"({"stridded": 0.3})").find("/system/accelerator/efficiency/eager_elementwise/stridded") == 0);
    CHECK(error_of(R"({"strided": 0.3})").empty());
}

TEST_CASE("eager kernels of hybrid models: attention's copies and rotary only in softmax-attention layers") {
    // Qwen3-Next-80B-A3B: 48 layers, every fourth full attention (12), each with both branches (96 residual adds);
    // Nemotron-3-Nano: 52 blocks of one kind each (23 Mamba-2, 6 attention, 23 MoE): 52 residual adds.
    const model_spec& next = test::shipped_catalog().model("Qwen3-Next-80B-A3B");
    CHECK(attention_layers(next, all_layers(next)) == 12);
    CHECK(next.residual_branch_count() == 96);
    const model_spec& nano = test::shipped_catalog().model("Nemotron-3-Nano-30B-A3B");
    CHECK(attention_layers(nano, all_layers(nano)) == 6);
    CHECK(nano.residual_branch_count() == 52);
    // Per attention layer, forward: the output's copy (1 strided kernel) and rotary's four strided kernels on q and on
    // k (negation, concatenation, q * cos, the sum): 9; the residual adds are contiguous, one a branch.
    const scenario s = read_scenario(R"({"model": "Qwen3-Next-80B-A3B", "system": {"accelerator": "H200", "count": 8},
        "parallelism": {"tp": 1, "ep": 8}, "training": {"seq_len": 10, "global_batch": 8, "kernels": "eager"}})",
                                     test::shipped_catalog());
    const eager_step_traffic k = eager_elementwise_traffic(s, 10.0, 0.0);
    CHECK(at(k.forward.kernels, eager_class::strided) == 9.0 * 12);
}

TEST_CASE("an MTP module under eager kernels pays the mean layer's eager kernels, not the fused norm passes") {
    // The module's block is costed as the model's mean layer. With fused kernels that mean includes the fused norm
    // passes; with eager ones those are replaced, in the module as in the model, by the mean layer's eager kernels. So
    // what the module adds under eager kernels, less what it adds under fused ones, is 1 / layers of what the eager
    // kernels add to the model's forward (a GeLU MLP: the activation's kernel is the same either way; on H100, which has
    // no measured eager classes, every element-wise kernel runs at the one memory efficiency, so times add linearly).
    auto run = [](const char* kernels, int mtp) {
        return read_scenario(std::string(R"({"model": {"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12,
            "n_positions": 2048, "vocab_size": 50304}, "system": {"accelerator": "H100-SXM", "count": 1},
            "training": {"seq_len": 2048, "global_batch": 2, "micro_batch": 1, "kernels": ")") + kernels +
                                 R"(", "mtp_layers": )" + std::to_string(mtp) + "}}",
                             test::shipped_catalog());
    };
    auto forward = [](const scenario& s) {
        for (const auto& term : estimate_training_performance(s).terms)
            if (term.term == "forward") return term.time.si();
        return -1.0;
    };
    const double fused0 = forward(run("fused", 0)), eager0 = forward(run("eager", 0));
    const double added_fused = forward(run("fused", 1)) - fused0, added_eager = forward(run("eager", 1)) - eager0;
    REQUIRE(eager0 > fused0);
    CHECK(added_eager - added_fused == doctest::Approx((eager0 - fused0) / 12).epsilon(1e-9));
}
