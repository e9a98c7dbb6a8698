// analysis/training_perf.hpp: the pipeline schedule arithmetic, MFU's definition, and invariants.
#include <doctest/doctest.h>

#include "capplan/analysis/flops.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/lora.hpp"
#include "capplan/analysis/training_memory.hpp"
#include "capplan/analysis/training_perf.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "test_support.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
training_performance run(const std::string& parallelism, const std::string& training, int count = 64) {
    const std::string text = R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": )" +
                             std::to_string(count) + R"(}, "parallelism": )" + parallelism + R"(, "training": )" +
                             training + "}";
    return estimate_training_performance(read_scenario(text, test::shipped_catalog()));
}
duration term(const training_performance& t, const std::string& name) {
    for (const auto& x : t.terms)
        if (x.term.rfind(name, 0) == 0) return x.exposed;
    return {};
}
duration total(const training_performance& t, const std::string& name) {
    for (const auto& x : t.terms)
        if (x.term == name) return x.time;
    return {};
}
}  // namespace

TEST_CASE("1F1B bubble: (p - 1) micro-batch times; interleaving divides it by v") {
    // dp = 64 / (2 x 4) = 8; micro-batches per pipeline m = 256 / (8 x 1) = 32
    const auto a = run(R"({"tp": 2, "pp": 4})", R"({"seq_len": 4096, "global_batch": 256})");
    CHECK(a.micro_batches == 32);
    auto per_mb = [](const training_performance& t) {
        return (term(t, "forward") + term(t, "backward") + term(t, "recompute") + term(t, "loss") + term(t, "tp comm") +
                term(t, "pp sends")) /
               static_cast<double>(t.micro_batches);
    };
    CHECK(term(a, "pipeline bubble").si() == doctest::Approx((3.0 * per_mb(a)).si()));  // (pp - 1) = 3
    const auto v = run(R"({"tp": 2, "pp": 4, "vpp": 3})", R"({"seq_len": 4096, "global_batch": 256})");
    CHECK(term(v, "pipeline bubble").si() == doctest::Approx((1.0 * per_mb(v)).si()));  // 3 / 3
}


TEST_CASE("pipeline sends: their own term, 1/tp per rank, vpp times as many, overlapped only when interleaved") {
    // 16 stages of 8 GPUs per node: the sends cross nodes in every layout below.
    const auto pp = run(R"({"tp": 1, "pp": 16})", R"({"seq_len": 4096, "global_batch": 64})");
    CHECK(total(pp, "tp communication").si() == 0.0);  // a pipeline is not tensor parallelism
    CHECK(term(pp, "pp sends") > duration{});
    CHECK(term(pp, "pp sends").si() == doctest::Approx(total(pp, "pp sends").si()));  // 1F1B: blocking
    // tp 2 sends half the bytes from each rank; the bandwidth part halves, the latency stays.
    const auto pp2 = run(R"({"tp": 2, "pp": 16})", R"({"seq_len": 4096, "global_batch": 64})", 128);
    CHECK(total(pp2, "pp sends") < total(pp, "pp sends"));
    CHECK(total(pp2, "pp sends") > 0.5 * total(pp, "pp sends"));
    // Interleaving with v = 2 chunks: twice the sends, hidden behind the other chunk's compute.
    const auto v = run(R"({"tp": 1, "pp": 16, "vpp": 2})", R"({"seq_len": 4096, "global_batch": 64})");
    CHECK(total(v, "pp sends").si() == doctest::Approx(2.0 * total(pp, "pp sends").si()));
    CHECK(term(v, "pp sends").si() == 0.0);
}

TEST_CASE("MFU = model FLOPs per step / (step x devices x peak)") {
    const auto t = run(R"({"tp": 8})", R"({"seq_len": 8192, "global_batch": 64, "recompute": "full"})");
    const auto& m = test::shipped_catalog().model("Llama-3.1-8B");
    const flop_count model = training_step_flops(m, 8192, recompute_kind::full).model * 64.0;
    CHECK(t.mfu == doctest::Approx((model / (t.step * 64.0)).si() / 989.5e12));
    CHECK(t.hfu > t.mfu);  // full recomputation adds a forward pass of hardware work
    CHECK(t.tokens_per_s == doctest::Approx(64.0 * 8192 / t.step.si()));
}

TEST_CASE("invariants: more micro-batches shrink the bubble's share; selective < full recompute") {
    const auto few = run(R"({"tp": 2, "pp": 8})", R"({"seq_len": 4096, "global_batch": 64})");
    const auto many = run(R"({"tp": 2, "pp": 8})", R"({"seq_len": 4096, "global_batch": 512})");
    CHECK(term(many, "pipeline bubble") / many.step < term(few, "pipeline bubble") / few.step);
    const auto sel = run(R"({"tp": 8})", R"({"seq_len": 4096, "global_batch": 64, "recompute": "selective"})");
    const auto full = run(R"({"tp": 8})", R"({"seq_len": 4096, "global_batch": 64, "recompute": "full"})");
    CHECK(sel.step < full.step);
    CHECK(sel.mfu > full.mfu);
}

TEST_CASE("a batch that does not split over dp x micro_batch is an error naming the field") {
    CHECK_THROWS_WITH_AS(run(R"({"tp": 8})", R"({"seq_len": 4096, "global_batch": 100, "micro_batch": 2})"),
                         doctest::Contains("/training/global_batch"), config_error);
}

