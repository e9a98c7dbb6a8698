// Training as MoE recipes run it: selective recompute modules (Megatron-Core recompute_modules), multi-token
// prediction (DeepSeek-V3 §2.2) and the DualPipe schedule (DeepSeek-V3 §3.2.1), each checked by hand.
#include <doctest/doctest.h>

#include <cmath>

#include "capplan/analysis/collectives.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/sharding.hpp"
#include "capplan/analysis/training_memory.hpp"
#include "capplan/analysis/training_perf.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "test_support.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
scenario read(const std::string& model, const std::string& parallelism, const std::string& training, int count = 64) {
    return read_scenario(R"({"model": ")" + model + R"(", "system": {"preset": "DGX-H100", "count": )" + std::to_string(count) +
                             R"(}, "parallelism": )" + parallelism + R"(, "training": )" + training + "}",
                         test::shipped_catalog());
}
unsigned modules(std::initializer_list<recompute_module> ms) {
    unsigned u = 0;
    for (auto x : ms) u |= static_cast<unsigned>(x);
    return u;
}
// One layer's activations for a 4096-token micro-batch, bf16, tp 1, selective recompute of `mods`.
double layer_bytes(const model_spec& m, std::int64_t layer, unsigned mods, const std::string& gemm_format = "bf16") {
    parallelism_spec p;
    activation_options o;
    o.recompute_modules = mods;
    if (gemm_format == "fp8") o.gemm_input_bytes = 1.0;
    return layer_activation_bytes(m, layer, 4096, 1, p, recompute_kind::selective, find_format("bf16"), o).si();
}
training_step_parts parts(const scenario& s) {
    const perf_setup perf = training_perf_setup(s);
    const training_spec& t = *s.training;
    return training_step_time(s, perf, step_time_breakdown(perf, training_micro_batch(t.micro_batch, t.seq_len, s.parallelism.cp)),
                              shard_weights(s.model, s.parallelism));
}
}  // namespace

TEST_CASE("recompute modules free what each module saved (per layer, 4096 tokens, bf16, tp 1)") {
    const catalog& cat = test::shipped_catalog();
    const model_spec qwen = cat.model("Qwen3-30B-A3B");  // h 2048, 128 experts of width 768, top-8, no shared
    const auto core = modules({recompute_module::core_attn});
    // moe: the routed copies, 4096 x 8 = 32768, each (g + e)·h + (2e + g)·I_e = 4·2048 + 6·768 = 12800 B, and the fp32
    // router logits and probabilities, 8·E = 1024 B per token: 419,430,400 + 4,194,304 B.
    CHECK(layer_bytes(qwen, 0, core) - layer_bytes(qwen, 0, core | modules({recompute_module::moe})) ==
          doctest::Approx(423624704.0));
    // moe_act: only the activation's output, the down-projection input: 32768 x 2 x 768 B.
    CHECK(layer_bytes(qwen, 0, core) - layer_bytes(qwen, 0, core | modules({recompute_module::moe_act})) ==
          doctest::Approx(50331648.0));
    // layernorm in bf16: the QKV input g·h and the router's e·h, 4096 x (4096 + 4096) B; with FP8 GEMMs (their own
    // 1-byte copies kept) only the router's 16-bit input, 4096 x 4096 B.
    CHECK(layer_bytes(qwen, 0, core) - layer_bytes(qwen, 0, core | modules({recompute_module::layernorm})) ==
          doctest::Approx(33554432.0));
    CHECK(layer_bytes(qwen, 0, core, "fp8") - layer_bytes(qwen, 0, core | modules({recompute_module::layernorm}), "fp8") ==
          doctest::Approx(16777216.0));
    // mla_up_proj (DeepSeek-V3: 128 heads, q/k 192 and v 128 per head): Q, K, V after the up-projections,
    // 2 x 128 x (2 x 192 + 128) = 131,072 B per token.
    const model_spec ds = cat.model("DeepSeek-V3");
    CHECK(layer_bytes(ds, 10, core) - layer_bytes(ds, 10, core | modules({recompute_module::mla_up_proj})) ==
          doctest::Approx(4096.0 * 131072.0));
    // mlp (a dense layer of DeepSeek-V3, width 18432): gate and up outputs 2e·I and the down input g·I, 6 x 18432 B/token.
    CHECK(layer_bytes(ds, 0, core) - layer_bytes(ds, 0, core | modules({recompute_module::mlp})) ==
          doctest::Approx(4096.0 * 6.0 * 18432.0));
    // shared_experts (one of width 2048): 6 x 2048 B per token.
    CHECK(layer_bytes(ds, 10, core) - layer_bytes(ds, 10, core | modules({recompute_module::shared_experts})) ==
          doctest::Approx(4096.0 * 6.0 * 2048.0));
    // Without core_attn the attention core's saved tensors stay (FlashAttention: fp32 log-sum-exp and O).
    CHECK(layer_bytes(qwen, 0, modules({recompute_module::moe_act})) > layer_bytes(qwen, 0, core | modules({recompute_module::moe_act})));
}

