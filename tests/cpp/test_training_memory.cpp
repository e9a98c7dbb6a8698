// analysis/training_memory.hpp: model states against the ZeRO paper, activations against Korthikanti et al.
// 2022, and the rest by hand.
#include <doctest/doctest.h>

#include <cmath>

#include "capplan/analysis/training_memory.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "test_support.hpp"

using namespace capplan;

namespace {

parallelism_spec layout(int tp, int pp = 1, int dp = 1, bool sp = false, int vpp = 1, int cp = 1, int ep = 1, int etp = 0) {
    parallelism_spec p;
    p.tp = tp;
    p.pp = pp;
    p.dp = dp;
    p.cp = cp;
    p.ep = ep;
    p.etp = etp ? etp : (ep > 1 ? 1 : tp);
    p.vpp = vpp;
    p.sequence_parallel = sp;
    return p;
}

training_spec run(std::int64_t seq, std::int64_t micro_batch = 1, recompute_kind r = recompute_kind::none, int zero = 0) {
    training_spec t;
    t.seq_len = seq;
    t.micro_batch = micro_batch;
    t.global_batch = 0;  // pipeline full
    t.recompute = r;
    t.zero = zero;
    return t;
}

double bytes(data_size d) { return d.in(units::B); }
double model_states(const training_memory& m) {
    return bytes(m.weights + m.gradients + m.optimizer_states + m.master_weights);
}
double one_decimal(double x) { return std::round(x * 10.0) / 10.0; }

// Korthikanti et al. 2022's setting: 16-bit activations, 1-byte dropout masks, scores materialised.
activation_options korthikanti() {
    activation_options o;
    o.flash_attention = false;
    o.dropout = true;
    return o;
}

const number_format& bf16() { return find_format("bf16"); }

}  // namespace

TEST_CASE("mixed-precision Adam keeps 16 bytes per parameter; other optimizers and policies") {
    precision_spec bf;  // bf16 weights, activations, compute
    training_spec t;
    // ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054) §3.1: 2Ψ + 2Ψ + KΨ with K = 12 -> 16Ψ bytes.
    const auto adam = bytes_per_parameter(bf, t);
    CHECK(adam.weights == 2.0);
    CHECK(adam.gradients == 2.0);
    CHECK(adam.optimizer + adam.master == 12.0);
    CHECK(adam.total() == 16.0);
    // Megatron Core "Distributed Optimizer": bf16 params + fp32 grads = 18 bytes without sharding.
    t.distributed_optimizer = true;
    CHECK(bytes_per_parameter(bf, t).total() == 18.0);
    // Megatron-Bridge's performance recipes keep the main gradients in the parameters' dtype (grad_reduce_in_fp32
    // false): 2 + 2 + 12 (the fp32 copy of the gradient shard Megatron makes at the optimizer step is not live at the
    // activations' peak, so not counted: training_memory.hpp).
    t.grad_reduce_in_fp32 = false;
    CHECK(bytes_per_parameter(bf, t).total() == 16.0);
    precision_spec fp32_weights;
    fp32_weights.weights = find_format("fp32");
    CHECK(bytes_per_parameter(fp32_weights, t).gradients == 4.0);  // the parameters' dtype, not 16 bits
    t.distributed_optimizer = false;
    t.grad_reduce_in_fp32 = true;  // fp32 main gradients without the distributed optimizer: 2 + 4 + 12
    CHECK(bytes_per_parameter(bf, t).total() == 18.0);
    t.grad_reduce_in_fp32.reset();
    // Adam moments in bf16 (optimizer_state_format): 2 + 2 + 2·2 + 4.
    t.optimizer_state_format = "bf16";
    CHECK(bytes_per_parameter(bf, t).total() == 12.0);
    t.optimizer_state_format = "fp32";
    // SGD with momentum: one fp32 buffer; Adafactor: factored second moment counted as 0.
    t.optimizer = "sgd";
    CHECK(bytes_per_parameter(bf, t).total() == 12.0);
    t.optimizer = "adafactor";
    CHECK(bytes_per_parameter(bf, t).total() == 8.0);
    t.optimizer = "lamb";
    CHECK_THROWS_AS(bytes_per_parameter(bf, t), config_error);
    t.optimizer = "adamw";
    // fp32 training: no separate master copy (Megatron table: fp32 params + grads = 16 bytes).
    precision_spec fp32 = bf;
    fp32.weights = find_format("fp32");
    CHECK(bytes_per_parameter(fp32, t).master == 0.0);
    CHECK(bytes_per_parameter(fp32, t).total() == 16.0);
    // FP8 training keeps 16-bit weights and the fp32 master (the fp8 weights format is not what is updated).
    precision_spec fp8 = bf;
    fp8.weights = find_format("fp8");
    fp8.compute = find_format("fp8");
    CHECK(bytes_per_parameter(fp8, t).total() == 16.0);
}