TEST_CASE("stragglers scale compute; expert parallelism adds all-to-alls") {
    const auto base = run(R"({"tp": 8})", R"({"seq_len": 4096, "global_batch": 64})");
    const auto slow = run(R"({"tp": 8})", R"({"seq_len": 4096, "global_batch": 64, "straggler_factor": 1.2})");
    CHECK(term(slow, "forward").si() == doctest::Approx(1.2 * term(base, "forward").si()));
    const std::string moe = R"({"model": "Mixtral-8x7B", "system": {"preset": "DGX-H100", "count": 64},
        "parallelism": {"tp": 1, "ep": 8}, "training": {"seq_len": 4096, "global_batch": 64}})";
    const auto m = estimate_training_performance(read_scenario(moe, test::shipped_catalog()));
    CHECK(term(m, "ep all-to-all").si() > 0.0);
    // Overlapped with another micro-batch's compute: the same traffic, only what forward + backward
    // cannot cover exposed, and the step shorter by exactly the hidden part (bubble included).
    const std::string hidden = R"({"model": "Mixtral-8x7B", "system": {"preset": "DGX-H100", "count": 64},
        "parallelism": {"tp": 1, "ep": 8}, "training": {"seq_len": 4096, "global_batch": 64, "ep_comm_overlap": true}})";
    const auto o = estimate_training_performance(read_scenario(hidden, test::shipped_catalog()));
    CHECK(total(o, "ep all-to-all").si() == doctest::Approx(total(m, "ep all-to-all").si()));
    const double mb = static_cast<double>(m.micro_batches);
    const duration per_mb_ep = total(m, "ep all-to-all") / mb, per_mb_fb = (term(m, "forward") + term(m, "backward")) / mb;
    const duration left = per_mb_ep > per_mb_fb ? per_mb_ep - per_mb_fb : duration{};
    CHECK(term(o, "ep all-to-all").si() == doctest::Approx((mb * left).si()));
    CHECK(o.step < m.step);
}

TEST_CASE("MoE training: every rank routes its own tokens, so each device's experts get tokens/tp x k slots at any ep") {
    // Mixtral-8x7B (h 4096, expert width 14336, top-2 of 8): one 4096-token micro-batch at tp 1 sends
    // 4096 x 2 = 8192 slots from each rank, and (balanced) each device's experts receive as many.
    // Per layer: experts 2 x 8192 x 3 x 4096 x 14336 FLOPs + router 2 x 4096 x 4096 x 8; 32 layers.
    const double per_layer = 2.0 * 8192 * 3 * 4096.0 * 14336 + 2.0 * 4096 * 4096 * 8;
    for (const char* ep : {"4", "8"}) {
        const scenario s = read_scenario(std::string(R"({"model": "Mixtral-8x7B", "system": {"preset": "DGX-H100", "count": 64},
            "parallelism": {"tp": 1, "ep": )") + ep + R"(}, "training": {"seq_len": 4096, "global_batch": 64}})",
                                         test::shipped_catalog());
        const perf_setup perf = perf_setup::from(s);
        const step_breakdown f = step_time_breakdown(perf, training_micro_batch(1, 4096, 1));
        for (const auto& op : f.ops)
            if (op.op == "mlp / experts") CHECK(op.flops.si() == doctest::Approx(32.0 * per_layer));
        CHECK(f.ep_alltoall > duration{});
        CHECK(f.tp_allreduce.si() == 0.0);
    }
    // The busiest rank with 1.5 x the mean load: its expert FLOPs 1.5 x (router unchanged), its
    // all-to-alls longer.
    const std::string base = R"({"model": "Mixtral-8x7B", "system": {"preset": "DGX-H100", "count": 64},
        "training": {"seq_len": 4096, "global_batch": 64}, "parallelism": {"tp": 1, "ep": 8)";
    const scenario even = read_scenario(base + "}}", test::shipped_catalog());
    const scenario skew = read_scenario(base + R"(, "expert_imbalance": 1.5}})", test::shipped_catalog());
    const step_breakdown fe = step_time_breakdown(perf_setup::from(even), training_micro_batch(1, 4096, 1));
    const step_breakdown fs = step_time_breakdown(perf_setup::from(skew), training_micro_batch(1, 4096, 1));
    const double router = 32.0 * 2.0 * 4096 * 4096 * 8;
    for (std::size_t i = 0; i < fe.ops.size(); ++i)
        if (fe.ops[i].op == "mlp / experts")
            CHECK(fs.ops[i].flops.si() - router == doctest::Approx(1.5 * (fe.ops[i].flops.si() - router)));
    CHECK(fs.ep_alltoall > fe.ep_alltoall);
    CHECK_THROWS_WITH_AS(read_scenario(base + R"(, "expert_imbalance": 0.5}})", test::shipped_catalog()),
                         doctest::Contains("/parallelism/expert_imbalance"), config_error);
}