TEST_CASE("recompute modules cost their forward again: DeepSeek-V3's MLA up-projections by hand") {
    const std::string par = R"({"tp": 1, "pp": 16, "ep": 8})";
    const scenario a = read("DeepSeek-V3", par, R"({"seq_len": 4096, "global_batch": 256, "recompute": "selective"})", 256);
    const scenario b = read("DeepSeek-V3", par, R"({"seq_len": 4096, "global_batch": 256, "recompute_modules": ["core_attn", "mla_up_proj"]})", 256);
    CHECK(b.training->recompute == recompute_kind::selective);
    // q_b 1536 -> 128 x 192 and kv_b 512 -> 128 x (128 + 128): 2 x 4096 x (37,748,736 + 8,388,608 x 2) FLOPs per layer, two
    // GEMMs, 61 layers over 16 stages.
    const double flops = 2.0 * 4096 * (1536.0 * 128 * 192 + 512.0 * 128 * 256);
    const perf_setup perf = training_perf_setup(b);
    const double per_layer = flops / (perf.peak.si() * perf.efficiency.gemm_at(flops / 2.0));
    CHECK((parts(b).recompute - parts(a).recompute).si() == doctest::Approx(61.0 / 16.0 * per_layer));
    // moe reruns the layer's experts and its dispatch and combine.
    const scenario c = read("DeepSeek-V3", par, R"({"seq_len": 4096, "global_batch": 256, "recompute_modules": ["moe"]})", 256);
    CHECK(parts(c).ep_comm.si() == doctest::Approx(1.5 * parts(a).ep_comm.si()));
    CHECK(parts(c).recompute > duration{});
    // Each tp rank routes its own 1/tp shard (as the forward does): at tp 2 the experts' rerun is half tp 1's (the
    // router, 2 T h E on every rank, is not split), and less than the forward it reruns part of.
    const std::string q = R"({"seq_len": 4096, "global_batch": 64, "recompute_modules": ["moe"]})";
    const training_step_parts q1 = parts(read("Qwen3-30B-A3B", R"({"tp": 1, "ep": 8})", q, 64));
    const training_step_parts q2 = parts(read("Qwen3-30B-A3B", R"({"tp": 2, "ep": 8, "sequence_parallel": true})", q, 64));
    CHECK(q2.recompute < 0.6 * q1.recompute);
    CHECK(q2.recompute < q2.forward);
}

