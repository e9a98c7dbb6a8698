// analysis/serving_sim.hpp: the serving simulator against hand-counted steps, queueing theory and
// its own invariants (conservation, determinism, scheduler limits).
#include <doctest/doctest.h>

#include <limits>

#include "test_support.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "capplan/analysis/serving_sim.hpp"

using namespace capplan;
using namespace capplan::units;
using arrival = workload_spec::arrival_kind;

namespace {

using test::error_of;

step_time_fn constant(duration d) {
    return [d](const batch_step&) { return d; };
}

// A roofline-shaped step: fixed overhead, per prefill token, per decoding request, per context token.
duration affine(const batch_step& b) {
    return 4 * ms + b.prefill_tokens * 0.02 * ms + b.decode_requests * 0.05 * ms + b.context_tokens * 0.0001 * ms;
}

workload_spec fixed_burst(std::int64_t n, std::int64_t in, std::int64_t out) {
    workload_spec w;
    w.arrival = arrival::constant_rate;
    w.rate_per_s = 1e6;  // all within a fraction of a step
    w.requests = n;
    w.input = length_dist::fixed(in);
    w.output = length_dist::fixed(out);
    return w;
}

workload_spec lognormal_poisson(double rate, std::int64_t n, std::uint64_t seed) {
    workload_spec w;
    w.arrival = arrival::poisson;
    w.rate_per_s = rate;
    w.requests = n;
    w.input = length_dist::lognormal(400, 0.8, 4000);
    w.output = length_dist::lognormal(100, 0.8, 1000);
    w.seed = seed;
    return w;
}

}  // namespace

TEST_CASE("one request: ceil(prompt / budget) prefill steps, then output - 1 decode steps") {
    // 1,000-token prompt, 256-token budget: chunks 256, 256, 256, 232 -> first token after 4 steps;
    // 9 more decode steps for 10 tokens. Step 0.125 s (exact in binary): TTFT 0.5 s, e2e 13 x 0.125 s.
    workload_spec w = fixed_burst(1, 1000, 10);
    scheduler_spec sc;
    sc.max_num_seqs = 8, sc.max_batched_tokens = 256, sc.kv_capacity_tokens = 16000, sc.kv_block_tokens = 16;
    std::vector<batch_step> steps;
    const sim_result r = simulate(w, sc, [&](const batch_step& b) {
        steps.push_back(b);
        return 0.125 * units::s;
    });
    CHECK(r.ttft.p50.in(units::s) == 0.5);
    CHECK(r.e2e.p50.in(units::s) == 1.625);
    CHECK(r.tpot.p50.in(units::s) == 0.125);  // (e2e - TTFT) / (10 - 1)
    CHECK(r.makespan.in(units::s) == 1.625);
    CHECK(r.steps == 13);
    CHECK(r.busy_fraction == 1.0);
    REQUIRE(steps.size() == 13);
    CHECK(steps[0].prefill_tokens == 256);
    CHECK(steps[0].prefill_context_tokens == 0);
    CHECK(steps[1].prefill_context_tokens == 256);  // the first chunk is cached
    CHECK(steps[3].prefill_tokens == 232);
    CHECK(steps[3].prefill_context_tokens == 768);
    CHECK(steps[3].context_tokens == 0);  // no decodes yet
    CHECK(steps[4].decode_requests == 1);
    CHECK(steps[4].prefill_context_tokens == 0);
    CHECK(steps[4].prefill_tokens == 0);
    CHECK(steps[4].context_tokens == 1001);   // the first output token's KV is written by the first decode
    CHECK(steps[12].context_tokens == 1009);  // the 10th token is sampled, never stored
    // KV: admission reserves ceil(1001 / 16) = 63 blocks; the decode at context 1009 takes the 64th.
    // Of 1,000 blocks: 12 steps at 63, one at 64.
    CHECK(r.kv_occupancy_max == doctest::Approx(0.064));
    CHECK(r.kv_occupancy_mean == doctest::Approx((12 * 63 + 64) / 13.0 / 1000.0));

    // Without chunked prefill and a budget holding the prompt: one prefill step, 1 + 9 steps in all.
    sc.chunked_prefill = false, sc.max_batched_tokens = 1024;
    const sim_result whole = simulate(w, sc, constant(0.125 * units::s));
    CHECK(whole.ttft.p50.in(units::s) == 0.125);
    CHECK(whole.e2e.p50.in(units::s) == 1.25);

    // Output 1: the request ends with its prefill; no TPOT sample (vLLM counts TPOT for output > 1 only).
    const sim_result one = simulate(fixed_burst(1, 100, 1), scheduler_spec{}, constant(0.125 * units::s));
    CHECK(one.e2e.p50.in(units::s) == 0.125);
    CHECK(one.tpot.count == 0);
}

