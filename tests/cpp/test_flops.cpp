// analysis/flops.hpp: forward, training (model/hardware) and PaLM FLOPs, by hand and against
// published formulas and figures. Every expected value below is worked out by hand in the comment
// next to it, or taken from the cited paper.
#include <doctest/doctest.h>

#include "capplan/analysis/flops.hpp"
#include "capplan/spec/hf_config.hpp"
#include "test_support.hpp"

using namespace capplan;
using units::FLOP;

namespace {
double flops(flop_count f) { return f.in(FLOP); }
}  // namespace

TEST_CASE("Llama-3.1-8B: forward matmul FLOPs per token = 2 x non-embedding matrices incl. the LM head") {
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    const auto w = active_matmul_parameters(m);
    // Per layer: q 4096*4096 + k,v 2*4096*1024 + o 4096*4096 = 41,943,040; MLP 3*4096*14336 = 176,160,768.
    CHECK(w.attention == 32 * 41'943'040LL);
    CHECK(w.mlp == 32 * 176'160'768LL);
    CHECK(w.router == 0);
    CHECK(w.lm_head == 128'256LL * 4'096);  // 525,336,576
    // = 8,030,261,248 total - 525,336,576 embedding - 266,240 norm weights (32*2*4096 + 4096, elementwise)
    CHECK(w.total() == 7'504'658'432LL);

    const auto f = token_forward_flops(m, 8192);
    CHECK(flops(f.matmul) == 2.0 * 7'504'658'432LL);  // 15,009,316,864
    CHECK(flops(f.lm_head) == 2.0 * 525'336'576LL);
    // Attention: 32 layers x (2*8192*32*128 scores + 2*8192*32*128 values) = 4,294,967,296.
    CHECK(flops(f.attention) == 4'294'967'296.0);
    CHECK(flops(f.total()) == 15'009'316'864.0 + 4'294'967'296.0);
}

TEST_CASE("GQA shrinks the k/v projections, not the attention products (H query heads)") {
    const auto gqa = model_from_hf_config(R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256})");
    auto mha = gqa;
    mha.kv_heads = 32;
    auto mqa = gqa;
    mqa.kv_heads = 1;
    const auto a = token_forward_flops(gqa, 1000), b = token_forward_flops(mha, 1000), c = token_forward_flops(mqa, 1000);
    CHECK(a.attention == b.attention);
    CHECK(a.attention == c.attention);
    // k and v: 2 x 4096 x 128 per KV head; MHA has 24 KV heads more than GQA-8, MQA 7 fewer.
    CHECK(flops(b.matmul) - flops(a.matmul) == 2.0 * 32 * 2 * 4096 * 128 * 24);
    CHECK(flops(a.matmul) - flops(c.matmul) == 2.0 * 32 * 2 * 4096 * 128 * 7);
}

TEST_CASE("Qwen2.5-7B: biases and norms are not matmul parameters; blocks match the model card's 6.53B") {
    const auto& m = test::shipped_catalog().model("Qwen2.5-7B");
    const auto w = active_matmul_parameters(m);
    // Per layer: q,o 2*3584*3584 = 25,690,112; k,v 2*3584*512 = 3,670,016; MLP 3*3584*18944 = 203,685,888.
    CHECK(w.blocks() == 28 * (25'690'112LL + 3'670'016LL + 203'685'888LL));  // 6,525,288,448
    // Qwen2.5-7B model card: "Number of Parameters (Non-Embedding): 6.53B" (which adds the
    // 129,024 q/k/v biases and 204,288 norm weights).
    CHECK(static_cast<double>(w.blocks()) == doctest::Approx(6.53e9).epsilon(0.001));
    const auto p = count_parameters(m);
    CHECK(p.attention - w.attention == 28 * (3584 + 2 * 512LL));  // the q/k/v biases
}

TEST_CASE("Mixtral-8x7B: a token runs the router and its 2 of 8 experts") {
    const auto& m = test::shipped_catalog().model("Mixtral-8x7B");
    const auto w = active_matmul_parameters(m);
    // Per layer: attention 41,943,040; 2 experts 2*3*4096*14336 = 352,321,536; router 4096*8 = 32,768.
    CHECK(w.attention == 32 * 41'943'040LL);
    CHECK(w.mlp == 32 * 352'321'536LL);
    CHECK(w.router == 32 * 32'768LL);
    // = active 12,879,925,248 - embedding 131,072,000 - norms 266,240 (LM head 131,072,000 stays)
    CHECK(w.total() == 12'748'587'008LL);
    // Mixtral paper (Jiang et al. 2024, arXiv:2401.04088, abstract): 13B active parameters per token
    // (these plus the 32000*4096 embedding table).
    CHECK(static_cast<double>(w.total() + 32'000LL * 4'096) == doctest::Approx(13e9).epsilon(0.02));
    CHECK(flops(token_forward_flops(m, 1).matmul) == 2.0 * 12'748'587'008LL);  // 25,497,174,016
}

TEST_CASE("DeepSeek-V3 per token: MLA projections, asymmetric q/k and v head dims, 8 + 1 experts") {
    const auto& m = test::shipped_catalog().model("DeepSeek-V3");
    const auto w = active_matmul_parameters(m);
    // MLA per layer: q_a 7168*1536 + q_b 1536*128*192 + kv_a 7168*576 + kv_b 512*128*256 + o 128*128*7168
    //   = 11,010,048 + 37,748,736 + 4,128,768 + 16,777,216 + 117,440,512 = 187,105,280 (no norm weights)
    CHECK(w.attention == 61 * 187'105'280LL);
    // 3 dense layers 3*7168*18432; 58 MoE layers of (8 routed + 1 shared) x 3*7168*2048 = 44,040,192
    CHECK(w.mlp == 3 * 396'361'728LL + 58 * 9 * 44'040'192LL);
    CHECK(w.router == 58 * 7168 * 256LL);  // the e_score_correction_bias is not a matmul
    CHECK(w.lm_head == 129'280LL * 7'168);
    CHECK(w.total() == 36'624'596'992LL);
    // DeepSeek-V3 report (arXiv:2412.19437, abstract): 37B activated parameters (= these + the 0.93B embedding).
    CHECK(static_cast<double>(w.total() + 129'280LL * 7'168) == doctest::Approx(37e9).epsilon(0.02));

    const auto f = token_forward_flops(m, 4096);
    CHECK(flops(f.matmul) == 73'249'193'984.0);
    // Attention, non-absorbed: 61 layers x 4096 keys x (2*128*192 scores + 2*128*128 values = 81,920).
    CHECK(flops(f.attention) == 61.0 * 4096 * 81'920);
}

TEST_CASE("sliding windows cap the keys: Mistral-7B every layer, Gemma-2-9B every other layer") {
    const auto& cat = test::shipped_catalog();
    const auto& mistral = cat.model("Mistral-7B");  // window 4096 on all 32 layers, 32 heads of 128
    // Per key per layer 4*32*128 = 16,384. Decode at context 10,000 sees 4,096 keys per layer.
    CHECK(flops(token_forward_flops(mistral, 10'000).attention) == 32.0 * 16'384 * 4'096);
    CHECK(token_forward_flops(mistral, 10'000).attention == token_forward_flops(mistral, 4'096).attention);
    CHECK(flops(token_forward_flops(mistral, 4'000).attention) == 32.0 * 16'384 * 4'000);

    const auto& gemma = cat.model("Gemma-2-9B");  // 42 layers, even ones local (4096), 16 heads of 256
    // Per key per layer 4*16*256 = 16,384. A sequence of 8192:
    //   global layers (21): 8192*8193/2 = 33,558,528 keys
    //   local layers (21):  4096*4097/2 + (8192 - 4096)*4096 = 8,390,656 + 16,777,216 = 25,167,872 keys
    CHECK(flops(sequence_forward(gemma, 8192).attention) == 16'384.0 * 21 * (33'558'528.0 + 25'167'872.0));
    CHECK(flops(token_forward_flops(gemma, 8192).attention) == 16'384.0 * 21 * (8192 + 4096));
}

TEST_CASE("causal sums: a sequence is the sum of its tokens; chunks add up (prefill, chunked prefill)") {
    const auto& cat = test::shipped_catalog();
    for (const char* name : {"Gemma-2-9B", "DeepSeek-V3", "Llama-3.1-8B"}) {
        auto m = cat.model(name);
        if (m.sliding_window > 0) m.sliding_window = 3;  // small window so 7 tokens cross it
        CAPTURE(name);
        flop_count sum;
        for (std::int64_t c = 1; c <= 7; ++c) sum += token_forward_flops(m, c).total();
        CHECK(flops(sum) == doctest::Approx(flops(sequence_forward_flops(m, 7))).epsilon(1e-12));
        const auto a = chunk_forward_flops(m, 0, 1000), b = chunk_forward_flops(m, 1000, 500);
        CHECK(flops(a.total() + b.total()) == doctest::Approx(flops(sequence_forward_flops(m, 1500))).epsilon(1e-12));
    }
    // Prefill with logits for the last position only: the LM head runs once, 2*4096*128256.
    const auto& llama = cat.model("Llama-3.1-8B");
    const auto all = sequence_forward(llama, 100), last = sequence_forward(llama, 100, logits_for::last_position);
    CHECK(flops(all.lm_head) == 100 * 2.0 * 525'336'576);
    CHECK(flops(last.lm_head) == 2.0 * 525'336'576);
    CHECK(flops(all.total() - last.total()) == 99 * 2.0 * 525'336'576);
}

TEST_CASE("Kaplan et al. 2020 Table 1: C_forward = 2N + 2 n_layer n_ctx d_attn (+ de-embed 2 d_model n_vocab)") {
    const auto& m = test::shipped_catalog().model("GPT-3-175B");
    const double l = 96, d = 12288, V = 50257, s = 2048;
    // Kaplan's non-embedding N = 2 d_model n_layer (2 d_attn + d_ff) = 12 l d^2 with d_attn = d, d_ff = 4d.
    const double N = 12 * l * d * d;  // 173,946,175,488
    const auto w = active_matmul_parameters(m);
    CHECK(static_cast<double>(w.blocks()) == N);
    CHECK(static_cast<double>(w.lm_head) == d * V);
    // capplan's causal attention averaged over a sequence is 4 d l (s + 1) / 2 per token; Kaplan's
    // term 2 l n_ctx d is the same to within 2 l d (a token sees (s + 1) / 2 keys on average).
    const double kaplan = 2 * N + 2 * d * V + 2 * l * s * d;
    const double per_token = flops(sequence_forward_flops(m, 2048)) / s;
    CHECK(per_token - kaplan == 2 * l * d);
    CHECK(per_token == doctest::Approx(kaplan).epsilon(1e-5));  // 2 l d / C = 6.7e-6
}

TEST_CASE("Narayanan et al. 2021 eq. 3: GPT-3 175B with full recompute, B = 1, s = 2048") {
    const auto& m = test::shipped_catalog().model("GPT-3-175B");
    const double B = 1, s = 2048, l = 96, h = 12288, V = 50257;
    // F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) = 96Bslh^2 + 16Bs^2lh + 6BshV: layers 4 passes
    // (forward, backward 2x, recompute), logit layer 3; its attention term is non-causal (4 s^2 h per layer).
    const double narayanan = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));  // 2.9367e15
    const auto t = training_step_flops(m, 2048, recompute_kind::full);
    // Causal attention: 4 passes x 2 h s (s + 1) per layer instead of 16 s^2 h: 8 s h l (s - 1) less.
    const double exact = 96 * s * l * h * h + 6 * s * h * V + 8 * s * h * l * (s + 1);
    CHECK(flops(t.hardware) == doctest::Approx(exact).epsilon(1e-12));
    CHECK(exact == doctest::Approx(narayanan - 8 * s * h * l * (s - 1)).epsilon(1e-12));
    // Within 1.5% of eq. 3 (0.986x): the attention term is 2.7% of eq. 3 and causal counting halves it.
    CHECK(flops(t.hardware) / narayanan == doctest::Approx(0.9865).epsilon(0.001));
}

TEST_CASE("GPT-3 175B training compute: Brown et al. 2020 Table D.1, 3.14e23 FLOPs for 300B tokens") {
    const auto& m = test::shipped_catalog().model("GPT-3-175B");
    const auto t = training_step_flops(m, 2048, recompute_kind::none);
    const double tokens = 300e9;
    // Table D.1 counts 6 FLOPs per parameter per token (no attention term): 6 x 174.56B x 300B = 3.142e23.
    const double matmul_only = 3 * flops(t.forward.matmul) / 2048 * tokens;
    CHECK(matmul_only == doctest::Approx(3.14e23).epsilon(0.001));
    // With causal attention, 3 x 2 l h (s + 1) = 1.45e10 more per token: 3.186e23, 1.4% above.
    CHECK(flops(t.model) / 2048 * tokens == doctest::Approx(3.14e23 * 1.0146).epsilon(0.001));
}

TEST_CASE("PaLM 540B: 6N + 12LHQT reproduces the published 46.2% MFU (Chowdhery et al. 2022)") {
    // PaLM Table 1: 118 layers, d_model 18432, 48 heads, d_head 256, 540.35B parameters; §2:
    // SwiGLU with d_ff = 4 d_model, multi-query attention, shared input/output embeddings, 256k vocab.
    model_spec m;
    m.name = "PaLM-540B";
    m.hidden = 18432;
    m.layers = 118;
    m.heads = 48;
    m.kv_heads = 1;
    m.head_dim = 256;
    m.intermediate = 4 * 18432;
    m.vocab = 256000;
    m.tied_embeddings = true;
    const auto w = active_matmul_parameters(m);
    // Per layer q,o 2*18432*12288 + k,v 2*18432*256 + MLP 3*18432*73728 = 4,539,285,504; x118
    // + the shared embedding/LM head 256000*18432 = 540,354,281,472 (Table 1: 540.35B).
    CHECK(w.total() == 540'354'281'472LL);
    const auto per_token = palm_model_flops_per_token(m, 2048);
    CHECK(flops(per_token) == 6.0 * 540'354'281'472LL + 12.0 * 118 * 48 * 256 * 2048);
    // Table 3 / §4.1: 238.3K tokens/s on 6144 TPU v4 chips (275 TFLOP/s bf16 peak each) = 46.2% MFU.
    const auto rate = 238.3e3 / units::s;
    const double mfu = per_token * rate / (6144 * (275 * units::TFLOP / units::s));
    CHECK(mfu == doctest::Approx(0.462).epsilon(0.002));
}

TEST_CASE("PaLM's attention term is non-causal: capplan's is PaLM's x (T + 1) / (2T)") {
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    const double T = 4096, L = 32, H = 32, Q = 128;
    const auto t = training_step_flops(m, 4096, recompute_kind::none);
    const double N = 7'504'658'432.0;
    CHECK(flops(palm_model_flops_per_token(m, 4096)) == 6 * N + 12 * L * H * Q * T);
    // capplan: 6N + 3 x 4 L H Q (T + 1) / 2 per token.
    CHECK(flops(t.model) / T == doctest::Approx(6 * N + 6 * L * H * Q * (T + 1)).epsilon(1e-12));
}

TEST_CASE("training: backward = 2 x forward; recompute adds to hardware FLOPs only") {
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    const double s = 8192;
    // Forward of one 8192-token sample: matmul 8192 x 15,009,316,864; attention 32 layers x
    // 16,384 per key x 8192*8193/2 keys; LM head 8192 x 1,050,673,152.
    const double matmul = s * 15'009'316'864.0, attention = 32.0 * 16'384 * (8192.0 * 8193 / 2);
    const double head = s * 1'050'673'152.0;
    const auto none = training_step_flops(m, 8192, recompute_kind::none);
    const auto sel = training_step_flops(m, 8192, recompute_kind::selective);
    const auto full = training_step_flops(m, 8192, recompute_kind::full);
    CHECK(flops(none.forward.attention) == attention);
    CHECK(flops(none.model) == doctest::Approx(3 * (matmul + attention)).epsilon(1e-12));
    CHECK(none.hardware == none.model);
    CHECK(sel.model == none.model);
    CHECK(full.model == none.model);
    // Selective (Korthikanti et al. 2022): + the attention core forward.
    CHECK(flops(sel.hardware) == doctest::Approx(3 * (matmul + attention) + attention).epsilon(1e-12));
    // Full: + every layer's forward again; the LM head is not recomputed.
    CHECK(flops(full.hardware) == doctest::Approx(4 * (matmul + attention) - head).epsilon(1e-12));
}

TEST_CASE("every catalog model: positive FLOPs, matmul parameters below active parameters + LM head") {
    const auto& cat = test::shipped_catalog();
    for (const auto& name : cat.names(entry_kind::model)) {
        const auto& m = cat.model(name);
        CAPTURE(name);
        const auto w = active_matmul_parameters(m);
        const auto p = count_parameters(m);
        CHECK(w.blocks() > 0);
        CHECK(w.blocks() <= p.active() - p.embedding - p.lm_head - p.position_embedding);
        CHECK(token_forward_flops(m, 1).total() > 0 * FLOP);
        const auto t = training_step_flops(m, 4096, recompute_kind::full);
        CHECK(t.hardware > t.model);
    }
}

TEST_CASE("bad lengths are errors") {
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    CHECK_THROWS_AS(token_forward_flops(m, 0), error);
    CHECK_THROWS_AS(sequence_forward_flops(m, 0), error);
    CHECK_THROWS_AS(chunk_forward_flops(m, -1, 4), error);
    CHECK(chunk_forward_flops(m, 10, 0).total() == 0 * FLOP);
}