TEST_CASE("the layernorm module reruns each branch's pre-norm: two per layer, one per block of a hybrid stack") {
    // A norm's rerun reads its input and writes its output, 4096 tokens x 2 B x hidden each way, at the memory rate of
    // its size; the dense model has 2 per layer, Nemotron-H's blocks (mixer or feed-forward, not both) one each.
    auto norm_reruns = [](const std::string& model, double hidden) {
        const std::string with = R"({"seq_len": 4096, "global_batch": 8, "recompute_modules": ["core_attn", "layernorm"]})";
        const std::string without = R"({"seq_len": 4096, "global_batch": 8, "recompute_modules": ["core_attn"]})";
        const scenario a = read(model, R"({"tp": 1})", with, 8), b = read(model, R"({"tp": 1})", without, 8);
        const perf_setup perf = training_perf_setup(a);
        const double bytes = 4096.0 * 2.0 * 2.0 * hidden;
        const double one = bytes / (perf.memory_bandwidth.si() * perf.efficiency.memory_at(bytes));
        return (parts(a).recompute - parts(b).recompute).si() / one;
    };
    CHECK(norm_reruns("Llama-3.1-8B", 4096.0) == doctest::Approx(64.0));  // 32 layers x 2
    // Nemotron-3-Nano: 52 blocks (23 Mamba-2, 6 attention, 23 MoE), one RMSNorm each.
    CHECK(norm_reruns("Nemotron-3-Nano-30B-A3B", 2688.0) == doctest::Approx(52.0));
}

TEST_CASE("recompute_modules: errors name the field") {
    auto bad = [](const std::string& model, const std::string& training, const char* says) {
        CHECK_THROWS_WITH_AS(read(model, R"({"tp": 1})", training), doctest::Contains(says), config_error);
    };
    bad("Llama-3.1-8B", R"({"seq_len": 4096, "global_batch": 64, "recompute": "full", "recompute_modules": ["mlp"]})",
        "/training/recompute_modules");
    bad("Llama-3.1-8B", R"({"seq_len": 4096, "global_batch": 64, "recompute_modules": ["mpl"]})", "did you mean 'mlp'");
    bad("Llama-3.1-8B", R"({"seq_len": 4096, "global_batch": 64, "recompute_modules": []})", "/training/recompute_modules");
    bad("Llama-3.1-8B", R"({"seq_len": 4096, "global_batch": 64, "recompute_modules": [3]})", "/training/recompute_modules/0");
    bad("Llama-3.1-8B", R"({"seq_len": 4096, "global_batch": 64, "recompute_modules": ["mla_up_proj"]})", "no multi-head latent");
    bad("Llama-3.1-8B", R"({"seq_len": 4096, "global_batch": 64, "recompute_modules": ["moe"]})", "no MoE layers");
    bad("Qwen3-30B-A3B", R"({"seq_len": 4096, "global_batch": 64, "recompute_modules": ["mlp"]})", "no dense MLP layers");
    bad("Qwen3-30B-A3B", R"({"seq_len": 4096, "global_batch": 64, "recompute_modules": ["shared_experts"]})", "no shared experts");
    bad("Llama-3.1-8B", R"({"seq_len": 4096, "global_batch": 64, "mtp_layers": 17})", "/training/mtp_layers");
    bad("Llama-3.1-8B", R"({"seq_len": 4096, "global_batch": 64, "recompute_modules": ["mlp", "mlp"]})", "named twice");
}

