// The interface between a performance model and the serving simulator: how long one engine step
// (one forward pass of a continuous-batching server) takes for a given mix of work.
#pragma once

#include <cstdint>
#include <functional>

#include "capplan/units.hpp"

namespace capplan {

// One forward step of a continuous-batching engine (vLLM/SGLang/TensorRT-LLM style): some requests
// prefill a chunk of their prompt, the others decode one token each.
struct batch_step {
    std::int64_t prefill_tokens = 0;   // prompt tokens processed this step (all prefilling requests)
    std::int64_t prefill_requests = 0; // requests with a prefill chunk in this step
    std::int64_t decode_requests = 0;  // requests generating one token this step
    std::int64_t context_tokens = 0;   // KV tokens the decoding requests attend to (sum of their contexts)
    std::int64_t prefill_context_tokens = 0;  // KV tokens the prefilling requests had cached before this
                                              // step's chunk (earlier chunks, prefix-cache hits)
    // Positions each decoding request runs: 1, or k + 1 when the step verifies k drafted tokens
    // (speculative decoding); they share the request's KV-cache read.
    std::int64_t decode_positions = 1;
    // Prompt tokens whose cache comes back from the KV-offload tier this step (prefix-cache hits there).
    std::int64_t reload_tokens = 0;
    // Who routes tokens to the experts. Serving engines: the ranks of an expert-parallel group share
    // the step's tokens (attention tensor-parallel over them), so each device's experts see 1/ep of
    // the routed slots. Megatron training: every rank routes its own 1/tp sequence shard (sequence
    // parallelism; ep is carved from dp), so each device's experts see tokens/tp x k slots.
    bool experts_route_rank_tokens = false;
    // Training with packed samples: each prefill request's chunk (and its cached context) splits into this many
    // samples that attend only within themselves (THD layout); 0 or 1: one. Only the attention core reads it.
    double attention_segments = 0.0;
};

// Time of one step on one replica. Must be positive and non-decreasing in every field.
using step_time_fn = std::function<duration(const batch_step&)>;

}  // namespace capplan
