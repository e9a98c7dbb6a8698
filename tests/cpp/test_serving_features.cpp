// Serving features (spec/serving_features.hpp): static batches that prefill together, speculative
// decoding and prefix caching, in the roofline estimate, the memory model and the simulation; each
// expected value counted by hand.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <string>
#include <vector>

#include "capplan/analysis/disaggregation.hpp"
#include "capplan/analysis/engine_scheduler.hpp"
#include "capplan/analysis/inference_memory.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/serving_sim.hpp"
#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;
using namespace capplan::units;
using test::error_of;
using test::shipped_catalog;

namespace {

scenario llama8b(const std::string& inference) {
    return read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM", "count": 1},
                             "inference": )" + inference + "}",
                         shipped_catalog());
}

step_time_fn constant_step(double seconds) {
    return [seconds](const batch_step&) { return seconds * units::s; };
}

workload_spec burst(std::int64_t n, std::int64_t in, std::int64_t out) {
    workload_spec w;
    w.arrival = workload_spec::arrival_kind::constant_rate;
    w.rate_per_s = 1e6;
    w.requests = n;
    w.input = length_dist::fixed(in);
    w.output = length_dist::fixed(out);
    return w;
}

}  // namespace

TEST_CASE("speculative tokens per step: 1 + a + ... + a^k (Leviathan et al. 2023)") {
    speculative_spec sp;
    sp.tokens = 3, sp.acceptance = 0.8;
    CHECK(sp.tokens_per_step() == doctest::Approx(1 + 0.8 + 0.64 + 0.512));  // 2.952
    CHECK(sp.tokens_per_step() == doctest::Approx((1 - 0.8 * 0.8 * 0.8 * 0.8) / (1 - 0.8)));
    sp.acceptance = 1.0;
    CHECK(sp.tokens_per_step() == 4.0);  // every draft accepted: k + 1
    sp.acceptance = 0.0;
    CHECK(sp.tokens_per_step() == 1.0);  // none: the target's own token
}

TEST_CASE("prefix cache: the larger of the hit share and the shared prefix, never the last token") {
    prefix_cache_spec pc;
    pc.hit_rate = 0.5;
    CHECK(pc.cached_tokens(1000) == 500);
    pc.shared_prefix_tokens = 800;
    CHECK(pc.cached_tokens(1000) == 800);
    CHECK(pc.cached_tokens(600) == 599);  // a prompt inside the shared prefix: all but its last token
    pc.hit_rate = 1.0, pc.shared_prefix_tokens = 0;
    CHECK(pc.cached_tokens(1000) == 999);
    CHECK(pc.cached_tokens(1) == 0);
}

TEST_CASE("a static batch prefills its prompts together, as many whole prompts per step as the budget holds") {
    const scenario sc = llama8b(R"({"input_tokens": 1000, "output_tokens": 100, "batch": 5})");
    const perf_setup su = perf_setup::from(sc);
    auto prompts = [](std::int64_t n) {
        batch_step st;
        st.prefill_tokens = 1000 * n, st.prefill_requests = n;
        return st;
    };
    // Budget 2,500 tokens: 2 prompts a step -> steps of 2, 2 and 1.
    prefill_plan plan;
    plan.step_tokens = 2500;
    const latency_estimate e = estimate_latency(su, 1000, 100, 5, plan);
    CHECK(e.prefill_steps == 3);
    CHECK(e.ttft.in(s) == doctest::Approx((2.0 * step_time(su, prompts(2)) + step_time(su, prompts(1))).in(s)));
    // No budget: the whole batch in one step, far less than five single prompts one after another.
    const latency_estimate one = estimate_latency(su, 1000, 100, 5);
    CHECK(one.prefill_steps == 1);
    CHECK(one.ttft.in(s) == doctest::Approx(step_time(su, prompts(5)).in(s)));
    CHECK(one.ttft < 5.0 * step_time(su, prompts(1)));
    // Throughput: the batch's outputs over its prefill and its output decode steps.
    CHECK(one.output_tokens_per_s == doctest::Approx(5.0 * 100 / (one.ttft + 100.0 * one.tpot).in(s)));
    // A prompt longer than the budget still runs whole, one per step.
    plan.step_tokens = 600;
    CHECK(estimate_latency(su, 1000, 100, 5, plan).prefill_steps == 5);
}