TEST_CASE("multi-token prediction: one more block, projection and head on the last stage") {
    const std::string par = R"({"tp": 1, "pp": 4, "ep": 8})";
    const scenario a = read("DeepSeek-V3", par, R"({"seq_len": 4096, "global_batch": 256})", 256);
    const scenario b = read("DeepSeek-V3", par, R"({"seq_len": 4096, "global_batch": 256, "mtp_layers": 1})", 256);
    const weight_sharding w = shard_weights(a.model, a.parallelism);
    // Model states of the last stage: + the last layer's block, M (2h x h), two norms and an embedding copy (pp > 1).
    const double h = 7168.0;
    const double extra = detail::layer_on_device(a.model, 60, a.parallelism).total() + 2.0 * h * h + 2.0 * h + 129280.0 * h;
    const training_memory ma = estimate_training_memory_stage(a.model, w, a.precision, a.parallelism, *a.training, 3);
    const training_memory mb = estimate_training_memory_stage(b.model, w, b.precision, b.parallelism, *b.training, 3);
    CHECK((mb.weights - ma.weights).si() == doctest::Approx(2.0 * extra));  // bf16 weights, unsharded
    // Its own fp32 logits kept for its loss (4 B per token and entry) beside the model's, one gradient live: 12 / 8.
    CHECK(mb.logits.si() == doctest::Approx(1.5 * ma.logits.si()));
    // The first stage holds none of it.
    CHECK(estimate_training_memory_stage(b.model, w, b.precision, b.parallelism, *b.training, 0).weights.si() ==
          doctest::Approx(estimate_training_memory_stage(a.model, w, a.precision, a.parallelism, *a.training, 0).weights.si()));
    // Time: the forward grows by one mean block, the head and M per micro-batch, spread over the 4 stages.
    const perf_setup perf = training_perf_setup(a);
    const step_breakdown f = step_time_breakdown(perf, training_micro_batch(1, 4096, 1));
    duration head_op;
    for (const auto& op : f.ops)
        if (op.op == "lm head and embedding") head_op = op.time;
    const double head = 2.0 * 4096 * h * 129280 / (perf.peak.si() * perf.efficiency.gemm);
    const double proj = 2.0 * 4096 * 2.0 * h * h / (perf.peak.si() * perf.efficiency.gemm);
    const double module = (f.compute - head_op).si() / 61.0 + head + proj;
    CHECK((parts(b).forward - parts(a).forward).si() == doctest::Approx(module / 4.0));
}

TEST_CASE("DualPipe: bubble (pp/2 - 1)(F + B/2), two stages' states per rank, pp + 1 micro-batches in flight") {
    const std::string t = R"({"seq_len": 4096, "global_batch": 128})";  // 8 micro-batches per pipeline (dp 16)
    const scenario one = read("Mixtral-8x7B", R"({"tp": 1, "pp": 4, "ep": 8})", t);
    const scenario dual = read("Mixtral-8x7B", R"({"tp": 1, "pp": 4, "ep": 8, "pipeline_schedule": "dualpipe"})", t);
    const training_step_parts a = parts(one), d = parts(dual);
    // DeepSeek-V3 Table 2 with F&B = F + B and W = B / 2: (4/2 - 1) x (F + B/2). The token permutations and the
    // loss, memory-bound work of each chunk, count with F; W is the GEMMs' half, so the backward's memory-bound passes
    // (the activation's) stay whole: + 1.5 x them.
    CHECK(d.bubble.si() == doctest::Approx((d.forward + d.moe_permute + d.loss + d.backward / 2.0 + 1.5 * d.elementwise_backward).si()));
    CHECK(a.bubble.si() == doctest::Approx(3.0 * (a.forward + a.backward + a.recompute + a.fp8_casts + a.moe_permute + a.loss).si() +
                                           3.0 * (a.tp_exposed + a.pp_exposed + a.cp_exposed + a.ep_exposed).si()));
    // The all-to-alls and sends run under the paired chunk's compute.
    CHECK(d.ep_exposed.si() == doctest::Approx(std::max(0.0, (d.ep_comm - d.forward - d.backward).si())));
    CHECK(d.pp_exposed.si() == doctest::Approx(std::max(0.0, (d.pp_comm - d.forward - d.backward).si())));
    CHECK(d.step < a.step);
    // With full recompute the recomputation belongs to B' = B + R, not to W: (F + 2 (B + R) - 1.5 B).
    const scenario full = read("Mixtral-8x7B", R"({"tp": 1, "pp": 4, "ep": 8, "pipeline_schedule": "dualpipe"})",
                               R"({"seq_len": 4096, "global_batch": 128, "recompute": "full"})");
    const training_step_parts r = parts(full);
    CHECK(r.recompute > duration{});
    CHECK(r.bubble.si() == doctest::Approx((r.forward + r.moe_permute + r.loss + 2.0 * (r.backward + r.recompute) -
                                            1.5 * (r.backward - r.elementwise_backward)).si()));
    // Memory on rank 0: its stage and the mirror stage 3 (embedding and head both), 5 micro-batches of activations.
    const weight_sharding w = shard_weights(one.model, one.parallelism);
    const training_memory m = estimate_training_memory_stage(dual.model, w, dual.precision, dual.parallelism, *dual.training, 0);
    CHECK(m.weights.si() == doctest::Approx(2.0 * (w.stages[0].params.total() + w.stages[3].params.total())));
    CHECK(m.layer_sets_in_flight == doctest::Approx(5.0));
    CHECK(m.logits.si() > 0.0);
    // Errors name the field: odd pp, interleaving, too few micro-batches, serving.
    CHECK_THROWS_WITH_AS(read("Mixtral-8x7B", R"({"tp": 1, "pp": 3, "pipeline_schedule": "dualpipe"})", t, 48),
                         doctest::Contains("/parallelism/pipeline_schedule"), config_error);
    CHECK_THROWS_WITH_AS(read("Mixtral-8x7B", R"({"tp": 1, "pp": 4, "vpp": 2, "pipeline_schedule": "dualpipe"})", t),
                         doctest::Contains("/parallelism/pipeline_schedule"), config_error);
    CHECK_THROWS_WITH_AS(read("Mixtral-8x7B", R"({"tp": 1, "pp": 4, "pipeline_schedule": "dualpipe"})",
                              R"({"seq_len": 4096, "global_batch": 32})"),
                         doctest::Contains("an even number"), config_error);
    CHECK_THROWS_WITH_AS(read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
        "parallelism": {"pp": 2, "pipeline_schedule": "dualpipe"}, "inference": {"input_tokens": 100, "output_tokens": 10}})",
                                       test::shipped_catalog()),
                         doctest::Contains("training schedule"), config_error);
}