TEST_CASE("the fused attention core's backward is 2.5 x its forward, the rest of the backward 2 x") {
    // FlashAttention-2 (Dao 2023, Algorithm 2): the backward recomputes the scores, five matrix
    // products to the forward's two. One micro-batch per replica (dp 64, batch 64): B - 2F = 0.5 A.
    const scenario s = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 64},
        "parallelism": {"tp": 1}, "training": {"seq_len": 4096, "global_batch": 64}})",
                                     test::shipped_catalog());
    const auto t = estimate_training_performance(s);
    REQUIRE(t.micro_batches == 1);
    const step_breakdown f = step_time_breakdown(perf_setup::from(s), training_micro_batch(1, 4096, 1));
    duration core;
    for (const auto& op : f.ops)
        if (op.op == "attention core") core = op.time;
    REQUIRE(core > duration{});
    // The SwiGLU kernel, its own pass in training, moves 5 intermediate-wide rows backward and 3 forward: B - 2F is one
    // row short of 0.5 A (32 layers x 4,096 tokens x 14,336 x 2 B at the memory bandwidth), and 32 launches (one kernel
    // a layer each way).
    const perf_setup perf = perf_setup::from(s);
    const double row = 32.0 * 4096 * 14336 * 2 / (perf.memory_bandwidth.si() * perf.efficiency.memory);
    const double launches = 32.0 * perf.efficiency.per_kernel.si();
    CHECK((term(t, "backward") - 2.0 * term(t, "forward")).si() == doctest::Approx((0.5 * core).si() - row - launches));
}

TEST_CASE("training's own memory-bound kernels: the activation between the GEMMs, eager element-wise kernels, the loss") {
    // Llama-3.1-8B on one H100 rank (dp 64, one micro-batch of 4,096 tokens): 32 layers, h 4,096, I 14,336, V 128,256.
    auto read = [](const std::string& training) {
        return read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 64},
            "parallelism": {"tp": 1}, "training": {"seq_len": 4096, "global_batch": 64)" + training + "}}",
                             test::shipped_catalog());
    };
    const scenario fused = read(""), eager = read(R"(, "kernels": "eager")"), unfused = read(R"(, "cross_entropy": "unfused")");
    const perf_setup perf = perf_setup::from(fused);
    const double bw = perf.memory_bandwidth.si() * perf.efficiency.memory;
    // The loss: 4,096 x 128,256 logits, 12 B each fused (head write, two reads, the in-place gradient, its scaling),
    // 50 B unfused (fp32 casts, log_softmax and their backwards); eager kernels default to unfused.
    // Each kernel also pays its launch: 3 fused (online softmax, gradient pass, scaling), 6 unfused.
    const double logits = 4096.0 * 128256, launch = perf.efficiency.per_kernel.si();
    CHECK(total(estimate_training_performance(fused), "loss (cross-entropy)").si() == doctest::Approx(12.0 * logits / bw + 3 * launch));
    CHECK(total(estimate_training_performance(unfused), "loss (cross-entropy)").si() == doctest::Approx(50.0 * logits / bw + 6 * launch));
    CHECK(total(estimate_training_performance(eager), "loss (cross-entropy)").si() == doctest::Approx(50.0 * logits / bw + 6 * launch));
    // Eager kernels: SwiGLU unfused (5 rows forward, 9 backward, to 3 and 5) and every element-wise kernel counted one
    // by one in place of §14's fused norm passes (the "norms and elementwise" operator, out of the forward and so
    // out of the backward twice). Per element of the hidden state N = 4,096 tokens x 4,096, 16-bit residual (no
    // autocast): 65 RMSNorm chains (2 a layer and the final one; 36 B forward: the fp32 cast, pow, mean, the row's
    // scale, the cast back and the weight; 92 B backward, pow's three kernels among them), 64 residual adds (6 B;
    // backward the 6 B sum at each branch), attention's output copy (4 B per q element: 4 N a layer), rotary over q and
    // k (5,120 of 4,096 elements a token, 20 B each way: 25 N a layer); backward also q, k and v's gradient copies
    // (4 B x 6,144 / 4,096: 6 N a layer) and the gate and up projections' input gradients summed (6 N a layer).
    const double rows = 32.0 * 4096 * 14336 * 2, N = 4096.0 * 4096;
    const double fwd_bytes = N * (65 * 36 + 64 * 6 + 32 * 4 + 32 * 25), bwd_bytes = N * (65 * 92 + 64 * 6 + 32 * 6 + 32 * 25 + 32 * 6);
    // Kernels: SwiGLU one more forward and two more backward a layer; each norm 8 forward and 13 backward; an add each
    // way; the copies (one forward, three backward a layer); rotary 5 each way for each of q and k.
    const double fwd_kernels = 32 + 65 * 8 + 64 + 32 + 64 * 5, bwd_kernels = 64 + 65 * 13 + 64 + 96 + 64 * 5 + 32;
    const auto f = estimate_training_performance(fused), e = estimate_training_performance(eager);
    const step_breakdown ops = step_time_breakdown(perf, training_micro_batch(1, 4096, 1));
    duration norms;
    for (const auto& op : ops.ops)
        if (op.op == norms_op_name) norms = op.time;
    REQUIRE(norms > duration{});
    CHECK((total(e, "forward") - total(f, "forward")).si() ==
          doctest::Approx((2.0 * rows + fwd_bytes) / bw + fwd_kernels * launch - norms.si()));
    CHECK((total(e, "backward") - total(f, "backward")).si() ==
          doctest::Approx((4.0 * rows + bwd_bytes) / bw + bwd_kernels * launch - 2.0 * norms.si()));
}

