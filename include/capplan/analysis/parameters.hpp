// Parameter counts and weight bytes, by component, for every architecture in model_spec.
// Formulas mirror the layer shapes of the HF modelling files (one matrix = in x out numbers):
//   GQA attention   q: h*(H*d), k and v: h*(K*d) each, o: (H*d)*h                  (Ainslie et al. 2023)
//   MLA attention   q_a: h*r_q (+ norm r_q), q_b: r_q*H*(d_nope+d_rope), kv_a: h*(r_kv+d_rope)
//                   (+ norm r_kv), kv_b: r_kv*H*(d_nope+d_v), o: H*d_v*h           (DeepSeek-V2 §2.1)
//   gated MLP       3*h*I (gate, up, down; SwiGLU, Shazeer 2020); plain MLP 2*h*I
//   MoE layer       E routed + S shared experts of 3*h*I_e, router h*E               (Fedus et al. 2022)
//   embeddings      V*h, plus an untied LM head V*h, plus learned positions P*h (GPT-2/3)
// Active parameters per token drop the (E - k) routed experts a token does not visit.
#pragma once

#include <cstdint>

#include "capplan/dtype.hpp"
#include "capplan/spec/model_spec.hpp"
#include "capplan/units.hpp"

namespace capplan {

struct parameter_breakdown {
    std::int64_t embedding = 0;           // token embeddings
    std::int64_t position_embedding = 0;  // learned absolute positions (GPT-2/3)
    std::int64_t lm_head = 0;             // 0 when tied to the embeddings
    std::int64_t attention = 0;           // all layers, biases and q/k norms included
    std::int64_t dense_mlp = 0;           // dense FFN layers
    std::int64_t routed_experts = 0;      // all routed experts of all MoE layers
    std::int64_t shared_experts = 0;
    std::int64_t router = 0;
    std::int64_t norms = 0;               // layer norms incl. the final one
    std::int64_t inactive_experts = 0;    // routed-expert parameters a token does not use

    std::int64_t total() const {
        return embedding + position_embedding + lm_head + attention + dense_mlp + routed_experts + shared_experts +
               router + norms;
    }
    std::int64_t active() const { return total() - inactive_experts; }
    // Transformer-block matrices: what weight quantization (int4, fp8, ...) applies to.
    std::int64_t block_linear() const { return attention + dense_mlp + routed_experts + shared_experts; }
};

inline parameter_breakdown count_parameters(const model_spec& m) {
    parameter_breakdown p;
    const std::int64_t h = m.hidden;
    const std::int64_t norm_size = m.norm == norm_kind::layer_norm ? 2 * h : h;  // LayerNorm: weight + bias

    std::int64_t attn = 0;
    if (m.mla) {
        const auto& a = m.mla_dims;
        const std::int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
        attn += a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * m.heads * qk
                                  : h * m.heads * qk;
        attn += h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank;
        attn += a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim);
        attn += m.heads * a.v_head_dim * h;
    } else {
        const std::int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
        attn += h * q + 2 * h * kv + q * h;
        if (m.qkv_bias) attn += q + 2 * kv;
        if (m.o_bias) attn += h;
        if (m.qk_norm) attn += 2 * m.head_dim;
    }
    p.attention = attn * m.layers;

    const std::int64_t matrices = m.gated_mlp ? 3 : 2;
    const std::int64_t dense_layer = matrices * h * m.intermediate +
                                     (m.mlp_bias ? (matrices - 1) * m.intermediate + h : 0);
    const std::int64_t expert = 3 * h * m.moe.expert_intermediate;
    // DeepSeek-V3 routers carry a per-expert score-correction bias (aux-loss-free balancing, §2.1.2).
    const std::int64_t router = h * m.moe.routed_experts + (m.model_type == "deepseek_v3" ? m.moe.routed_experts : 0);
    for (std::int64_t i = 0; i < m.layers; ++i) {
        const bool moe = m.is_moe_layer(i);
        if (!moe) {
            p.dense_mlp += dense_layer;
            continue;
        }
        p.routed_experts += m.moe.routed_experts * expert;
        p.shared_experts += m.moe.shared_experts * expert;
        p.router += router;
        p.inactive_experts += (m.moe.routed_experts - m.moe.experts_per_token) * expert;
    }

    p.norms = m.layers * m.norms_per_layer * norm_size + norm_size;
    p.embedding = m.vocab * h;
    p.lm_head = m.tied_embeddings ? 0 : m.vocab * h;
    p.position_embedding = m.learned_positions ? m.max_position * h : 0;
    return p;
}

// Bytes of all weights when block matrices are stored in `weights`; embeddings, LM head, norms
// and routers stay at 16 bits when `weights` is a quantized format (as GPTQ/AWQ checkpoints and
// DeepSeek-V3's FP8 release do), else they use `weights` too.
inline data_size weight_bytes(const parameter_breakdown& p, const number_format& weights) {
    const double other_bpe = weights.quantized() ? 2.0 : weights.bytes_per_element();
    const double quantized = static_cast<double>(p.block_linear()) * weights.bytes_per_element();
    const double kept = static_cast<double>(p.total() - p.block_linear()) * other_bpe;
    return (quantized + kept) * units::B;
}

}  // namespace capplan