TEST_CASE("node-deduplicating dispatch: each token crosses the network once per other node it reaches") {
    system_spec b200 = test::shipped_catalog().system("HGX-B200");
    b200.count = 32;
    // ep 32 over 4 nodes of 8, top-8: a copy crosses nodes with probability 24/32 in a plain all-to-all; deduplicated,
    // a token reaches 3 (1 - 0.75^8) = 2.699 other nodes on average, 0.3374 per copy: the NIC part shrinks by
    // 0.3374 / 0.75 = 0.4499, and it still binds (NVLink carries 7/8 of the copies at 18x the NIC rate).
    collective_options dedup;
    dedup.node_dedup_topk = 8;
    const auto plain = collective_time(collective_op::all_to_all, 4 * GiB, b200, {32, 8});
    const auto deep = collective_time(collective_op::all_to_all, 4 * GiB, b200, {32, 8}, dedup);
    const double k = 8.0, P = 4.0;
    const double ratio = (P - 1.0) * (1.0 - std::pow(1.0 - 1.0 / P, k)) / k / 0.75;
    CHECK(ratio == doctest::Approx(0.4499).epsilon(1e-3));
    CHECK((deep.time - deep.latency).si() == doctest::Approx(ratio * (plain.time - plain.latency).si()).epsilon(1e-6));
    // Within one node nothing crosses the network: the option changes nothing.
    CHECK(collective_time(collective_op::all_to_all, 1 * GiB, b200, {8, 8}, dedup).time.si() ==
          doctest::Approx(collective_time(collective_op::all_to_all, 1 * GiB, b200, {8, 8}).time.si()));
    // As a training scenario's dispatcher; a dense model has nothing to dispatch.
    const scenario s = read("DeepSeek-V3", R"({"tp": 1, "pp": 8, "ep": 32})",
                            R"({"seq_len": 4096, "global_batch": 256, "moe_dispatcher": "deepep"})", 256);
    const scenario a = read("DeepSeek-V3", R"({"tp": 1, "pp": 8, "ep": 32})", R"({"seq_len": 4096, "global_batch": 256})", 256);
    CHECK(parts(s).ep_comm < 0.6 * parts(a).ep_comm);
    CHECK_THROWS_WITH_AS(read("Llama-3.1-8B", R"({"tp": 1})", R"({"seq_len": 4096, "global_batch": 64, "moe_dispatcher": "deepep"})"),
                         doctest::Contains("/training/moe_dispatcher"), config_error);
    CHECK_THROWS_WITH_AS(read("Mixtral-8x7B", R"({"tp": 1})", R"({"seq_len": 4096, "global_batch": 64, "moe_dispatcher": "deepep"})"),
                         doctest::Contains("ep is 1"), config_error);
}

