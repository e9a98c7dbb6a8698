// Parameter counts and weight bytes, by component, for every architecture in model_spec.
// Formulas mirror the layer shapes of the HF modelling files (one matrix = in x out numbers):
//   GQA attention   q: h*(H*d), k and v: h*(K*d) each, o: (H*d)*h                  (Ainslie et al. 2023)
//   MLA attention   q_a: h*r_q (+ norm r_q), q_b: r_q*H*(d_nope+d_rope), kv_a: h*(r_kv+d_rope)
//                   (+ norm r_kv), kv_b: r_kv*H*(d_nope+d_v), o: H*d_v*h           (DeepSeek-V2 §2.1)
//   gated MLP       3*h*I (gate, up, down; SwiGLU, Shazeer 2020); plain MLP 2*h*I
//   MoE layer       E routed + S shared experts of 3*h*I_e, router h*E               (Fedus et al. 2022)
//   gated DeltaNet  h*(2*K*dk + 2*V*dv) + h*2V + V*dv*h, conv (2*K*dk + V*dv)*kernel  (Qwen3-Next; Yang et al. 2024)
//   DSA indexer     r_q*Hi*di + h*di + h*Hi, its key norm 2*di                       (DeepSeek-V3.2-Exp)
//   Mamba-2         h*(2*V*dv + 2*G*N + V) + V*dv*h, conv (V*dv + 2*G*N)*(kernel + 1)   (Nemotron-H; Dao & Gu 2024)
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
    std::int64_t attention = 0;           // all layers (linear-attention layers included), biases, sinks and norms of q/k
    std::int64_t dense_mlp = 0;           // dense FFN layers
    std::int64_t routed_experts = 0;      // all routed experts of all MoE layers (their biases included)
    std::int64_t shared_experts = 0;      // with their gate
    std::int64_t router = 0;
    std::int64_t norms = 0;               // layer norms incl. the final one
    std::int64_t vision = 0;              // a multimodal release's vision tower and projector (never run by capplan)
    std::int64_t inactive_experts = 0;    // routed-expert parameters a token does not use

    std::int64_t total() const {
        return embedding + position_embedding + lm_head + attention + dense_mlp + routed_experts + shared_experts +
               router + norms + vision;
    }
    // What a text token uses: the vision tower is not, nor the routed experts it is not sent to.
    std::int64_t active() const { return total() - inactive_experts - vision; }
    // Transformer-block matrices: what weight quantization (int4, fp8, ...) applies to.
    std::int64_t block_linear() const { return attention + dense_mlp + routed_experts + shared_experts; }
};

// One layer's attention: its weight matrices and its vectors (biases, norms, sinks), apart (FLOPs count matrices only).
struct layer_parameters {
    std::int64_t matrices = 0, vectors = 0;
    std::int64_t total() const { return matrices + vectors; }
};

// DeepSeek-V3.2's lightning indexer (DeepSeek-V3.2-Exp inference/model.py, Indexer): wq_b from the query
// latent, wk from the hidden state, weights_proj (one weight per index head) and a LayerNorm on its key.
inline layer_parameters indexer_parameters(const model_spec& m) {
    if (!m.sparse.active()) return {};
    const auto& x = m.sparse;
    const std::int64_t q_in = m.mla_dims.q_lora_rank > 0 ? m.mla_dims.q_lora_rank : m.hidden;
    return {q_in * x.index_heads * x.index_head_dim + m.hidden * x.index_head_dim + m.hidden * x.index_heads,
            2 * x.index_head_dim};
}