TEST_CASE("context parallelism: each rank computes 1/cp of the whole sequence's causal attention") {
    // Load-balanced ring attention: cp ranks share the seq^2/2 causal (query, key) pairs evenly, so a
    // rank's attention core at cp = 2 is half the cp = 1 core, not the core of its seq/2 tokens alone
    // (a quarter).
    auto core_flops = [](int cp) {
        const scenario s = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 64},
            "parallelism": {"tp": 1, "cp": )" + std::to_string(cp) + R"(}, "training": {"seq_len": 8192, "global_batch": 64}})",
                                         test::shipped_catalog());
        const step_breakdown f = step_time_breakdown(perf_setup::from(s), training_micro_batch(1, 8192, cp));
        for (const auto& op : f.ops)
            if (op.op == "attention core") return op.flops.si();
        return 0.0;
    };
    CHECK(core_flops(2) == doctest::Approx(core_flops(1) / 2.0).epsilon(1e-3));
    CHECK(core_flops(4) == doctest::Approx(core_flops(1) / 4.0).epsilon(1e-3));
}

TEST_CASE("training without FlashAttention: the whole score matrix computed and passed through memory four times") {
    auto core = [](bool flash) {
        const scenario s = read_scenario(std::string(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
            "parallelism": {"tp": 1}, "training": {"seq_len": 4096, "global_batch": 8, "flash_attention": )") +
                                             (flash ? "true" : "false") + "}}",
                                         test::shipped_catalog());
        const step_breakdown f = step_time_breakdown(training_perf_setup(s), training_micro_batch(1, 4096, 1));
        for (const auto& op : f.ops)
            if (op.op == "attention core") return op;
        return op_time{};
    };
    const op_time fused = core(true), scores = core(false);
    // Causal pairs 4096 x 4097 / 2 with FlashAttention, all 4096 x 4096 without.
    CHECK(scores.flops.si() == doctest::Approx(fused.flops.si() * 4096.0 * 2.0 / 4097.0));
    // 32 layers x 4 passes x 32 heads x 4096^2 scores x 2 B (bf16) more traffic.
    CHECK((scores.bytes - fused.bytes).si() == doctest::Approx(32.0 * 4 * 32 * 4096.0 * 4096.0 * 2));
    CHECK(scores.time > fused.time);
}

TEST_CASE("dropout: two more passes of materialised scores and a mask byte; masks after attention and MLP") {
    auto ops = [](bool flash, bool dropout) {
        const scenario s = read_scenario(std::string(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
            "parallelism": {"tp": 1}, "training": {"seq_len": 4096, "global_batch": 8, "flash_attention": )") +
                                             (flash ? "true" : "false") + R"(, "dropout": )" + (dropout ? "true" : "false") + "}}",
                                         test::shipped_catalog());
        return step_time_breakdown(training_perf_setup(s), training_micro_batch(1, 4096, 1)).ops;
    };
    auto bytes = [](const std::vector<op_time>& o, const std::string& name) {
        for (const auto& op : o)
            if (op.op == name) return op.bytes.si();
        return 0.0;
    };
    const auto plain = ops(false, false), dropped = ops(false, true), fused = ops(true, false), fused_dropped = ops(true, true);
    // Per score: dropout reads the bf16 probabilities, writes the dropped copy (2 B each) and a 1-byte
    // mask: 32 layers x 32 heads x 4096^2 scores x 5 B more (hand).
    CHECK(bytes(dropped, "attention core") - bytes(plain, "attention core") == doctest::Approx(32.0 * 32 * 4096.0 * 4096.0 * 5));
    // FlashAttention draws it inside the kernel: no score traffic either way.
    CHECK(bytes(fused_dropped, "attention core") == doctest::Approx(bytes(fused, "attention core")));
    // Hidden dropout: a 1-byte mask of 4096 x 4096 after attention and after the MLP, 32 layers.
    CHECK(bytes(fused_dropped, norms_op_name) - bytes(fused, norms_op_name) ==
          doctest::Approx(32.0 * 2 * 4096.0 * 4096.0));
}

TEST_CASE("data-parallel overlap switches: what is not overlapped is exposed whole") {
    const std::string par = R"({"tp": 1})";
    auto parts_of = [&](const std::string& training) {
        const scenario s = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 64},
            "parallelism": )" + par + R"(, "training": )" + training + "}", test::shipped_catalog());
        const perf_setup perf = training_perf_setup(s);
        return training_step_time(s, perf, step_time_breakdown(perf, training_micro_batch(1, 4096, 1)), shard_weights(s.model, s.parallelism));
    };
    // ZeRO 0 on 64 ranks: one all-reduce; overlapped it hides behind the last backward, else all of it shows.
    const auto on = parts_of(R"({"seq_len": 4096, "global_batch": 128})");
    const auto off = parts_of(R"({"seq_len": 4096, "global_batch": 128, "overlap_grad_reduce": false})");
    CHECK(off.dp_time.si() == doctest::Approx(on.dp_time.si()));
    CHECK(on.dp_exposed.si() == doctest::Approx(std::max(0.0, (on.dp_time - on.backward).si())));
    CHECK(off.dp_exposed.si() == doctest::Approx(off.dp_time.si()));
    CHECK((off.step - on.step).si() == doctest::Approx((off.dp_exposed - on.dp_exposed).si()));
    // ZeRO-3: per micro-batch reduce-scatters and two all-gathers; without prefetch the gathers show whole, the
    // reduce-scatters still hide behind the step's compute.
    const auto z3 = parts_of(R"({"seq_len": 4096, "global_batch": 128, "zero": 3})");
    const auto z3_off = parts_of(R"({"seq_len": 4096, "global_batch": 128, "zero": 3, "overlap_param_gather": false})");
    const auto z3_none = parts_of(R"({"seq_len": 4096, "global_batch": 128, "zero": 3, "overlap_param_gather": false,
                                      "overlap_grad_reduce": false})");
    const duration compute = 2.0 * (z3.forward + z3.backward);  // 2 micro-batches, no recompute or casts (bf16)
    CHECK(z3.dp_exposed.si() == doctest::Approx(std::max(0.0, (z3.dp_time - compute).si())));
    CHECK(z3_off.dp_exposed > z3.dp_exposed);
    CHECK(z3_off.dp_exposed < z3_off.dp_time);
    CHECK(z3_none.dp_exposed.si() == doctest::Approx(z3_none.dp_time.si()));
    CHECK_THROWS_WITH_AS(parts_of(R"({"seq_len": 4096, "global_batch": 128, "overlap_grad_reduce": 1})"),
                         doctest::Contains("/training/overlap_grad_reduce"), config_error);
}

