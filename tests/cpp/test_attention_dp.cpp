// Attention data parallelism (parallelism.attention_dp): weights, KV cache and step work per rank,
// by hand for Qwen3-30B-A3B on 8 GPUs (tp 8 = ep 8): h 2048, 32 query heads and 4 KV heads of 128,
// 48 layers, 128 experts of width 768 (top-8), vocabulary 151,936, untied head.
#include <doctest/doctest.h>

#include <deque>

#include "capplan/analysis/inference_memory.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/sharding.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "test_support.hpp"

using namespace capplan;

namespace {
const scenario& qwen(bool attention_dp) {
    static std::deque<scenario> keep;  // inference_setup and perf_setup point at the scenario's model
    keep.push_back(read_scenario(std::string(R"({"model": "Qwen3-30B-A3B", "system": {"accelerator": "H200", "count": 8},
        "inference": {"input_tokens": 1000, "output_tokens": 8, "batch": 1},
        "parallelism": {"tp": 8, "ep": 8, "attention_dp": )") + (attention_dp ? "true" : "false") + "}}",
                                 test::shipped_catalog()));
    return keep.back();
}
double op_flops(const step_breakdown& b, const std::string& name) {
    for (const auto& o : b.ops)
        if (o.op == name) return o.flops.si();
    return -1.0;
}
}  // namespace

TEST_CASE("attention_dp: attention, embeddings and head whole on every rank; the experts split over ep") {
    const scenario& s = qwen(true);
    const device_parameters d = shard_weights(s.model, s.parallelism).per_device();
    // Attention per layer: h x 4096 (q) + 2 x h x 512 (k, v) + 4096 x h (o) = 18,874,368; experts:
    // 128 / 8 = 16 x 3 x 2048 x 768 = 75,497,472 per layer.
    CHECK(d.routed_experts == doctest::Approx(48.0 * 75497472.0));
    CHECK(d.block_linear == doctest::Approx(48.0 * (18874368.0 + 75497472.0)));
    // Embedding and the untied head, whole: 2 x 151,936 x 2048, plus the router, norms and q/k norms.
    CHECK(d.other > 2.0 * 151936.0 * 2048.0);
    // Under tp 8 a rank holds 1/8 of the query heads and one of the 4 KV heads (replicated twice):
    // 2048 x 512 + 2 x 2048 x 128 + 512 x 2048 = 2,621,440 per layer.
    const scenario& t = qwen(false);
    CHECK(shard_weights(t.model, t.parallelism).per_device().block_linear == doctest::Approx(48.0 * (2621440.0 + 75497472.0)));
}

TEST_CASE("attention_dp: each rank caches its own requests with their whole KV heads") {
    const inference_setup mem = inference_setup::from(qwen(true));
    // 16 requests on 8 ranks: 2 here, each 1,008 tokens (1,000 in 16-token blocks) x 48 layers x
    // 2 x 4 heads x 128 x 2 B = 99,090,432 B.
    CHECK(inference_budget(mem, 16, 1000).kv_cache.si() == doctest::Approx(2.0 * 1008 * 48 * 2 * 4 * 128 * 2));
    CHECK(inference_budget(mem, 16, 1000).kv_cache_per_token.si() == doctest::Approx(48.0 * 2 * 4 * 128 * 2));
    // Under tp 8 every rank caches every request at one KV head: 16 x 1,008 x 48 x 2 x 1 x 128 x 2 B,
    // twice the group's bytes per token (4 heads held 8 times).
    const inference_setup tp = inference_setup::from(qwen(false));
    CHECK(inference_budget(tp, 16, 1000).kv_cache.si() == doctest::Approx(16.0 * 1008 * 48 * 2 * 1 * 128 * 2));
}