TEST_CASE("requests are conserved: each finishes once, none lost, tokens counted exactly") {
    const workload_spec w = lognormal_poisson(40, 3000, 7);
    scheduler_spec sc;
    sc.max_num_seqs = 64, sc.max_batched_tokens = 2048, sc.replicas = 3, sc.kv_capacity_tokens = 1 << 20;
    // Without preemption the engine computes every prompt token once and every output token but the
    // last once: sum over steps of (prefill tokens + decodes) = sum of (input + output - 1).
    std::int64_t computed = 0;
    const sim_result r = simulate(w, sc, [&](const batch_step& b) {
        computed += b.prefill_tokens + b.decode_requests;
        return affine(b);
    });
    REQUIRE(r.preemptions == 0);
    CHECK(r.completed == 3000);
    CHECK(r.measured == 3000);
    REQUIRE(r.requests.size() == 3000);
    std::int64_t expected = 0, outputs = 0;
    std::vector<int> per_replica(3, 0);
    bool ordered = true;
    for (const auto& q : r.requests) {
        ordered = ordered && q.finished && q.arrival <= q.first_token && q.first_token <= q.finish;
        expected += q.input_tokens + q.output_tokens - 1;
        outputs += q.output_tokens;
        ++per_replica.at(static_cast<std::size_t>(q.replica));
    }
    CHECK(ordered);
    CHECK(computed == expected);
    CHECK(r.output_tokens == outputs);
    CHECK(per_replica[0] + per_replica[1] + per_replica[2] == 3000);

    // With preemptions, still every request finishes exactly once.
    sc.kv_capacity_tokens = 6000, sc.replicas = 1;
    workload_spec heavy = lognormal_poisson(40, 3000, 7);
    heavy.input = length_dist::lognormal(400, 0.8, 3000);
    const sim_result p = simulate(heavy, sc, affine);
    CHECK(p.preemptions > 0);
    CHECK(p.completed == 3000);
    CHECK(std::all_of(p.requests.begin(), p.requests.end(), [](const request_record& q) { return q.finished; }));
}

TEST_CASE("reproducible: same seed, same result; another seed, another result") {
    scheduler_spec sc;
    sc.max_num_seqs = 32, sc.max_batched_tokens = 1024, sc.kv_capacity_tokens = 20000, sc.replicas = 2;
    const sim_result a = simulate(lognormal_poisson(30, 2000, 42), sc, affine);
    const sim_result b = simulate(lognormal_poisson(30, 2000, 42), sc, affine);
    const sim_result c = simulate(lognormal_poisson(30, 2000, 43), sc, affine);
    REQUIRE(a.requests.size() == b.requests.size());
    bool same = true;
    for (std::size_t i = 0; i < a.requests.size(); ++i)
        same = same && a.requests[i].arrival == b.requests[i].arrival && a.requests[i].finish == b.requests[i].finish &&
               a.requests[i].first_token == b.requests[i].first_token &&
               a.requests[i].input_tokens == b.requests[i].input_tokens &&
               a.requests[i].output_tokens == b.requests[i].output_tokens;
    CHECK(same);
    CHECK(a.e2e.p99 == b.e2e.p99);
    CHECK(a.preemptions == b.preemptions);
    CHECK(a.steps == b.steps);
    CHECK(a.e2e.mean != c.e2e.mean);
    CHECK(a.requests[5].input_tokens != c.requests[5].input_tokens);
}

TEST_CASE("one request per step under Poisson arrivals is M/D/1: Pollaczek-Khinchine mean wait") {
    // max_num_seqs 1 and output 1: each request is served alone in one step of D = 10 ms, FCFS.
    // Pollaczek-Khinchine mean wait for M/G/1 with deterministic service, C_b = 0 (Kleinrock,
    // Queueing Systems Vol. 1, 1975, ch. 5): W = rho D / (2 (1 - rho)); rho = 50/s x 10 ms = 0.5 -> 5 ms.
    workload_spec w;
    w.arrival = arrival::poisson;
    w.rate_per_s = 50;
    w.requests = 200000;
    w.warmup_requests = 1000;
    w.input = length_dist::fixed(1);
    w.output = length_dist::fixed(1);
    w.seed = 2024;
    scheduler_spec sc;
    sc.max_num_seqs = 1, sc.max_batched_tokens = 1;
    const duration D = 10 * ms;
    const sim_result r = simulate(w, sc, constant(D));
    CHECK(r.measured == 200000);
    CHECK(r.completed == 201000);
    const double wait_ms = (r.ttft.mean - D).in(ms);
    CHECK(wait_ms == doctest::Approx(5.0).epsilon(0.03));
    CHECK(r.busy_fraction == doctest::Approx(0.5).epsilon(0.01));  // utilisation = rho
    CHECK(r.ttft.p50 >= D);

    // Deterministic arrivals at the same rate (D/D/1): nobody waits.
    w.arrival = arrival::constant_rate;
    const sim_result dd = simulate(w, sc, constant(D));
    CHECK(dd.ttft.max.in(ms) == doctest::Approx(10.0));
    CHECK(dd.ttft.p50.in(ms) == doctest::Approx(10.0));
}