TEST_CASE("prefix-cache hits are attended to, not computed: TTFT falls, attention still reads them") {
    const scenario sc = llama8b(R"({"input_tokens": 4000, "output_tokens": 100, "batch": 1})");
    const perf_setup su = perf_setup::from(sc);
    prefill_plan plan;
    plan.cached_tokens = 3000;
    const latency_estimate hit = estimate_latency(su, 4000, 100, 1, plan);
    batch_step st;
    st.prefill_tokens = 1000, st.prefill_requests = 1, st.prefill_context_tokens = 3000;
    CHECK(hit.ttft.in(s) == doctest::Approx(step_time(su, st).in(s)));
    const latency_estimate miss = estimate_latency(su, 4000, 100, 1);
    CHECK(hit.ttft < miss.ttft);
    // Projections scale with the computed tokens (1,000 of 4,000); the attention core does not
    // shrink as much: each new token attends to the 3,000 cached ones too.
    auto flops = [](const step_breakdown& b, const std::string& op) {
        for (const auto& o : b.ops)
            if (o.op == op) return o.flops.si();
        return 0.0;
    };
    CHECK(flops(hit.prefill, "attention projections") == doctest::Approx(flops(miss.prefill, "attention projections") / 4));
    // Keys attended: miss 4000 x 4001 / 2; hit 1000 x 3000 + 1000 x 1001 / 2.
    CHECK(flops(hit.prefill, "attention core") / flops(miss.prefill, "attention core") ==
          doctest::Approx((1000.0 * 3000 + 1000.0 * 1001 / 2) / (4000.0 * 4001 / 2)));
    CHECK(hit.tpot.in(s) == doctest::Approx(miss.tpot.in(s)));  // decoding is unchanged
}

TEST_CASE("a speculative decode step verifies k + 1 positions per request and reads each context once") {
    const scenario sc = llama8b(R"({"input_tokens": 1000, "output_tokens": 100, "batch": 8})");
    const perf_setup su = perf_setup::from(sc);
    batch_step one, four, wide;
    one.decode_requests = 8, one.context_tokens = 8 * 1050;
    four = one, four.decode_positions = 4;
    wide.decode_requests = 32, wide.context_tokens = 32 * 1050;  // 32 requests: 4x the weights' work and 4x the KV
    const step_breakdown a = step_time_breakdown(su, four), b = step_time_breakdown(su, wide), c = step_time_breakdown(su, one);
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
        CAPTURE(a.ops[i].op);
        CHECK(a.ops[i].flops.si() == doctest::Approx(b.ops[i].flops.si()));  // the same FLOPs as 32 decodes
    }
    // The attention core reads 8 contexts, not 32: its bytes are the 8-request step's (plus 4x the queries).
    CHECK(a.ops[1].bytes.si() < 0.3 * b.ops[1].bytes.si());
    CHECK(a.ops[1].bytes.si() > c.ops[1].bytes.si());
    // Weights are read once either way: memory-bound at batch 8, 4 positions cost little more than 1.
    CHECK(a.total() < 1.3 * c.total());
}

TEST_CASE("speculative decoding in the estimate: TPOT = (verify step + drafter) / tokens per step; pays at batch 1") {
    const std::string base = R"({"input_tokens": 1000, "output_tokens": 200, "batch": 1)";
    const scenario plain = llama8b(base + "}");
    const scenario ngram = llama8b(base + R"(, "speculative": {"method": "ngram", "tokens": 3, "acceptance": 0.6}})");
    const scenario eagle = llama8b(base + R"(, "speculative": {"method": "eagle", "tokens": 3, "acceptance": 0.6}})");
    const perf_setup p = perf_setup::from(plain), n = perf_setup::from(ngram), e = perf_setup::from(eagle);
    CHECK_FALSE(n.drafter);
    REQUIRE(e.drafter);
    CHECK(e.drafter->drafter.model.layers == 1);
    const double tps = 1 + 0.6 + 0.36 + 0.216;
    batch_step verify;
    verify.decode_requests = 1, verify.context_tokens = 1100, verify.decode_positions = 4;
    const latency_estimate ln = estimate_latency(n, 1000, 200, 1), le = estimate_latency(e, 1000, 200, 1),
                           lp = estimate_latency(p, 1000, 200, 1);
    CHECK(ln.tpot.in(s) == doctest::Approx(step_time(p, verify).in(s) / tps));
    // EAGLE adds its head: one decoder layer and the LM head, drafted 3 times.
    CHECK(le.tpot > ln.tpot);
    CHECK(le.decode.ops.back().op == "speculative drafter");
    CHECK(le.tpot.in(s) == doctest::Approx((step_time(p, verify) + le.decode.ops.back().time).in(s) / tps));
    CHECK(lp.tpot.in(s) / le.tpot.in(s) > 1.5);  // memory-bound at batch 1: nearly tokens_per_step faster
    const estimate_result r = estimate(eagle, shipped_catalog());
    REQUIRE(r.inference->speculative_speedup);
    CHECK(*r.inference->speculative_speedup == doctest::Approx(lp.tpot / le.tpot));
    // It stops paying once the verify step is compute-bound: an 8B model on an H100 gets there well
    // inside vLLM's 1,024-sequence limit.
    REQUIRE(r.inference->speculative_breakeven_batch);
    CHECK(*r.inference->speculative_breakeven_batch > 16);
    CHECK(*r.inference->speculative_breakeven_batch < 1024);
}

