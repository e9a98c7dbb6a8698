// Inference memory budget per device, and the solvers built on it.
//
//   used = weights + KV cache + peak activations of one forward step + logits + runtime reservation
//   fits when used <= capacity x memory_utilization
//
// This mirrors how vLLM sizes its cache (docs: gpu_memory_utilization is "the fraction of GPU memory
// to be used for the model executor"; the KV cache gets what remains after weights, the profiled
// activation peak and non-torch memory). Each pipeline stage is checked; the fullest one decides.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capplan/analysis/kv_cache.hpp"
#include "capplan/analysis/sharding.hpp"
#include "capplan/spec/scenario.hpp"

namespace capplan {

// Per-device memory that is neither weights, KV cache nor activations. Defaults are cited in
// default_runtime_reserve(); a scenario may override the total (inference.runtime_reserve).
struct runtime_reserve {
    data_size cuda_context;   // driver context and loaded kernels
    data_size workspaces;     // cuBLAS/cuBLASLt and attention-kernel workspaces
    data_size communication;  // NCCL buffers when tp x pp > 1
    data_size graphs;         // captured CUDA graphs
    data_size total() const { return cuda_context + workspaces + communication + graphs; }
};

runtime_reserve default_runtime_reserve(int model_parallel_ranks);

// What the budget needs from a scenario; the weight sharding is computed once and reused by the solvers.
struct inference_setup {
    const model_spec* model = nullptr;
    parallelism_spec parallelism;
    precision_spec precision;
    data_size capacity;                   // one device
    double memory_utilization = 0.9;
    std::int64_t block_tokens = 16;
    std::int64_t step_tokens = 8192;      // tokens in one forward step (the chunked-prefill budget)
    std::int64_t max_num_seqs = 256;      // sequences sampled at once (the engine profiles its sampler at this)
    bool reserve_output = false;          // KV admission reserves prompt + whole output (TensorRT-LLM)
    bool chunked_prefill = true;          // prompts split over steps (off: a prompt runs in one step)
    data_size reserve;                    // runtime reservation total
    weight_sharding weights;
    // Prefix caching: the shared prefix's whole blocks, stored once per device instead of per request
    // (prefix_cache_spec::shared_tokens of the scenario's prompt).
    std::int64_t shared_prefix_tokens = 0;
    // Speculative decoding: the drafter's weights on each device of the last stage, and the model
    // whose KV cache it keeps per request (none for n-gram lookup).
    data_size drafter_weights;
    const model_spec* drafter = nullptr;
    // KV-cache offload: the tier's share for each device (its per-node capacity over the node's devices).
    data_size offload_capacity;

