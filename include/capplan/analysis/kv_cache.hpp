// KV-cache bytes per token and per request, per architecture, on one device.
//
//   MHA/GQA/MQA   2 (K and V) x kv_heads x head_dim x bytes, per layer    (Ainslie et al. 2023, arXiv:2305.13245)
//                 under tp a rank keeps kv_heads / tp heads, or one whole head when kv_heads < tp
//                 (heads are replicated, not split: vLLM QKVParallelLinear)
//   MLA           (kv_lora_rank + qk_rope_head_dim) x bytes, per layer: the compressed latent and the
//                 decoupled RoPE key (DeepSeek-V2, arXiv:2405.04434 §2.1.2-2.1.3, Table 1); every tp rank
//                 keeps the whole latent (it is not split by head)
//   sliding window  a windowed layer keeps at most `window` tokens (Mistral 7B, arXiv:2310.06825 §2 "rolling
//                 buffer cache"; Gemma 2 alternates windowed and global layers, arXiv:2408.00118 §2)
//   linear layers a gated DeltaNet / Mamba-2 layer keeps no per-token cache but a fixed recurrent state per
//                 request (value_heads x key_head_dim x value_head_dim, plus the convolution's last inputs)
//   DSA           DeepSeek-V3.2 adds the indexer's fp8 key (index_head_dim + its scale) per token and layer
//   paging        a request's cache is allocated in blocks of `block_tokens` tokens (Kwon et al. 2023,
//                 PagedAttention, arXiv:2309.06180 §4.2), so each layer's token count rounds up to a block.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "capplan/analysis/sharding.hpp"
#include "capplan/dtype.hpp"
#include "capplan/spec/model_spec.hpp"
#include "capplan/units.hpp"