TEST_CASE("drafters take memory: a draft model's weights and KV cache, a head's one layer") {
    const std::string base = R"({"input_tokens": 1000, "output_tokens": 24, "batch": 10)";
    const scenario plain = llama8b(base + "}");
    const scenario draft = llama8b(
        base + R"(, "speculative": {"method": "draft", "draft_model": "Llama-3.2-1B", "tokens": 4, "acceptance": 0.7}})");
    const scenario eagle = llama8b(base + R"(, "speculative": {"method": "eagle", "tokens": 4, "acceptance": 0.7}})");
    const inference_memory p = inference_budget(inference_setup::from(plain), 10, 1024);
    const inference_memory d = inference_budget(inference_setup::from(draft), 10, 1024);
    const inference_memory e = inference_budget(inference_setup::from(eagle), 10, 1024);
    // Llama-3.2-1B: 1,235,814,400 parameters in bf16; its cache 16 layers x 8 KV heads x 64 x 2 x 2 B
    // = 32 KiB a token, 1,024 tokens x 10 requests.
    CHECK((d.weights - p.weights).in(B) == doctest::Approx(2.0 * 1235814400));
    CHECK((d.kv_cache - p.kv_cache).in(B) == doctest::Approx(10.0 * 1024 * 32768));
    // An EAGLE head on Llama-3.1-8B: one layer (4096 x 6144 QKV, 4096^2 output, 3 x 4096 x 14336 MLP,
    // two norms) and the 2 x 4096 x 4096 joining projection, in bf16; its one layer's cache, 128 KiB / 32.
    const double layer = 4096.0 * 6144 + 4096.0 * 4096 + 3 * 4096.0 * 14336 + 2 * 4096;
    CHECK((e.weights - p.weights).in(B) == doctest::Approx(2.0 * (layer + 2 * 4096.0 * 4096)));
    CHECK((e.kv_cache - p.kv_cache).in(B) == doctest::Approx(10.0 * 1024 * 4096));
}

TEST_CASE("a shared prefix is stored once: its whole blocks leave each request's cache") {
    const scenario sc = llama8b(
        R"({"input_tokens": 1500, "output_tokens": 500, "batch": 10, "prefix_cache": {"shared_prefix_tokens": 1030}})");
    const inference_setup su = inference_setup::from(sc);
    CHECK(su.shared_prefix_tokens == 1024);  // 64 whole 16-token blocks; the last 6 tokens are each request's own
    // Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 x 2 B = 128 KiB per token. 10 requests of 2,000
    // tokens hold 976 of their own each, plus one copy of 1,024.
    const inference_memory m = inference_budget(su, 10, 2000);
    CHECK(m.kv_cache.in(B) == doctest::Approx((10.0 * 976 + 1024) * 131072));
}

TEST_CASE("simulation: a speculative decode gains 1 + the accepted run; acceptance 1 and 0 by hand") {
    scheduler_spec sc;
    sc.kv_capacity_tokens = 16000;
    sc.draft_tokens = 3, sc.acceptance = 1.0;
    std::vector<batch_step> steps;
    auto record = [&](const batch_step& b) {
        steps.push_back(b);
        return 0.125 * units::s;
    };
    // Output 10: the prefill gives token 1, then steps of 4, 4 and the last 1 -> 4 steps.
    const sim_result all = simulate(burst(1, 100, 10), sc, record);
    CHECK(all.steps == 4);
    CHECK(all.e2e.p50.in(units::s) == 0.5);
    REQUIRE(steps.size() == 4);
    CHECK(steps[1].decode_positions == 4);
    CHECK(steps[1].context_tokens == 101);
    CHECK(steps[2].context_tokens == 105);  // 4 tokens' KV written by the step before
    sc.acceptance = 0.0;
    const sim_result none = simulate(burst(1, 100, 10), sc, [](const batch_step&) { return 0.125 * units::s; });
    CHECK(none.steps == 10);  // one token a step, as without speculation
}

TEST_CASE("simulation: mean tokens per decode step approaches (1 - a^(k+1)) / (1 - a)") {
    scheduler_spec sc;
    sc.kv_capacity_tokens = 1 << 22;
    sc.draft_tokens = 4, sc.acceptance = 0.7;
    std::int64_t decode_steps = 0;
    const sim_result r = simulate(burst(200, 50, 2001), sc, [&](const batch_step& b) {
        decode_steps += b.decode_requests;  // request-steps
        return 0.01 * units::s;
    });
    const double expected = (1 - std::pow(0.7, 5)) / (1 - 0.7);  // 2.7731
    // 2,000 decoded tokens per request (the first comes from the prefill); the last step of each
    // request is cut short, so the mean is a little below.
    CHECK(200.0 * 2000 / static_cast<double>(decode_steps) == doctest::Approx(expected).epsilon(0.01));
    CHECK(r.output_tokens == 200 * 2001);
}