TEST_CASE("sequence parallelism under FP8 gathers FP8 data and reduce-scatters 16-bit data") {
    // Per layer four all-gathers and four reduce-scatters of equal 16-bit size; under FP8 (1 B) the gathers halve:
    // (4 x 2 + 4 x 1) / (8 x 2) = 0.75 of the traffic. A LoRA adapter on qkv_proj keeps the forward gather into the
    // QKV projection 16-bit: (4 x 2 + 2 + 3 x 1) / 16 = 0.8125; on qkv_proj and gate_up_proj: (8 + 2 + 2 + 2) / 16.
    auto parts_of = [](const std::string& compute, bool sp, const std::string& lora, const std::string& preset = "DGX-H100") {
        const scenario s = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": ")" + preset + R"(", "count": 8},
            "precision": {"weights": "bf16", "compute": ")" + compute + R"("},
            "parallelism": {"tp": 8, "sequence_parallel": )" + (sp ? std::string("true") : std::string("false")) + R"(},
            "training": {"seq_len": 4096, "global_batch": 8)" + lora + "}}", test::shipped_catalog());
        const perf_setup perf = training_perf_setup(s);
        return training_step_time(s, perf, step_time_breakdown(perf, training_micro_batch(1, 4096, 1)), shard_weights(s.model, s.parallelism));
    };
    const auto bf16_sp = parts_of("bf16", true, ""), fp8_plain = parts_of("fp8", false, ""), fp8_sp = parts_of("fp8", true, "");
    CHECK(fp8_plain.tp_comm.si() == doctest::Approx(bf16_sp.tp_comm.si()));  // no sequence parallelism: all-reduces
    CHECK(fp8_sp.tp_comm.si() == doctest::Approx(0.75 * bf16_sp.tp_comm.si()));
    const auto qkv = parts_of("fp8", true, R"(, "lora": {"rank": 16, "targets": ["qkv_proj", "o_proj"]})");
    const auto both = parts_of("fp8", true, R"(, "lora": {"rank": 16, "targets": ["qkv_proj", "gate_up_proj"]})");
    CHECK(qkv.tp_comm.si() == doctest::Approx(0.8125 * bf16_sp.tp_comm.si()));
    CHECK(both.tp_comm.si() == doctest::Approx(0.875 * bf16_sp.tp_comm.si()));
    // A full recompute reruns the forward's gathers and scatters: (2 x 2 + 2 x 1) / (4 x 2) of its 16-bit count; with
    // the QKV adapter's gather 16-bit, (2 x 2 + 2 + 1) / 8 = 7/8 against the step's 13/16.
    const auto r16 = parts_of("bf16", true, R"(, "recompute": "full")"), r8 = parts_of("fp8", true, R"(, "recompute": "full")");
    CHECK(r8.recompute_comm.si() == doctest::Approx(0.75 * r16.recompute_comm.si()));
    const auto rq = parts_of("fp8", true, R"(, "recompute": "full", "lora": {"rank": 16, "targets": ["qkv_proj"]})");
    CHECK(rq.recompute_comm.si() == doctest::Approx(0.875 * r16.recompute_comm.si()));
    CHECK(rq.tp_comm.si() == doctest::Approx(0.8125 * r16.tp_comm.si()));
    // MXFP8 training gathers both quantized copies of a block-scaled tensor: 2 x (8 + 8 / 32) / 8 B = 2.0625 B an
    // element, above bf16's 2: (4 x 2 + 4 x 2.0625) / 16. A frozen base (LoRA) gathers one copy: (8 + 2 + 3 x 1.03125) / 16.
    const double b200_16 = parts_of("bf16", true, "", "HGX-B200").tp_comm.si();
    CHECK(parts_of("mxfp8", true, "", "HGX-B200").tp_comm.si() == doctest::Approx((8.0 + 4 * 2.0625) / 16.0 * b200_16));
    CHECK(parts_of("mxfp8", true, R"(, "lora": {"rank": 16, "targets": ["qkv_proj"]})", "HGX-B200").tp_comm.si() ==
          doctest::Approx((8.0 + 2.0 + 3 * 1.03125) / 16.0 * b200_16));
    // A MoE model (every layer's MLP routed): the attention half at 6/8, the expert half at its 16-bit count.
    auto moe_of = [](const std::string& compute) {
        const scenario s = read_scenario(R"({"model": "Qwen3-30B-A3B", "system": {"preset": "DGX-H100", "count": 8},
            "precision": {"weights": "bf16", "compute": ")" + compute + R"("},
            "parallelism": {"tp": 8, "sequence_parallel": true}, "training": {"seq_len": 4096, "global_batch": 8}})",
                                         test::shipped_catalog());
        const perf_setup perf = training_perf_setup(s);
        return training_step_time(s, perf, step_time_breakdown(perf, training_micro_batch(1, 4096, 1)), shard_weights(s.model, s.parallelism));
    };
    CHECK(moe_of("fp8").tp_comm.si() == doctest::Approx((0.75 + 1.0) / 2.0 * moe_of("bf16").tp_comm.si()));
}