TEST_CASE("MoE token permutations: memory-bound copies of the routed rows, by dispatcher") {
    // Qwen3-30B-A3B (h 2048, k 8, 48 MoE layers) on 8 H100s, ep 8 (16 local experts), one 4096-token micro-batch,
    // bf16: 32,768 routed copies. alltoall: permute (2 copies' rows), sort and sort back (2 + 2), unpermute (1 + the
    // 4096 tokens) = 7 x 32768 + 4096 rows of 2 x 2048 B, forward and again backward, at the memory rate.
    auto run = [](const std::string& dispatcher) {
        return parts(read("Qwen3-30B-A3B", R"({"tp": 1, "ep": 8})",
                          R"({"seq_len": 4096, "global_batch": 8, "moe_dispatcher": ")" + dispatcher + R"("})", 8));
    };
    const scenario s = read("Qwen3-30B-A3B", R"({"tp": 1, "ep": 8})", R"({"seq_len": 4096, "global_batch": 8})", 8);
    const perf_setup perf = training_perf_setup(s);
    auto expect = [&](double rows) {
        const double bytes = rows * 2048.0 * 2.0;
        return 2.0 * 48.0 * bytes / (perf.memory_bandwidth.si() * perf.efficiency.memory_at(bytes));
    };
    CHECK(run("alltoall").moe_permute.si() == doctest::Approx(expect(7.0 * 32768 + 4096)));
    CHECK(run("deepep").moe_permute.si() == doctest::Approx(expect(4.0 * 32768)));
    CHECK(run("hybridep").moe_permute.si() == 0.0);  // fused into its dispatch and combine
    CHECK(parts(read("Llama-3.1-8B", R"({"tp": 1})", R"({"seq_len": 4096, "global_batch": 8})", 8)).moe_permute.si() == 0.0);
}

TEST_CASE("MTP's parameters join the data-parallel traffic and the optimizer step of the stage holding them") {
    // DeepSeek-V3, pp 4, ep 8 on 256 GPUs: the last stage plus one MTP module (a MoE block, M, norms, an embedding
    // copy) holds more than the fullest stage without it, so its gradients set the all-reduce and optimizer bytes.
    const std::string par = R"({"tp": 1, "pp": 4, "ep": 8})";
    const scenario a = read("DeepSeek-V3", par, R"({"seq_len": 4096, "global_batch": 256})", 256);
    const scenario b = read("DeepSeek-V3", par, R"({"seq_len": 4096, "global_batch": 256, "mtp_layers": 1})", 256);
    const weight_sharding w = shard_weights(a.model, a.parallelism);
    const double last = w.stages.back().params.total() + mtp_on_device(a.model, a.parallelism, 1, 4).total();
    REQUIRE(last > w.per_device().total());
    // The optimizer step is linear in the parameters: its ratio is theirs.
    CHECK(parts(b).optimizer.si() / parts(a).optimizer.si() == doctest::Approx(last / w.per_device().total()));
}