TEST_CASE("simulation: cached prompt tokens are not computed; the shared prefix's blocks are held once") {
    workload_spec w = burst(1, 1000, 4);
    w.prefix_cache.hit_rate = 0.8;
    scheduler_spec sc;
    sc.kv_capacity_tokens = 16000;
    std::vector<batch_step> steps;
    simulate(w, sc, [&](const batch_step& b) {
        steps.push_back(b);
        return 0.125 * units::s;
    });
    REQUIRE(steps.size() == 4);
    CHECK(steps[0].prefill_tokens == 200);
    CHECK(steps[0].prefill_context_tokens == 800);
    CHECK(steps[1].context_tokens == 1001);

    // 100 blocks of 16. A 960-token shared prefix (60 blocks) stays resident; requests of 1,000 in and
    // 24 out store at most 1,023 tokens (the last is sampled, never stored), ceil(1023 / 16) = 64
    // blocks, 60 of them shared: 4 each, so all 8 run at once (without the prefix cache one at a time).
    workload_spec many = burst(8, 1000, 24);
    many.prefix_cache.shared_prefix_tokens = 960;
    sc.kv_capacity_tokens = 1600;
    const sim_result shared = simulate(many, sc, [](const batch_step&) { return 0.01 * units::s; });
    CHECK(shared.preemptions == 0);
    CHECK(shared.max_in_flight == 8);
    CHECK(shared.kv_occupancy_max == doctest::Approx((60.0 + 8 * 4) / 100.0));
    // The first request starts a step alone; the other 7 arrive during it and prefill together next.
    CHECK(shared.ttft.max.in(units::s) == doctest::Approx(0.02).epsilon(0.001));
    many.prefix_cache.shared_prefix_tokens = 0;
    const sim_result alone = simulate(many, sc, [](const batch_step&) { return 0.01 * units::s; });
    CHECK(alone.ttft.max > 7 * shared.ttft.max);
}

TEST_CASE("bad serving-feature input names the user's field") {
    auto err = [](const std::string& inference) { return error_of([&] { llama8b(inference); }); };
    const std::string base = R"({"input_tokens": 100, "output_tokens": 10, )";
    CHECK(err(base + R"("speculative": {"method": "medusa", "tokens": 3, "acceptance": 0.5}})").field() ==
          "/inference/speculative/method");
    CHECK(err(base + R"("speculative": {"method": "eagle", "tokens": 0, "acceptance": 0.5}})").field() ==
          "/inference/speculative/tokens");
    CHECK(err(base + R"("speculative": {"method": "eagle", "tokens": 3, "acceptance": 1.5}})").field() ==
          "/inference/speculative/acceptance");
    CHECK(err(base + R"("speculative": {"method": "eagle", "tokens": 3}})").field() == "/inference/speculative/acceptance");
    CHECK(err(base + R"("speculative": {"method": "draft", "tokens": 3, "acceptance": 0.5}})").field() ==
          "/inference/speculative/draft_model");
    // A draft model of another tokenizer cannot draft for the target.
    CHECK(err(base + R"("speculative": {"method": "draft", "draft_model": "Mistral-7B", "tokens": 3, "acceptance": 0.5}})")
              .field() == "/inference/speculative/draft_model");
    CHECK(err(base + R"("prefix_cache": {"hit_rate": 1.2}})").field() == "/inference/prefix_cache/hit_rate");
    CHECK(err(base + R"("prefix_cache": {"shared_prefix_tokens": 101}})").field() ==
          "/inference/prefix_cache/shared_prefix_tokens");
    CHECK(err(base + R"("prefix_cache": {}})").field() == "/inference/prefix_cache/hit_rate");
}

TEST_CASE("a shared prefix and sliding windows: a window holds its own recent tokens, shared ones only inside it") {
    // Gemma-2-9B: 42 layers alternating 4,096-token windows and full attention, 8 KV heads of 256 in
    // bf16: 8,192 B per token per layer. 16 requests of 8,500 tokens (8,000 in) sharing a 6,000-token prefix.
    const scenario sc = read_scenario(R"({"model": "Gemma-2-9B", "system": {"accelerator": "H100-SXM", "count": 1},
        "inference": {"input_tokens": 8000, "output_tokens": 500, "batch": 16,
                      "prefix_cache": {"shared_prefix_tokens": 6000}}})", shipped_catalog());
    const inference_setup su = inference_setup::from(sc);
    REQUIRE(su.shared_prefix_tokens == 6000);  // 375 whole blocks
    // Own, per request: 21 full layers hold 8,512 - 6,000 = 2,512 tokens; 21 windowed layers hold the last
    // 4,096 (from token 4,404), of which 6,000 - 4,404 = 1,596 are shared, 1,584 in whole blocks: 2,512.
    // Stored once: 21 x 6,000 + 21 x 4,096 tokens.
    const double own = 42.0 * 2512, once = 21.0 * 6000 + 21.0 * 4096;
    CHECK(inference_budget(su, 16, 8500).kv_cache.in(B) == doctest::Approx((16 * own + once) * 8192));
}

TEST_CASE("the shared prefix stops at the prompt's last block") {
    prefix_cache_spec pc;
    pc.shared_prefix_tokens = 1024;
    CHECK(pc.shared_tokens(1024, 16) == 1008);  // token 1,024 is recomputed: its block is the request's own
    CHECK(pc.shared_tokens(1025, 16) == 1024);
    CHECK(pc.shared_tokens(500, 16) == 496);    // a shorter prompt shares its own whole blocks
    CHECK(pc.shared_tokens(1, 16) == 0);
}