TEST_CASE("KV cache smaller than the demand: preemptions, and everyone still finishes") {
    // 64 requests of 100 + 200 tokens at once; 2,048 tokens = 128 blocks of 16. Admission takes
    // ceil(101 / 16) = 7 blocks each (18 admitted); decodes then outgrow the cache.
    const workload_spec w = fixed_burst(64, 100, 200);
    scheduler_spec sc;
    sc.max_num_seqs = 64, sc.max_batched_tokens = 4096, sc.kv_capacity_tokens = 2048, sc.kv_block_tokens = 16;
    const sim_result r = simulate(w, sc, affine);
    CHECK(r.preemptions > 0);
    CHECK(r.completed == 64);
    CHECK(r.kv_occupancy_max <= 1.0);
    CHECK(r.kv_occupancy_max > 0.9);
    std::int64_t counted = 0;
    for (const auto& q : r.requests) counted += q.preemptions;
    CHECK(counted == r.preemptions);
    // The oldest request is never the victim while others run: request 0 is not preempted.
    CHECK(r.requests[0].preemptions == 0);
    // Ample cache: no preemption.
    sc.kv_capacity_tokens = 64 * 304;
    CHECK(simulate(w, sc, affine).preemptions == 0);
}

TEST_CASE("reserved admission (TensorRT-LLM): prompt + whole output held from the start, never preempted") {
    // The same 64 requests of 100 + 200 tokens into 128 blocks of 16: each reserves ceil(300 / 16) = 19
    // blocks, so 6 run at a time (114 blocks) and nobody is preempted; all finish.
    const workload_spec w = fixed_burst(64, 100, 200);
    scheduler_spec sc;
    sc.max_num_seqs = 64, sc.max_batched_tokens = 4096, sc.kv_capacity_tokens = 2048, sc.kv_block_tokens = 16;
    sc.reserve_output = true;
    std::int64_t most = 0;
    const sim_result r = simulate(w, sc, [&](const batch_step& b) {
        most = std::max(most, b.prefill_requests + b.decode_requests);
        return affine(b);
    });
    CHECK(r.preemptions == 0);
    CHECK(r.completed == 64);
    CHECK(most == 6);
    CHECK(r.kv_occupancy_max <= 114.0 / 128.0 + 1e-12);
}

TEST_CASE("percentiles are ordered and every step keeps the scheduler limits") {
    scheduler_spec sc;
    sc.max_num_seqs = 48, sc.max_batched_tokens = 512, sc.kv_capacity_tokens = 40000;
    bool within = true;
    const sim_result r = simulate(lognormal_poisson(25, 5000, 3), sc, [&](const batch_step& b) {
        within = within && b.prefill_tokens + b.decode_requests <= 512 && b.prefill_requests + b.decode_requests <= 48 &&
                 b.context_tokens >= 2 * b.decode_requests && (b.prefill_requests > 0 || b.prefill_context_tokens == 0);
        return affine(b);
    });
    CHECK(within);
    for (const latency_summary* l : {&r.ttft, &r.tpot, &r.e2e}) {
        CHECK(l->p50 <= l->p90);
        CHECK(l->p90 <= l->p99);
        CHECK(l->p99 <= l->max);
        CHECK(l->mean <= l->max);
    }
    CHECK(r.ttft.p99 <= r.e2e.max);
    CHECK(r.busy_fraction > 0.0);
    CHECK(r.busy_fraction <= 1.0);
    CHECK(r.kv_occupancy_mean <= r.kv_occupancy_max);
}

TEST_CASE("percentile is numpy's linear interpolation") {
    // np.percentile([1, 2, 3, 4], [50, 90, 99]) = 2.5, 3.7, 3.97.
    const std::vector<double> v{1, 2, 3, 4};
    CHECK(detail::percentile_of_sorted(v, 50) == doctest::Approx(2.5));
    CHECK(detail::percentile_of_sorted(v, 90) == doctest::Approx(3.7));
    CHECK(detail::percentile_of_sorted(v, 99) == doctest::Approx(3.97));
    CHECK(detail::percentile_of_sorted({7.0}, 99) == 7.0);
}

TEST_CASE("closed loop turnaround: the next request lands inside the engine's next step and waits for it") {
    // Two users, prompts of 100 tokens; user A's answers are 2 tokens, B's 10 (trace rows, request i takes
    // row i mod 2). Steps cost 0.5 s with a prompt, 0.125 s without. [0, 0.5] both prefill; [0.5, 0.625]
    // both decode and A's answer ends. Arriving at that instant, A's next request joins the step that
    // starts then: TTFT 0.5 s. Arriving 10 ms later, it finds B's decode step [0.625, 0.75] running and
    // waits for it: TTFT 1.25 - 0.635 = 0.615 s.
    workload_spec w;
    w.arrival = arrival::closed_loop;
    w.users = 2, w.requests = 3;
    w.trace = {{100, 2, {}}, {100, 10, {}}};
    w.input = length_dist::from_trace(), w.output = length_dist::from_trace();
    const step_time_fn cost = [](const batch_step& b) { return (b.prefill_tokens > 0 ? 0.5 : 0.125) * units::s; };
    auto ttft_of_third = [&](double turnaround_s) {
        w.turnaround = turnaround_s * units::s;
        const sim_result r = simulate(w, scheduler_spec{}, cost);
        const request_record& q = r.requests[2];
        CHECK(q.arrival.in(units::s) == doctest::Approx(0.625 + turnaround_s));
        return (q.first_token - q.arrival).in(units::s);
    };
    CHECK(ttft_of_third(0.0) == doctest::Approx(0.5));
    CHECK(ttft_of_third(0.010) == doctest::Approx(0.615));
    // One user: each cycle is the answer plus the turnaround (no think time), so 3 answers of 0.625 s
    // end at 3 x 0.625 + 2 x 0.010 s.
    w.users = 1;
    w.turnaround = 0.010 * units::s;
    w.trace = {{100, 2, {}}};
    CHECK(simulate(w, scheduler_spec{}, cost).makespan.in(units::s) == doctest::Approx(3 * 0.625 + 2 * 0.010));
    w.turnaround = -0.001 * units::s;
    CHECK(error_of([&] { simulate(w, scheduler_spec{}, cost); }).field() == "/workload/turnaround");
}