TEST_CASE("rank order: data parallelism outermost spans the cluster, and crosses oversubscribed pods") {
    // 1,024 H100s, tp 8 x pp 4 x dp 32, pods of 16 nodes behind 1:7 uplinks. Megatron's order keeps a data-parallel
    // group within tp x dp = 256 GPUs = 32 nodes (2 pods); Llama 3's [TP, CP, PP, DP] spreads it over all 128 nodes
    // (8 pods). One member per node either way (tp 8 fills a node).
    auto run = [](const std::string& order, int pod_nodes) {
        const std::string sys = R"({"preset": "DGX-H100", "count": 1024, "scale_out": {"oversubscription": 7, "pod_nodes": )" +
                                std::to_string(pod_nodes) + "}}";
        const scenario s = read_scenario(R"({"model": "Llama-3.1-70B", "system": )" + sys +
                                             R"(, "parallelism": {"tp": 8, "pp": 4, "sequence_parallel": true, "rank_order": ")" + order +
                                             R"("}, "training": {"seq_len": 4096, "global_batch": 256, "overlap_grad_reduce": false}})",
                                         test::shipped_catalog());
        const perf_setup perf = training_perf_setup(s);
        return training_step_time(s, perf, step_time_breakdown(perf, training_micro_batch(1, 4096, 1)), shard_weights(s.model, s.parallelism));
    };
    // The all-reduce's NIC share: Megatron 32 / (2 x 2 x 7) = 1.14 -> 1 (no slowdown); dp outermost 32 / (2 x 8 x 7) =
    // 0.286 of a NIC: the bandwidth part 3.5x.
    const auto mega = run("tp-cp-ep-dp-pp", 16), outer = run("tp-cp-pp-dp", 16);
    const auto mega_one = run("tp-cp-ep-dp-pp", 1024), outer_one = run("tp-cp-pp-dp", 1024);  // one pod: no tier
    CHECK(mega.dp_time.si() == doctest::Approx(mega_one.dp_time.si()));
    CHECK(outer_one.dp_time.si() == doctest::Approx(mega_one.dp_time.si()));
    CHECK(outer.dp_time.si() > 3.0 * outer_one.dp_time.si());
    CHECK(outer.dp_time.si() < 3.5 * outer_one.dp_time.si());
    CHECK_THROWS_WITH_AS(read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
        "parallelism": {"rank_order": "dp-tp"}, "training": {"seq_len": 4096, "global_batch": 8}})", test::shipped_catalog()),
                         doctest::Contains("/parallelism/rank_order"), config_error);
}