TEST_CASE("simulation: preemption with speculative decoding and a prefix cache conserves every token") {
    // 30 requests of 400 in, 200 out on 80 blocks of 16 (1,280 tokens): at most 3 fit at full length,
    // so decodes preempt; a 160-token shared prefix and half of each prompt cached; 4 drafted tokens.
    workload_spec w = burst(30, 400, 200);
    w.prefix_cache.hit_rate = 0.5;
    w.prefix_cache.shared_prefix_tokens = 160;
    scheduler_spec sc;
    sc.kv_capacity_tokens = 1280;
    sc.draft_tokens = 4, sc.acceptance = 0.6;
    std::int64_t prefilled = 0;
    const sim_result r = simulate(w, sc, [&](const batch_step& b) {
        prefilled += b.prefill_tokens;
        return 0.01 * units::s;
    });
    CHECK(r.preemptions > 0);
    CHECK(r.completed == 30);
    CHECK(r.output_tokens == 30 * 200);
    for (const auto& q : r.requests) CHECK(q.finished);
    // Each prompt computes 200 of its 400 tokens once; a preempted request recomputes from its hits on.
    CHECK(prefilled >= 30 * 200);
    CHECK(r.kv_occupancy_max <= 1.0);
}

TEST_CASE("disaggregated simulation: prefill pool, KV transfer, decode pool, by hand") {
    // One prefill and one decode replica, 0.125 s steps, 0.05 s to move a cache. One request of 100 in,
    // 3 out: prefill 0 -> 0.125 s, transfer to 0.175 s, where the decode replica admits it and streams
    // its first token; decodes end at 0.3 and 0.425 s.
    disaggregated_scheduler d;
    d.prefill.kv_capacity_tokens = d.decode.kv_capacity_tokens = 16000;
    d.kv_transfer = [](std::int64_t tokens) {
        CHECK(tokens == 100);
        return 0.05 * units::s;
    };
    std::vector<batch_step> prefill_steps, decode_steps;
    const sim_result r = simulate_disaggregated(
        burst(1, 100, 3), d,
        [&](const batch_step& b) {
            prefill_steps.push_back(b);
            return 0.125 * units::s;
        },
        [&](const batch_step& b) {
            decode_steps.push_back(b);
            return 0.125 * units::s;
        });
    CHECK(r.ttft.p50.in(units::s) == doctest::Approx(0.175));
    CHECK(r.e2e.p50.in(units::s) == doctest::Approx(0.425));
    REQUIRE(prefill_steps.size() == 1);
    CHECK(prefill_steps[0].prefill_tokens == 100);
    CHECK(prefill_steps[0].decode_requests == 0);
    REQUIRE(decode_steps.size() == 2);
    CHECK(decode_steps[0].prefill_tokens == 0);
    CHECK(decode_steps[0].decode_requests == 1);
    CHECK(decode_steps[0].context_tokens == 101);  // the cache of 100 prompt tokens arrived; it writes token 1's
    // Then one token a step.
    CHECK(r.itl.max.in(units::s) == doctest::Approx(0.125));
    // Busy: the prefill replica 0.125 of 0.425 s, the decode replica 0.25.
    CHECK(r.prefill_busy_fraction == doctest::Approx(0.125 / 0.425));
    CHECK(r.decode_busy_fraction == doctest::Approx(0.25 / 0.425));
    // A one-token answer ends at the prefill pool and never crosses.
    const sim_result one = simulate_disaggregated(burst(1, 100, 1), d, constant_step(0.125), constant_step(0.125));
    CHECK(one.e2e.p50.in(units::s) == 0.125);
}

TEST_CASE("disaggregated simulation: decode steps carry no prompts, prefill steps no decodes, every token counted") {
    disaggregated_scheduler d;
    d.prefill.replicas = 2, d.decode.replicas = 3;
    d.prefill.kv_capacity_tokens = 20000, d.decode.kv_capacity_tokens = 60000;
    d.kv_transfer = [](std::int64_t tokens) { return tokens * 1e-5 * units::s; };
    workload_spec w = burst(300, 500, 100);
    w.input = length_dist::uniform(100, 1000);
    w.output = length_dist::uniform(1, 200);
    const sim_result r = simulate_disaggregated(
        w, d,
        [](const batch_step& b) {
            CHECK(b.decode_requests == 0);
            return (2e-3 + 2e-5 * b.prefill_tokens) * units::s;
        },
        [](const batch_step& b) {
            CHECK(b.prefill_tokens == 0);  // no preemption here: the decode pool never recomputes
            return (5e-3 + 1e-5 * b.decode_requests) * units::s;
        });
    CHECK(r.completed == 300);
    CHECK(r.preemptions == 0);
    for (const auto& q : r.requests) CHECK(q.finished);
    CHECK(r.prefill_busy_fraction > 0.0);
    CHECK(r.decode_busy_fraction > 0.0);
}

TEST_CASE("disaggregated simulation: a decode replica that preempts recomputes only its victims, never a transferred cache") {
    // 16 closed-loop users, 100 in / 200 out, a decode replica of 640 tokens (40 blocks): at most three
    // full-length requests, so decodes preempt; caches keep arriving behind the preempted requests.
    disaggregated_scheduler d;
    d.prefill.kv_capacity_tokens = 16000;
    d.decode.kv_capacity_tokens = 640;
    d.decode.chunked_prefill = false;
    d.kv_transfer = [](std::int64_t) { return 0.001 * units::s; };
    workload_spec w = burst(200, 100, 200);
    w.arrival = workload_spec::arrival_kind::closed_loop;
    w.users = 16;
    std::int64_t recomputes = 0;
    const sim_result r = simulate_disaggregated(w, d, constant_step(0.01), [&](const batch_step& b) {
        recomputes += b.prefill_requests;
        return 0.01 * units::s;
    });
    CHECK(r.preemptions > 0);
    CHECK(recomputes <= r.preemptions);  // each preemption costs one recompute at most
    CHECK(r.completed == 200);
}

