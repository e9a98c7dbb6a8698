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
    sch.kv_capacity_tokens = static_cast<std::int64_t>((free + mem.offload_capacity).si() / bytes_per_token) * ranks;
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

// How the engine prefills a static batch of `input_tokens` prompts: steps of its token budget (each
// attention-data-parallel rank its own), each prompt from its prefix-cache hits on.
inline prefill_plan static_prefill_plan(const inference_setup& mem, const inference_spec& inf, std::int64_t input_tokens) {
    prefill_plan plan;
    plan.step_tokens = mem.step_tokens * mem.parallelism.attention_ranks();
    if (inf.prefix_cache) plan.cached_tokens = inf.prefix_cache->cached_tokens(input_tokens);
    return plan;
}

}  // namespace capplan