TEST_CASE("percentile of (value, count) pairs is the percentile of the values repeated") {
    // [1, 1, 1, 2, 5, 5]: np.percentile(..., [50, 90, 40, 70]) = 1.5, 5.0, 1.0, 3.5 (h = 3.5: between 2
    // and 5); [1, 2, 2, 2] at 50: 2. The pairs may come in any order.
    using pairs = detail::value_counts;
    auto at = [](pairs v, double p) { return detail::percentiles_of_counts(v, {p})[0]; };
    const pairs a{{5.0, 2}, {1.0, 3}, {2.0, 1}};
    CHECK(at(a, 50) == doctest::Approx(1.5));
    CHECK(at(a, 90) == doctest::Approx(5.0));
    CHECK(at(a, 40) == doctest::Approx(1.0));
    CHECK(at(a, 70) == doctest::Approx(3.5));
    CHECK(at({{2.0, 3}, {1.0, 1}}, 50) == doctest::Approx(2.0));
    CHECK(at({{7.0, 1}}, 99) == 7.0);
    CHECK(at({}, 50) == 0.0);
    // Against the written-out list's percentile, on 2,000 pairs with counts 1..5 in scrambled order.
    pairs many;
    std::vector<double> written;
    for (int i = 0; i < 2000; ++i) {
        const double v = static_cast<double>((i * 7919) % 2000) / 7.0;
        const std::int64_t c = 1 + (i * 31) % 5;
        many.push_back({v, c});
        written.insert(written.end(), static_cast<std::size_t>(c), v);
    }
    std::sort(written.begin(), written.end());
    const std::vector<double> ps{0.0, 1.0, 37.5, 50.0, 90.0, 99.0, 100.0};
    const std::vector<double> got = detail::percentiles_of_counts(many, ps);  // all at once
    for (std::size_t i = 0; i < ps.size(); ++i) {
        CHECK(got[i] == doctest::Approx(detail::percentile_of_sorted(written, ps[i])));
        CHECK(at(many, ps[i]) == doctest::Approx(detail::percentile_of_sorted(written, ps[i])));
    }
}

TEST_CASE("percentiles by selection are the percentiles of the sorted list, whatever the order and repeats") {
    // np.percentile([3, 1, 2, 2, 5, 4], [50, 90, 99]) = 2.5, 4.5, 4.95 (sorted 1 2 2 3 4 5: h = 2.5, 4.5, 4.95).
    std::vector<double> v{3, 1, 2, 2, 5, 4};
    const std::vector<double> got = detail::percentiles_of(v, {50, 90, 99});
    CHECK(got[0] == doctest::Approx(2.5));
    CHECK(got[1] == doctest::Approx(4.5));
    CHECK(got[2] == doctest::Approx(4.95));
    std::vector<double> none;
    CHECK(detail::percentiles_of(none, {50})[0] == 0.0);
    // Ascending, descending, all equal, few distinct values and scrambled, as plain values and as (value, count)
    // pairs: every percentile equal to the sorted list's, exactly (the same two order statistics, the same formula).
    const std::vector<double> ps{0.0, 1.0, 37.5, 50.0, 90.0, 99.0, 99.9, 100.0};
    for (int order = 0; order < 5; ++order) {
        std::vector<double> values;
        detail::value_counts pairs;
        std::vector<double> written;
        for (int i = 0; i < 3001; ++i) {
            const double x = order == 0   ? i
                             : order == 1 ? 3000 - i
                             : order == 2 ? 7.0
                             : order == 3 ? static_cast<double>(i % 3)
                                          : static_cast<double>((i * 7919) % 3001) / 7.0;
            const std::int64_t c = 1 + (i * 31) % 4;
            values.push_back(x);
            pairs.push_back({x, c});
            written.insert(written.end(), static_cast<std::size_t>(c), x);
        }
        std::vector<double> sorted_values = values;
        std::sort(sorted_values.begin(), sorted_values.end());
        std::sort(written.begin(), written.end());
        const std::vector<double> of_values = detail::percentiles_of(values, ps);
        const std::vector<double> of_pairs = detail::percentiles_of_counts(pairs, ps);
        for (std::size_t i = 0; i < ps.size(); ++i) {
            CAPTURE(order);
            CAPTURE(ps[i]);
            CHECK(of_values[i] == detail::percentile_of_sorted(sorted_values, ps[i]));
            CHECK(of_pairs[i] == detail::percentile_of_sorted(written, ps[i]));
        }
    }
}