TEST_CASE("disaggregated estimate: KV transfer by hand, a static batch's TTFT, TPOT and pace from the pools") {
    // Llama-3.1-8B in bf16: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a token. A 2,000-token
    // prompt's cache, 262.144 MB, over IB-NDR (400 Gb/s = 50 GB/s, no latency in the catalog) by one rank
    // pair (min(tp 2, tp 1)): 5.24288 ms.
    const std::string pools = R"("disaggregation": {"prefill": {"count": 2, "tp": 2}, "decode": {"count": 2, "tp": 1},
                                                     "kv_transfer": "IB-NDR"})";
    const scenario sc = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100"},
        "inference": {"input_tokens": 2000, "output_tokens": 200, "batch": 16, )" + pools + "}}",
                                      shipped_catalog());
    CHECK(kv_transfer_time(sc, 2000).in(units::ms) == doctest::Approx(5.24288));
    const estimate_result r = estimate(sc, shipped_catalog());
    const inference_result& i = *r.inference;
    CHECK(*i.kv_transfer_s == doctest::Approx(5.24288e-3));
    CHECK(*i.prefill_replicas == 1);
    CHECK(*i.decode_replicas == 2);
    CHECK(r.system.count == 4);
    // The pools alone: the prefill pool's static batch of 16 prompts (one token each), the decode pool's step.
    const scenario pre = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 2},
        "parallelism": {"tp": 2}, "inference": {"input_tokens": 2000, "output_tokens": 1, "batch": 16}})", shipped_catalog());
    const scenario dec = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 2},
        "parallelism": {"tp": 1, "dp": 2}, "inference": {"input_tokens": 2000, "output_tokens": 200, "batch": 16}})",
                                       shipped_catalog());
    const double ttft = *estimate(pre, shipped_catalog()).inference->ttft_s;
    const double tpot = *estimate(dec, shipped_catalog()).inference->tpot_s;
    // The first token streams from the decode pool once the cache has crossed.
    CHECK(*i.ttft_s == doctest::Approx(ttft + 5.24288e-3));
    CHECK(*i.tpot_s == doctest::Approx(tpot));
    CHECK(*i.e2e_latency_s == doctest::Approx(ttft + 5.24288e-3 + 199 * tpot));
    // Batch after batch the slowest stage sets the pace: the prefill, the transfer or 199 decode steps.
    CHECK(*i.throughput_tokens_per_s == doctest::Approx(16.0 * 200 / std::max({ttft, 5.24288e-3, 199 * tpot})));
    CHECK(r.chain.back().stage == "kv transfer (once per request)");
}

TEST_CASE("disaggregated estimate under concurrency: both pools simulated, each pool's load reported") {
    const scenario sc = read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100"},
        "inference": {"input_tokens": 2000, "output_tokens": 200, "concurrency": 32,
                      "disaggregation": {"prefill": {"count": 2, "tp": 1}, "decode": {"count": 2, "tp": 1}}}})",
                                      shipped_catalog());
    const estimate_result r = estimate(sc, shipped_catalog());
    const inference_result& i = *r.inference;
    CHECK(i.method == "simulation");
    REQUIRE(i.prefill_utilization);
    CHECK(*i.prefill_utilization > 0.0);
    CHECK(*i.decode_utilization > *i.prefill_utilization);  // 200 decode steps a request against one prompt
    // Inside one 8-GPU node the caches cross NVLink: far under a step.
    CHECK(*i.kv_transfer_s < 1e-3);
    CHECK(*i.ttft_s < 0.5);
}

TEST_CASE("bad disaggregation input names the user's field; a pool that cannot hold its load is a reason") {
    auto err = [](const std::string& d) {
        return error_of([&] {
            read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100"},
                "inference": {"input_tokens": 100, "output_tokens": 10, "disaggregation": )" + d + "}}",
                          shipped_catalog());
        });
    };
    CHECK(err(R"({"prefill": {"count": 3, "tp": 2}, "decode": {"count": 1}})").field() == "/inference/disaggregation/prefill/count");
    CHECK(err(R"({"prefill": {"count": 2}})").field() == "/inference/disaggregation/decode");
    CHECK(err(R"({"prefill": {"count": 2, "tp": 2, "ep": 4}, "decode": {"count": 1}})").field() ==
          "/inference/disaggregation/prefill/ep");
    CHECK(err(R"({"prefill": {"count": 1, "accelerator": "H1000"}, "decode": {"count": 1}})").field() ==
          "/inference/disaggregation/prefill/accelerator");
    CHECK(err(R"({"prefill": {"count": 1}, "decode": {"count": 1}, "kv_transfer": "smoke signals"})").field() ==
          "/inference/disaggregation/kv_transfer");
    // Llama-3.1-70B in bf16 (141 GB) on a one-GPU prefill pool of H100s cannot run.
    const estimate_result r = estimate(read_scenario(R"({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100"},
        "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 4,
                      "disaggregation": {"prefill": {"count": 1}, "decode": {"count": 4, "tp": 4}}}})", shipped_catalog()),
                                       shipped_catalog());
    CHECK(r.feasible == false);
    REQUIRE_FALSE(r.reasons.empty());
    CHECK(r.reasons.front().rfind("prefill pool: ", 0) == 0);
}

