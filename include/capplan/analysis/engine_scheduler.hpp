// The continuous-batching scheduler a serving engine runs for a scenario's inference setup: its step
// token budget, sequence limit, KV block size, admission policy, and the KV cache left per replica
// once weights, activations, logits and the runtime are placed (inference_memory.hpp).
#pragma once

#include <cstdint>

#include "capplan/analysis/inference_memory.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/serving_sim.hpp"

namespace capplan {

// Cache capacity in tokens at a request length of `request_tokens` (input + output): sliding-window
// layers stop growing, so the bytes per token of a full-length request (block rounding included)
// set the rate.
inline scheduler_spec engine_scheduler(const inference_setup& mem, std::int64_t request_tokens, int replicas) {
    scheduler_spec sch;
    // With attention data parallelism each rank schedules its own requests: the group's limits are
    // attention_ranks() times one rank's.
    const int ranks = mem.parallelism.attention_ranks();
    sch.max_num_seqs = mem.max_num_seqs * ranks;
    sch.max_batched_tokens = mem.step_tokens * ranks;
    sch.kv_block_tokens = mem.block_tokens;
    sch.reserve_output = mem.reserve_output;
    sch.chunked_prefill = mem.chunked_prefill;
    const inference_memory one = inference_budget(mem, 1, 1);
    const data_size free = one.usable - one.weights - one.activations - one.logits - one.overhead;
    const double bytes_per_token =
        inference_budget(mem, 1, request_tokens).kv_cache.si() / static_cast<double>(request_tokens);
    // With attention data parallelism every rank of the group caches its own requests: the group's
    // cache is attention_ranks() times one device's (placement inside it is not modelled).
    // The offload tier's share holds more blocks; the step model reloads those it attends (kv_offload).
    // At most 2^50 tokens (a petabyte-scale tier): beyond any cache, and no int64 overflow.
    const double tokens = std::min((free + mem.offload_capacity).si() / bytes_per_token, 0x1p50);
    sch.kv_capacity_tokens = static_cast<std::int64_t>(tokens) * ranks;
    // Every rank holds its own copy of a shared prefix, the simulated group one: the others' copies
    // are capacity it does not have.
    sch.kv_capacity_tokens -= static_cast<std::int64_t>(ranks - 1) * mem.shared_prefix_tokens;
    sch.replicas = replicas;
    return sch;
}

// KV-cache tokens a replica holds in GPU memory alone (what the offload tier adds is reloaded).
inline std::int64_t gpu_kv_tokens(const inference_setup& mem, std::int64_t request_tokens) {
    inference_setup gpu = mem;
    gpu.offload_capacity = data_size{};
    scheduler_spec sch = engine_scheduler(gpu, request_tokens, 1);
    return sch.kv_capacity_tokens;
}

// KV-cache offload in the step model: beyond the replica's GPU cache, attended tokens come back over the
// host link (each attention-DP rank its share).
inline void apply_kv_offload(perf_setup& setup, const scenario& s, const inference_setup& mem) {
    const inference_spec& inf = *s.inference;
    if (!inf.kv_offload) return;
    const std::int64_t context = inf.input_tokens + inf.output_tokens;
    setup.kv_offload.gpu_tokens = gpu_kv_tokens(mem, context);
    setup.kv_offload.bytes_per_token = inference_budget(mem, 1, context).kv_cache / static_cast<double>(context) /
                                       static_cast<double>(s.parallelism.attention_ranks());
    setup.kv_offload.reload_rate = inf.kv_offload->reload;
}

// With KV offload, a prompt's hits beyond the shared prefix sit on the offload tier: reloaded over the
// host link, or recomputed, whichever the prompt's prefill step finishes sooner with.
inline std::optional<prefix_cache_spec> offload_aware_prefix(const perf_setup& setup, const inference_spec& inf) {
    std::optional<prefix_cache_spec> p = inf.prefix_cache;
    if (!p || !inf.kv_offload || !setup.kv_offload.active()) return p;
    prefix_cache_spec reload = *p, recompute = *p;
    reload.hits_offloaded = true;
    recompute.hit_rate = 0.0;  // only the shared prefix (in GPU memory) still hits
    auto prefill = [&](const prefix_cache_spec& c) {
        batch_step st;
        st.prefill_requests = 1;
        st.prefill_context_tokens = c.cached_tokens(inf.input_tokens);
        st.prefill_tokens = inf.input_tokens - st.prefill_context_tokens;
        st.reload_tokens = c.reloaded_tokens(inf.input_tokens);
        return step_time(setup, st);
    };
    return prefill(reload) <= prefill(recompute) ? reload : recompute;
}

// How the engine prefills a static batch of `input_tokens` prompts: steps of its token budget (each
// attention-data-parallel rank its own), each prompt from its prefix-cache hits on.
inline prefill_plan static_prefill_plan(const inference_setup& mem, const std::optional<prefix_cache_spec>& prefix,
                                       std::int64_t input_tokens) {
    prefill_plan plan;
    plan.step_tokens = mem.step_tokens * mem.parallelism.attention_ranks();
    if (prefix) plan.cached_tokens = prefix->cached_tokens(input_tokens), plan.reload_tokens = prefix->reloaded_tokens(input_tokens);
    return plan;
}

}  // namespace capplan