TEST_CASE("inter-token latency: every token gap, pooled over requests, a prefill step showing in the tail") {
    // Steps cost 0.5 s when they run a prompt and 0.125 s otherwise. A (100 in, 4 out) arrives at 0, B
    // (the same) at 0.6 s. Steps: [0, 0.5] A's prefill (A's first token); [0.5, 0.625] A decodes;
    // [0.625, 1.125] A decodes beside B's prefill (B's first token); [1.125, 1.25] both decode (A ends);
    // then B decodes twice, to 1.5. Gaps: A 0.125, 0.5, 0.125; B 0.125, 0.125, 0.125.
    workload_spec w = fixed_burst(2, 100, 4);
    w.rate_per_s = 1.0 / 0.6;
    const step_time_fn cost = [](const batch_step& b) { return (b.prefill_tokens > 0 ? 0.5 : 0.125) * units::s; };
    const sim_result r = simulate(w, scheduler_spec{}, cost);
    CHECK(r.itl.count == 6);
    CHECK(r.itl.mean.in(units::s) == doctest::Approx((5 * 0.125 + 0.5) / 6));
    CHECK(r.itl.p50.in(units::s) == doctest::Approx(0.125));
    CHECK(r.itl.p90.in(units::s) == doctest::Approx(0.3125));   // np.percentile([.125]*5 + [.5], 90)
    CHECK(r.itl.p99.in(units::s) == doctest::Approx(0.48125));
    CHECK(r.itl.max.in(units::s) == doctest::Approx(0.5));
    CHECK(r.ttft.max.in(units::s) == doctest::Approx(0.525));  // B waited 25 ms for A's decode step
    CHECK(r.tpot.mean.in(units::s) == doctest::Approx((0.25 + 0.125) / 2));  // A (1.25 - 0.5) / 3, B 0.375 / 3
    // A as a warm-up request: only B's three gaps count.
    w.requests = 1, w.warmup_requests = 1;
    const sim_result b_only = simulate(w, scheduler_spec{}, cost);
    CHECK(b_only.itl.count == 3);
    CHECK(b_only.itl.max.in(units::s) == doctest::Approx(0.125));
}

TEST_CASE("closed loop: N users keep at most N requests in flight; Little's law N = X (R + Z)") {
    workload_spec w;
    w.arrival = arrival::closed_loop;
    w.users = 4;
    w.requests = 4000;
    w.input = length_dist::uniform(50, 500);
    w.output = length_dist::uniform(20, 200);
    scheduler_spec sc;
    sc.max_num_seqs = 64, sc.max_batched_tokens = 2048;
    const sim_result r = simulate(w, sc, affine);
    CHECK(r.max_in_flight == 4);
    CHECK(r.completed == 4000);
    // Zero think time: X x mean response = N (Little 1961), up to the drain at the end.
    CHECK(r.requests_per_s * r.e2e.mean.in(units::s) == doctest::Approx(4.0).epsilon(0.01));

    // Exponential think time of 0.5 s, 16 users: N = X (R + Z) (interactive response-time law,
    // Lazowska et al., Quantitative System Performance, 1984, ch. 3).
    w.users = 16, w.think_time = 0.5 * units::s, w.requests = 20000;
    const sim_result z = simulate(w, sc, affine);
    CHECK(z.max_in_flight <= 16);
    CHECK(z.requests_per_s * (z.e2e.mean.in(units::s) + 0.5) == doctest::Approx(16.0).epsilon(0.02));

    // One user, fixed lengths, no think time: each request starts when the previous ends.
    workload_spec one = fixed_burst(5, 100, 10);
    one.arrival = arrival::closed_loop, one.users = 1;
    const sim_result seq = simulate(one, sc, constant(1 * ms));
    for (std::size_t i = 1; i < seq.requests.size(); ++i) CHECK(seq.requests[i].arrival == seq.requests[i - 1].finish);
    CHECK(seq.e2e.max.in(ms) == doctest::Approx(10.0));
}