namespace capplan {

// DeepSeek-V3.2's indexer keeps an fp8 key of index_head_dim per token and layer with one fp32 scale per 128
// elements (DeepSeek-V3.2-Exp inference/model.py: k_cache float8_e4m3fn, k_scale_cache float32), whatever the
// KV-cache format; every tp rank keeps all of it.
inline data_size index_key_bytes_per_token_per_layer(const model_spec& m) {
    if (!m.sparse.active()) return {};
    const double d = static_cast<double>(m.sparse.index_head_dim);
    return (d + 4.0 * std::ceil(d / 128.0)) * units::B;
}

// Bytes of one token's K and V in one attention layer on one device (linear-attention layers keep none).
inline data_size kv_bytes_per_token_per_layer(const model_spec& m, int tp, const number_format& kv) {
    const double elements = m.mla ? static_cast<double>(m.mla_dims.kv_lora_rank + m.mla_dims.qk_rope_head_dim)
                                  : 2.0 * detail::kv_heads_per_rank(m, tp) * static_cast<double>(m.head_dim);
    return elements * kv.bytes_per_element() * units::B + index_key_bytes_per_token_per_layer(m);
}

// One request's fixed state in one linear-attention layer on one device: the recurrent state (value_heads x
// key_head_dim x value_head_dim) and the causal convolution's last conv_kernel - 1 inputs, heads split over tp,
// kept in 16 bits (vLLM's mamba_cache_dtype "auto": the model's dtype) whatever the KV-cache format, the
// recurrent state in the model's own cache format where it names one (Nemotron-H: fp32).
inline data_size linear_state_bytes_per_layer(const model_spec& m, int tp) {
    const auto& l = m.linear;
    const double state = static_cast<double>(l.value_heads * l.key_head_dim * l.value_head_dim);
    const double conv = static_cast<double>((l.conv_kernel - 1) * l.conv_channels());
    return (state * l.state_element_bytes + conv * 2.0) / tp * units::B;
}

// The layers whose cache lives on one device: a pipeline stage's [first, first + count).
struct layer_range {
    std::int64_t first = 0;
    std::int64_t count = 0;
};

inline layer_range all_layers(const model_spec& m) { return {0, m.layers}; }

inline cache_layers count_cache_layers(const model_spec& m, layer_range r) { return count_cache_layers(m, r.first, r.count); }

// Attention (not linear-attention) layers of r.
inline std::int64_t attention_layers(const model_spec& m, layer_range r) {
    const cache_layers c = count_cache_layers(m, r);
    return c.full + c.windowed;
}

// Bytes per token of context while the context is shorter than every sliding window
// (the figure usually quoted as "KV cache per token"; linear-attention layers add none).
inline data_size kv_bytes_per_token(const model_spec& m, int tp, const number_format& kv, const cache_layers& c) {
    return static_cast<double>(c.full + c.windowed) * kv_bytes_per_token_per_layer(m, tp, kv);
}
inline data_size kv_bytes_per_token(const model_spec& m, int tp, const number_format& kv, layer_range r) {
    return kv_bytes_per_token(m, tp, kv, count_cache_layers(m, r));
}

// A request's fixed state on the linear-attention layers, whatever its context.
inline data_size linear_state_bytes(const model_spec& m, int tp, const cache_layers& c) {
    return c.linear > 0 ? static_cast<double>(c.linear) * linear_state_bytes_per_layer(m, tp) : data_size{};
}
inline data_size linear_state_bytes(const model_spec& m, int tp, layer_range r) {
    return linear_state_bytes(m, tp, count_cache_layers(m, r));
}

inline std::int64_t round_up(std::int64_t n, std::int64_t block) { return block <= 1 ? n : (n + block - 1) / block * block; }

// Cache bytes of one request holding `context` tokens, on layers `c` (a stage's, counted once).
inline data_size kv_bytes_per_request(const model_spec& m, int tp, const number_format& kv, const cache_layers& c,
                                      std::int64_t context, std::int64_t block_tokens) {
    const data_size per_layer_token = kv_bytes_per_token_per_layer(m, tp, kv);
    const std::int64_t full_tokens = round_up(context, block_tokens);
    const std::int64_t window_tokens = round_up(std::min(context, m.sliding_window), block_tokens);
    return (static_cast<double>(c.full * full_tokens) + static_cast<double>(c.windowed * window_tokens)) * per_layer_token +
           linear_state_bytes(m, tp, c);
}
// ... on the layers of `r`.
inline data_size kv_bytes_per_request(const model_spec& m, int tp, const number_format& kv, layer_range r,
                                      std::int64_t context, std::int64_t block_tokens) {
    return kv_bytes_per_request(m, tp, kv, count_cache_layers(m, r), context, block_tokens);
}

// The part of a request's cache that is its own when its first `shared` tokens (whole blocks) are a
// prefix stored once: full layers hold the rest of the context; a windowed layer holds its last
// min(context, window) tokens, of which only those still inside the shared prefix are not its own.
inline data_size kv_bytes_own(const model_spec& m, int tp, const number_format& kv, const cache_layers& c,
                              std::int64_t context, std::int64_t shared, std::int64_t block_tokens) {
    if (shared <= 0) return kv_bytes_per_request(m, tp, kv, c, context, block_tokens);
    const std::int64_t full_layers = c.full, windowed_layers = c.windowed;
    const std::int64_t full_tokens = round_up(context, block_tokens) - shared;
    const std::int64_t window_start = std::max<std::int64_t>(0, context - m.sliding_window);
    const std::int64_t shared_in_window = std::max<std::int64_t>(0, shared - window_start) / std::max<std::int64_t>(1, block_tokens) *
                                          std::max<std::int64_t>(1, block_tokens);
    const std::int64_t window_tokens = round_up(std::min(context, m.sliding_window), block_tokens) - shared_in_window;
    return (static_cast<double>(full_layers * full_tokens) +
            static_cast<double>(windowed_layers * std::max<std::int64_t>(0, window_tokens))) *
               kv_bytes_per_token_per_layer(m, tp, kv) +
           linear_state_bytes(m, tp, c);  // a recurrent state is each request's own (not shared by prefix)
}
inline data_size kv_bytes_own(const model_spec& m, int tp, const number_format& kv, layer_range r,
                              std::int64_t context, std::int64_t shared, std::int64_t block_tokens) {
    return kv_bytes_own(m, tp, kv, count_cache_layers(m, r), context, shared, block_tokens);
}

// A batch of requests with their own context lengths.
inline data_size kv_bytes_for_batch(const model_spec& m, int tp, const number_format& kv, layer_range r,
                                    const std::vector<std::int64_t>& contexts, std::int64_t block_tokens) {
    data_size total;
    for (const std::int64_t c : contexts) total += kv_bytes_per_request(m, tp, kv, r, c, block_tokens);
    return total;
}

}  // namespace capplan