TEST_CASE("attention_dp: a rank runs attention for 1/8 of the step's tokens; its experts get the whole step's") {
    const perf_setup su = perf_setup::from(qwen(true));
    batch_step prompts;
    prompts.prefill_tokens = 8000;  // 8 prompts of 1,000
    prompts.prefill_requests = 8;
    const step_breakdown b = step_time_breakdown(su, prompts);
    // Projections: 2 x 1,000 tokens x 18,874,368 parameters x 48 layers.
    CHECK(op_flops(b, "attention projections") == doctest::Approx(2.0 * 1000 * 18874368.0 * 48));
    // Experts: 8,000 tokens x 8 picks / 8 ranks = 8,000 slots x 2 x 4,718,592 per expert, plus the
    // router for this rank's 1,000 tokens (2 x 1,000 x 2048 x 128), x 48 layers.
    CHECK(op_flops(b, "mlp / experts") == doctest::Approx(48.0 * (2.0 * 8000 * 4718592.0 + 2.0 * 1000 * 2048 * 128)));
    CHECK(b.tp_allreduce.si() == 0.0);
    CHECK(b.ep_alltoall.si() > 0.0);
    // One prompt runs on one rank, whole: the busiest rank holds ceil(n / 8) of n requests.
    batch_step one;
    one.prefill_tokens = 1000;
    one.prefill_requests = 1;
    CHECK(op_flops(step_time_breakdown(su, one), "attention projections") == doctest::Approx(2.0 * 1000 * 18874368.0 * 48));
    // 9 decodes: the busiest rank runs 2 of them.
    batch_step decodes;
    decodes.decode_requests = 9;
    decodes.context_tokens = 9 * 500;
    CHECK(op_flops(step_time_breakdown(su, decodes), "attention projections") == doctest::Approx(2.0 * 2 * 18874368.0 * 48));
}

TEST_CASE("experts spread over the tensor-parallel group: no all-to-all, the tp all-reduce combines them") {
    // Under tp 8 every rank holds all of the step's tokens after attention: each runs its 16 experts on
    // the slots routed to them (8,000 x 8 / 8 = 8,000), nothing is dispatched, and the two all-reduces
    // of the layer (after attention, after the experts) are all the traffic.
    const perf_setup su = perf_setup::from(qwen(false));
    batch_step prompt;
    prompt.prefill_tokens = 1000;
    prompt.prefill_requests = 1;
    const step_breakdown b = step_time_breakdown(su, prompt);
    CHECK(b.ep_alltoall.si() == 0.0);
    CHECK(b.tp_allreduce.si() == doctest::Approx(48.0 * 2.0 * su.allreduce(1000.0 * 2048 * 2 * units::B).si()));
    // Experts: 1,000 x 8 / 8 = 1,000 slots x 2 x 4,718,592, plus the router for all 1,000 tokens.
    CHECK(op_flops(b, "mlp / experts") == doctest::Approx(48.0 * (2.0 * 1000 * 4718592.0 + 2.0 * 1000 * 2048 * 128)));
}

TEST_CASE("attention_dp: the smallest fitting group has two ranks at least, its experts spread over it") {
    // Qwen3-30B-A3B fits one H200 whole; as an attention-data-parallel group it needs tp = ep >= 2.
    CHECK(smallest_fitting_tp(inference_setup::from(qwen(false)), 1, 1000, {1, 2, 4, 8}) == 1);
    CHECK(smallest_fitting_tp(inference_setup::from(qwen(true)), 1, 1000, {1, 2, 4, 8}) == 2);
}

TEST_CASE("attention_dp needs the experts spread over the tp group and is a serving layout") {
    auto bad = [](const std::string& parallelism, const std::string& extra = "") {
        return test::error_of([&] {
            (void)read_scenario(R"({"model": "Qwen3-30B-A3B", "system": {"accelerator": "H200", "count": 8},
                "parallelism": )" + parallelism + extra + "}",
                                test::shipped_catalog());
        });
    };
    CHECK(bad(R"({"tp": 8, "ep": 4, "attention_dp": true})").field() == "/parallelism/attention_dp");
    CHECK(bad(R"({"tp": 8, "ep": 8, "attention_dp": true})", R"(, "training": {"seq_len": 4096, "global_batch": 8})")
              .field() == "/parallelism/attention_dp");
}