TEST_CASE("ZeRO Figure 1: 7.5B parameters, Nd = 64, K = 12") {
    // Rajbhandari et al. 2020, arXiv:1910.02054, Figure 1 (and §5): baseline (2 + 2 + K)Ψ = 120 GB;
    // Pos 2Ψ + 2Ψ + KΨ/Nd = 31.4 GB; Pos+g 2Ψ + (2 + K)Ψ/Nd = 16.6 GB; Pos+g+p (2 + 2 + K)Ψ/Nd = 1.9 GB.
    const auto& m = test::shipped_catalog().model("Llama-3.2-1B");  // only the stage's parameter count matters
    weight_sharding w;
    pipeline_stage st;
    st.layers = 0;
    st.params.other = 7.5e9;
    w.stages.push_back(st);
    const precision_spec prec;
    const auto p = layout(1, 1, 64);
    const double published[] = {120.0, 31.4, 16.6, 1.9};
    const double exact[] = {120e9, 31.40625e9, 16.640625e9, 1.875e9};
    for (int zero = 0; zero <= 3; ++zero) {
        CAPTURE(zero);
        const auto r = estimate_training_memory(m, w, prec, p, run(2048, 1, recompute_kind::none, zero));
        CHECK(model_states(r) == doctest::Approx(exact[zero]));
        CHECK(one_decimal(model_states(r) / 1e9) == doctest::Approx(published[zero]));
    }
    // FSDP FULL_SHARD = ZeRO-3; HSDP shards over shard_group = 8 and replicates over 64 / 8.
    training_spec hsdp = run(2048, 1, recompute_kind::none, 3);
    hsdp.shard_group = 8;
    CHECK(model_states(estimate_training_memory(m, w, prec, p, hsdp)) == doctest::Approx(120e9 / 8));
    // Megatron distributed optimizer over d = 64: 6 + 12/64 bytes per parameter.
    training_spec dist = run(2048);
    dist.distributed_optimizer = true;
    CHECK(model_states(estimate_training_memory(m, w, prec, p, dist)) == doctest::Approx(7.5e9 * (6.0 + 12.0 / 64)));
}