TEST_CASE("LoRA adapters' own kernels by hand: r-wide GEMMs, the scaling and the add, and their gradients") {
    // Llama-3.1-8B, r 16, tp 1, per token of one layer. Targets (d_in, d_out): q (4096, 4096), k and v (4096, 1024),
    // o (4096, 4096), gate and up (4096, 14336), down (14336, 4096): sum of d_in 38,912, of d_out 43,008.
    const model_spec& m = test::shipped_catalog().model("Llama-3.1-8B");
    lora_spec all;
    all.rank = 16;
    all.set_targets({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"});
    const adapter_traffic a = lora_adapter_traffic_per_token(m, 0, all, 2.0, {1, 1, 0, 0});
    CHECK(a.gemm_flops == 2.0 * 16 * (38'912 + 43'008));              // 2 r (d_in + d_out)
    CHECK(a.gemm_bytes == (38'912 + 7 * 2 * 16 + 43'008) * 2.0);       // x read, x·A written and read, B's output
    CHECK(a.forward_bytes == 5.0 * 43'008 * 2);                        // scaling 2, add 3 passes of d_out
    CHECK(a.backward_bytes == (2.0 * 43'008 + 3.0 * 38'912) * 2);      // scaling's gradient; x's gradients summed
    CHECK(a.gemm_kernels == 14);
    CHECK(a.forward_kernels == 14);
    // Dropout adds a pass each way over d_in: read x, write the copy and a 1-byte mask.
    all.dropout = 0.05;
    const adapter_traffic d = lora_adapter_traffic_per_token(m, 0, all, 2.0, {1, 1, 0, 0});
    CHECK(d.forward_bytes - a.forward_bytes == 38'912 * 5.0);
    CHECK(d.forward_kernels == 21);
    // On the output instead (NeMo AutoModel's dropout_position "post"): the same pass over d_out.
    all.dropout_on_output = true;
    const adapter_traffic post = lora_adapter_traffic_per_token(m, 0, all, 2.0, {1, 1, 0, 0});
    CHECK(post.forward_bytes - a.forward_bytes == 43'008 * 5.0);
    CHECK(post.backward_bytes - a.backward_bytes == 43'008 * 5.0);
    // At tp 2 the column-parallel outputs split, o's and down's stay whole: (4,096 + 2 x 1,024 + 2 x 14,336) / 2 + 2 x 4,096.
    const adapter_traffic post2 = lora_adapter_traffic_per_token(m, 0, all, 2.0, {2, 1, 0, 0});
    all.dropout = 0.0;
    const adapter_traffic none2 = lora_adapter_traffic_per_token(m, 0, all, 2.0, {2, 1, 0, 0});
    CHECK(post2.forward_bytes - none2.forward_bytes == (34'816 / 2 + 2 * 4096) * 5.0);
    all.dropout = 0.05;
    all.dropout_on_output = false;
    // tp 2: column-parallel outputs and row-parallel inputs split; the replicated sides whole.
    all.dropout = 0.0;
    const adapter_traffic t2 = lora_adapter_traffic_per_token(m, 0, all, 2.0, {2, 1, 0, 0});
    // q, k, v, gate, up: 4,096 in, (4,096 + 1,024 + 1,024 + 14,336 + 14,336) / 2 out; o, down: (4,096 + 14,336) / 2 in,
    // 2 x 4,096 out.
    CHECK(t2.gemm_flops == 2.0 * 16 * (5 * 4096 + (4096 + 1024 + 1024 + 14'336 + 14'336) / 2 + (4096 + 14'336) / 2 + 2 * 4096));
}

TEST_CASE("routed experts' adapters: per routed copy on the rank, widths over etp, kernels per expert held") {
    // Mixtral-8x7B (h 4,096, experts 14,336 wide, top 2, gated), r 8 on gate, up and down. ep 4 x tp 2, etp 1: a rank
    // sees 2 x 1 / 2 = 1 routed copy per token (the step's tokens x k x etp / tp), each whole (etp 1), and holds 2 experts.
    const model_spec& m = test::shipped_catalog().model("Mixtral-8x7B");
    lora_spec mlp;
    mlp.rank = 8;
    mlp.set_targets({"gate_proj", "up_proj", "down_proj"});
    const adapter_traffic a = lora_adapter_traffic_per_token(m, 0, mlp, 2.0, {2, 1, 1.0, 2.0});
    CHECK(a.gemm_flops == 1.0 * 2 * 8 * 3 * (4096 + 14'336));
    CHECK(a.forward_bytes == 5.0 * (14'336 + 14'336 + 4096) * 2);
    CHECK(a.gemm_kernels == 2 * 3 * 2);  // two GEMMs per target and expert held
    // etp 2: the same copies' widths halved, twice the copies per rank (k x etp / tp = 2).
    const adapter_traffic b = lora_adapter_traffic_per_token(m, 0, mlp, 2.0, {2, 2, 2.0, 2.0});
    CHECK(b.gemm_flops == 2.0 * 2 * 8 * (2 * (4096 + 7168) + (7168 + 4096)));
}

TEST_CASE("the step pays the adapters forward and twice backward, memory-bound at rank 16") {
    // Llama-3.1-8B on one H100, 4,096 tokens: all seven targets against q alone. Only the adapters differ, so the
    // forward term's difference is theirs: per token and layer, q alone 262,144 FLOPs and 16,448 GEMM bytes and 40,960
    // element-wise bytes, 2 + 2 kernels; all seven (above) 2,621,440, 164,288 and 430,080, 14 + 14 kernels.
    auto run = [](const std::string& targets) {
        return read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 1},
            "training": {"seq_len": 4096, "global_batch": 1, "recompute": "full", "lora": {"rank": 16, "targets": )" +
                                 targets + "}}}",
                             test::shipped_catalog());
    };
    const scenario q = run(R"(["q_proj"])"), all = run(R"("all_linear")");
    const perf_efficiency& eff = training_perf_setup(q).efficiency;
    const double T = 4096, L = 32, peak = 989.5e12, bw = 3.35e12;
    auto adapters = [&](double flops, double gemm_bytes, double bytes, double kernels) {
        const double F = flops * T * L, G = gemm_bytes * T * L, E = bytes * T * L, k = kernels * L;
        const double gemm = std::max(F / (peak * eff.gemm_at(F / k)), G / (bw * eff.memory_at(G / k)));
        return gemm + E / (bw * eff.memory_at(E / k)) + 2 * k * eff.per_kernel.si();
    };
    auto forward = [](const scenario& s) {
        for (const auto& term : estimate_training_performance(s).terms)
            if (term.term == "forward") return term.time.si();
        return -1.0;
    };
    const double expected = adapters(2'621'440, 164'288, 430'080, 14) - adapters(262'144, 16'448, 40'960, 2);
    CHECK(forward(all) - forward(q) == doctest::Approx(expected).epsilon(1e-9));
    // Memory-bound: at 3.35 TB/s the seven targets' forward passes move 0.6 MB per token and layer.
    CHECK(expected > (164'288 + 430'080 - 16'448 - 40'960) * T * L / bw);
}

TEST_CASE("LoRA under FP8 GEMMs: 16-bit adapters, an FP8 base read as it is, its transpose cached") {
    // Llama-3.1-8B on one H100, LoRA r 16, full recompute. (weights, compute) formats vary; nothing else does.
    auto run = [](const std::string& weights, const std::string& compute, const std::string& targets,
                  const std::string& recompute = "full", int rank = 16) {
        return read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 1},
            "precision": {"weights": ")" + weights + R"(", "compute": ")" + compute + R"("},
            "training": {"seq_len": 4096, "global_batch": 1, "recompute": ")" + recompute + R"(", "lora": {"rank": )" +
                                 std::to_string(rank) + R"(, "targets": )" + targets + "}}}",
                             test::shipped_catalog());
    };
    auto forward = [](const scenario& s) {
        for (const auto& term : estimate_training_performance(s).terms)
            if (term.term == "forward") return term.time.si();
        return -1.0;
    };
    const std::string all = R"("all_linear")", q = R"(["q_proj"])";
    // The adapters (all seven targets against q alone) cost the same under FP8 GEMMs as under 16-bit ones: they run in
    // 16 bits either way. At rank 1,024 their GEMMs are compute-bound, so the format's rate shows.
    CHECK(forward(run("fp8", "fp8", all, "full", 1024)) - forward(run("fp8", "fp8", q, "full", 1024)) ==
          doctest::Approx(forward(run("bf16", "bf16", all, "full", 1024)) - forward(run("bf16", "bf16", q, "full", 1024)))
              .epsilon(1e-9));
    // An FP8 base under FP8 GEMMs is not dequantised: its forward is a 16-bit base's under FP8 GEMMs (whose weight
    // casts happen once a step, not counted); under 16-bit GEMMs the FP8 base is dequantised first.
    CHECK(forward(run("fp8", "fp8", all)) == doctest::Approx(forward(run("bf16", "fp8", all))).epsilon(1e-12));
    CHECK(forward(run("fp8", "bf16", all)) > forward(run("bf16", "bf16", all)));
    // Memory: the 16-bit base (2 B) and its two cached FP8 copies (1 + 1 B) against the FP8 base (1 B) and its cached
    // transpose (1 B): 2 B less per block weight, 32 x (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336) of them.
    auto weights = [](const scenario& s) {
        return estimate_training_memory(s.model, shard_weights(s.model, s.parallelism), s.precision, s.parallelism,
                                        *s.training).weights.si();
    };
    CHECK(weights(run("bf16", "fp8", all)) - weights(run("fp8", "fp8", all)) == doctest::Approx(2.0 * 6'979'321'856.0));
    // Transformer Engine keeps a frozen projection's input only for a weight gradient, whatever the base's format
    // (bitsandbytes, dequantising, keeps it): the activations of an FP8 base equal a 16-bit base's under FP8 GEMMs.
    auto activations = [](const scenario& s) {
        return estimate_training_memory(s.model, shard_weights(s.model, s.parallelism), s.precision, s.parallelism,
                                        *s.training).activations.si();
    };
    CHECK(activations(run("fp8", "fp8", q)) == doctest::Approx(activations(run("bf16", "fp8", q))));
    CHECK(activations(run("fp8", "bf16", q)) > activations(run("bf16", "bf16", q)));
    // Without recompute the kept tensors are the same 16-bit ones under FP8 GEMMs: the adapters' x and FlashAttention's
    // O (no FP8 copies for frozen GEMMs). A 16-bit base is never dequantised, whatever the compute format.
    CHECK(activations(run("fp8", "fp8", all, "none")) == doctest::Approx(activations(run("bf16", "bf16", all, "none"))));
    CHECK(activations(run("bf16", "fp32", q, "none")) == doctest::Approx(activations(run("bf16", "bf16", q, "none"))));
}

TEST_CASE("selective recompute of the MLP reruns its adapters' forward, not attention's") {
    // Llama-3.1-8B on one H100, LoRA r 16, recompute_modules ["mlp"]: the MLP's adapters (gate, up, down) run again in
    // the recompute. Targets all seven against attention's four: the recompute differs by the MLP adapters' forward,
    // which is also what the forward differs by (the adapters memory-bound, every pass at one memory efficiency).
    auto run = [](const std::string& targets) {
        return read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 1},
            "training": {"seq_len": 4096, "global_batch": 1, "recompute_modules": ["mlp"],
                         "lora": {"rank": 16, "targets": )" + targets + "}}}",
                             test::shipped_catalog());
    };
    auto term = [](const scenario& s, std::string_view name) {
        for (const auto& t : estimate_training_performance(s).terms)
            if (t.term == name) return t.time.si();
        return -1.0;
    };
    const scenario all = run(R"("all_linear")"), attention = run(R"(["q_proj", "k_proj", "v_proj", "o_proj"])");
    const double mlp_adapters = term(all, "forward") - term(attention, "forward");
    REQUIRE(mlp_adapters > 0.0);
    CHECK(term(all, "recompute") - term(attention, "recompute") == doctest::Approx(mlp_adapters).epsilon(1e-9));
}
