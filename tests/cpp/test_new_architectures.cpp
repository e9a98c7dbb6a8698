// Issue #19's architectures from their catalog entries (each built from the release's config.json):
// banded/dense alternation and sinks (gpt-oss), chunked local attention and shared experts (Llama 4), 5:1
// local/global (Gemma 3), gated DeltaNet and Mamba-2 hybrids (Qwen3-Next, Nemotron-H) and DeepSeek Sparse
// Attention (V3.2). Every expected value is counted by hand in the comment beside it.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <algorithm>

#include "capplan/analysis/disaggregation.hpp"
#include "capplan/analysis/flops.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/kv_cache.hpp"
#include "capplan/analysis/parameters.hpp"
#include "capplan/analysis/sharding.hpp"
#include "capplan/dtype.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
const model_spec& model(const char* name) { return test::shipped_catalog().model(name); }
const number_format& bf16() { return find_format("bf16"); }
double per_token(const char* name) { return kv_bytes_per_token(model(name), 1, bf16(), all_layers(model(name))).in(B); }
double per_request(const char* name, std::int64_t context) {
    return kv_bytes_per_request(model(name), 1, bf16(), all_layers(model(name)), context, 16).in(B);
}
constexpr std::int64_t k128 = 131'072;
}  // namespace

TEST_CASE("gpt-oss-120b: attention with biases and sinks, experts with biases") {
    const model_spec& m = model("gpt-oss-120b");
    // q 2880 x 4096 + k, v 2880 x 512 each + o 4096 x 2880, biases 4096 + 2 x 512 + 2880, 64 sinks = 26,550,144.
    CHECK(attention_layer_parameters(m, false).total() == 26'550'144);
    // gate_up 2880 x 5760 + 5760, down 2880 x 2880 + 2880 = 24,891,840.
    CHECK(expert_parameters(m).total() == 24'891'840);
    CHECK(m.sliding_layer_count() == 18);
    CHECK(m.sliding_window == 128);
}