TEST_CASE("trace CSV: header, rows, arrivals; a bad row names its line") {
    const std::string csv =
        "# prompts from a chat log\n"
        "input_tokens, output_tokens, arrival_s\r\n"
        "100,20,0\n"
        "\n"
        "250 , 5 , 0.5\r\n"
        "30,1,2.25\n";
    const auto rows = read_trace_csv(csv, "chat.csv");
    REQUIRE(rows.size() == 3);
    CHECK(rows[1].input_tokens == 250);
    CHECK(rows[1].output_tokens == 5);
    CHECK(rows[2].arrival->in(units::s) == 2.25);
    CHECK_FALSE(read_trace_csv("input_tokens,output_tokens\n5,6\n", "t")[0].arrival.has_value());

    auto e = error_of([] { read_trace_csv("input_tokens,output_tokens\n5,6\n7,x\n", "lens.csv"); });
    CHECK(e.field() == "line 3");
    CHECK(e.value() == "'x'");
    CHECK(std::string(e.what()).find("column 2 'output_tokens' in lens.csv") != std::string::npos);
    e = error_of([] { read_trace_csv("input_tokens,output_tokens\n5,6\n\n0,2\n", "lens.csv"); });
    CHECK(e.field() == "line 4");  // blank lines count
    e = error_of([] { read_trace_csv("input_tokens,output_tokens,arrival_s\n5,6,1\n5,6\n", "t.csv"); });
    CHECK(e.field() == "line 3");
    CHECK(e.problem().find("expected 3 columns") != std::string::npos);
    e = error_of([] { read_trace_csv("input_tokens,output_tokens,arrival_s\n5,6,1\n5,6,0.5\n", "t.csv"); });
    CHECK(e.field() == "line 3");
    CHECK(e.problem().find("goes back in time") != std::string::npos);
    e = error_of([] { read_trace_csv("prompt,completion\n5,6\n", "t.csv"); });
    CHECK(e.field() == "line 1");
    CHECK(e.allowed().find("input_tokens,output_tokens,arrival_s") != std::string::npos);
    e = error_of([] { read_trace_csv("input_tokens,output_tokens\n", "empty.csv"); });
    CHECK(e.problem() == "trace has no rows");

    // Replayed: arrivals and lengths from the rows.
    workload_spec w;
    w.arrival = arrival::trace;
    w.trace = rows;
    w.input = w.output = length_dist::from_trace();
    w.requests = 3;
    const sim_result r = simulate(w, scheduler_spec{}, constant(1 * ms));
    CHECK(r.requests[1].arrival.in(units::s) == 0.5);
    CHECK(r.requests[2].input_tokens == 30);
    CHECK(r.requests[0].output_tokens == 20);
    CHECK(r.e2e.max.in(ms) == doctest::Approx(20.0));  // 1 prefill + 19 decode steps, alone
    w.requests = 4;  // more requests than rows with trace arrivals
    CHECK(error_of([&] { simulate(w, scheduler_spec{}, constant(1 * ms)); }).field() == "/workload/trace");
}

TEST_CASE("replicas share the load: throughput scales under saturation") {
    // 2,000 identical requests at once: each replica is saturated; least-outstanding routing splits
    // them evenly, so 2 and 4 replicas give 2x and 4x the throughput of one.
    const workload_spec w = fixed_burst(2000, 300, 100);
    scheduler_spec sc;
    sc.max_num_seqs = 64, sc.max_batched_tokens = 2048, sc.kv_capacity_tokens = 1 << 20;
    const sim_result one = simulate(w, sc, affine);
    sc.replicas = 2;
    const sim_result two = simulate(w, sc, affine);
    sc.replicas = 4;
    const sim_result four = simulate(w, sc, affine);
    CHECK(two.output_tokens_per_s / one.output_tokens_per_s == doctest::Approx(2.0).epsilon(0.02));
    CHECK(four.output_tokens_per_s / one.output_tokens_per_s == doctest::Approx(4.0).epsilon(0.03));
    std::vector<int> n(4, 0);
    for (const auto& q : four.requests) ++n.at(static_cast<std::size_t>(q.replica));
    CHECK(n == std::vector<int>{500, 500, 500, 500});
    CHECK(two.busy_fraction > 0.99);
}

TEST_CASE("warm-up requests run but stay out of the statistics") {
    workload_spec w = lognormal_poisson(20, 1000, 1);
    w.warmup_requests = 200;
    const sim_result r = simulate(w, scheduler_spec{}, affine);
    CHECK(r.completed == 1200);
    CHECK(r.measured == 1000);
    CHECK(r.e2e.count == 1000);
    CHECK(r.requests.size() == 1200);
}

TEST_CASE("bad specifications name the field") {
    const workload_spec w = fixed_burst(10, 100, 10);
    scheduler_spec sc;
    sc.max_num_seqs = 256, sc.max_batched_tokens = 128;
    CHECK(error_of([&] { simulate(w, sc, affine); }).field() == "/scheduler/max_batched_tokens");

    sc = scheduler_spec{};
    sc.kv_capacity_tokens = 96;  // 6 blocks; a request needs ceil(110 / 16) = 7
    auto e = error_of([&] { simulate(w, sc, affine); });
    CHECK(e.field() == "/scheduler/kv_capacity_tokens");
    CHECK(e.problem().find("request 0 (100 in, 10 out)") != std::string::npos);

    sc = scheduler_spec{};
    sc.chunked_prefill = false, sc.max_batched_tokens = 64, sc.max_num_seqs = 8;
    CHECK(error_of([&] { simulate(w, sc, affine); }).field() == "/scheduler/max_batched_tokens");

    workload_spec bad = w;
    bad.arrival = arrival::poisson, bad.rate_per_s = 0;
    CHECK(error_of([&] { simulate(bad, scheduler_spec{}, affine); }).field() == "/workload/rate_per_s");
    bad = w;
    bad.output = length_dist::uniform(10, 5);
    CHECK(error_of([&] { simulate(bad, scheduler_spec{}, affine); }).field() == "/workload/output");
    bad = w;
    bad.input = length_dist::from_trace();
    CHECK(error_of([&] { simulate(bad, scheduler_spec{}, affine); }).field() == "/workload/trace");
    CHECK(error_of([&] { simulate(w, scheduler_spec{}, constant(duration{})); }).field() == "step_time");
}