TEST_CASE("engine profiles: the engine's defaults, each key still overriding; TensorRT-LLM runs prompts whole") {
    auto parse = [](const std::string& inference, const std::string& accel = "H100-SXM") {
        return read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": ")" + accel + R"(", "count": 1},
                                 "inference": )" + inference + "}",
                             shipped_catalog());
    };
    const scenario v = parse(R"({"input_tokens": 1000, "output_tokens": 100})");
    CHECK(v.inference->engine == "vllm-v1");
    CHECK(v.inference->kv_block_tokens == 16);
    CHECK(v.inference->chunked_prefill);
    CHECK(inference_setup::from(v).step_tokens == 8192);  // an H100 has >= 70 GiB and is not an A100
    CHECK(inference_setup::from(parse(R"({"input_tokens": 1000, "output_tokens": 100})", "A100-80GB-SXM")).step_tokens == 2048);
    const scenario t = parse(R"({"input_tokens": 1000, "output_tokens": 100, "engine": "trtllm-pytorch"})");
    CHECK(t.inference->kv_block_tokens == 32);
    CHECK(t.inference->kv_admission == "reserve");
    CHECK(t.inference->prefill_dispatch == "eager");
    CHECK_FALSE(t.inference->chunked_prefill);
    const inference_setup ts = inference_setup::from(t);
    CHECK(ts.step_tokens == 8192);
    CHECK(ts.max_num_seqs == 2048);
    CHECK_FALSE(engine_scheduler(ts, 1100, 1).chunked_prefill);
    // SGLang's chunked_prefill_size: 8,192 on an H100 (from 60 GiB), 16,384 on a B200 (from 160 GiB).
    CHECK(inference_setup::from(parse(R"({"input_tokens": 1000, "output_tokens": 100, "engine": "sglang"})")).step_tokens == 8192);
    CHECK(inference_setup::from(parse(R"({"input_tokens": 1000, "output_tokens": 100, "engine": "sglang"})", "B200")).step_tokens ==
          16384);
    // A key given overrides its profile's value.
    const scenario o = parse(R"({"input_tokens": 1000, "output_tokens": 100, "engine": "trtllm-pytorch",
                                 "kv_block_tokens": 64, "kv_admission": "on_demand", "chunked_prefill": true})");
    CHECK(o.inference->kv_block_tokens == 64);
    CHECK(o.inference->kv_admission == "on_demand");
    CHECK(o.inference->chunked_prefill);
    // Every result names its profile.
    CHECK(estimate(t, shipped_catalog()).inference->engine == "trtllm-pytorch");
    // Errors name the field: an unknown profile lists the known ones; without chunking a prompt must fit a step.
    const config_error unknown = error_of([&] { parse(R"({"input_tokens": 10, "output_tokens": 1, "engine": "tgi"})"); });
    CHECK(unknown.field() == "/inference/engine");
    CHECK(std::string(unknown.what()).find("vllm-v1, sglang, trtllm-pytorch, trtllm-tensorrt") != std::string::npos);
    CHECK(error_of([&] { parse(R"({"input_tokens": 9000, "output_tokens": 1, "engine": "trtllm-tensorrt"})"); }).field() ==
          "/inference/input_tokens");
}

TEST_CASE("KV offload: a cache beyond GPU memory spills to host memory and each step reloads what it attends") {
    // Llama-3.1-8B in bf16 on one H100 (DGX-H100 host link: PCIe Gen5, measured 55.43 GB/s per device):
    // 8 requests of 121,000 tokens hold 8 x 121,008 x 131,072 B = 126.9 GB of cache, more than the GPU's.
    auto run = [](const std::string& offload) {
        return read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 1},
            "inference": {"input_tokens": 120000, "output_tokens": 1000, "batch": 8)" + offload + "}}",
                             shipped_catalog());
    };
    const estimate_result without = estimate(run(""), shipped_catalog());
    CHECK(without.memory.fits == false);
    const scenario sc = run(R"(, "kv_offload": {"tier": "host", "capacity": "1 TB"})");
    CHECK(sc.inference->kv_offload->reload.in(units::GB / units::s) == doctest::Approx(55.43));
    const estimate_result with = estimate(sc, shipped_catalog());
    CHECK(with.memory.fits == true);
    const double kv = 8.0 * 121008 * 131072;
    CHECK(with.memory.kv_cache->in(B) == doctest::Approx(kv));
    // What spills is what GPU memory cannot hold: the GPU is full to its usable share.
    CHECK(with.memory.per_device->in(B) == doctest::Approx(with.memory.usable->in(B)));
    CHECK((with.memory.per_device->in(B) + with.memory.kv_offloaded->in(B)) ==
          doctest::Approx(without.memory.per_device->in(B)));
    // A decode step attends 8 x (120,000 + 500) tokens; those beyond the GPU's share come over PCIe, at
    // a request's bytes per token (121,008 block-rounded tokens' cache over its 121,000).
    const std::int64_t gpu = gpu_kv_tokens(inference_setup::from(sc), 121000);
    const double reload = static_cast<double>(8 * 120500 - gpu) * (121008.0 * 131072 / 121000) / 55.43e9;
    CHECK(with.chain.back().stage == "host link (kv reload)");
    CHECK(with.chain.back().time.in(units::s) == doctest::Approx(reload));
    CHECK(*with.inference->tpot_s == doctest::Approx(reload));  // PCIe-bound: far slower than the kernels
    CHECK(with.bottleneck == "host link (kv reload)");
    CHECK(*with.inference->max_batch > *without.inference->max_batch);
}