TEST_CASE("KV cache per token and per 128k-token request, by hand (bf16, one device, 16-token blocks)") {
    // gpt-oss-120b: 8 KV heads x 64 x 2 (K, V) x 2 B = 2,048 B per token and layer, 36 layers: 73,728 B;
    // at 128k the 18 dense layers hold 131,072 tokens, the 18 banded ones 128: 4,831,838,208 + 4,718,592.
    CHECK(per_token("gpt-oss-120b") == 73'728.0);
    CHECK(per_request("gpt-oss-120b", k128) == 4'836'556'800.0);
    // Llama-4-Scout: 8 x 128 x 2 x 2 = 4,096 B, 48 layers: 196,608 B; 12 global layers x 131,072 tokens and
    // 36 chunked layers x 8,192 tokens (a chunk at most): 6,442,450,944 + 1,207,959,552.
    CHECK(per_token("Llama-4-Scout-17B-16E") == 196'608.0);
    CHECK(per_request("Llama-4-Scout-17B-16E", k128) == 7'650'410'496.0);
    // Gemma-3-27B: 16 x 128 x 2 x 2 = 8,192 B, 62 layers: 507,904 B; 10 global layers (5, 11, ..., 59) x 131,072
    // and 52 local layers x 1,024: 10,737,418,240 + 436,207,616.
    CHECK(per_token("Gemma-3-27B") == 507'904.0);
    CHECK(per_request("Gemma-3-27B", k128) == 11'173'625'856.0);
    // Qwen3-Next-80B-A3B: 12 attention layers of 2 KV heads x 256 x 2 x 2 = 2,048 B: 24,576 B per token; each of 36
    // gated DeltaNet layers keeps 32 x 128 x 128 state + 3 x (2 x 16 x 128 + 32 x 128) conv inputs = 548,864 x 2 B.
    CHECK(per_token("Qwen3-Next-80B-A3B") == 24'576.0);
    CHECK(linear_state_bytes(model("Qwen3-Next-80B-A3B"), 1, all_layers(model("Qwen3-Next-80B-A3B"))).in(B) == 36.0 * 1'097'728.0);
    CHECK(per_request("Qwen3-Next-80B-A3B", k128) == 3'221'225'472.0 + 39'518'208.0);
    // A one-token request already holds the whole state: the hybrid's cache starts at 39.5 MB, then grows 12x slower.
    CHECK(per_request("Qwen3-Next-80B-A3B", 1) == 16.0 * 24'576.0 + 39'518'208.0);
}

TEST_CASE("DeepSeek-V3.2: the indexer's fp8 key joins the latent; attention stops growing past top-k keys") {
    const model_spec& m = model("DeepSeek-V3.2");
    // 512 + 64 latent elements x 2 B + 128 fp8 + one 4 B scale = 1,284 B per token and layer, 61 layers.
    CHECK(per_token("DeepSeek-V3.2") == 61.0 * 1'284.0);
    // A decode token at context c: MLA core against min(c, 2,048) keys, the indexer against all c.
    const double core = static_cast<double>(detail::attention_flops_per_key(m));
    const double index = 2.0 * 64 * 128;
    const double at100k = token_forward_flops(m, 100'000).attention.in(FLOP);
    const double at200k = token_forward_flops(m, 200'000).attention.in(FLOP);
    CHECK(at100k == doctest::Approx(61.0 * (core * 2'048 + index * 100'000)));
    CHECK(at200k - at100k == doctest::Approx(61.0 * index * 100'000));
    // The indexer adds wq_b 1,536 x 8,192 + wk 7,168 x 128 + weights_proj 7,168 x 64 + its LayerNorm 256 per layer.
    const std::int64_t indexer = 1'536 * 8'192 + 7'168 * 128 + 7'168 * 64 + 256;
    CHECK(count_parameters(m).attention - count_parameters(model("DeepSeek-R1")).attention == 61 * indexer);
}

TEST_CASE("chunked local attention counts keys from the chunk's start; Llama 4's layer plan") {
    // Positions 0..9 in chunks of 4: 1+2+3+4, 1+2+3+4, 1+2 = 23.
    CHECK(detail::chunked_keys(10, 4) == 23);
    const model_spec& scout = model("Llama-4-Scout-17B-16E");
    CHECK(scout.chunked_local);
    CHECK(scout.sliding_layer_count() == 36);  // three of every four layers use RoPE and chunks
    CHECK_FALSE(scout.is_sliding_layer(3));
    CHECK(scout.moe_layer_count() == 48);
    const model_spec& maverick = model("Llama-4-Maverick-17B-128E");
    CHECK(maverick.moe_layer_count() == 24);  // interleave_moe_layer_step 2: layers 1, 3, ..., 47
    CHECK(maverick.is_moe_layer(1));
    CHECK_FALSE(maverick.is_moe_layer(0));
    // Dense layers 16,384 wide; each MoE layer 128 experts + 1 shared of 8,192; router 5,120 x 128.
    const parameter_breakdown p = count_parameters(maverick);
    CHECK(p.dense_mlp == 24LL * 3 * 5'120 * 16'384);
    CHECK(p.shared_experts == 24LL * 3 * 5'120 * 8'192);
    CHECK(p.router == 24LL * 5'120 * 128);
    // The vision tower: patches 3 x 14 x 14 x 1,408, class 1,408, positions 577 x 1,408, two LayerNorms 4 x 1,408,
    // 34 layers of 23,807,872, the adapter 5,632 x 4,096 + 4,096 x 4,096, the projector 4,096 x 5,120.
    const std::int64_t vision = 3 * 14 * 14 * 1'408 + 1'408 + 577 * 1'408 + 4 * 1'408 + 34LL * 23'807'872 +
                                5'632LL * 4'096 + 4'096LL * 4'096 + 4'096LL * 5'120;
    CHECK(p.vision == vision);
}

TEST_CASE("Gemma 3 keeps five local layers to one global; Qwen3-Next every fourth layer full attention") {
    const model_spec& g = model("Gemma-3-27B");
    CHECK(g.sliding_layer_count() == 52);
    CHECK_FALSE(g.is_sliding_layer(5));
    CHECK(g.is_sliding_layer(6));
    CHECK(g.tied_embeddings);
    const model_spec& q = model("Qwen3-Next-80B-A3B");
    CHECK(q.linear_layer_count() == 36);
    CHECK_FALSE(q.is_linear_layer(3));
    // Full attention with its output gate: q 2,048 x 8,192 (16 heads of 256, doubled), k, v 2,048 x 512 each,
    // o 4,096 x 2,048, QK-norm 2 x 256.
    CHECK(attention_layer_parameters(q, false).total() == 2'048LL * 8'192 + 2 * 2'048LL * 512 + 4'096LL * 2'048 + 512);
    // Gated DeltaNet: in_proj_qkvz 2,048 x 12,288, in_proj_ba 2,048 x 64, out_proj 4,096 x 2,048; conv 8,192 x 4,
    // dt_bias and A_log 32 each, the gated norm 128.
    CHECK(attention_layer_parameters(q, true).total() ==
          2'048LL * 12'288 + 2'048LL * 64 + 4'096LL * 2'048 + 8'192 * 4 + 64 + 128);
}

TEST_CASE("a hybrid model's decode step costs each layer once: 36 gated DeltaNet and 12 attention layers") {
    const scenario sc = read_scenario(R"({"model": "Qwen3-Next-80B-A3B", "system": {"accelerator": "H200", "count": 1},
                                          "inference": {"input_tokens": 1000, "output_tokens": 10}})",
                                      test::shipped_catalog());
    const perf_setup su = perf_setup::from(sc);
    batch_step one;
    one.decode_requests = 1;
    one.context_tokens = 1000;
    const step_breakdown b = step_time_breakdown(su, one);
    auto flops_of = [&](const char* op) {
        for (const auto& o : b.ops)
            if (o.op == op) return o.flops.in(FLOP);
        return -1.0;
    };
    // One token through every layer's projections: 2 x (36 gated DeltaNet layers x (2,048 x 12,288 + 2,048 x 64 +
    // 4,096 x 2,048 = 33,685,504) + 12 attention layers x (2,048 x 8,192 + 2 x 2,048 x 512 + 4,096 x 2,048 = 27,262,976)).
    CHECK(flops_of("attention projections") == doctest::Approx(2.0 * (36.0 * 33'685'504 + 12.0 * 27'262'976)));
    // The cores: 36 state updates (8 x 32 x 128 x 128 + 2 x 4 x 8,192 each) and 12 layers x 1,000 keys x
    // 2 x 16 x (256 + 256).
    CHECK(flops_of("attention core") ==
          doctest::Approx(36.0 * (8.0 * 32 * 128 * 128 + 2.0 * 4 * 8'192) + 12.0 * 1'000 * 2.0 * 16 * 512));
    // Every one of the 48 MoE layers: 10 routed experts + the shared one (3 x 2,048 x 512 each) and the router.
    CHECK(flops_of("mlp / experts") == doctest::Approx(48.0 * 2.0 * (11.0 * 3 * 2'048 * 512 + 2'048.0 * 512)));
}

TEST_CASE("gpt-oss is served as released: MXFP4 experts, everything else in bf16 (fits one 80 GB GPU)") {
    const model_spec& m = model("gpt-oss-120b");
    CHECK(m.released_expert_format == "mxfp4");
    const parameter_breakdown p = count_parameters(m);
    // Experts 114,701,598,720 x (4 + 8/32) / 8 B = 60,935,224,320 B; the other 2,127,557,952 parameters x 2 B.
    CHECK(p.routed_experts == 114'701'598'720);
    const number_format& mx = find_format("mxfp4");
    CHECK(weight_bytes(p, bf16(), &mx).in(B) == 60'935'224'320.0 + 2'127'557'952.0 * 2);
    auto read = [](const std::string& body) {
        return read_scenario(R"({"model": "gpt-oss-120b", "system": {"accelerator": "H100-SXM", "count": 1}, )" + body + "}",
                             test::shipped_catalog());
    };
    // Inference takes the release's format unless told otherwise; training does not.
    CHECK(read(R"("inference": {"input_tokens": 10, "output_tokens": 10})").precision.experts().name == "mxfp4");
    CHECK(read(R"("precision": {"expert_weights": "bf16"}, "inference": {"input_tokens": 10, "output_tokens": 10})")
              .precision.experts().name == "bf16");
    CHECK_FALSE(read(R"("training": {"seq_len": 1024, "global_batch": 8})").precision.expert_weights);
}

TEST_CASE("the step model's attention work on one prompt equals the FLOP model's, for every new layer kind") {
    // Two implementations: the per-step operator model (inference_perf.cpp) and the exact causal sums of flops.hpp.
    // One request, one device, the whole prompt in one step: the attention cores must agree to rounding.
    struct probe {
        const char* model;
        std::int64_t tokens;
    };
    for (const probe pr : {probe{"Llama-4-Scout-17B-16E", 12'288}, probe{"Llama-4-Scout-17B-16E", 16'383},
                           probe{"DeepSeek-V3.2", 4'096}, probe{"gpt-oss-120b", 1'000}, probe{"Gemma-3-27B", 3'000},
                           probe{"Qwen3-Next-80B-A3B", 5'000}}) {
        CAPTURE(pr.model);
        CAPTURE(pr.tokens);
        const scenario sc = read_scenario(std::string(R"({"model": ")") + pr.model + R"(", "system": {"accelerator": "H200", "count": 1},
                                              "inference": {"input_tokens": 20000, "output_tokens": 10, "prefill_chunk_tokens": 20000}})",
                                          test::shipped_catalog());
        batch_step prompt;
        prompt.prefill_tokens = pr.tokens;
        prompt.prefill_requests = 1;
        const step_breakdown b = step_time_breakdown(perf_setup::from(sc), prompt);
        double core = 0;
        for (const auto& o : b.ops)
            if (o.op == "attention core") core = o.flops.in(FLOP);
        CHECK(core == doctest::Approx(chunk_forward_flops(sc.model, 0, pr.tokens).attention.in(FLOP)).epsilon(1e-9));
    }
}

TEST_CASE("chunked attention's decode cost changes smoothly with context") {
    // Llama-4-Scout, one request: one token more context must not cut the step's attention work by a third.
    const scenario sc = read_scenario(R"({"model": "Llama-4-Scout-17B-16E", "system": {"accelerator": "H200", "count": 1},
                                          "inference": {"input_tokens": 100, "output_tokens": 10}})",
                                      test::shipped_catalog());
    const perf_setup su = perf_setup::from(sc);
    auto core = [&](std::int64_t context) {
        batch_step one;
        one.decode_requests = 1;
        one.context_tokens = context;
        for (const auto& o : step_time_breakdown(su, one).ops)
            if (o.op == "attention core") return o.flops.in(FLOP);
        return -1.0;
    };
    CHECK(core(8'193) == doctest::Approx(core(8'192)).epsilon(1e-3));
    // Past two chunks a chunked layer attends to C / 2 = 4,096 keys on average: 36 chunked layers x 4,096 + 12 global
    // layers x the context, times 2 x 40 x (128 + 128) per key.
    CHECK(core(100'000) == doctest::Approx((36.0 * 4'096 + 12.0 * 100'000) * 2.0 * 40 * 256));
}

TEST_CASE("a disaggregated request sends what it holds: windows capped, the linear layers' state included") {
    // Over IB-NDR (50 GB/s, no latency), one rank pair. Qwen3-Next at 1,000 tokens: 12 x 2,048 B x 1,000 + 36 x
    // 1,097,728 B = 64,094,208 B -> 1.28188 ms. gpt-oss-120b: 18 dense layers x 1,000 + 18 banded x 128 tokens, x 2,048 B
    // = 41,582,592 B -> 0.831652 ms (not 36 x 1,000 x 2,048).
    auto transfer_ms = [](const char* name) {
        const scenario sc = read_scenario(std::string(R"({"model": ")") + name + R"(", "system": {"preset": "HGX-H200"},
            "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 1,
                          "disaggregation": {"prefill": {"count": 4, "tp": 4}, "decode": {"count": 4, "tp": 1}, "kv_transfer": "IB-NDR"}}})",
                                          test::shipped_catalog());
        return kv_transfer_time(sc, 1000).in(units::ms);
    };
    CHECK(transfer_ms("Qwen3-Next-80B-A3B") == doctest::Approx(64'094'208.0 / 50e9 * 1e3));
    CHECK(transfer_ms("gpt-oss-120b") == doctest::Approx(41'582'592.0 / 50e9 * 1e3));
}

TEST_CASE("Nemotron-H's hybrid blocks: Mamba-2 mixers, attention, ReLU^2 experts, each block alone") {
    const model_spec& m = model("Nemotron-3-Nano-30B-A3B");
    CHECK(m.linear_layer_count() == 23);
    CHECK(m.moe_layer_count() == 23);
    // A Mamba-2 block: in_proj 2,688 x (2 x 4,096 + 2 x 8 x 128 + 64), out_proj 4,096 x 2,688; conv 6,144 x (4 + 1 bias);
    // dt_bias, A_log, D 64 each; the gated norm 4,096: 38,742,208.
    CHECK(attention_layer_parameters(m, true).total() == 38'742'208);
    // An expert: up and down, 2 x 2,688 x 1,856; the shared one 2 x 2,688 x 3,712.
    CHECK(expert_parameters(m).total() == 2LL * 2'688 * 1'856);
    const parameter_breakdown p = count_parameters(m);
    // 23 Mamba + 6 attention blocks (q 2,688 x 4,096, k, v 2,688 x 256, o 4,096 x 2,688 = 23,396,352); no dense MLP.
    CHECK(p.attention == 23LL * 38'742'208 + 6LL * 23'396'352);
    CHECK(p.dense_mlp == 0);
    CHECK(p.routed_experts == 23LL * 128 * 2 * 2'688 * 1'856);
    CHECK(p.shared_experts == 23LL * 2 * 2'688 * 3'712);
    CHECK(p.norms == 52LL * 2'688 + 2'688);  // one RMSNorm per block and the final one
    CHECK(p.total() == 31'577'940'288);
    // A request's cache: 23 x (64 x 128 x 64 fp32 state + 3 x 6,144 bf16 conv inputs) = 49,082,368 B, then 6 attention
    // blocks x 2 KV heads x 128 x 2 x 2 B = 6,144 B per token.
    CHECK(per_token("Nemotron-3-Nano-30B-A3B") == 6'144.0);
    CHECK(linear_state_bytes(m, 1, all_layers(m)).in(B) == 49'082'368.0);
    CHECK(per_request("Nemotron-3-Nano-30B-A3B", 1'600) == 49'082'368.0 + 1'600.0 * 6'144);
}

TEST_CASE("Nemotron-H's serving step agrees with the FLOP model and has one all-reduce per block") {
    const scenario sc = read_scenario(R"({"model": "Nemotron-3-Nano-30B-A3B", "system": {"preset": "HGX-H200", "count": 2},
                                          "parallelism": {"tp": 2}, "inference": {"input_tokens": 20000, "output_tokens": 10,
                                          "prefill_chunk_tokens": 20000}})",
                                      test::shipped_catalog());
    const perf_setup su = perf_setup::from(sc);
    batch_step prompt;
    prompt.prefill_tokens = 3'000;
    prompt.prefill_requests = 1;
    const step_breakdown b = step_time_breakdown(su, prompt);
    double core = 0, projections = 0;
    for (const auto& o : b.ops) {
        if (o.op == "attention core") core = o.flops.in(FLOP);
        if (o.op == "attention projections") projections = o.flops.in(FLOP);
    }
    // Split over tp 2: half the exact sums.
    CHECK(core == doctest::Approx(chunk_forward_flops(sc.model, 0, 3'000).attention.in(FLOP) / 2.0));
    CHECK(projections == doctest::Approx(2.0 * 3'000 * active_matmul_parameters(sc.model).attention / 2.0));
    // 52 blocks, one all-reduce each (a 3,000 x 2,688 x 2 B message).
    CHECK(b.tp_allreduce.si() == doctest::Approx(52.0 * su.allreduce(3'000.0 * 2'688 * 2 * B).si()));
}

TEST_CASE("a tensor-parallel degree must split the linear-attention heads") {
    // Qwen3-Next's 32 value heads split over tp 8, not over tp 3 (nor its 16 attention heads); Nemotron's 64 Mamba heads.
    parallelism_spec p;
    p.tp = 8;
    CHECK(shard_weights(model("Qwen3-Next-80B-A3B"), p).problems.empty());
    p.tp = 3;
    const auto problems = shard_weights(model("Qwen3-Next-80B-A3B"), p).problems;
    CHECK(std::any_of(problems.begin(), problems.end(), [](const std::string& s) { return s.find("linear-attention value heads") != std::string::npos; }));
}

TEST_CASE("step_timer gives step_time's numbers bit for bit: repeated token counts with new contexts, every layer kind") {
    // step_timer keeps each distinct token count's costs; a key missing a field the costs read would reuse the wrong
    // ones. The steps below repeat every shape with other contexts, and differ from each other in one field at a time.
    struct probe {
        const char* model;
        const char* layout;
    };
    for (const probe pr : {probe{"Llama-3.1-70B", R"("parallelism": {"tp": 4}, "system": {"preset": "HGX-H200", "count": 4})"},
                           probe{"DeepSeek-V3.2", R"("parallelism": {"tp": 8, "ep": 8, "attention_dp": true}, "system": {"preset": "HGX-H200"})"},
                           probe{"gpt-oss-120b", R"("system": {"accelerator": "H200", "count": 1})"},
                           probe{"Llama-4-Scout-17B-16E", R"("system": {"accelerator": "H200", "count": 1})"},
                           probe{"Qwen3-Next-80B-A3B", R"("system": {"accelerator": "H200", "count": 1})"},
                           probe{"Nemotron-3-Nano-30B-A3B", R"("system": {"preset": "HGX-H200", "count": 2}, "parallelism": {"tp": 2})"}}) {
        CAPTURE(pr.model);
        const scenario sc = read_scenario(std::string(R"({"model": ")") + pr.model + R"(", )" + pr.layout +
                                              R"(, "inference": {"input_tokens": 2000, "output_tokens": 100, "concurrency": 8}})",
                                          test::shipped_catalog());
        const perf_setup su = perf_setup::from(sc);
        step_timer timer(su);
        std::vector<batch_step> steps;
        for (std::int64_t context : {1'000, 9'000, 300'000}) {
            batch_step decode;
            decode.decode_requests = 8, decode.context_tokens = context;
            batch_step mixed = decode;
            mixed.prefill_tokens = 512, mixed.prefill_requests = 2, mixed.prefill_context_tokens = context / 3;
            batch_step more_requests = mixed;
            more_requests.prefill_requests = 3;
            batch_step verify = decode;
            verify.decode_positions = 4;
            batch_step ranks = mixed;
            ranks.experts_route_rank_tokens = true;
            for (const batch_step& st : {decode, mixed, more_requests, verify, ranks}) steps.push_back(st);
        }
        for (const batch_step& st : steps) CHECK(timer(st).si() == step_time(su, st).si());
    }
}