TEST_CASE("training's expert GEMMs per rank: its sequence shard over the expert-tensor group, each expert 1/etp wide") {
    // Mixtral-8x7B (32 layers, h 4,096, 8 experts of 3 x 4,096 x 14,336, top-2), 4 x 1,024 tokens per micro-batch.
    // With ep 1 each expert is split over the tp ranks (etp = tp) and every rank sees all the tokens' copies (Megatron
    // all-gathers them over the expert-tensor group): per rank 1/tp of the tp 1 work, not 1/tp² (until 2026-12-02:
    // Mixtral training at tp 8 read an MFU of 1.008, found by tests/python/test_properties.py).
    const double routed = 2.0 * 4096 * 2 * 3.0 * 4096 * 14336, router = 2.0 * 4096 * 4096 * 8;
    for (int tp : {1, 2, 8}) {
        const scenario s = read("Mixtral-8x7B", R"({"tp": )" + std::to_string(tp) + "}",
                                R"({"seq_len": 1024, "global_batch": 64, "micro_batch": 4})", 8);
        REQUIRE(s.parallelism.etp == tp);
        const step_breakdown f = step_time_breakdown(training_perf_setup(s), training_micro_batch(4, 1024, 1));
        double experts = 0.0;
        for (const auto& op : f.ops)
            if (op.op == "mlp / experts") experts = op.flops.si();
        CHECK(experts == doctest::Approx(32.0 * (routed / tp + router / tp)));
    }
}

TEST_CASE("expert-parallel overlap by phase (Megatron-Core combined 1F1B): each phase as long as its longer stream") {
    using namespace units;
    // Phases: max(Af, a2a) + max(max(Mbd + Mbw, a2a) + Mf, max(a2a, Mbd) + a2a) + max(Ab, a2a), less the compute.
    // Attention-heavy: the first phase waits 0.5 ms on the combine although the layer's 9.5 ms of compute exceeds its
    // 4 x 1.5 ms of all-to-alls: 1.5 + max(4 + 2, 2 + 1.5) + 2.5 - 9.5 = 0.5 ms.
    overlapped_moe_layer a{.attention_forward = 1.0 * ms, .attention_backward = 2.5 * ms, .experts_forward = 2.0 * ms,
                           .experts_input_grads = 2.0 * ms, .experts_weight_grads = 2.0 * ms, .dispatch = 1.5 * ms, .combine = 1.5 * ms};
    CHECK(a.exposed().si() == doctest::Approx(0.5e-3));
    // Light experts between all-to-alls: the middle phase is the communication's, max(3, 1) + 3 = 6 against 1 + 1 + 1:
    // 4 + 6 + 8 - 15 = 3 ms, where the whole-micro-batch bound (12 ms of all-to-alls under 15 ms) hides everything.
    overlapped_moe_layer b{.attention_forward = 4.0 * ms, .attention_backward = 8.0 * ms, .experts_forward = 1.0 * ms,
                           .experts_input_grads = 1.0 * ms, .experts_weight_grads = 1.0 * ms, .dispatch = 3.0 * ms, .combine = 3.0 * ms};
    CHECK(b.exposed().si() == doctest::Approx(3e-3));
    // Communication throughout: 10 + (10 + 10) + 10 - 5 = 35 ms, the whole-micro-batch bound 4 x 10 - 5 exactly.
    overlapped_moe_layer c{.attention_forward = 1.0 * ms, .attention_backward = 1.0 * ms, .experts_forward = 1.0 * ms,
                           .experts_input_grads = 1.0 * ms, .experts_weight_grads = 1.0 * ms, .dispatch = 10.0 * ms, .combine = 10.0 * ms};
    CHECK(c.exposed().si() == doctest::Approx(35e-3));
    // No all-to-all: nothing exposed.
    c.dispatch = c.combine = duration{};
    CHECK(c.exposed().si() == doctest::Approx(0.0));
    // A combine longer than the dispatch (the alltoall dispatcher unpermutes after it, on its stream) binds the first
    // phase only: max(2, 2.5) + max(max(2, 1) + 1, max(1, 1) + 1) + max(4, 2.5) - 9 = 0.5 ms.
    overlapped_moe_layer d{.attention_forward = 2.0 * ms, .attention_backward = 4.0 * ms, .experts_forward = 1.0 * ms,
                           .experts_input_grads = 1.0 * ms, .experts_weight_grads = 1.0 * ms, .dispatch = 1.0 * ms,
                           .combine = 2.5 * ms};
    CHECK(d.exposed().si() == doctest::Approx(0.5e-3));
}