TEST_CASE("Korthikanti et al. 2022 Table 2 for a GPT-3 175B layer") {
    // GPT-3 175B: h 12288, a 96, s 2048, b 1 (Korthikanti Table 3; Brown et al. 2020 Table 2.1).
    // sbh = 2048 x 12288 = 25,165,824; 5as/h = 5 x 96 x 2048 / 12288 = 80.
    const auto& m = test::shipped_catalog().model("GPT-3-175B");
    const double sbh = 2048.0 * 12288.0;
    const double as_h = 5.0 * 96 * 2048 / 12288;
    CHECK(as_h == 80.0);
    auto layer = [&](int tp, bool sp, recompute_kind r) {
        return bytes(layer_activation_bytes(m, 0, 2048, 1, layout(tp, 1, 1, sp), r, bf16(), korthikanti()));
    };
    // Eq. 1, no parallelism: sbh(34 + 5as/h) = 25,165,824 x 114 = 2,868,903,936 B.
    CHECK(layer(1, false, recompute_kind::none) == sbh * (34 + as_h));
    CHECK(layer(1, false, recompute_kind::none) == 2'868'903'936.0);
    // Tensor parallel t = 8: sbh(10 + 24/t + 5as/(ht)) = sbh x 23 = 578,813,952 B.
    CHECK(layer(8, false, recompute_kind::none) == sbh * (10 + 24.0 / 8 + as_h / 8));
    CHECK(layer(8, false, recompute_kind::none) == 578'813'952.0);
    // Tensor + sequence parallel: sbh(34/t + 5as/(ht)) = sbh x 14.25.
    CHECK(layer(8, true, recompute_kind::none) == sbh * (34.0 / 8 + as_h / 8));
    // Selective recompute drops 5as/h: sbh(10 + 24/t) and sbh(34/t).
    CHECK(layer(8, false, recompute_kind::selective) == sbh * 13);
    CHECK(layer(8, true, recompute_kind::selective) == sbh * 34.0 / 8);
    CHECK(layer(8, true, recompute_kind::selective) == 106'954'752.0);
    // Full recompute keeps the layer input 2sbh (/t with sequence parallelism).
    CHECK(layer(8, false, recompute_kind::full) == 2 * sbh);
    CHECK(layer(8, true, recompute_kind::full) == 2 * sbh / 8);
    // §5: selective recompute saves 80/114 = 70% for GPT-3; the abstract's "5x": (10 + 3 + 10) / 4.25 > 5.
    CHECK(1.0 - layer(1, false, recompute_kind::selective) / layer(1, false, recompute_kind::none) ==
          doctest::Approx(0.70).epsilon(0.01));
    CHECK(layer(8, false, recompute_kind::none) / layer(8, true, recompute_kind::selective) > 5.0);
}

TEST_CASE("modern defaults: no dropout, FlashAttention, GQA and SwiGLU, by hand") {
    // GPT-3 layer without dropout, with FlashAttention, per token (bytes): norm inputs 2·2h, QKV and MLP inputs 2h
    // each, Q K V 6h, o-proj input 2h, GeLU input + fc2 input 16h, log-sum-exp 4·96 -> 32h + 384.
    const auto& gpt3 = test::shipped_catalog().model("GPT-3-175B");
    CHECK(bytes(layer_activation_bytes(gpt3, 0, 2048, 1, layout(1), recompute_kind::none, true, bf16())) ==
          2048.0 * (32 * 12288 + 384));
    // Llama-3.1-8B (h 4096, 32 heads, 8 KV heads of 128, SwiGLU I 14336), s 8192, per token:
    // norms 2·2·4096 + QKV and MLP inputs 2·4096 each = 32,768; Q 2·4096 + K, V 2·2·1024 = 12,288;
    // LSE 4·32 = 128; o-proj input 2·4096 = 8,192; gate + up 2·2·14336 + down input 2·14336 = 86,016.
    const auto& llama = test::shipped_catalog().model("Llama-3.1-8B");
    CHECK(bytes(layer_activation_bytes(llama, 0, 8192, 1, layout(1), recompute_kind::none, true, bf16())) ==
          8192.0 * (32768 + 12288 + 128 + 8192 + 86016));
    // Selective recompute with FlashAttention only drops the log-sum-exp.
    CHECK(bytes(layer_activation_bytes(llama, 0, 8192, 1, layout(1), recompute_kind::selective, true, bf16())) ==
          8192.0 * (32768 + 12288 + 8192 + 86016));
    // Context parallelism halves a rank's tokens; sequence parallelism without tensor parallelism changes nothing.
    const double one = bytes(layer_activation_bytes(llama, 0, 8192, 1, layout(1), recompute_kind::none, true, bf16()));
    CHECK(bytes(layer_activation_bytes(llama, 0, 8192, 1, layout(1, 1, 1, false, 1, 2), recompute_kind::none, true, bf16())) ==
          one / 2);
    CHECK(bytes(layer_activation_bytes(llama, 0, 8192, 1, layout(1, 1, 1, true), recompute_kind::none, true, bf16())) == one);
}

TEST_CASE("MoE layer: router and routed copies, by hand (Mixtral-8x7B)") {
    // h 4096, 32 heads, 8 KV heads, 8 experts, top-2, I_e 14336; s 4096, b 1, bf16, FlashAttention.
    // Per token: norms + QKV input + router/MLP input 4·4096 + 2·4096 + 2·4096 = 32,768, fp32 router logits and
    // probabilities 8·8 = 64; Q K V 12,288, LSE 128, o-proj input 8,192;
    // 2 routed copies x (permuted input + expert output 4·4096 + gate/up + down input 6·14336) = 204,800.
    const auto& m = test::shipped_catalog().model("Mixtral-8x7B");
    const double per_token = 32768 + 64 + 12288 + 128 + 8192 + 2.0 * (4 * 4096 + 6 * 14336);
    CHECK(bytes(layer_activation_bytes(m, 0, 4096, 1, layout(1), recompute_kind::none, true, bf16())) == 4096.0 * per_token);
    // Expert parallelism carved from data parallelism: each rank still processes tokens·k copies.
    CHECK(bytes(layer_activation_bytes(m, 0, 4096, 1, layout(1, 1, 8, false, 1, 1, 8), recompute_kind::none, true, bf16())) ==
          4096.0 * per_token);
}

TEST_CASE("pipeline schedules: 1F1B and interleaved in-flight micro-batches") {
    // Narayanan et al. 2021 §2.2.1: stage i of 1F1B keeps min(pp - i, micro-batches).
    CHECK(pipeline_layer_sets(8, 1, 0, 64) == 8.0);
    CHECK(pipeline_layer_sets(8, 1, 7, 64) == 1.0);
    CHECK(pipeline_layer_sets(8, 1, 0, 4) == 4.0);
    CHECK(pipeline_layer_sets(1, 1, 0, 64) == 1.0);
    // Korthikanti §4.2.3: interleaving multiplies the first stage by 1 + (p - 1)/(p·m): p = 8, m = 3 -> 8 + 7/3.
    CHECK(pipeline_layer_sets(8, 3, 0, 64) == doctest::Approx(8.0 * (1.0 + 7.0 / 24)));

    // GPT-3 175B as in Korthikanti Table 3 (t 8, p 8) with m = 3 from §6, SP + selective recompute. First stage: 12 layers
    // x 34sbh/t x (8 + 7/3) = 96 x 106,954,752 x 31/24 = 13,262,389,248 B of layer activations, plus token ids
    // 8sb and the embedding dropout mask sbh/t per in-flight micro-batch (Korthikanti §4.3).
    const auto& m = test::shipped_catalog().model("GPT-3-175B");
    const auto p = layout(8, 8, 1, true, 3);
    training_memory_options o;
    o.flash_attention = false;
    o.dropout = true;
    const auto r = estimate_training_memory_stage(m, shard_weights(m, p), precision_spec{}, p,
                                                  run(2048, 1, recompute_kind::selective), 0, o);
    CHECK(r.in_flight_microbatches == 11);
    CHECK(r.layer_sets_in_flight == doctest::Approx(31.0 / 3));
    CHECK(bytes(r.activations_per_layer) == 106'954'752.0);
    const double embedding = 2048.0 * (8 + 12288.0 / 8) * 31 / 3;
    CHECK(bytes(r.activations) - embedding == doctest::Approx(13'262'389'248.0));
    CHECK(bytes(r.logits) == 0.0);  // the LM head is on the last stage

    // Few micro-batches: global batch 16 over dp 1 with micro-batch 4 leaves 4 in flight.
    training_spec t = run(2048, 4);
    t.global_batch = 16;
    const auto q = layout(8, 8, 1, true);
    CHECK(estimate_training_memory_stage(m, shard_weights(m, q), precision_spec{}, q, t, 0).in_flight_microbatches == 4);
}

TEST_CASE("logits: fp32 s·b·V/tp for the loss and its gradient on the last stage") {
    // Llama-3.1-8B, vocabulary 128,256, s 8192: 2 x 4 x 8192 x 128256 = 8,405,385,216 B (Korthikanti §4.3: 4sbv/t).
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    const auto r1 = estimate_training_memory(m, shard_weights(m, layout(1)), precision_spec{}, layout(1), run(8192));
    CHECK(bytes(r1.logits) == 8.0 * 8192 * 128256);
    const auto r8 = estimate_training_memory(m, shard_weights(m, layout(8)), precision_spec{}, layout(8), run(8192));
    CHECK(bytes(r8.logits) == 8.0 * 8192 * 128256 / 8);
}

TEST_CASE("more micro-batch or sequence never less memory; more tp or ZeRO never more") {
    const auto& cat = test::shipped_catalog();
    for (const char* name : {"Llama-3.1-8B", "Mixtral-8x7B", "GPT-3-175B", "Qwen3-30B-A3B", "DeepSeek-V3", "Gemma-2-9B"}) {
        CAPTURE(name);
        const auto& m = cat.model(name);
        const auto p = layout(8, 4, 8, true);
        const auto w = shard_weights(m, p);
        double last = 0;
        for (std::int64_t b : {1, 2, 4, 8}) {
            const double now = bytes(estimate_training_memory(m, w, precision_spec{}, p, run(4096, b)).total());
            CHECK(now > last);
            last = now;
        }
        last = 0;
        for (std::int64_t s : {1024, 2048, 4096, 8192, 32768}) {
            for (auto r : {recompute_kind::none, recompute_kind::selective, recompute_kind::full})
                for (bool flash : {true, false})
                    CHECK(bytes(layer_activation_bytes(m, m.layers - 1, s, 1, p, r, flash, bf16())) <
                          bytes(layer_activation_bytes(m, m.layers - 1, 2 * s, 1, p, r, flash, bf16())));
            const double now = bytes(estimate_training_memory(m, w, precision_spec{}, p, run(s)).total());
            CHECK(now > last);
            last = now;
        }
        // Recompute: none >= selective >= full.
        const double none = bytes(estimate_training_memory(m, w, precision_spec{}, p, run(4096)).total());
        const double sel = bytes(estimate_training_memory(m, w, precision_spec{}, p, run(4096, 1, recompute_kind::selective)).total());
        const double full = bytes(estimate_training_memory(m, w, precision_spec{}, p, run(4096, 1, recompute_kind::full)).total());
        CHECK(none >= sel);
        CHECK(sel >= full);
        // ZeRO stages 0..3 over dp 8.
        last = INFINITY;
        for (int zero = 0; zero <= 3; ++zero) {
            const double now = bytes(estimate_training_memory(m, w, precision_spec{}, p, run(4096, 1, recompute_kind::none, zero)).total());
            CHECK(now <= last);
            last = now;
        }
        // Tensor parallelism 1..8 (ep = 1, experts split over etp = tp), with and without sequence parallelism.
        for (bool sp : {false, true}) {
            last = INFINITY;
            for (int tp : {1, 2, 4, 8}) {
                const auto q = layout(tp, 1, 8, sp);
                const double now = bytes(estimate_training_memory(m, shard_weights(m, q), precision_spec{}, q, run(4096)).total());
                CHECK(now <= last);
                last = now;
            }
        }
    }
}

TEST_CASE("offloading moves optimizer states and master weights to host memory") {
    const auto& m = test::shipped_catalog().model("Llama-3.1-70B");
    const auto p = layout(8, 1, 4);
    const auto w = shard_weights(m, p);
    training_spec t = run(4096, 1, recompute_kind::none, 1);
    const auto on = estimate_training_memory(m, w, precision_spec{}, p, t);
    t.offload_optimizer = true;
    const auto off = estimate_training_memory(m, w, precision_spec{}, p, t);
    CHECK(bytes(on.host_offload) == 0.0);
    CHECK(bytes(off.host_offload) == doctest::Approx(bytes(on.optimizer_states + on.master_weights)));
    CHECK(bytes(off.optimizer_states) == 0.0);
    CHECK(bytes(off.master_weights) == 0.0);
    CHECK(off.weights == on.weights);
    CHECK(off.gradients == on.gradients);
    CHECK(bytes(on.total() - off.total()) == doctest::Approx(bytes(off.host_offload)));
    // ZeRO-1 over 4: 70.55e9 params / 8 per tp rank, 12 of the 16 bytes sharded over 4.
    const double params = w.per_device().total();
    CHECK(model_states(on) == doctest::Approx(params * (4.0 + 12.0 / 4)));
}

TEST_CASE("FP8 training: 16-bit weights + fp32 master kept, cached fp8 weights, smaller saved GEMM inputs") {
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    const auto p = layout(1);
    const auto w = shard_weights(m, p);
    precision_spec fp8;
    fp8.compute = find_format("fp8");
    const auto bf = estimate_training_memory(m, w, precision_spec{}, p, run(8192));
    const auto f8 = estimate_training_memory(m, w, fp8, p, run(8192));
    CHECK(f8.gradients == bf.gradients);
    CHECK(f8.optimizer_states == bf.optimizer_states);
    CHECK(f8.master_weights == bf.master_weights);
    // Weights: bf16 copy + fp8 row- and column-wise caches of the block matrices (1 + 1 byte each).
    CHECK(bytes(f8.weights - bf.weights) == 2.0 * w.per_device().block_linear);
    CHECK(f8.activations < bf.activations);
    // By hand, per token of a Llama-3.1-8B layer: the QKV, MLP, o-proj (FP8 copy beside FlashAttention's O) and
    // down-projection inputs: 4096 + 4096 + 14336 bytes saved, 4096 bytes added.
    activation_options o;
    o.gemm_input_bytes = 1.0;
    const double b16 = bytes(layer_activation_bytes(m, 0, 8192, 1, p, recompute_kind::none, true, bf16()));
    const double b8 = bytes(layer_activation_bytes(m, 0, 8192, 1, p, recompute_kind::none, bf16(), o));
    CHECK(b16 - b8 == 8192.0 * (4096 + 4096 + 14336 - 4096));
}

TEST_CASE("FP8 weight caches by the tensor cores' layouts: Hopper keeps the transpose, Blackwell not, MXFP8 both") {
    // Transformer Engine's cached-weight bytes (tests/pytorch/test_cpu_offloading.py _estimate_cached_weight_size):
    // per-tensor FP8 2 B per weight where FP8 GEMMs are TN-only, 1 B where any layout runs; MXFP8 2 x (1 + 1/32) B.
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    const auto p = layout(1);
    const auto w = shard_weights(m, p);
    const double block = w.per_device().block_linear;
    precision_spec fp8, mx;
    fp8.compute = find_format("fp8");
    mx.compute = find_format("mxfp8");
    training_memory_options hopper = memory_options_for(run(8192)), blackwell = hopper;
    blackwell.fp8_any_layout = true;
    const auto bf = estimate_training_memory(m, w, precision_spec{}, p, run(8192), hopper);
    auto extra = [&](const precision_spec& pr, const training_memory_options& o) {
        return bytes(estimate_training_memory(m, w, pr, p, run(8192), o).weights - bf.weights);
    };
    CHECK(extra(fp8, hopper) == 2.0 * block);
    CHECK(extra(fp8, blackwell) == 1.0 * block);
    CHECK(extra(mx, hopper) == doctest::Approx(2.0 * 1.03125 * block));
    CHECK(extra(mx, blackwell) == doctest::Approx(2.0 * 1.03125 * block));
    // The catalog: B200 (10.0) and B300 (10.3) take any layout; H100 (9.0), L40S (8.9), the RTX PRO 6000 (12.0) and an
    // accelerator without a compute capability (MI300X) do not.
    const auto& cat = test::shipped_catalog();
    CHECK(fp8_gemm_takes_any_layout(cat.accelerator("B200")));
    CHECK(fp8_gemm_takes_any_layout(cat.accelerator("B300")));
    CHECK(*cat.accelerator("B300").compute_capability == 103);
    for (const char* name : {"H100-SXM", "L40S", "RTX-PRO-6000-Server", "MI300X"}) {
        CAPTURE(name);
        CHECK_FALSE(fp8_gemm_takes_any_layout(cat.accelerator(name)));
    }
    // TE's bounds: (10, 0) <= cc < (12, 0) or cc >= (13, 0).
    accelerator_spec a;
    for (const std::pair<int, bool> cc_any : std::vector<std::pair<int, bool>>{{99, false}, {100, true}, {119, true},
                                                                                {120, false}, {129, false}, {130, true}}) {
        const int cc = cc_any.first;  // (a plain variable: clang 14 cannot capture a structured binding)
        CAPTURE(cc);
        a.compute_capability = cc;
        CHECK(fp8_gemm_takes_any_layout(a) == cc_any.second);
    }
}

TEST_CASE("activation_func_fp8_input_store: SwiGLU's gate and up outputs kept in FP8") {
    // Llama-3.1-8B, one layer, 8,192 tokens, tp 1: the kept input of SwiGLU is 2 x 14,336 values a token, 2 B each in
    // bf16 and 1 B in FP8: 8192 x 28,672 B less.
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    const auto p = layout(1);
    activation_options o, fp8_act;
    fp8_act.fp8_act_input = true;
    const double b16 = bytes(layer_activation_bytes(m, 0, 8192, 1, p, recompute_kind::none, bf16(), o));
    const double b8 = bytes(layer_activation_bytes(m, 0, 8192, 1, p, recompute_kind::none, bf16(), fp8_act));
    CHECK(b16 - b8 == 8192.0 * 2 * 14336);
    // Mixtral-8x7B (8 experts of 14,336, top 2, dropless): each token's two routed copies keep 2 x 14,336 values each.
    const auto& moe = test::shipped_catalog().model("Mixtral-8x7B");
    const double m16 = bytes(layer_activation_bytes(moe, 0, 4096, 1, p, recompute_kind::none, bf16(), o));
    const double m8 = bytes(layer_activation_bytes(moe, 0, 4096, 1, p, recompute_kind::none, bf16(), fp8_act));
    CHECK(m16 - m8 == 4096.0 * 2 * 2 * 14336);
}

TEST_CASE("the fullest stage is reported, and its parts add up") {
    const auto& cat = test::shipped_catalog();
    for (const char* name : {"Llama-3.2-1B", "Llama-3.1-405B", "DeepSeek-V3"}) {
        CAPTURE(name);
        const auto& m = cat.model(name);
        const auto p = layout(8, 4, 8, true, 1, 1, m.is_moe() ? 8 : 1);
        const auto w = shard_weights(m, p);
        const auto t = run(4096, 1, recompute_kind::selective, 1);
        const auto best = estimate_training_memory(m, w, precision_spec{}, p, t);
        for (int s = 0; s < static_cast<int>(w.stages.size()); ++s)
            CHECK(estimate_training_memory_stage(m, w, precision_spec{}, p, t, s).total() <= best.total());
        CHECK(best.total() == best.weights + best.gradients + best.optimizer_states + best.master_weights +
                                  best.activations + best.logits + best.buffers);
        CHECK_FALSE(best.notes.empty());
    }
}

TEST_CASE("LoRA adapters by hand on a MoE layer: every expert's projections, split over ep on a device") {
    // Mixtral-8x7B (config.json: hidden 4096, 32 heads of 128, 8 KV heads, 8 experts of 14336): rank 16 on all
    // linear projections. Attention: q 16 x (4096 + 4096), k and v 16 x (4096 + 1024), o 16 x (4096 + 4096);
    // each expert: gate and up 16 x (4096 + 14336), down 16 x (14336 + 4096).
    const model_spec& m = test::shipped_catalog().model("Mixtral-8x7B");
    lora_spec l;
    l.rank = 16;
    l.set_targets(lora_all_linear);
    const lora_parameters p = lora_layer_parameters(m, 0, l);
    const double attention = 16.0 * (8192 + 5120 + 5120 + 8192);
    const double expert = 3 * 16.0 * (4096 + 14336);
    CHECK(p.dense == doctest::Approx(attention));
    CHECK(p.routed_experts == doctest::Approx(8 * expert));
    CHECK(lora_model_parameters(m, l).total() == doctest::Approx(32 * (attention + 8 * expert)));
    // On one device of tp 2, ep 4 (etp 1): the attention adapters halved, two of the eight experts' whole.
    parallelism_spec par;
    par.tp = 2;
    par.ep = 4;
    par.etp = 1;
    CHECK(lora_device_parameters(m, l, 0, 1, par) == doctest::Approx(attention / 2 + 2 * expert));
    // Only q and v: no expert adapters.
    l.set_targets({"q_proj", "v_proj"});
    CHECK(lora_layer_parameters(m, 0, l).routed_experts == 0.0);
    CHECK(lora_layer_parameters(m, 0, l).dense == doctest::Approx(16.0 * (8192 + 5120)));
}

TEST_CASE("LoRA on fused projections: one adapter over q, k and v, one over gate and up") {
    // Llama-2-70B (hidden 8192, 64 heads and 8 KV heads of 128, MLP 28672), rank 16. Megatron's linear_qkv:
    // 16 x (8192 + 8192 + 2 x 1024) against q, k and v's own 16 x (3 x 8192 + 8192 + 2 x 1024); linear_fc1:
    // 16 x (8192 + 2 x 28672) against gate's and up's 2 x 16 x (8192 + 28672).
    const model_spec& m = test::shipped_catalog().model("Llama-2-70B");
    lora_spec fused, parts;
    fused.rank = parts.rank = 16;
    fused.dropout = parts.dropout = 0.1;
    fused.set_targets({"qkv_proj", "gate_up_proj"});
    parts.set_targets({"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"});
    CHECK(lora_layer_parameters(m, 0, fused).dense == doctest::Approx(16.0 * (18432 + 65536)));
    CHECK(lora_layer_parameters(m, 0, parts).dense == doctest::Approx(16.0 * (34816 + 2 * 36864)));
    // Activations per token: each adapter keeps its r-wide x·A (2 B each) and, with dropout, its dropped input and
    // mask (3 B per input element): the fused pair reads x twice, the parts five times.
    const adapter_split one{1, 1, 0, 0};
    CHECK(lora_activation_bytes_per_token(m, 0, fused, 2.0, one) == doctest::Approx(2 * (2.0 * 16 + 3.0 * 8192)));
    CHECK(lora_activation_bytes_per_token(m, 0, parts, 2.0, one) == doctest::Approx(5 * (2.0 * 16 + 3.0 * 8192)));
}

TEST_CASE("LoRA dropout on the adapter's output keeps a 1-byte mask of the output, no dropped copy of the input") {
    // NeMo AutoModel's LinearLoRA drops the adapter's output. Llama-2-70B, rank 16, p = 0.1: each adapter
    // keeps its r-wide x·A (2 B each) and a mask byte per output element: q 8,192, k and v 1,024, gate and up 28,672;
    // fused, qkv 10,240 and gate_up 57,344 (the same outputs).
    const model_spec& m = test::shipped_catalog().model("Llama-2-70B");
    lora_spec fused, parts;
    fused.rank = parts.rank = 16;
    fused.dropout = parts.dropout = 0.1;
    fused.dropout_on_output = parts.dropout_on_output = true;
    fused.set_targets({"qkv_proj", "gate_up_proj"});
    parts.set_targets({"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"});
    const adapter_split one{1, 1, 0, 0}, two{2, 1, 0, 0};
    CHECK(lora_activation_bytes_per_token(m, 0, fused, 2.0, one) == doctest::Approx(2 * 2.0 * 16 + 10'240 + 57'344));
    CHECK(lora_activation_bytes_per_token(m, 0, parts, 2.0, one) == doctest::Approx(5 * 2.0 * 16 + 67'584));
    // tp 2: column-parallel outputs split, so each rank masks half of them; x·A stays whole.
    CHECK(lora_activation_bytes_per_token(m, 0, fused, 2.0, two) == doctest::Approx(2 * 2.0 * 16 + 67'584 / 2.0));
    // Row-parallel o and down write the whole hidden state on every rank at tp 2: 8,192 mask bytes each.
    lora_spec rows = parts;
    rows.set_targets({"o_proj", "down_proj"});
    CHECK(lora_activation_bytes_per_token(m, 0, rows, 2.0, two) == doctest::Approx(2 * 2.0 * 16 + 2 * 8192.0));
    // Against the input's dropped copy and mask (3 B per input element, 5 x 8,192 inputs) 122,880 bytes a token, 55,296 more.
    parts.dropout_on_output = false;
    CHECK(lora_activation_bytes_per_token(m, 0, parts, 2.0, one) - (5 * 2.0 * 16 + 67'584) == doctest::Approx(
        5 * 3.0 * 8192 - 67'584));
}

TEST_CASE("all_linear is what PEFT wraps: seven adapters on Llama, four on Phi-3's fused modules") {
    auto adapters = [](const std::string& model) {
        const scenario s = read_scenario(R"({"model": ")" + model + R"(", "system": {"accelerator": "H100-SXM", "count": 1},
            "training": {"seq_len": 1024, "global_batch": 1, "lora": {"rank": 16, "targets": "all_linear"}}})",
                                         test::shipped_catalog());
        return lora_model_parameters(s.model, *s.training->lora).total();
    };
    // Llama-3.1-8B, 32 layers: q and o 16 x (4096 + 4096), k and v 16 x (4096 + 1024), gate, up and down
    // 16 x (4096 + 14336): the 41,943,040 PEFT prints for r = 16 on all linear layers.
    CHECK(adapters("Llama-3.1-8B") == doctest::Approx(41'943'040.0));
    // Phi-3-mini (hidden 3072, 32 heads and KV heads of 96, MLP 8192, 32 layers): qkv_proj 16 x (3072 + 9216), o_proj
    // 16 x (3072 + 3072), gate_up_proj 16 x (3072 + 16384), down_proj 16 x (8192 + 3072).
    CHECK(adapters("Phi-3-mini") == doctest::Approx(32.0 * 16 * (12288 + 6144 + 19456 + 11264)));
}