inline layer_parameters attention_layer_parameters(const model_spec& m, bool linear_layer) {
    const std::int64_t h = m.hidden;
    layer_parameters a;
    if (linear_layer && m.linear.mamba2) {
        // Mamba-2 (modeling_nemotron_h.py NemotronHMamba2Mixer, Dao & Gu 2024): in_proj h -> z and x (V x dv each),
        // B and C (G x N each) and dt (V); a depthwise conv with bias over x, B, C; dt_bias, A_log and D per head;
        // the gated RMSNorm over V x dv; out_proj.
        const auto& l = m.linear;
        const std::int64_t v = l.value_heads * l.value_head_dim;
        a.matrices = h * (2 * v + 2 * l.key_heads * l.key_head_dim + l.value_heads) + v * h;
        a.vectors = l.conv_channels() * (l.conv_kernel + 1) + 3 * l.value_heads + v;
        return a;
    }
    if (linear_layer) {
        // Gated DeltaNet (transformers modeling_qwen3_next.py Qwen3NextGatedDeltaNet): in_proj_qkvz h -> q, k
        // (key_heads x key_head_dim each), v and the output gate z (value_heads x value_head_dim each); in_proj_ba
        // h -> 2 x value_heads (beta and the decay's input); a depthwise causal conv over q, k, v; out_proj.
        const auto& l = m.linear;
        const std::int64_t v = l.value_heads * l.value_head_dim;
        a.matrices = h * (2 * l.key_heads * l.key_head_dim + 2 * v) + h * 2 * l.value_heads + v * h;
        // The conv weights, dt_bias and A_log per value head, and the gated RMSNorm over a value head.
        a.vectors = l.conv_channels() * l.conv_kernel + 2 * l.value_heads + l.value_head_dim;
        return a;
    }
    if (m.mla) {
        const auto& d = m.mla_dims;
        const std::int64_t qk = d.qk_nope_head_dim + d.qk_rope_head_dim;
        a.matrices = d.q_lora_rank > 0 ? h * d.q_lora_rank + d.q_lora_rank * m.heads * qk : h * m.heads * qk;
        a.matrices += h * (d.kv_lora_rank + d.qk_rope_head_dim) + d.kv_lora_rank * m.heads * (d.qk_nope_head_dim + d.v_head_dim);
        a.matrices += m.heads * d.v_head_dim * h;
        a.vectors = (d.q_lora_rank > 0 ? d.q_lora_rank : 0) + d.kv_lora_rank;  // the latents' norms
        const layer_parameters x = indexer_parameters(m);
        a.matrices += x.matrices;
        a.vectors += x.vectors;
        return a;
    }
    const std::int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
    a.matrices = h * q * (m.attention_output_gate ? 2 : 1) + 2 * h * kv + q * h;
    if (m.qkv_bias) a.vectors += q + 2 * kv;
    if (m.o_bias) a.vectors += h;
    if (m.qk_norm) a.vectors += 2 * m.head_dim;
    if (m.attention_sinks) a.vectors += m.heads;
    return a;
}

// One routed expert (gated: gate, up and down; else up and down), its biases where the model has them
// (gpt-oss: 2I + h).
inline layer_parameters expert_parameters(const model_spec& m) {
    const std::int64_t h = m.hidden, w = m.moe.expert_intermediate;
    return {(m.moe.gated ? 3 : 2) * h * w, m.moe.expert_bias ? 2 * w + h : 0};
}

// The shared experts' matrices in one MoE layer.
inline std::int64_t shared_expert_parameters(const model_spec& m) {
    return m.moe.shared_experts * (m.moe.gated ? 3 : 2) * m.hidden * m.moe.shared_width();
}

inline parameter_breakdown count_parameters(const model_spec& m) {
    parameter_breakdown p;
    const std::int64_t h = m.hidden;
    const std::int64_t norm_size = m.norm == norm_kind::layer_norm ? 2 * h : h;  // LayerNorm: weight + bias

    const std::int64_t matrices = m.gated_mlp ? 3 : 2;
    const std::int64_t dense_layer = matrices * h * m.intermediate +
                                     (m.mlp_bias ? (matrices - 1) * m.intermediate + h : 0);
    const std::int64_t expert = expert_parameters(m).total();
    const std::int64_t shared = shared_expert_parameters(m) + (m.moe.shared_gate ? h : 0);
    const std::int64_t router = h * m.moe.routed_experts + (m.moe.router_bias ? m.moe.routed_experts : 0);
    const std::int64_t full_attention = attention_layer_parameters(m, false).total();
    const std::int64_t linear_attention = attention_layer_parameters(m, true).total();
    m.for_layer_runs(0, m.layers, [&](std::int64_t i, std::int64_t n) {
        if (m.has_mixer(i)) p.attention += n * (m.is_linear_layer(i) ? linear_attention : full_attention);
        if (!m.has_ffn(i)) return;
        if (!m.is_moe_layer(i)) {
            p.dense_mlp += n * dense_layer;
            return;
        }
        p.routed_experts += n * m.moe.routed_experts * expert;
        p.shared_experts += n * shared;
        p.router += n * router;
        p.inactive_experts += n * (m.moe.routed_experts - m.moe.experts_per_token) * expert;
    });

    p.norms = m.layers * m.norms_per_layer * norm_size + norm_size;
    p.embedding = m.vocab * h;
    p.lm_head = m.tied_embeddings ? 0 : m.vocab * h;
    p.position_embedding = m.learned_positions ? m.max_position * h : 0;
    p.vision = m.vision_parameters;
    return p;
}

// Bytes of all weights when block matrices are stored in `weights`; embeddings, LM head, norms
// and routers stay at 16 bits when `weights` is a quantized format (as GPTQ/AWQ checkpoints and
// DeepSeek-V3's FP8 release do), else they use `weights` too.
// With `experts`, the routed experts are stored in that format instead (gpt-oss's MXFP4 release).
inline data_size weight_bytes(const parameter_breakdown& p, const number_format& weights,
                              const number_format* experts = nullptr) {
    const double other_bpe = weights.quantized() ? 2.0 : weights.bytes_per_element();
    const double routed = static_cast<double>(p.routed_experts);
    const double quantized = (static_cast<double>(p.block_linear()) - routed) * weights.bytes_per_element() +
                             routed * (experts ? experts : &weights)->bytes_per_element();
    const double kept = static_cast<double>(p.total() - p.block_linear()) * other_bpe;
    return (quantized + kept) * units::B;
}

}  // namespace capplan