TEST_CASE("expert-parallel overlap: a training step exposes the larger of the phase and whole-micro-batch bounds") {
    // DeepSeek-V3 on 256 H100s, pp 8, ep 32, 1F1B all-to-all overlap, bf16, the alltoall dispatcher: its 58 MoE
    // layers' pieces from the forward breakdown (attention, shared experts and router; the routed GEMMs), as
    // training_step_time assembles them, and the step's exposed all-to-all is what the phases leave, / pp. The
    // dispatcher's rows per layer and direction (8 local experts, so sorted): 7 x 32,768 copies + 4,096 tokens; the
    // permutation's 2 x 32,768 go before the dispatch (pre_dispatch), the unpermutation's 32,768 + 4,096 after the
    // combine (its stream), the sorts' 4 x 32,768 with the experts.
    const std::string par = R"({"tp": 1, "pp": 8, "ep": 32})";
    auto read_with = [&](const std::string& extra) {
        return read("DeepSeek-V3", par, R"({"seq_len": 4096, "global_batch": 1024)" + extra + "}", 256);
    };
    const scenario s = read_with(R"(, "ep_comm_overlap": true)");
    const perf_setup perf = training_perf_setup(s);
    const step_breakdown f = step_time_breakdown(perf, training_micro_batch(1, 4096, 1));
    const training_step_parts o = parts(s), n = parts(read_with(""));
    CHECK(o.ep_comm.si() == doctest::Approx(n.ep_comm.si()));
    const double layers = 58.0, stages = 8.0, rows = 7.0 * 32768 + 4096;
    duration core;
    for (const auto& op : f.ops)
        if (op.op == "attention core") core = op.time;
    // The 58 MoE layers' cores: 58 of the 61 alike full-attention layers'.
    CHECK(f.moe_attention_core.si() == doctest::Approx((core * (58.0 / 61.0)).si()).epsilon(1e-12));
    const duration attn_core = core * (58.0 / 61.0), attention = f.moe_layers - f.routed_experts + attn_core;
    const duration permute = o.moe_permute * stages / (2.0 * layers);
    const duration before = permute * (2.0 * 32768 / rows), after = permute * ((32768.0 + 4096) / rows);
    const duration experts = f.routed_experts / layers + permute * (4.0 * 32768 / rows);
    const overlapped_moe_layer layer{.attention_forward = attention / layers + before,
                                     .attention_backward = (2.0 * attention + 0.5 * attn_core) / layers + before,
                                     .experts_forward = experts,
                                     .experts_input_grads = experts,
                                     .experts_weight_grads = f.routed_experts / layers,
                                     .dispatch = f.ep_alltoall / (2.0 * layers),
                                     .combine = f.ep_alltoall / (2.0 * layers) + after};
    const duration whole = std::max(duration{}, o.ep_comm - (o.forward + o.backward));
    const duration phased = layers / stages * (layer.exposed() - 2.0 * after);
    CHECK(phased > whole);  // this layout's phases expose more than the micro-batch bound
    CHECK(o.ep_exposed.si() == doctest::Approx(phased.si()).epsilon(1e-9));
    CHECK(o.ep_exposed < n.ep_exposed);
    CHECK(f.moe_layers > f.routed_experts);
    // An MTP module's dispatch and combine (one MoE layer's, forward and backward) stay outside the phases, serial.
    const training_step_parts mtp = parts(read_with(R"(, "ep_comm_overlap": true, "mtp_layers": 1)"));
    CHECK((mtp.ep_exposed - o.ep_exposed).si() == doctest::Approx((2.0 * f.ep_alltoall / layers / stages).si()).epsilon(1e-9));
    // So does the rerun of a recomputed MoE module (the forward's dispatch and combine once more, / pp).
    const training_step_parts moe = parts(read_with(R"(, "ep_comm_overlap": true, "recompute_modules": ["moe"])"));
    CHECK((moe.ep_exposed - o.ep_exposed).si() == doctest::Approx((f.ep_alltoall / stages).si()).epsilon(1e-9));
}
