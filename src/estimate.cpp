#include "capplan/estimate.hpp"

#include <algorithm>
#include <array>

#include "capplan/analysis/checkpoint.hpp"
#include "capplan/analysis/cost.hpp"
#include "capplan/analysis/cold_start.hpp"
#include "capplan/analysis/data_pipeline.hpp"
#include "capplan/analysis/disaggregation.hpp"
#include "capplan/analysis/flops.hpp"
#include "capplan/analysis/inference_memory.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/engine_scheduler.hpp"
#include "capplan/analysis/serving_sim.hpp"
#include "capplan/analysis/training_memory.hpp"
#include "capplan/analysis/training_perf.hpp"
#include "capplan/spec/engine_profile.hpp"
#include "capplan/analysis/sharding.hpp"

#include "capplan/units_parse.hpp"

namespace capplan {

namespace {

std::string tokens_text(std::int64_t n) { return std::to_string(n) + (n == 1 ? " token" : " tokens"); }

// Fills memory.* and inference.{batch, max_batch, max_context_tokens, smallest_tp}; when the plan
// does not fit, says which component is largest, by how much it is over, and what would fit.
void estimate_inference_memory(const scenario& s, const inference_setup& setup, estimate_result& r, bool limits) {
    const inference_spec& inf = *s.inference;
    const model_spec& m = s.model;
    if (!s.system.accelerator.usable_memory()) {
        r.notes.push_back("memory: the catalog does not know " + s.system.accelerator.name +
                          "'s memory capacity, so fits is not computed");
        return;
    }
    const std::int64_t context = inf.input_tokens + inf.output_tokens;
    if (m.max_position > 0 && context > m.max_position)
        r.warnings.push_back("context " + tokens_text(context) + " (input + output) exceeds " + m.name +
                             "'s max_position_embeddings of " + std::to_string(m.max_position) +
                             "; quality beyond it is not guaranteed");
    inference_result out;
    out.context_tokens = context;
    // Replicas (dp) share the requests; each replica must hold its share at full length.
    const std::int64_t dp = s.parallelism.dp;
    // The most requests that fit also decide whether a simulation runs (estimate_inference_speed).
    std::optional<std::int64_t> max_per_replica;
    if (limits || inf.batch_max || inf.concurrency || inf.workload) max_per_replica = max_concurrency(setup, context);
    // The memory model's batch: every user with a request in flight holds a full-length cache.
    const std::int64_t batch = inf.batch_max ? std::max<std::int64_t>(1, *max_per_replica) * dp
                                             : inf.batch.value_or(inf.concurrency.value_or(1));
    const std::int64_t per_replica = (batch + dp - 1) / dp;
    out.batch = batch;

    const inference_memory b = inference_budget(setup, per_replica, context);
    if (limits || !b.fits) {  // the limits a plan that does not fit is told of
        if (!max_per_replica) max_per_replica = max_concurrency(setup, context);
        out.max_context_tokens = max_context(setup, per_replica);
        std::vector<int> tps;
        for (int tp = 1; tp <= s.system.per_node; tp *= 2) tps.push_back(tp);
        if (const auto tp = smallest_fitting_tp(setup, per_replica, context, tps)) out.smallest_tp = *tp;
    }
    if (max_per_replica) out.max_batch = *max_per_replica * dp;
    r.memory.per_device = b.per_device;
    r.memory.fits = b.fits;
    r.memory.weights = b.weights;
    r.memory.kv_cache = b.kv_cache;
    r.memory.kv_cache_per_token = b.kv_cache_per_token;
    if (inf.kv_offload) r.memory.kv_offloaded = b.kv_offloaded;
    r.memory.activations = b.activations;
    r.memory.logits = b.logits;
    r.memory.overhead = b.overhead;
    r.memory.usable = b.usable;
    if (s.parallelism.pp > 1) r.memory.stage = b.stage;
    r.inference = out;
    r.notes.push_back("memory: " + std::to_string(per_replica) + " resident requests per replica of " +
                      tokens_text(context) + " each (input + output), KV cache in " + s.precision.kv_cache.name +
                      ", paged in " + std::to_string(setup.block_tokens) + "-token blocks; usable = " +
                      format_number(setup.memory_utilization) + " x capacity");
    if (b.fits) return;

    r.feasible = false;
    const std::pair<const char*, data_size> parts[] = {
        {"weights", b.weights}, {"KV cache", b.kv_cache}, {"activations", b.activations},
        {"logits", b.logits},   {"runtime reservation", b.overhead}};
    const auto largest = *std::max_element(std::begin(parts), std::end(parts),
                                           [](const auto& a, const auto& c) { return a.second < c.second; });
    std::string reason = std::to_string(per_replica) + (per_replica == 1 ? " request of " : " requests of ") +
                         tokens_text(context) + " need " +
                         format(b.per_device) + " per device, " + format(b.per_device - b.usable) + " more than the " +
                         format(b.usable) + " usable (" + format_number(setup.memory_utilization) + " x " +
                         format(b.capacity) + "); the largest part is the " + largest.first + " (" +
                         format(largest.second) + ")";
    std::vector<std::string> fixes;
    if (*out.max_batch > 0) fixes.push_back("at most " + std::to_string(*out.max_batch) + " requests of this length");
    if (*out.max_context_tokens > 0)
        fixes.push_back("at most " + tokens_text(*out.max_context_tokens) + " per request at this concurrency");
    if (out.smallest_tp && *out.smallest_tp > s.parallelism.tp) fixes.push_back("tp = " + std::to_string(*out.smallest_tp));
    if (s.precision.kv_cache.bytes_per_element() > 1.0) {
        inference_setup fp8 = setup;
        fp8.precision.kv_cache = find_format("fp8");
        if (inference_budget(fp8, per_replica, context).fits) fixes.push_back("an fp8 KV cache");
    }
    if (!fixes.empty()) {
        reason += "; it would fit with ";
        for (std::size_t i = 0; i < fixes.size(); ++i) reason += (i ? (i + 1 == fixes.size() ? " or " : ", ") : "") + fixes[i];
    }
    r.reasons.push_back(reason);
}

// The users or arrivals the serving simulation runs for a scenario's inference workload.
workload_spec serving_workload(const inference_spec& inf, std::int64_t replicas) {
    const workload_input wi = inf.workload.value_or(workload_input{});
    workload_spec w;
    w.arrival = wi.arrival == "poisson"         ? workload_spec::arrival_kind::poisson
                : wi.arrival == "constant_rate" ? workload_spec::arrival_kind::constant_rate
                : wi.arrival == "trace"         ? workload_spec::arrival_kind::trace
                                                : workload_spec::arrival_kind::closed_loop;
    w.users = inf.concurrency.value_or(1);
    w.rate_per_s = wi.rate_per_s;
    w.think_time = wi.think_time;
    w.turnaround = wi.turnaround.value_or(default_turnaround_s * units::s);
    auto dist = [](const length_spec& l, std::int64_t tokens) {
        if (l.kind == "uniform") return length_dist::uniform(l.min, l.max);
        if (l.kind == "lognormal")
            return l.max > 0 ? length_dist::lognormal(static_cast<double>(tokens), l.sigma, l.max)
                             : length_dist::lognormal(static_cast<double>(tokens), l.sigma);
        if (l.kind == "trace") return length_dist::from_trace();
        return length_dist::fixed(tokens);
    };
    w.input = dist(wi.input, inf.input_tokens);
    w.output = dist(wi.output, inf.output_tokens);
    for (const auto& t : wi.trace) w.trace.push_back({t.input_tokens, t.output_tokens, t.arrival});
    // Closed loop: the first wave (every user at once) is left out unless the workload says otherwise
    // (benchmark clients such as vLLM's benchmark_serving count it: warmup_requests 0).
    w.warmup_requests = wi.warmup_requests.value_or(w.arrival == workload_spec::arrival_kind::closed_loop ? w.users : 0);
    w.requests = wi.requests > 0 ? wi.requests : std::max<std::int64_t>(200, 4 * w.users);
    w.seed = wi.seed;
    if (inf.prefix_cache) w.prefix_cache = *inf.prefix_cache;
    if (wi.requests > 0)
        check_simulation_budget(w, inf.output_tokens, "/inference/workload/requests", std::to_string(wi.requests), replicas);
    else
        check_simulation_budget(w, inf.output_tokens, "/inference/concurrency", std::to_string(w.users), replicas);
    return w;
}

// Runs `simulation`; an error about the simulated engine's limits names the user's key that sets them.
template <class F>
sim_result simulate_for_user(const inference_spec& inf, F&& simulation) {
    try {
        return simulation();
    } catch (const config_error& e) {
        const std::string& f = e.field();
        const std::string lengths = inf.workload ? "/inference/workload/input" : "/inference/input_tokens";
        const std::string user = f == "/scheduler/max_batched_tokens" ? "/inference/prefill_chunk_tokens"
                                 : f == "/scheduler/kv_capacity_tokens" ? lengths
                                 : f == "/scheduler/max_num_seqs"       ? "/inference/max_num_seqs"
                                 : f == "/scheduler/kv_block_tokens"    ? "/inference/kv_block_tokens"
                                                                        : f;
        if (user == f) throw;
        throw config_error(user, e.value(), "the simulated engine: " + e.problem(), e.allowed());
    }
}

// The simulation's latencies (medians, means, percentiles) and load figures into the result.
void put_simulation(const sim_result& sim, inference_result& out) {
    out.method = "simulation";
    out.prefill_steps.reset();  // the static batch's; the simulation schedules its own
    out.ttft_s = sim.ttft.p50.si();
    out.ttft_p90_s = sim.ttft.p90.si();
    out.ttft_p99_s = sim.ttft.p99.si();
    out.tpot_s = sim.tpot.p50.si();
    out.tpot_p90_s = sim.tpot.p90.si();
    out.tpot_p99_s = sim.tpot.p99.si();
    out.e2e_latency_s = sim.e2e.p50.si();
    out.e2e_p99_s = sim.e2e.p99.si();
    out.ttft_mean_s = sim.ttft.mean.si();
    out.tpot_mean_s = sim.tpot.mean.si();
    out.e2e_mean_s = sim.e2e.mean.si();
    if (sim.itl.count > 0) {
        out.itl_s = sim.itl.p50.si();
        out.itl_mean_s = sim.itl.mean.si();
        out.itl_p90_s = sim.itl.p90.si();
        out.itl_p99_s = sim.itl.p99.si();
    }
    out.throughput_tokens_per_s = sim.output_tokens_per_s;
    out.busy_fraction = sim.busy_fraction;
    out.kv_occupancy_mean = sim.kv_occupancy_mean;
    out.preemptions = sim.preemptions;
    out.simulated_requests = sim.measured;
}

// The engine a scenario's replicas run: its scheduler limits, KV capacity and speculative decoding.
scheduler_spec serving_scheduler(const scenario& s, const inference_setup& engine, std::int64_t request_tokens) {
    scheduler_spec sch = engine_scheduler(engine, request_tokens, s.parallelism.dp);
    if (s.inference->speculative) sch.draft_tokens = s.inference->speculative->tokens, sch.acceptance = s.inference->speculative->acceptance;
    return sch;
}

// Decode steps per generated token with and without the speculative setup `spec`, at `batch` requests.
double speculative_speedup(const perf_setup& spec, std::int64_t batch, std::int64_t context) {
    perf_setup plain = spec;
    plain.drafter.reset();
    plain.draft_tokens = 0;
    plain.tokens_per_step = 1.0;
    batch_step st;
    st.decode_requests = batch;
    st.context_tokens = batch * context;
    const duration without = step_time(plain, st);
    st.decode_positions = 1 + spec.draft_tokens;
    return without / (step_time(spec, st) / spec.tokens_per_step);
}

// inference.speculative.*: tokens per step, the speed-up at the batch, and the batch where it stops paying.
void note_speculative(const scenario& s, const perf_setup& setup, const inference_setup& engine, std::int64_t batch,
                      inference_result& out, estimate_result& r) {
    const speculative_spec& sp = *s.inference->speculative;
    const std::int64_t context = s.inference->input_tokens + s.inference->output_tokens / 2;
    out.speculative_tokens_per_step = setup.tokens_per_step;
    if (s.inference->output_tokens <= 1) {  // the first token comes from the prefill: nothing to draft
        out.speculative_speedup = 1.0;
        r.notes.push_back("speculative decoding: one-token answers have no decode steps, so it changes nothing here");
        return;
    }
    out.speculative_speedup = speculative_speedup(setup, batch, context);
    // The smallest batch (up to the engine's sequence limit: max_num_seqs, on each attention-DP rank) at
    // which a token costs more with it than without: the verify step turns compute-bound while the
    // drafter's work keeps growing.
    const std::int64_t limit = engine.max_num_seqs * s.parallelism.attention_ranks();
    std::int64_t lo = 0, hi = 1;
    while (hi <= limit && speculative_speedup(setup, hi, context) >= 1.0) lo = hi, hi *= 2;
    if (hi <= limit) {
        while (hi - lo > 1) {
            const std::int64_t mid = lo + (hi - lo) / 2;
            (speculative_speedup(setup, mid, context) >= 1.0 ? lo : hi) = mid;
        }
        out.speculative_breakeven_batch = hi;
    }
    std::string text = "speculative decoding (" + sp.method + ", " + std::to_string(sp.tokens) + " drafted tokens, acceptance " +
                       format_number(sp.acceptance) + "): " + format_number(setup.tokens_per_step) +
                       " tokens per target step ((1 - a^(k+1)) / (1 - a), Leviathan et al. 2023); each decode step verifies " +
                       std::to_string(1 + sp.tokens) + " positions per request" +
                       (sp.draft_model ? " and runs the drafter (" + sp.draft_model->name + ") " + std::to_string(sp.tokens) + " times"
                                       : std::string(" (n-gram lookup: no drafter on the GPU)")) +
                       "; TPOT " + format_number(*out.speculative_speedup) + "x faster than without it at batch " +
                       std::to_string(batch);
    text += out.speculative_breakeven_batch
                ? "; from batch " + std::to_string(*out.speculative_breakeven_batch) + " it is slower than plain decoding"
                : "; it still pays at the engine's " + std::to_string(limit) + "-sequence limit";
    r.notes.push_back(text);
}

// Where the offloaded cache lives, how fast it comes back, and what a decode step pays for it.
void note_kv_offload(const scenario& s, estimate_result& r, duration reload) {
    const kv_offload_spec& k = *s.inference->kv_offload;
    std::string text = "kv offload: " + (k.tier == "host" ? std::string("host memory") : k.tier) + ", " + format(k.capacity) +
                       " per node; blocks come back at " + format(k.reload) + " per device (" + k.how + ")";
    if (r.memory.kv_offloaded && r.memory.kv_offloaded->si() > 0)
        text += "; at this load " + format(*r.memory.kv_offloaded) + " of each device's " + format(*r.memory.kv_cache) +
                " cache lives there";
    text += reload.si() > 0 ? "; a decode step reloads the offloaded tokens it attends in " + format(reload) +
                                  " (prefetched under its kernels: the slower sets the step)"
                            : "; the decode step's cache fits GPU memory: nothing to reload";
    if (s.inference->prefix_cache) text += "; prefix-cache hits beyond the shared prefix are on the tier (see the prefix cache note)";
    r.notes.push_back(text);
}

// The prefix cache's effect: tokens computed per prompt, and the shared prefix stored once.
void note_prefix_cache(const scenario& s, const inference_setup& engine, const prefill_plan& plan, estimate_result& r) {
    const std::int64_t cached = plan.cached_tokens;
    const prefix_cache_spec& pc = *s.inference->prefix_cache;
    std::string text = "prefix cache: " + std::to_string(cached) + " of each prompt's " +
                       tokens_text(s.inference->input_tokens) + " served from the cache (hit rate " +
                       format_number(pc.hit_rate) + ", shared prefix " + tokens_text(pc.shared_prefix_tokens) +
                       "); prefill computes the other " + std::to_string(s.inference->input_tokens - cached) +
                       " and attends to all of them";
    if (s.inference->kv_offload && plan.reload_tokens > 0)
        text += "; with KV offload, " + std::to_string(plan.reload_tokens) + " of the hits come back from the tier over the "
                "host link (sooner than recomputing them)";
    else if (s.inference->kv_offload && pc.hit_rate > 0.0)
        text += "; with KV offload the hits beyond the shared prefix sit on the tier, and recomputing them is sooner "
                "than reloading them";
    if (engine.shared_prefix_tokens > 0)
        text += "; the shared prefix's " + std::to_string(engine.shared_prefix_tokens / engine.block_tokens) +
                " whole blocks (" + tokens_text(engine.shared_prefix_tokens) + ") are stored once per device";
    if (s.model.linear_layer_count() > 0)
        text += "; the " + std::to_string(s.model.linear_layer_count()) +
                " linear-attention layers resume from their state at the cached prefix's end, which assumes the engine "
                "keeps such states for cached prefixes (hybrid prefix caching; engines without it recompute the prompt); "
                "the saved states' memory is not counted";
    r.notes.push_back(text);
}

// Fills inference.{ttft_s, tpot_s, e2e_latency_s, throughput_tokens_per_s}, the decode step's chain
// (GPU memory, compute, scale-up network, engine overhead) and its bottleneck.
// explain: the notes on the engine and the speed model (the figures are the same without them).
void estimate_inference_speed(const scenario& s, const inference_setup& engine, estimate_result& r, bool explain,
                              bool roofline_ops) {
    const inference_spec& inf = *s.inference;
    perf_setup setup;
    try {
        setup = perf_setup::from(s, explain);
    } catch (const config_error& e) {
        r.notes.push_back("speed not computed: " + std::string(e.what()));
        return;
    }
    const std::int64_t dp = s.parallelism.dp;
    const std::int64_t batch = r.inference && r.inference->batch ? *r.inference->batch
                                                                 : inf.batch.value_or(inf.concurrency.value_or(1));
    const std::int64_t per_replica = std::max<std::int64_t>(1, (batch + dp - 1) / dp);
    apply_kv_offload(setup, s, engine);
    const std::optional<prefix_cache_spec> prefix = offload_aware_prefix(setup, inf);
    const prefill_plan plan = static_prefill_plan(engine, prefix, inf.input_tokens);
    const latency_estimate e = estimate_latency(setup, inf.input_tokens, inf.output_tokens, per_replica, plan);
    inference_result& out = r.inference ? *r.inference : r.inference.emplace();
    out.method = "roofline";
    out.engine = inf.engine;
    out.prefill_steps = e.prefill_steps;
    if (inf.prefix_cache) {
        out.prefix_cached_tokens = plan.cached_tokens;
        out.prefix_computed_tokens = inf.input_tokens - plan.cached_tokens;
        note_prefix_cache(s, engine, plan, r);
    }
    if (inf.speculative) note_speculative(s, setup, engine, per_replica, out, r);
    const engine_profile& profile = find_engine_profile(inf.engine, "/inference/engine");
    if (explain)
        r.notes.push_back("engine: profile '" + profile.name + "', " + profile.engine + " defaults (" + profile.source +
                          "); a scenario's own keys override them");
    if (explain && setup.allreduce_grid.engine_bandwidth && inf.custom_allreduce &&
        profile.allreduce.supports(setup.allreduce_grid.group.gpus))
        r.notes.push_back("tensor-parallel all-reduces below " + format(profile.allreduce.max_size, true) + ": " +
                          profile.allreduce.kernel + " (docs/formulas.md section 11b; " + profile.allreduce.source +
                          "); larger ones, and all with custom_allreduce false, NCCL's");
    out.ttft_s = e.ttft.si();
    out.tpot_s = e.tpot.si();
    out.e2e_latency_s = e.e2e.si();
    out.throughput_tokens_per_s = e.output_tokens_per_s * static_cast<double>(dp);
    if ((inf.concurrency || inf.workload) && out.max_batch.value_or(0) > 0) {
        // Users with a request in flight: a closed loop (each sends the next request when the last
        // answer ends), or the scenario's open-loop workload, through a continuous-batching engine
        // per replica (serving_sim.hpp). When the cache cannot hold them all, the engine queues and
        // preempts: the plan is reported as not fitting, and the simulation shows what users see.
        workload_spec w = serving_workload(inf, dp);
        if (prefix) w.prefix_cache = *prefix;  // with offload: hits reloaded, or recomputed
        const scheduler_spec sch = serving_scheduler(s, engine, inf.input_tokens + inf.output_tokens);
        const sim_result sim =
            simulate_for_user(inf, [&] {
                step_timer timer(setup);
                return simulate(w, sch, [&](const batch_step& st) { return timer(st); });
            });
        put_simulation(sim, out);
    }
    out.throughput_tokens_per_s_per_device = *out.throughput_tokens_per_s / static_cast<double>(s.system.count);
    out.tokens_per_s_per_user = 1.0 / *out.tpot_s;
    roofline_summary& roof = r.roofline.emplace();
    roof.peak_flops_per_s = setup.peak.si();
    roof.memory_bytes_per_s = setup.memory_bandwidth.si();
    roof.gemm_efficiency = setup.efficiency.gemm;
    roof.memory_efficiency = setup.efficiency.memory;
    if (roofline_ops)
        for (const auto* phase : {&e.prefill, &e.decode})
            for (const auto& op : phase->ops)
                roof.ops.push_back({phase == &e.prefill ? "prefill" : "decode", std::string(op.op), op.flops.si(),
                                    op.bytes.si(), op.time.si(), op.compute_bound});
    duration memory, compute;
    for (const auto& op : e.decode.ops) (op.compute_bound ? compute : memory) += op.time;
    const duration step = e.decode.total();
    auto stage = [&](const char* name, duration t) {
        r.chain.push_back({name, t, step.si() > 0 ? t / step : 0.0});
    };
    // Communication that leaves a node (a group larger than a node's accelerators) is scale-out.
    const parallelism_spec& par = s.parallelism;
    const int node = s.system.per_node;
    const duration scale_out = (par.tp > node ? e.decode.tp_allreduce : duration{}) +
                               (par.ep > node ? e.decode.ep_alltoall : duration{}) +
                               (pipeline_spans_nodes(s) ? e.decode.pipeline_send : duration{});
    stage("gpu memory", memory);
    stage("compute", compute);
    stage("scale-up network", e.decode.communication - scale_out);
    stage("scale-out network", scale_out);
    stage("engine overhead", e.decode.overhead);
    if (inf.kv_offload) {
        out.kv_reload_bytes_per_s = inf.kv_offload->reload.si();
        out.kv_reload_per_step_s = e.decode.kv_reload.si();
        stage("host link (kv reload)", e.decode.kv_reload);
        note_kv_offload(s, r, e.decode.kv_reload);
    }
    const auto worst = std::max_element(r.chain.begin(), r.chain.end(),
                                        [](const auto& a, const auto& b) { return a.time < b.time; });
    r.bottleneck = worst->stage;
    if (explain)
        r.notes.push_back("speed: roofline per operator with " + setup.efficiency.source + "; " +
                          (out.method == "simulation"
                               ? "latencies are medians (means, p90 and p99 beside them) of a seeded simulation (" +
                                     (inf.workload ? inf.workload->arrival : std::string("closed_loop")) + ", " +
                                     std::to_string(out.simulated_requests.value_or(0)) +
                                     " requests) on a continuous-batching engine per replica"
                               : "a static batch: TTFT is the prefill of the batch's " + std::to_string(per_replica) +
                                     (per_replica == 1 ? " prompt" : " prompts") + " in " + std::to_string(e.prefill_steps) +
                                     (e.prefill_steps == 1 ? " step" : " steps") + " of at most " +
                                     tokens_text(plan.step_tokens) + " without queueing, TPOT one decode step at " +
                                     std::to_string(per_replica) + " requests of mid-answer context") +
                          "; chain = one decode step at the batch");
    // Tensor-parallel experts: narrow slices run slower in today's grouped kernels than this model says.
    // Below 1,024: TensorRT-LLM 0.21 (issue #5929) runs DeepSeek-R1's 1,024-wide slices (expert TP 2) 3%
    // slower per prompt token than whole experts, its 256-wide ones (TP 8) 54% slower.
    const model_spec& m = s.model;
    if (m.is_moe() && s.parallelism.etp > 1 && m.moe.expert_intermediate / s.parallelism.etp < 1024)
        r.notes.push_back("speed: each routed expert is split " + std::to_string(s.parallelism.etp) + " ways into " +
                          std::to_string(m.moe.expert_intermediate / s.parallelism.etp) +
                          "-wide slices; published grouped kernels run such slices slower than modelled (TensorRT-LLM "
                          "0.21, DeepSeek-R1 on 8 H200s: 54% more prefill time per token than whole experts over ep 8; "
                          "docs/formulas.md section 14): prefer expert parallelism (parallelism.ep)");
}

// Start to first token: weights from the system's storage through host memory and the host link
// into each GPU, then engine initialisation (cold_start.hpp).
void estimate_cold_start(const scenario& s, const catalog& cat, estimate_result& r, bool explain) {
    if (!r.memory.weights) return;
    if (!s.system.storage) {
        r.notes.push_back("cold start not computed: the system names no storage tier (system.storage)");
        return;
    }
    cold_start_options o;
    o.page_cache_warm = s.cold_start.page_cache_warm;
    o.pinned = s.cold_start.pinned;
    o.gpudirect_storage = s.cold_start.gpudirect_storage;
    o.overlapped = s.cold_start.overlapped;
    o.connections = s.cold_start.connections;
    o.engine_init = s.cold_start.engine_init;
    o.explain = explain;
    const int devices = std::min(s.system.per_node, s.system.count);
    const cold_start_result c = cold_start_time(*r.memory.weights, devices, s.system, o, cat);
    cold_start_summary out;
    out.total = c.total;
    out.load = c.load;
    out.bottleneck = c.bottleneck;
    for (const auto& st : c.chain) out.chain.push_back({st.stage, st.time, st.utilization});
    r.cold_start = out;
    for (const auto& n : c.notes) r.notes.push_back("cold start: " + n);
}

// Fills training.* and the training chain (compute, scale-up and scale-out communication, bubble,
// optimizer) with its bottleneck.
void estimate_training_speed(const scenario& s, const weight_sharding& shards, estimate_result& r, bool explain,
                             bool data_reading) {
    training_performance tp;
    try {
        tp = estimate_training_performance(s, shards, explain);
    } catch (const config_error& e) {
        r.notes.push_back("training speed not computed: " + std::string(e.what()));
        return;
    }
    training_result out;
    out.step_time_s = tp.step.si();
    out.tokens_per_s = tp.tokens_per_s;
    out.mfu = tp.mfu;
    out.hfu = tp.hfu;
    out.model_tflops_per_device = tp.model_flops_per_device.in(units::TFLOP / units::s);
    out.micro_batches = tp.micro_batches;
    out.trainable_parameters = s.training->lora ? lora_model_parameters(s.model, *s.training->lora).total()
                                                : static_cast<double>(r.model.breakdown.total());
    for (const auto& term : tp.terms) out.breakdown.emplace_back(term.term, term.time.si(), term.exposed.si());
    const training_spec& t = *s.training;
    if (t.tokens) {
        out.time_to_train_s = *t.tokens / tp.tokens_per_s;
        out.gpu_hours = *out.time_to_train_s * s.system.count / units::hour.si();
        if (t.price_per_device_hour) out.cost = *out.gpu_hours * *t.price_per_device_hour;
    }
    if (s.system.storage && data_reading) {
        data_pipeline_options o;
        o.bytes_per_token = t.data_bytes_per_token;
        o.sample_size = t.data_sample_size;
        o.files_per_sample = t.data_files_per_sample;
        o.decode_samples_per_s_per_node = t.data_decode_samples_per_s_per_node;
        const data_pipeline_result d = data_pipeline(s.model, s.system, tp.tokens_per_s, t.seq_len, o);
        out.data_read_bytes_per_s = d.needed.si();
        out.data_supply_bytes_per_s = d.supplied.si();
        out.data_wait_fraction = d.wait_fraction;
        out.data_bottleneck = d.bottleneck;
    }
    r.training = out;
    std::array<duration, step_links> on;  // exposed time per step_link
    for (const auto& term : tp.terms) on[static_cast<std::size_t>(term.link)] += term.exposed;
    const duration step = tp.step;
    auto stage = [&](const char* name, step_link link) {
        const duration d = on[static_cast<std::size_t>(link)];
        r.chain.push_back({name, d, step.si() > 0 ? d / step : 0.0});
    };
    stage("compute", step_link::compute);
    stage("scale-up network", step_link::scale_up);
    stage("scale-out network", step_link::scale_out);
    stage("pipeline bubble", step_link::bubble);
    stage("optimizer (gpu memory)", step_link::optimizer);
    r.bottleneck = std::max_element(r.chain.begin(), r.chain.end(),
                                    [](const auto& a, const auto& b) { return a.time < b.time; })->stage;
    for (const auto& n : tp.notes) r.notes.push_back(n);
}

// Checkpoint size and save/restore time on the system's storage, the Young/Daly interval for the
// job's failure rate (Llama 3's, by default) and the expected goodput (checkpoint.hpp).
void estimate_checkpoints(const scenario& s, const catalog& cat, estimate_result& r, bool explain) {
    // The size does not depend on where the checkpoint goes (issue #20): always given.
    checkpoint_options how;
    how.fully_parallel_save = s.training->ckpt_fully_parallel_save;
    how.fully_parallel_load = s.training->ckpt_fully_parallel_load;
    how.explain = explain;
    const checkpoint_size size = checkpoint_bytes(s.model, r.model.breakdown, s.precision, *s.training, s.parallelism, how);
    for (const auto& n : size.notes) r.notes.push_back("checkpoint: " + n);
    const duration mtbf = system_mtbf(default_failure_model(), s.system.count, s.system.per_node);
    if (!s.system.storage) {
        checkpoint_summary c;
        c.io = false;
        c.size_bytes = size.total.si();
        c.mtbf_s = mtbf.si();
        c.failures_per_day = (24.0 * units::hour) / mtbf;
        r.checkpoint = c;
        r.notes.push_back("checkpoints: save and restore times, interval and goodput not computed: the system names no "
                          "storage tier (system.storage); the size is");
        return;
    }
    checkpoint_io_options io_options;
    io_options.explain = explain;
    const checkpoint_io io = checkpoint_time(size, s.system, s.training->async_checkpoint, io_options, cat);
    for (const auto& n : io.notes) r.notes.push_back("checkpoint: " + n);
    const duration restart = io.restore + (r.cold_start ? r.cold_start->total - r.cold_start->load : duration{});
    std::optional<duration> step;
    if (r.training) step = r.training->step_time_s * units::s;
    const goodput g = expected_goodput(io, restart, mtbf, std::nullopt, step);
    checkpoint_summary c;
    c.size_bytes = size.total.si();
    c.save_s = io.save.si();
    c.restore_s = io.restore.si();
    c.stall_s = io.stall.si();
    c.bottleneck = io.bottleneck;
    c.interval_s = g.interval.si();
    c.mtbf_s = mtbf.si();
    c.goodput = g.fraction;
    c.failures_per_day = g.failures_per_day;
    r.checkpoint = c;
    r.notes.push_back("checkpoints: failure rate from Llama 3 (arXiv:2407.21783 §3.3.4: 419 unexpected interruptions "
                      "in 54 days on 16,384 H100s); Young/Daly interval; restart = restore + engine initialisation");
}

// Fills memory.* for a training step; when it does not fit, says what is largest and which of
// the usual levers (ZeRO-3, full recompute, optimizer offload, more tp) would make it fit.
void estimate_training_memory_result(const scenario& s, const weight_sharding& shards, estimate_result& r, bool explain) {
    const training_spec& t = *s.training;
    const auto usable = s.system.accelerator.usable_memory();
    if (!usable) {
        r.notes.push_back("memory: the catalog does not know " + s.system.accelerator.name +
                          "'s memory capacity, so fits is not computed");
        return;
    }
    const data_size reserve = default_runtime_reserve(s.parallelism.tp * s.parallelism.pp * s.parallelism.dp).total();
    // explain: the notes; the alternatives tried for a plan that does not fit need only their totals.
    // The alternatives tried keep tp, pp and ep, and with them the weights' sharding.
    auto run = [&](const training_spec& spec, const parallelism_spec& par, bool explain) {
        training_memory_options o = memory_options_for(spec, &s.system.accelerator);
        o.explain = explain;
        return estimate_training_memory(s.model, shards, s.precision, par, spec, o);
    };
    const training_memory tm = run(t, s.parallelism, explain);
    const data_size total = tm.total() + reserve;
    r.memory.weights = tm.weights;
    r.memory.gradients = tm.gradients;
    r.memory.optimizer = tm.optimizer_states;
    r.memory.master_weights = tm.master_weights;
    r.memory.activations = tm.activations + tm.buffers;
    r.memory.logits = tm.logits;
    r.memory.overhead = reserve;
    r.memory.per_device = total;
    r.memory.usable = *usable;
    r.memory.fits = total <= *usable;
    if (tm.host_offload.si() > 0) r.memory.host_offload = tm.host_offload;
    if (s.parallelism.pp > 1) r.memory.stage = tm.stage;
    for (const auto& n : tm.notes) r.notes.push_back("training memory: " + n);
    if (*r.memory.fits) return;

    r.feasible = false;
    const std::pair<const char*, data_size> parts[] = {
        {"weights", tm.weights}, {"gradients", tm.gradients}, {"optimizer states", tm.optimizer_states},
        {"master weights", tm.master_weights}, {"activations", tm.activations + tm.buffers}, {"logits", tm.logits}};
    const auto largest = *std::max_element(std::begin(parts), std::end(parts),
                                           [](const auto& a, const auto& c) { return a.second < c.second; });
    std::string reason = "a training step needs " + format(total) + " per device, " + format(total - *usable) +
                         " more than the " + format(*usable) + " of one " + s.system.accelerator.name +
                         "; the largest part is the " + largest.first + " (" + format(largest.second) + ")";
    std::vector<std::string> fixes;
    auto fits_with = [&](const training_spec& spec, const parallelism_spec& par) {
        return run(spec, par, false).total() + reserve <= *usable;
    };
    if (t.zero < 3) {
        training_spec z = t;
        z.zero = 3;
        if (fits_with(z, s.parallelism)) fixes.push_back("ZeRO-3 / FSDP over the data-parallel group");
    }
    if (s.parallelism.tp > 1 && !s.parallelism.sequence_parallel) {
        parallelism_spec sp = s.parallelism;
        sp.sequence_parallel = true;
        if (fits_with(t, sp)) fixes.push_back("sequence parallelism (parallelism.sequence_parallel)");
    }
    if (t.recompute != recompute_kind::full) {
        training_spec f = t;
        f.recompute = recompute_kind::full;
        if (fits_with(f, s.parallelism)) fixes.push_back("full activation recomputation");
    }
    if (!t.offload_optimizer) {
        training_spec o = t;
        o.offload_optimizer = true;
        if (fits_with(o, s.parallelism)) fixes.push_back("optimizer states offloaded to host memory");
    }
    if (!fixes.empty()) {
        reason += "; it would fit with ";
        for (std::size_t i = 0; i < fixes.size(); ++i) reason += (i ? (i + 1 == fixes.size() ? " or " : ", ") : "") + fixes[i];
    }
    r.reasons.push_back(reason);
}

// Forward/step FLOPs for the workload (model FLOPs for MFU, hardware FLOPs for HFU kept apart).
void estimate_flops(const scenario& s, estimate_result& r) {
    flops_result f;
    if (s.inference) {
        const auto& inf = *s.inference;
        // Prefix-cache hits are attended to, not computed.
        const std::int64_t cached = inf.prefix_cache ? inf.prefix_cache->cached_tokens(inf.input_tokens) : 0;
        f.prefill = chunk_forward_flops(s.model, cached, inf.input_tokens - cached, logits_for::last_position).total();
        // A generated token in the middle of the answer: context = input + half the output.
        f.decode_token = token_forward_flops(s.model, inf.input_tokens + inf.output_tokens / 2).total();
    }
    if (s.training) {
        const auto& t = *s.training;
        const training_flops tf = training_step_flops(s.model, t.seq_len, t.recompute);
        f.model_step = tf.model * static_cast<double>(t.global_batch);
        f.hardware_step = tf.hardware * static_cast<double>(t.global_batch);
    }
    r.flops = f;
}

// The result's speed note, said for the whole deployment: the efficiencies (`source`) and what was run.
void speed_note(estimate_result& r, const std::string& source, const std::string& how) {
    const std::string text = "speed: roofline per operator with " + source + "; " + how;
    for (auto& n : r.notes)
        if (n.rfind("speed: ", 0) == 0) n = text;
}

// A pool of a disaggregated deployment as a static batch of `batch` requests (no simulation): its
// memory, layout problems and roofline speed. The prefill pool's requests end at their first token.
estimate_result estimate_pool(const scenario& s, const serving_pool& pool, std::int64_t batch, bool prefill,
                              const catalog& cat) {
    scenario p = pool_scenario(s, pool);
    p.inference->concurrency.reset();
    p.inference->workload.reset();
    p.inference->batch_max = false;
    p.inference->batch = batch;
    if (prefill) p.inference->output_tokens = 1, p.inference->speculative.reset();
    return estimate(p, cat);
}

// Disaggregated serving: the decode pool holds the users' caches (its memory and decode step are the
// result's); the prefill pool holds the prompts in flight: a static batch's all, or under concurrency
// one step's worth per replica. The simulation runs both pools.
estimate_result estimate_disaggregated(const scenario& s, const catalog& cat) {
    const inference_spec& inf = *s.inference;
    const disaggregation_spec& d = *inf.disaggregation;
    const std::int64_t users = inf.batch.value_or(inf.concurrency.value_or(1));
    const bool simulated = inf.concurrency || inf.workload;
    const std::int64_t per_step =
        std::max<std::int64_t>(1, inference_setup::from(pool_scenario(s, d.prefill)).step_tokens / inf.input_tokens);
    const std::int64_t prompts = simulated ? std::min(users, per_step * d.prefill.replicas()) : users;
    estimate_result r = estimate_pool(s, d.decode, users, false, cat);
    const estimate_result pre = estimate_pool(s, d.prefill, prompts, true, cat);
    for (const auto& why : pre.reasons) r.reasons.push_back("prefill pool: " + why);
    if (pre.feasible == false) r.feasible = false;  // unset: nothing against it
    // The deployment: both pools on the scenario's nodes (the layout shown is the decode pool's).
    r.system.count = d.prefill.count + d.decode.count;
    r.system.per_node = s.system.per_node;
    r.system.nodes = (r.system.count + s.system.per_node - 1) / s.system.per_node;
    if (!r.inference || !r.inference->ttft_s || !pre.inference || !pre.inference->ttft_s) {
        // A pool without speed: the plan cannot be costed as written; say which and why.
        for (const auto& [pool, res] : {std::pair<const char*, const estimate_result*>{"prefill pool: ", &pre}, {"decode pool: ", &r}})
            if (!res->inference || !res->inference->ttft_s) {
                r.feasible = false;
                std::string why = "its speed was not computed";
                for (const auto& n : res->notes)
                    if (n.rfind("speed not computed: ", 0) == 0) why = n;
                r.reasons.push_back(pool + why);
            }
        r.inference.reset();
        return r;
    }
    inference_result& out = *r.inference;
    const duration transfer = kv_transfer_time(s, inf.input_tokens);
    out.prefill_replicas = d.prefill.replicas();
    out.decode_replicas = d.decode.replicas();
    out.kv_transfer_s = transfer.si();
    if ((inf.concurrency || inf.workload) && out.max_batch.value_or(0) > 0) {
        const scenario ps = pool_scenario(s, d.prefill), ds = pool_scenario(s, d.decode);
        perf_setup prefill = perf_setup::from(ps), decode = perf_setup::from(ds);
        const inference_setup prefill_engine = inference_setup::from(ps), decode_engine = inference_setup::from(ds);
        apply_kv_offload(prefill, ps, prefill_engine);
        apply_kv_offload(decode, ds, decode_engine);
        disaggregated_scheduler sch{serving_scheduler(ps, prefill_engine, inf.input_tokens + 1),
                                    serving_scheduler(ds, decode_engine, inf.input_tokens + inf.output_tokens),
                                    [&](std::int64_t tokens) { return kv_transfer_time(s, tokens); }};
        sch.prefill.draft_tokens = 0;  // the prefill pool decodes nothing
        const workload_spec w = serving_workload(inf, d.prefill.replicas() + d.decode.replicas());
        const sim_result sim = simulate_for_user(inf, [&] {
            step_timer prefill_timer(prefill), decode_timer(decode);
            return simulate_disaggregated(w, sch, [&](const batch_step& st) { return prefill_timer(st); },
                                          [&](const batch_step& st) { return decode_timer(st); });
        });
        put_simulation(sim, out);
        out.prefill_utilization = sim.prefill_busy_fraction;
        out.decode_utilization = sim.decode_busy_fraction;
        speed_note(r, decode.efficiency.source,
                   "latencies are medians (means, p90 and p99 beside them) of a seeded simulation of both pools (" +
                       std::to_string(sim.measured) + " requests): prompts queue for a prefill replica, their caches "
                       "cross, then a decode replica admits and decodes them; chain = one decode step of the decode pool");
    } else {
        // A static batch: its prompts on the prefill pool, their caches across, then the decode pool, which
        // streams the first token. Batch after batch, the pools work at once and the slower one sets the
        // pace. A one-token answer ends at the prefill pool.
        const double prefill = *pre.inference->ttft_s;
        const bool crosses = inf.output_tokens > 1;
        out.ttft_s = prefill + (crosses ? transfer.si() : 0.0);
        out.e2e_latency_s = *out.ttft_s + static_cast<double>(inf.output_tokens - 1) * *out.tpot_s;
        const double decoding = static_cast<double>(inf.output_tokens - 1) * *out.tpot_s;
        out.throughput_tokens_per_s =
            static_cast<double>(users * inf.output_tokens) / std::max({prefill, decoding, crosses ? transfer.si() : 0.0});
        out.prefill_steps = pre.inference->prefill_steps;
        const scenario decode_pool = pool_scenario(s, d.decode);
        speed_note(r, perf_setup::from(decode_pool).efficiency.source,
                   "a static batch: TTFT is the prefill pool's prefill of its share of the " + std::to_string(users) +
                       " prompts (" + std::to_string(*out.prefill_steps) + " steps per replica) and the KV transfer, TPOT "
                       "one decode step of the decode pool at its share of them; throughput = batch x output / "
                       "max(prefill, transfer, (output - 1) x TPOT), the slowest stage setting the pace; chain = one "
                       "decode step of the decode pool");
    }
    out.throughput_tokens_per_s_per_device = *out.throughput_tokens_per_s / static_cast<double>(r.system.count);
    out.tokens_per_s_per_user = 1.0 / *out.tpot_s;
    const serving_pool* pools[] = {&d.prefill, &d.decode};
    std::string text = "disaggregated: ";
    for (const serving_pool* p : pools)
        text += std::string(p == &d.prefill ? "prefill" : "; decode") + " pool of " + std::to_string(p->count) + " " +
                (p->accelerator ? p->accelerator->name : s.system.accelerator.name) + " (" +
                std::to_string(p->replicas()) + " replicas of tp " + std::to_string(p->tp) + ")";
    text += "; each request's KV cache (" + tokens_text(inf.input_tokens) + ") takes " + format(transfer) + " to cross " +
            (d.kv_transfer ? "over " + d.kv_transfer->name
                           : pools_share_a_node(s) ? std::string("the node's scale-up links")
                                                                                   : std::string("the scale-out network")) +
            "; memory and the decode chain are the decode pool's";
    r.notes.push_back(text);
    r.chain.push_back({"kv transfer (once per request)", transfer, *out.e2e_latency_s > 0 ? transfer.si() / *out.e2e_latency_s : 0.0});
    return r;
}

// The range of each headline figure the validation bands cover (spec/uncertainty.hpp; docs/validation.md).
void add_ranges(const scenario& s, const uncertainty_bands& u, estimate_result& r) {
    const bool moe = s.model.is_moe();  // the model family's band where there is one
    const auto put = [&](const std::string& key, const std::optional<double>& v, const char* quantity, bool inverse) {
        const error_band* b = u.find(quantity, moe);
        if (!b || !v || !(*v > 0)) return;
        r.ranges[key] = inverse ? measured_range_inverse(*v, *b) : measured_range(*v, *b);
    };
    if (r.inference) {
        const inference_result& i = *r.inference;
        for (const auto& [key, v] : {std::pair{"ttft_s", i.ttft_s}, {"ttft_p99_s", i.ttft_p99_s}, {"ttft_mean_s", i.ttft_mean_s}})
            put(std::string("inference.") + key, v, "ttft", false);
        for (const auto& [key, v] : {std::pair{"tpot_s", i.tpot_s}, {"tpot_p99_s", i.tpot_p99_s}, {"tpot_mean_s", i.tpot_mean_s},
                                     {"itl_s", i.itl_s}})
            put(std::string("inference.") + key, v, "tpot", false);
        put("inference.e2e_latency_s", i.e2e_latency_s, "e2e", false);
        // A simulation below saturation serves the offered load: the saturated rows' band does not describe it.
        // Saturated = busy 95% of the time or more: capplan's own threshold (no source), an engine without idle left.
        constexpr double saturated = 0.95;
        if (i.method != "simulation")
            put("inference.throughput_tokens_per_s", i.throughput_tokens_per_s, "throughput_static", false);
        else if (i.busy_fraction && *i.busy_fraction >= saturated)
            put("inference.throughput_tokens_per_s", i.throughput_tokens_per_s, "throughput_saturated", false);
    }
    if (r.training) {
        const training_result& t = *r.training;
        // A fine-tune's step takes the LoRA / QLoRA rows' band, not pre-training's: their errors differ (docs/validation.md).
        const char* step = s.training && s.training->lora ? "lora_time" : "training_step";
        put("training.step_time_s", t.step_time_s, step, false);
        put("training.time_to_train_s", t.time_to_train_s, step, false);
        put("training.tokens_per_s", t.tokens_per_s, step, true);
        put("training.mfu", t.mfu, step, true);
        if (s.training && s.training->lora && r.memory.per_device)
            put("memory.per_device_bytes", r.memory.per_device->si(), "lora_memory", false);
    }
    if (r.checkpoint && r.checkpoint->io) {
        put("checkpoint.save_s", r.checkpoint->save_s, "checkpoint_save", false);
        put("checkpoint.restore_s", r.checkpoint->restore_s, "checkpoint_restore", false);
    }
}

// What the plan costs to own or rent, per hour and per unit of work (analysis/cost.hpp), when the scenario asks.
void estimate_cost(const scenario& s, estimate_result& r) {
    cost_result c = hourly_cost(*s.cost, r.system.count);
    const bool runs = r.feasible != false;
    if (r.inference && r.inference->throughput_tokens_per_s && *r.inference->throughput_tokens_per_s > 0 && runs)
        c.per_million_output_tokens =
            cost_of_work(c, *s.cost, million_tokens / *r.inference->throughput_tokens_per_s * units::s);
    if (r.training && r.training->tokens_per_s > 0 && runs) {
        c.per_billion_tokens = cost_of_work(c, *s.cost, billion_tokens / r.training->tokens_per_s * units::s);
        if (r.training->time_to_train_s) c.per_run = cost_of_work(c, *s.cost, *r.training->time_to_train_s * units::s);
    }
    if (!runs) c.notes.push_back("per token and per run: none, the plan cannot run (see its reasons)");
    if (s.inference && s.inference->disaggregation)
        for (const serving_pool* p : {&s.inference->disaggregation->prefill, &s.inference->disaggregation->decode})
            if (p->accelerator && p->accelerator->name != s.system.accelerator.name)
                c.notes.push_back("a pool of " + p->accelerator->name + " is priced as " + s.system.accelerator.name +
                                  " (the system's): give cost.system_price for the mix");
    if (s.cost->utilization < 1.0)
        c.notes.push_back("utilization " + format_number(s.cost->utilization) +
                          ": each unit of work pays for 1 / utilization of its hours (idle hours cost as busy ones)");
    r.cost = std::move(c);
}

estimate_result estimate_plan(const scenario& s, const catalog& cat, const estimate_parts& parts) {
    if (s.inference && s.inference->disaggregation) return estimate_disaggregated(s, cat);
    estimate_result r;
    r.catalog_version = cat.version();

    const model_spec& m = s.model;
    r.model.name = m.name;
    r.model.model_type = m.model_type;
    r.model.source = m.source;
    r.model.breakdown = count_parameters(m);
    r.model.parameters = r.model.breakdown.total();
    r.model.active_parameters = r.model.breakdown.active();

    const parallelism_spec& par = s.parallelism;
    r.system = {s.system.preset, s.system.accelerator.name, s.system.count, s.system.per_node, s.system.nodes(),
                s.precision.weights.name, s.precision.kv_cache.name, par.tp, par.pp, par.dp, par.cp, par.ep,
                par.attention_dp, std::nullopt, std::string()};
    r.system.storage_network = detail::node_storage_network(s.system, std::nullopt, detail::note_sink());
    if (r.system.storage_network) r.system.storage_network_over = s.system.storage_network ? "storage links" : "compute NICs";

    // Weights per device: the largest pipeline stage's share on one tensor/expert-parallel rank.
    const weight_sharding shards = shard_weights(m, par);
    const number_format* experts = s.precision.expert_weights ? &*s.precision.expert_weights : nullptr;
    r.memory.weights_total = weight_bytes(r.model.breakdown, s.precision.weights, experts);
    r.memory.weights = device_weight_bytes(shards.per_device(), s.precision.weights, experts);
    r.memory.capacity = s.system.accelerator.memory_capacity;
    r.memory.visible = s.system.accelerator.memory_visible;
    if (parts.notes)
        r.notes.push_back("weights: block matrices in " + s.precision.weights.name + " (" +
                          format_number(s.precision.weights.bytes_per_element()) +
                          " B/parameter incl. block scales); embeddings, LM head, norms and routers in 16-bit when quantized" +
                          (experts ? "; routed experts in " + experts->name + " (" + format_number(experts->bytes_per_element()) +
                                         " B/parameter" + (m.released_expert_format == experts->name ? ", as released" : "") + ")"
                                   : std::string()));
    if (s.inference && s.inference->speculative && s.inference->speculative->method == "draft") {
        // The draft model is split as the target is (one pipeline stage): it must divide the same way.
        const model_spec& d = *s.inference->speculative->draft_model;
        parallelism_spec p = s.parallelism;
        p.pp = 1;
        for (const auto& problem : shard_weights(d, p).problems) {
            r.feasible = false;
            r.reasons.push_back("draft model: " + problem);
        }
        const std::int64_t context = s.inference->input_tokens + s.inference->output_tokens;
        if (d.max_position > 0 && context > d.max_position)
            r.warnings.push_back("context " + tokens_text(context) + " exceeds the draft model " + d.name +
                                 "'s max_position_embeddings of " + std::to_string(d.max_position) +
                                 "; its drafts beyond it will rarely be accepted");
    }
    for (const auto& problem : shards.problems) {
        r.feasible = false;
        r.reasons.push_back(problem);
    }
    // Against what programs can allocate (the marketed figure only where the driver's is unknown).
    const std::optional<data_size> allocatable = s.system.accelerator.usable_memory();
    if (allocatable && *r.memory.weights > *allocatable) {
        r.feasible = false;
        r.reasons.push_back("weights alone need " + format(*r.memory.weights) + " per device, more than the " +
                            format(*allocatable) + " one " + s.system.accelerator.name +
                            (r.memory.visible ? " lets programs allocate" : " has"));
    }
    const number_format& compute = s.precision.compute;
    const peak_rate peak = s.system.accelerator.peak(compute.peak_key);
    if (peak.status == peak_rate::state::unsupported) {
        r.feasible = false;
        r.reasons.push_back(s.system.accelerator.name + " has no " + compute.peak_key +
                            " matrix units; compute in another format (e.g. precision.compute \"bf16\" with " +
                            s.precision.weights.name + " weights dequantized on the fly)");
    } else if (peak.status == peak_rate::state::unknown) {
        r.notes.push_back("the catalog does not know " + s.system.accelerator.name + "'s " + compute.peak_key +
                          " peak; speed estimates for it need a calibration or an inline value");
    }
    // A calibration for another accelerator or without this compute format is bad input, not a note.
    if (s.calibration) (void)calibrated_perf_efficiency(*s.calibration, s.system.accelerator, compute);
    if (s.inference || s.training) r.efficiency_table = s.calibration ? s.calibration->name : "catalog";
    if (s.inference) {
        const inference_setup engine = inference_setup::from(s, shards);
        estimate_inference_memory(s, engine, r, parts.memory_limits);
        estimate_inference_speed(s, engine, r, parts.notes, parts.roofline_ops);
        if (parts.cold_start) estimate_cold_start(s, cat, r, parts.notes);
    }
    if (s.training) {
        estimate_training_memory_result(s, shards, r, parts.notes);
        estimate_training_speed(s, shards, r, parts.notes, parts.data_pipeline);
        if (parts.cold_start || parts.checkpoint) estimate_cold_start(s, cat, r, parts.notes);  // a (re)start loads the weights too
        if (parts.checkpoint) estimate_checkpoints(s, cat, r, parts.notes);
        if (!parts.cold_start) r.cold_start.reset();
    }
    if ((s.inference || s.training) && parts.flops) estimate_flops(s, r);
    return r;
}

}  // namespace

estimate_result estimate(const scenario& s, const catalog& cat) { return estimate(s, cat, estimate_parts{}); }

estimate_result estimate(const scenario& s, const catalog& cat, const estimate_parts& parts) {
    estimate_result r = estimate_plan(s, cat, parts);
    if (parts.ranges) add_ranges(s, cat.uncertainty(), r);
    if (s.cost && parts.cost) estimate_cost(s, r);
    if (!parts.notes) r.notes.clear();  // the costly ones were not written; none, rather than some
    return r;
}

}  // namespace capplan