    static inference_setup from(const scenario& s);
    // The same with the scenario's weights already split (shard_weights(s.model, s.parallelism)).
    static inference_setup from(const scenario& s, const weight_sharding& weights);
};

// Engine defaults the budget assumes when the scenario does not set them: the engine profile's
// (spec/engine_profile.hpp; vLLM V1's by default: 8,192 batched tokens and 1,024 sequences on GPUs with
// >= 70 GiB that are not A100, 2,048 and 256 otherwise).
struct engine_defaults {
    std::int64_t step_tokens;
    std::int64_t max_num_seqs;
};
engine_defaults default_engine_limits(const accelerator_spec& a, const std::string& engine = "vllm-v1");

// fp32 rows of [sequences x vocab] the sampler keeps at its peak: the logits, top-k/top-p sorting
// (values and int64 indices), probabilities, cumulative sums, the scattered-back result.
// Measured: fitted to one vLLM V1 profile (llm-d, Llama-3.1-8B on H100: 4.76 GiB activation peak at
// 8192 tokens and 1024 sequences), checked on other models in tests/python/test_memory_measured.py.
inline constexpr double sampler_fp32_rows = 8.0;

struct inference_memory {
    data_size capacity, usable;           // usable = capacity x memory_utilization
    data_size weights, kv_cache, kv_cache_per_token, activations, logits, overhead;
    data_size kv_offloaded;               // of kv_cache, the part on the offload tier (not in per_device)
    data_size per_device;                 // the fullest stage's total in GPU memory
    int stage = 0;                        // which pipeline stage that is
    bool fits = false;
};

namespace detail {

// Peak live activation bytes of one forward step of `tokens` tokens on one device: the residual
// stream and its normed copy, plus the larger of the attention block (q, k, v and the attention
// output) and the FFN block (gate and up outputs and the activation; for MoE the top-k dispatched
// copies). FlashAttention keeps no score matrix (Dao et al. 2022, arXiv:2205.14135).
inline data_size step_activation_bytes(const model_spec& m, const parallelism_spec& p, const number_format& act,
                                       std::int64_t tokens) {
    const double h = static_cast<double>(m.hidden), tp = p.attention_tp();
    double attention;
    if (m.mla) {
        const auto& a = m.mla_dims;
        attention = m.heads / tp * (2.0 * (a.qk_nope_head_dim + a.qk_rope_head_dim) + 2.0 * a.v_head_dim) +
                    (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim);
    } else {
        attention = (m.heads / tp * 2.0 + 2.0 * detail::kv_heads_per_rank(m, p.attention_tp())) * m.head_dim;
    }
    const double mats = m.gated_mlp ? 3.0 : 2.0;  // gate + up outputs and the activation, or up + activation
    double ffn = mats * m.intermediate / tp;
    if (m.is_moe()) {
        const double k = static_cast<double>(m.moe.experts_per_token);
        ffn = std::max(ffn, k * (3.0 * m.moe.expert_intermediate / p.etp + h) + m.moe.routed_experts);
    }
    return static_cast<double>(tokens) * (2.0 * h + std::max(attention, ffn)) * act.bytes_per_element() * units::B;
}

}  // namespace detail

// The budget for `batch` requests of `context` tokens each (on each device of a replica; with
// attention data parallelism a device holds its own share of them, their whole KV heads).
inline inference_memory inference_budget(const inference_setup& s, std::int64_t batch, std::int64_t context) {
    const model_spec& m = *s.model;
    const int ranks = s.parallelism.attention_ranks();
    const std::int64_t here = (batch + ranks - 1) / ranks;
    const int kv_tp = s.parallelism.attention_tp();
    inference_memory out;
    out.capacity = s.capacity;
    out.usable = s.capacity * s.memory_utilization;
    out.overhead = s.reserve;
    // An engine reserves for its largest step, whatever the load: a full token budget and its
    // sampler at max_num_seqs (vLLM profiles exactly these before sizing the cache).
    out.activations = detail::step_activation_bytes(m, s.parallelism, s.precision.activations, s.step_tokens);
    const double rows = static_cast<double>(std::max(here, s.max_num_seqs));
    const data_size logits = rows * static_cast<double>(m.vocab) * 4.0 * sampler_fp32_rows * units::B;
    bool first = true;
    for (std::size_t i = 0; i < s.weights.stages.size(); ++i) {
        const pipeline_stage& st = s.weights.stages[i];
        auto request_kv = [&](std::int64_t tokens) {
            return kv_bytes_per_request(m, kv_tp, s.precision.kv_cache, st.cache, tokens, s.block_tokens);
        };
        const std::int64_t shared = here > 0 ? std::min(s.shared_prefix_tokens, context) : 0;
        data_size kv = static_cast<double>(here) * kv_bytes_own(m, kv_tp, s.precision.kv_cache, st.cache, context, shared,
                                                                s.block_tokens) +
                       request_kv(shared);
        data_size w = device_weight_bytes(st.params, s.precision.weights,
                                          s.precision.expert_weights ? &*s.precision.expert_weights : nullptr);
        if (st.has_lm_head && s.drafter) {
            w += s.drafter_weights;
            kv += static_cast<double>(here) * kv_bytes_per_request(*s.drafter, kv_tp, s.precision.kv_cache,
                                                                   all_layers(*s.drafter), context, s.block_tokens);
        }
        const data_size lg = st.has_lm_head ? logits : data_size{};
        // What does not fit GPU memory spills to the offload tier, cache blocks only, up to its share.
        const data_size over = w + kv + out.activations + lg + out.overhead - out.usable;
        const data_size spilled = over.si() > 0 ? std::min({over, kv, s.offload_capacity}) : data_size{};
        const data_size total = w + kv - spilled + out.activations + lg + out.overhead;
        if (first || total > out.per_device) {
            first = false;
            out.per_device = total;
            out.stage = static_cast<int>(i);
            out.weights = w;
            out.kv_cache = kv;
            out.kv_offloaded = spilled;
            out.logits = lg;
            out.kv_cache_per_token = kv_bytes_per_token(m, kv_tp, s.precision.kv_cache, st.cache);
        }
    }
    out.fits = out.per_device <= out.usable;
    return out;
}

namespace detail {

// The largest n in [1, cap] with fits(n), for fits monotone (true up to the answer, false beyond) and fits(1) true,
// or cap when fits(cap). The search starts at `guess` (a linear estimate, usually the answer or next to it) and
// gallops away from it (steps 1, 2, 4, ...) until it brackets the answer, then bisects: two or three probes where a
// bisection from 1 takes some forty (the memory model is costly enough for that to be most of an estimate).
template <class Fits>
std::int64_t largest_fitting(std::int64_t guess, std::int64_t cap, Fits fits) {
    guess = std::clamp<std::int64_t>(guess, 1, cap);
    std::int64_t lo = 1, hi = cap + 1;  // fits(lo); hi: the smallest known not to fit (cap + 1: none known)
    if (fits(guess)) {
        lo = guess;
        for (std::int64_t step = 1; lo < cap; step *= 2) {
            const std::int64_t next = std::min(cap, lo + step);
            if (!fits(next)) {
                hi = next;
                break;
            }
            lo = next;
        }
        if (lo == cap) return cap;
    } else {
        hi = guess;
        for (std::int64_t step = 1; hi > 1; step *= 2) {
            const std::int64_t next = std::max<std::int64_t>(1, hi - step);
            if (next == 1 || fits(next)) {
                lo = next;
                break;
            }
            hi = next;
        }
    }
    while (hi - lo > 1) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}

// Where a straight line through (x1, y1) and (x2, y2) reaches `limit` (x2 > x1), rounded down; `cap` when it does
// not rise.
inline std::int64_t linear_reach(double x1, double y1, double x2, double y2, double limit, std::int64_t cap) {
    const double slope = (y2 - y1) / (x2 - x1);
    if (!(slope > 0)) return cap;
    const double x = x1 + (limit - y1) / slope;
    return x >= static_cast<double>(cap) ? cap : static_cast<std::int64_t>(std::max(1.0, std::floor(x)));
}

// Beyond this many requests or tokens the cache is not what limits (no KV at all, or sliding windows everywhere).
inline constexpr std::int64_t unlimited = std::int64_t{1} << 41;

}  // namespace detail

// The most requests of `context` tokens that fit at once (0 if not even one; detail::unlimited when the cache does
// not limit them).
inline std::int64_t max_concurrency(const inference_setup& s, std::int64_t context) {
    const inference_memory one = inference_budget(s, 1, context);
    if (!one.fits) return 0;
    // Requests are spread over the attention ranks: the memory grows by one request per rank at a time.
    const std::int64_t ranks = s.parallelism.attention_ranks();
    const inference_memory two = inference_budget(s, 2 * ranks, context);
    const std::int64_t guess = detail::linear_reach(1.0, one.per_device.si(), 2.0, two.per_device.si(), one.usable.si(),
                                                    detail::unlimited / ranks) * ranks;
    return detail::largest_fitting(guess, detail::unlimited,
                                   [&](std::int64_t n) { return inference_budget(s, n, context).fits; });
}

// The longest context (tokens per request) at which `batch` requests fit (0 if none; detail::unlimited when the
// cache stops growing before memory runs out).
inline std::int64_t max_context(const inference_setup& s, std::int64_t batch) {
    const inference_memory one = inference_budget(s, batch, 1);
    if (!one.fits) return 0;
    constexpr double probe = 65536.0;  // a context long enough for the line to hold (blocks, windows below it)
    const inference_memory far = inference_budget(s, batch, static_cast<std::int64_t>(probe));
    const std::int64_t guess =
        detail::linear_reach(1.0, one.per_device.si(), probe, far.per_device.si(), one.usable.si(), detail::unlimited);
    return detail::largest_fitting(guess, detail::unlimited,
                                   [&](std::int64_t n) { return inference_budget(s, batch, n).fits; });
}

// The smallest tensor-parallel degree in `candidates` (ascending) whose layout splits the model and
// fits `batch` requests of `context` tokens; empty if none does.
inline std::optional<int> smallest_fitting_tp(inference_setup s, std::int64_t batch, std::int64_t context,
                                              const std::vector<int>& candidates) {
    for (const int tp : candidates) {
        s.parallelism.tp = tp;
        if (s.parallelism.ep == 1) s.parallelism.etp = tp;
        if (s.parallelism.attention_dp) {  // the group is the tp ranks, the experts spread over it
            if (tp < 2) continue;
            s.parallelism.ep = tp;
        }
        s.weights = shard_weights(*s.model, s.parallelism);
        if (s.weights.problems.empty() && inference_budget(s, batch, context).fits) return tp;
    }
    return std::nullopt;
}

}  // namespace capplan