TEST_CASE("length distributions") {
    // Lognormal by median: half the draws at or below it; clamped to [1, max].
    workload_spec w = fixed_burst(20000, 1, 1);
    w.input = length_dist::lognormal(300, 1.0, 2000);
    w.output = length_dist::lognormal_mean_cv(50, 0.5);
    const sim_result r = simulate(w, scheduler_spec{}, constant(1 * ms));
    std::int64_t below = 0, max_in = 0, min_in = 1 << 30;
    double out_sum = 0;
    for (const auto& q : r.requests) {
        below += q.input_tokens <= 300;
        max_in = std::max(max_in, q.input_tokens);
        min_in = std::min(min_in, q.input_tokens);
        out_sum += static_cast<double>(q.output_tokens);
    }
    CHECK(static_cast<double>(below) / 20000 == doctest::Approx(0.5).epsilon(0.03));
    CHECK(max_in == 2000);
    CHECK(min_in >= 1);
    CHECK(out_sum / 20000 == doctest::Approx(50.0).epsilon(0.02));

    // Uniform covers both ends.
    w.input = length_dist::uniform(3, 5);
    w.output = length_dist::fixed(1);
    std::set<std::int64_t> seen;
    for (const auto& q : simulate(w, scheduler_spec{}, constant(1 * ms)).requests) seen.insert(q.input_tokens);
    CHECK(seen == std::set<std::int64_t>{3, 4, 5});
}

TEST_CASE("a simulation beyond its work budget is an error naming the user's field, before it runs") {
    workload_spec w;
    w.users = 1000;
    w.warmup_requests = 1000;
    w.requests = 4000;
    // (4000 + 1000) requests x (500 + 1) steps, by hand.
    CHECK(simulation_work(w, 500) == doctest::Approx(2'505'000.0));
    CHECK_NOTHROW(check_simulation_budget(w, 500, "/inference/concurrency", "1000"));
    // 10 M users (the reported hang: minutes and 9 GB): 50 M requests x 501 = 2.5e10 request-steps.
    w.users = 10'000'000;
    w.warmup_requests = w.users;
    w.requests = 4 * w.users;
    try {
        check_simulation_budget(w, 500, "/inference/concurrency", "10000000");
        FAIL("no error");
    } catch (const config_error& e) {
        CHECK(e.field() == "/inference/concurrency");
        CHECK(e.problem().find("2.5e+10 request-steps") != std::string::npos);
    }
}

TEST_CASE("request counts near int64's limit are an error before their sum overflows") {
    workload_spec w = fixed_burst(std::numeric_limits<std::int64_t>::max() - 1, 100, 10);
    w.warmup_requests = std::numeric_limits<std::int64_t>::max() - 1;  // the sum overflowed (undefined behaviour)
    CHECK_THROWS_WITH_AS(simulate(w, scheduler_spec{}, constant(1 * units::ms)), doctest::Contains("too many requests"),
                         config_error);
    w = fixed_burst((1LL << 31) - 10, 100, 10);
    w.warmup_requests = 10;  // 2^31 - 10 + 10 = 2^31: one too many
    CHECK_THROWS_WITH_AS(simulate(w, scheduler_spec{}, constant(1 * units::ms)), doctest::Contains("at most 2^31 - 1"),
                         config_error);
}

namespace {

void require_same_summary(const latency_summary& a, const latency_summary& b) {
    CHECK(a.count == b.count);
    CHECK(a.mean.si() == b.mean.si());
    CHECK(a.p50.si() == b.p50.si());
    CHECK(a.p90.si() == b.p90.si());
    CHECK(a.p99.si() == b.p99.si());
    CHECK(a.max.si() == b.max.si());
}

// Every number of two results, compared exactly (==, not within a tolerance).
void require_identical(const sim_result& a, const sim_result& b) {
    require_same_summary(a.ttft, b.ttft);
    require_same_summary(a.tpot, b.tpot);
    require_same_summary(a.e2e, b.e2e);
    require_same_summary(a.itl, b.itl);
    CHECK(a.completed == b.completed);
    CHECK(a.steps == b.steps);
    CHECK(a.preemptions == b.preemptions);
    CHECK(a.max_in_flight == b.max_in_flight);
    CHECK(a.makespan.si() == b.makespan.si());
    CHECK(a.busy_fraction == b.busy_fraction);
    CHECK(a.kv_occupancy_mean == b.kv_occupancy_mean);
    CHECK(a.kv_occupancy_max == b.kv_occupancy_max);
    CHECK(a.prefill_busy_fraction == b.prefill_busy_fraction);
    CHECK(a.decode_busy_fraction == b.decode_busy_fraction);
    REQUIRE(a.requests.size() == b.requests.size());
    std::size_t differing = 0;
    for (std::size_t i = 0; i < a.requests.size(); ++i) {
        const request_record &x = a.requests[i], &y = b.requests[i];
        differing += x.first_token.si() != y.first_token.si() || x.finish.si() != y.finish.si() ||
                     x.arrival.si() != y.arrival.si() || x.replica != y.replica || x.preemptions != y.preemptions;
    }
    CHECK(differing == 0);
}

// The simulator advances runs of identical decode steps without scheduling each request; with that turned off it
// schedules every step one by one, the plain definition. Both must give the same result, bit for bit.
// `share`: the least share of the steps taken inside runs (else this would compare the plain path with itself). A
// run stops at the next event: a queue or preemptions, or other replicas' steps, leave few.
void require_runs_match_step_by_step(const workload_spec& w, const scheduler_spec& s, const step_time_fn& f, double share) {
    std::int64_t calls = 0;
    const step_time_fn counted = [&](const batch_step& b) { return ++calls, f(b); };
    detail::sim::simulator runs(w, s, counted), plain(w, s, f);
    const sim_result fast = runs.run();
    CHECK(calls == fast.steps);  // once a step, runs or not
    CHECK(static_cast<double>(runs.run_steps()) > share * static_cast<double>(fast.steps));
    plain.step_by_step();
    require_identical(fast, plain.run());
    CHECK(plain.run_steps() == 0);
}

}  // namespace