TEST_CASE("KV offload to a storage tier: its read rate per device when slower than the host link; bad input") {
    auto parse = [](const std::string& offload) {
        return read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100"},
            "inference": {"input_tokens": 1000, "output_tokens": 100, "kv_offload": )" + offload + "}}",
                             shipped_catalog());
    };
    const scenario nvme = parse(R"({"tier": "NVMe-Gen4-8x", "capacity": "8 TB"})");
    // 56 GB/s per node over 8 devices: 7 GB/s each, below PCIe's 55.43.
    CHECK(nvme.inference->kv_offload->reload.in(units::GB / units::s) == doctest::Approx(7.0));
    CHECK(error_of([&] { parse(R"({"tier": "floppy", "capacity": "8 TB"})"); }).field() == "/inference/kv_offload/tier");
    CHECK(error_of([&] { parse(R"({"tier": "host"})"); }).field() == "/inference/kv_offload/capacity");
    CHECK(error_of([&] { parse(R"({"tier": "host", "capacity": "0 B"})"); }).field() == "/inference/kv_offload/capacity");
}

TEST_CASE("KV offload and prefix hits: earlier turns come back over the host link, or are recomputed when that is sooner") {
    // Llama-3.1-8B bf16, one H100 of a DGX-H100: a 20,000-token prompt (20,480 with its answer: whole
    // blocks, so 131,072 B a token) of which 99% (19,800 tokens) were sent before and were offloaded.
    auto run = [](const std::string& tier) {
        return estimate(read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 1},
            "inference": {"input_tokens": 20000, "output_tokens": 480, "batch": 1, "prefix_cache": {"hit_rate": 0.99},
                          "kv_offload": {"tier": ")" + tier + R"(", "capacity": "1 TB"}}})", shipped_catalog()),
                        shipped_catalog());
    };
    // Host memory over PCIe Gen5 (55.43 GB/s): 19,800 x 131,072 B in 46.82 ms, longer than the 200-token
    // chunk's kernels: TTFT = the reload + the 2.4 ms of host work a prefill step adds.
    const estimate_result host = run("host");
    CHECK(*host.inference->prefix_cached_tokens == 19800);
    CHECK(*host.inference->ttft_s == doctest::Approx(19800.0 * 131072 / 55.43e9 + 2.4e-3));
    // An NFS mount (2 GB/s per client, shared by the node's 8 devices: 0.25 GB/s each) would take 10 s:
    // recomputing the 19,800 tokens is sooner, so they count as computed.
    const estimate_result nfs = run("NFS");
    CHECK(*nfs.inference->prefix_cached_tokens == 0);
    CHECK(*nfs.inference->ttft_s < 1.0);
    CHECK(*nfs.inference->ttft_s > *host.inference->ttft_s);
}

TEST_CASE("a pool of another accelerator runs on that accelerator's own node; the caches cross the network") {
    const std::string pools = R"({"prefill": {"count": 4, "tp": 4}, "decode": {"count": 4, "tp": 4, "accelerator": "L40S"}})";
    const scenario sc = read_scenario(R"({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 16},
        "precision": {"weights": "fp8", "kv_cache": "fp8"},
        "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 4, "disaggregation": )" + pools + "}}",
                                      shipped_catalog());
    const scenario decode = pool_scenario(sc, sc.inference->disaggregation->decode);
    CHECK(decode.system.accelerator.name == "L40S");
    REQUIRE(decode.system.scale_up);
    CHECK(decode.system.scale_up->kind != "nvlink");  // L40S nodes have no NVLink between their cards
    CHECK_FALSE(pools_share_a_node(sc));
    // Same accelerator, one node: NVLink; across accelerators: the scale-out NICs (IB NDR, 50 GB/s a GPU),
    // so slower than NVLink's 450 GB/s.
    const scenario same = read_scenario(R"({"model": "Llama-3.1-70B", "system": {"preset": "DGX-H100", "count": 16},
        "precision": {"weights": "fp8", "kv_cache": "fp8"},
        "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 4,
                      "disaggregation": {"prefill": {"count": 4, "tp": 4}, "decode": {"count": 4, "tp": 4}}}})", shipped_catalog());
    CHECK(pools_share_a_node(same));
    CHECK(kv_transfer_time(sc, 1000) > 5.0 * kv_transfer_time(same, 1000));
}
