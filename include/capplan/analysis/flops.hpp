// FLOPs of a transformer forward pass, a training step (model and hardware FLOPs) and the
// PaLM-style model FLOPs per token used for published MFU figures. docs/formulas.md §10 has the
// derivations and sources; notation as in docs/formulas.md.
//
// Counting conventions:
//   - A matrix multiply of (1 x in)(in x out) is 2·in·out FLOPs: one multiply and one add per
//     multiply-accumulate (Kaplan et al. 2020, arXiv:2001.08361 §2.1 Table 1; PaLM, Chowdhery et
//     al. 2022, arXiv:2204.02311 Appendix B). Only matrix multiplies count: norms, biases,
//     activations, softmax, RoPE and the residual adds are elementwise and left out, as in both.
//   - The embedding lookup is a gather (0 FLOPs); the LM head is a matmul, 2·h·V per token,
//     whether or not it is tied to the embedding matrix.
//   - Attention core per token and layer, against c keys: scores Q·K^T 2·c·H·d_qk plus the
//     weighted sum P·V 2·c·H·d_v. H is the number of *query* heads: GQA/MQA (Ainslie et al. 2023,
//     arXiv:2305.13245) share K/V heads, which shrinks the k/v projections and the KV cache, not
//     these products. Causal: the token at 0-based position i sees c = i + 1 keys (itself included).
//     Sliding-window layers see c = min(i + 1, W) keys (the Hugging Face mask q - W < k <= q).
//   - MLA (DeepSeek-V2, arXiv:2405.04434 §2.1) is counted in its non-absorbed (training) form:
//     q_a, q_b, kv_a, kv_b and o are all applied, and attention uses d_qk = d_nope + d_rope and
//     d_v = v_head_dim per query head. Inference engines that absorb kv_b into q and o (the remark
//     at the end of §2.1.2) do different work, especially at long context; that is not modelled.
//   - MoE: a token runs the router (h·E), its top-k routed experts and the shared experts
//     (Fedus et al. 2022, arXiv:2101.03961 §2; DeepSeek-V3, arXiv:2412.19437 §2.1.2).
//   - Backward = 2 x forward (Kaplan et al. §2.1: "the backwards pass is approximately twice the
//     compute of the forwards pass"; Narayanan et al. 2021, arXiv:2104.04473, appendix on FLOPs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "capplan/analysis/parameters.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/model_spec.hpp"
#include "capplan/spec/scenario.hpp"
#include "capplan/units.hpp"

namespace capplan {

// Weight-matrix parameters one token is multiplied by in a forward pass (active experts only).
// Derived from count_parameters() by removing what is not a matrix a token multiplies by:
// the embedding tables, norm weights, biases and DeepSeek-V3's routing-score bias, the routed
// experts the token skips; and by counting the LM head even when it is tied to the embedding.
struct matmul_parameters {
    std::int64_t attention = 0;  // q/k/v/o, or MLA q_a, q_b, kv_a, kv_b, o; all layers
    std::int64_t mlp = 0;        // dense FFN layers + top-k routed experts + shared experts
    std::int64_t router = 0;     // h·E per MoE layer
    std::int64_t lm_head = 0;    // V·h, tied or not

    std::int64_t blocks() const { return attention + mlp + router; }  // the transformer layers
    std::int64_t total() const { return blocks() + lm_head; }
};

// One forward pass of some tokens through the whole model.
struct forward_flops {
    flop_count matmul;     // 2 x active matmul parameters per token (LM head included)
    flop_count lm_head;    // the LM head's share of `matmul` (2·h·V per token that gets logits)
    flop_count attention;  // Q·K^T and P·V against each token's causal context