TEST_CASE("decode runs give the step-by-step result bit for bit: open and closed loops, preemption, replicas, prefix cache") {
    scheduler_spec roomy;
    roomy.kv_capacity_tokens = 400'000;
    SUBCASE("Poisson below saturation") { require_runs_match_step_by_step(lognormal_poisson(8, 3000, 1), roomy, affine, 0.5); }
    SUBCASE("Poisson overloaded, a small cache: preemptions") {
        scheduler_spec tight;
        tight.kv_capacity_tokens = 12'000;
        const workload_spec w = lognormal_poisson(60, 2000, 2);
        CHECK(simulate(w, tight, affine).preemptions > 0);
        require_runs_match_step_by_step(w, tight, affine, 0.01);
    }
    SUBCASE("closed loop, no think time, the default turnaround, warm-up requests") {
        workload_spec w;
        w.arrival = arrival::closed_loop;
        w.users = 50;
        w.turnaround = default_turnaround_s * s;
        w.requests = 400, w.warmup_requests = 50;
        w.input = length_dist::fixed(2000), w.output = length_dist::fixed(500);
        require_runs_match_step_by_step(w, roomy, affine, 0.5);
    }
    SUBCASE("closed loop with think time over three replicas, a shared prefix and cache hits, reserved output") {
        workload_spec w;
        w.arrival = arrival::closed_loop;
        w.users = 120;
        w.think_time = 2 * s;
        w.requests = 1500;
        w.input = length_dist::lognormal(800, 0.7, 6000), w.output = length_dist::lognormal(200, 0.9, 2000);
        w.prefix_cache.hit_rate = 0.4;
        w.prefix_cache.shared_prefix_tokens = 300;
        w.seed = 7;
        scheduler_spec three = roomy;
        three.replicas = 3;
        three.kv_block_tokens = 32;
        require_runs_match_step_by_step(w, three, affine, 0.02);
        three.reserve_output = true;
        require_runs_match_step_by_step(w, three, affine, 0.02);
    }
    SUBCASE("a step time that does not grow with the context (every run ends on an event or a finish)") {
        require_runs_match_step_by_step(lognormal_poisson(30, 1000, 3), roomy, constant(10 * ms), 0.1);
    }
}

TEST_CASE("decode runs in a disaggregated decode pool give the step-by-step result bit for bit") {
    disaggregated_scheduler d;
    d.prefill.replicas = 2;
    d.decode.replicas = 1;
    d.decode.kv_capacity_tokens = 60'000;
    d.kv_transfer = [](std::int64_t tokens) { return 1 * ms + tokens * 0.001 * ms; };
    const workload_spec w = lognormal_poisson(20, 1500, 4);
    const step_time_fn f = affine;  // the simulator keeps a reference to it
    detail::sim::simulator runs(w, d, f, f), plain(w, d, f, f);
    const sim_result fast = runs.run();
    CHECK(runs.run_steps() > 0);
    plain.step_by_step();
    require_identical(fast, plain.run());
}

TEST_CASE("simulations on a thread reuse its kept buffers without carrying state over: interleaved and nested runs") {
    scheduler_spec sc;
    sc.max_num_seqs = 32, sc.max_batched_tokens = 1024, sc.kv_capacity_tokens = 20000, sc.replicas = 2;
    const sim_result first = simulate(lognormal_poisson(30, 2000, 42), sc, affine);
    const sim_result other = simulate(lognormal_poisson(60, 500, 7), sc, affine);  // a smaller one in the kept buffers
    require_identical(first, simulate(lognormal_poisson(30, 2000, 42), sc, affine));
    // A step function that simulates in turn: the outer run holds the buffers, so the inner ones allocate their own.
    int nested = 0;
    const step_time_fn simulating = [&](const batch_step& b) {
        if (nested < 3) {
            ++nested;
            require_identical(other, simulate(lognormal_poisson(60, 500, 7), sc, affine));
        }
        return affine(b);
    };
    require_identical(first, simulate(lognormal_poisson(30, 2000, 42), sc, simulating));
    CHECK(nested == 3);
    // A simulation stopped by its step function's error leaves nothing behind for the next one.
    int calls = 0;
    const step_time_fn failing = [&](const batch_step& b) {
        if (++calls == 500) throw std::runtime_error("step function failed");
        return affine(b);
    };
    CHECK_THROWS_AS(simulate(lognormal_poisson(30, 2000, 42), sc, failing), std::runtime_error);
    require_identical(first, simulate(lognormal_poisson(30, 2000, 42), sc, affine));
}