    flop_count total() const { return matmul + attention; }
    // The transformer layers alone (what full activation recomputation reruns).
    flop_count blocks() const { return total() - lm_head; }
};

// Which positions of a chunk go through the LM head: all of them (training, scoring), or only
// the last (inference prefill and decode: engines compute logits for the sampled position only).
enum class logits_for { all_positions, last_position };

struct training_flops {
    forward_flops forward;  // one forward pass over the sequence
    flop_count model;       // forward + backward = 3 x forward: numerator of MFU
    flop_count hardware;    // model + recomputed forward work: numerator of HFU
};

namespace detail {

// Attention-core FLOPs for one query token against one key in one layer: 2·H·d_qk + 2·H·d_v.
inline std::int64_t attention_flops_per_key(const model_spec& m) {
    const std::int64_t d_qk = m.mla ? m.mla_dims.qk_nope_head_dim + m.mla_dims.qk_rope_head_dim : m.head_dim;
    const std::int64_t d_v = m.mla ? m.mla_dims.v_head_dim : m.head_dim;
    return 2 * m.heads * d_qk + 2 * m.heads * d_v;
}

// DSA's lightning indexer per query token and cached key: index_heads dot products of index_head_dim
// (DeepSeek-V3.2-Exp report §2.1, eq. 1), 2·Hi·di.
inline std::int64_t index_flops_per_key(const model_spec& m) { return 2 * m.sparse.index_heads * m.sparse.index_head_dim; }

// A gated DeltaNet layer per token, beside its projections: the delta-rule update of the value_heads x dk x dv
// state (S k, the rank-one correction, the decay: 6·dk·dv per head; Yang et al. 2024 arXiv:2412.06464, the
// gated delta rule in recurrent form) and the read-out S q (2·dk·dv), plus the depthwise convolution (2·kernel per channel).
inline std::int64_t linear_flops_per_token(const model_spec& m) {
    const auto& l = m.linear;
    return 8 * l.value_heads * l.key_head_dim * l.value_head_dim + 2 * l.conv_kernel * l.conv_channels();
}

// Keys seen by the tokens at positions 0..n-1 of a layer that attends within fixed chunks of C tokens (Llama 4):
// the token at p sees p - floor(p / C) C + 1 keys; sum over whole chunks C(C+1)/2 each, then the partial one.
inline std::int64_t chunked_keys(std::int64_t n, std::int64_t chunk) {
    const std::int64_t whole = n / chunk, rest = n % chunk;
    return whole * (chunk * (chunk + 1) / 2) + rest * (rest + 1) / 2;
}

// Keys seen by the tokens at positions 0..n-1 together: sum_{c=1..n} min(c, W) (W = 0: no window).
inline std::int64_t causal_keys(std::int64_t n, std::int64_t window) {
    if (window <= 0 || n <= window) return n * (n + 1) / 2;
    return window * (window + 1) / 2 + (n - window) * window;
}

inline void require(bool ok, const std::string& what, std::int64_t got) {
    if (!ok) throw error("FLOP model: " + what + " (got " + std::to_string(got) + ")");
}

}  // namespace detail

inline matmul_parameters active_matmul_parameters(const model_spec& m) {
    const parameter_breakdown p = count_parameters(m);
    std::int64_t linear_layers = 0, attention_layers = 0, dense_layers = 0;
    m.for_layer_runs(0, m.layers, [&](std::int64_t i, std::int64_t n) {  // n layers like layer i
        if (m.has_mixer(i)) (m.is_linear_layer(i) ? linear_layers : attention_layers) += n;
        if (m.has_ffn(i) && !m.is_moe_layer(i)) dense_layers += n;
    });
    const std::int64_t moe_layers = m.moe_layer_count();
    const std::int64_t mlp_bias = m.mlp_bias ? ((m.gated_mlp ? 3 : 2) - 1) * m.intermediate + m.hidden : 0;
    const std::int64_t router_bias = m.moe.router_bias ? m.moe.routed_experts : 0;

    matmul_parameters w;
    w.attention = attention_layers * attention_layer_parameters(m, false).matrices +
                  linear_layers * attention_layer_parameters(m, true).matrices;
    const std::int64_t active_experts = moe_layers * m.moe.experts_per_token * expert_parameters(m).matrices;
    const std::int64_t shared = moe_layers * shared_expert_parameters(m);
    w.mlp = (p.dense_mlp - dense_layers * mlp_bias) + active_experts + shared;
    w.router = p.router - moe_layers * router_bias;
    w.lm_head = m.vocab * m.hidden;
    return w;
}

// `new_tokens` tokens processed causally after `cached` tokens already in the KV cache: token j
// (0-based within the chunk) attends to cached + j + 1 keys, capped at W on sliding layers.
// Prefill is (0, s); one decode step at context c is (c - 1, 1); a prefill chunk is (done, chunk).
inline forward_flops chunk_forward_flops(const model_spec& m, std::int64_t cached, std::int64_t new_tokens,
                                         logits_for logits = logits_for::all_positions) {
    detail::require(cached >= 0, "cached tokens must be >= 0", cached);
    detail::require(new_tokens >= 0, "new tokens must be >= 0", new_tokens);
    const matmul_parameters w = active_matmul_parameters(m);
    const double n = static_cast<double>(new_tokens);
    const double head_tokens = logits == logits_for::all_positions ? n : (new_tokens > 0 ? 1.0 : 0.0);

    std::int64_t keys = 0;     // sum over attention layers of the keys all new tokens see
    std::int64_t indexed = 0;  // DSA: keys the indexer scores (all of the causal context)
    std::int64_t linear = 0;   // linear-attention layers
    const std::int64_t end = cached + new_tokens;
    m.for_layer_runs(0, m.layers, [&](std::int64_t i, std::int64_t alike) {  // `alike` layers like layer i
        if (!m.has_mixer(i)) return;
        if (m.is_linear_layer(i)) {
            linear += alike;
            return;
        }
        // DSA's core attends to the indexer's top-k keys: a window of k in key count.
        const std::int64_t window = m.is_sliding_layer(i) ? m.sliding_window : m.sparse.topk;
        if (m.is_sliding_layer(i) && m.chunked_local)
            keys += alike * (detail::chunked_keys(end, window) - detail::chunked_keys(cached, window));
        else
            keys += alike * (detail::causal_keys(end, window) - detail::causal_keys(cached, window));
        if (m.sparse.active()) indexed += alike * (detail::causal_keys(end, 0) - detail::causal_keys(cached, 0));
    });

    forward_flops f;
    f.lm_head = 2.0 * static_cast<double>(w.lm_head) * head_tokens * units::FLOP;
    f.matmul = 2.0 * static_cast<double>(w.blocks()) * n * units::FLOP + f.lm_head;
    f.attention = (static_cast<double>(detail::attention_flops_per_key(m)) * static_cast<double>(keys) +
                   static_cast<double>(detail::index_flops_per_key(m)) * static_cast<double>(indexed) +
                   static_cast<double>(detail::linear_flops_per_token(m)) * static_cast<double>(linear) * n) *
                  units::FLOP;
    return f;
}

// One token attending to `context` keys (itself and context - 1 earlier tokens), e.g. a decode
// step with context - 1 tokens in the KV cache; its logits are computed.
inline forward_flops token_forward_flops(const model_spec& m, std::int64_t context) {
    detail::require(context >= 1, "a token's context must be >= 1 (it attends to itself)", context);
    return chunk_forward_flops(m, context - 1, 1);
}

// A whole sequence processed causally from an empty cache: one training sample (all logits) or
// a prefill (logits_for::last_position).
inline forward_flops sequence_forward(const model_spec& m, std::int64_t seq_len,
                                      logits_for logits = logits_for::all_positions) {
    detail::require(seq_len >= 1, "sequence length must be >= 1", seq_len);
    return chunk_forward_flops(m, 0, seq_len, logits);
}

inline flop_count sequence_forward_flops(const model_spec& m, std::int64_t seq_len) {
    return sequence_forward(m, seq_len).total();
}

// One training sample of seq_len tokens, every position scored.
//   model    = forward + backward = 3 x forward                       (PaLM §4.1 and Appendix B)
//   hardware = model + recomputation:
//     none       + 0
//     selective  + the attention core (Q·K^T, P·V) forward              (Korthikanti et al. 2022,
//                                         arXiv:2205.05198 §5, "Selective Activation Recomputation")
//     full       + the forward of every transformer layer, not the LM head (Narayanan et al. 2021,
//                                         arXiv:2104.04473 §5.1 eq. 3: layers 4 passes, logits 3)
// FlashAttention's own recomputation of the scores inside its backward kernel is not counted.
inline training_flops training_step_flops(const model_spec& m, std::int64_t seq_len, recompute_kind r) {
    training_flops t;
    t.forward = sequence_forward(m, seq_len);
    t.model = 3.0 * t.forward.total();
    t.hardware = t.model;
    if (r == recompute_kind::selective) t.hardware += t.forward.attention;
    if (r == recompute_kind::full) t.hardware += t.forward.blocks();
    return t;
}

// PaLM's model FLOPs per training token, 6N + 12·L·H·Q·T (Chowdhery et al. 2022,
// arXiv:2204.02311, Appendix B), for comparing MFU with published figures. N = active matmul
// parameters (LM head included); 12·H·Q generalised to 6·H·(d_qk + d_v) for MLA. The attention
// term is non-causal (every token against all T positions) and ignores sliding windows: for a
// model without windows, capplan's causal model FLOPs per token are
//   6N + 3·L·H·(d_qk + d_v)·(T + 1),  i.e. PaLM's attention term x (T + 1) / (2T).
inline flop_count palm_model_flops_per_token(const model_spec& m, std::int64_t seq_len) {
    detail::require(seq_len >= 1, "sequence length must be >= 1", seq_len);
    const double n = static_cast<double>(active_matmul_parameters(m).total());
    const double attention = 3.0 * static_cast<double>(m.layers) * static_cast<double>(detail::attention_flops_per_key(m)) *
                             static_cast<double>(seq_len);
    return (6.0 * n + attention) * units::FLOP;
}

}  // namespace capplan
