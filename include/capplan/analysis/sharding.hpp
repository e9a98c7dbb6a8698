// Parameters held by one device under tensor, pipeline and expert parallelism.
//
// Tensor parallelism follows Megatron-LM (Shoeybi et al. 2019, arXiv:1909.08053 §3): attention
// heads, the FFN width and the vocabulary are split over tp; norms, routers and the row-parallel
// output biases are replicated. K/V heads split while kv_heads >= tp; with fewer K/V heads than
// ranks each rank keeps one whole head (replication, as vLLM's QKVParallelLinear does).
// MLA (DeepSeek-V2): the down-projections q_a and kv_a are replicated; q_b, kv_b and o split by head.
// Routed experts are spread whole over ep ranks and each split over etp ranks.
// Pipeline stages hold contiguous layers, as even as possible, extra layers to the middle stages
// first; the embedding lives on the first stage, the final norm and LM head on the last.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capplan/analysis/parameters.hpp"
#include "capplan/spec/scenario.hpp"

namespace capplan {

// Parameters on one device; fractional when a dimension does not split evenly is impossible
// here (checks report it), so these are exact per-rank counts.
struct device_parameters {
    double block_linear = 0.0;  // transformer-block matrices (what weight quantization applies to)
    double other = 0.0;         // embeddings, LM head, norms, routers, replicated biases
    double routed_experts = 0.0;

    double total() const { return block_linear + other; }
    device_parameters& operator+=(const device_parameters& o) {
        block_linear += o.block_linear;
        other += o.other;
        routed_experts += o.routed_experts;
        return *this;
    }
    device_parameters operator*(double n) const { return {block_linear * n, other * n, routed_experts * n}; }
};

// Layers by the cache each keeps per request (analysis/kv_cache.hpp): full attention, sliding-window attention, a
// linear-attention state; layers without a mixer keep none.
struct cache_layers {
    cache_layers() = default;  // not an aggregate: a braced {first, count} always means a layer_range (kv_cache.hpp)
    std::int64_t full = 0, windowed = 0, linear = 0;
};

inline cache_layers count_cache_layers(const model_spec& m, std::int64_t first, std::int64_t count) {
    cache_layers c;
    m.for_layer_runs(first, count, [&](std::int64_t i, std::int64_t n) {
        if (!m.has_mixer(i)) return;
        if (m.is_linear_layer(i)) c.linear += n;
        else if (m.is_sliding_layer(i)) c.windowed += n;
        else c.full += n;
    });
    return c;
}

struct pipeline_stage {
    int first_layer = 0;
    int layers = 0;
    bool has_embedding = false;
    bool has_lm_head = false;
    device_parameters params;  // per device of this stage (one tp/ep rank)
    cache_layers cache;        // its layers by cache kind, counted once for the memory budgets
};

struct weight_sharding {
    std::vector<pipeline_stage> stages;
    int largest_stage = 0;       // index of the stage whose devices hold the most parameters
    std::vector<std::string> problems;  // layouts that cannot split the model (infeasible, not errors)

    const device_parameters& per_device() const { return stages[static_cast<std::size_t>(largest_stage)].params; }
};

namespace detail {

inline double kv_heads_per_rank(const model_spec& m, int tp) {
    return m.kv_heads >= tp ? static_cast<double>(m.kv_heads) / tp : 1.0;
}

// Attention parameters of one layer on one rank (projections, biases, q/k norms); a linear-attention layer's
// heads split over tp like attention heads (vLLM's gated DeltaNet shards them).
inline device_parameters attention_on_device(const model_spec& m, const parallelism_spec& p, bool linear_layer = false) {
    device_parameters d;
    const double h = static_cast<double>(m.hidden), tp = p.attention_tp();
    if (linear_layer) {
        d.block_linear += static_cast<double>(attention_layer_parameters(m, true).total()) / tp;
        return d;
    }
    if (m.mla) {
        const auto& a = m.mla_dims;
        const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
        const double heads = m.heads / tp;
        if (a.q_lora_rank > 0) {
            d.block_linear += h * a.q_lora_rank + a.q_lora_rank * heads * qk;
            d.other += static_cast<double>(a.q_lora_rank);
        } else {
            d.block_linear += h * heads * qk;
        }
        d.block_linear += h * (a.kv_lora_rank + a.qk_rope_head_dim);
        d.other += static_cast<double>(a.kv_lora_rank);
        d.block_linear += a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim);
        d.block_linear += heads * a.v_head_dim * h;
        // The indexer is replicated on every rank (vLLM: ReplicatedLinear).
        const layer_parameters x = indexer_parameters(m);
        d.block_linear += static_cast<double>(x.matrices);
        d.other += static_cast<double>(x.vectors);
    } else {
        const double q = m.heads * static_cast<double>(m.head_dim) / tp;
        const double kv = detail::kv_heads_per_rank(m, p.attention_tp()) * m.head_dim;
        d.block_linear += h * q * (m.attention_output_gate ? 2 : 1) + 2 * h * kv + q * h;
        if (m.qkv_bias) d.block_linear += q + 2 * kv;
        if (m.o_bias) d.other += h;
        if (m.qk_norm) d.other += 2.0 * m.head_dim;
        if (m.attention_sinks) d.other += m.heads / tp;
    }
    return d;
}

// Feed-forward parameters of layer i on one rank: the dense MLP, or the MoE layer's shared experts,
// this rank's routed experts and the replicated router.
inline device_parameters ffn_on_device(const model_spec& m, std::int64_t i, const parallelism_spec& p) {
    device_parameters d;
    const double h = static_cast<double>(m.hidden), tp = p.attention_tp();
    if (!m.is_moe_layer(i)) {
        const double mats = m.gated_mlp ? 3 : 2;
        d.block_linear += mats * h * m.intermediate / tp;
        if (m.mlp_bias) {
            d.block_linear += (mats - 1) * m.intermediate / tp;  // column-parallel biases split
            d.other += h;                                        // the row-parallel bias is replicated
        }
        return d;
    }
    const double expert = static_cast<double>(expert_parameters(m).total());
    const double routed = m.moe.routed_experts * expert / (static_cast<double>(p.ep) * p.etp);
    const double shared = static_cast<double>(shared_expert_parameters(m));
    d.block_linear += routed + shared / tp;
    d.routed_experts += routed;
    d.other += h * m.moe.routed_experts + (m.moe.router_bias ? m.moe.routed_experts : 0) + (m.moe.shared_gate ? h : 0);
    return d;
}

// One transformer layer's parameters on one rank, norms included.
inline device_parameters layer_on_device(const model_spec& m, std::int64_t i, const parallelism_spec& p) {
    device_parameters d;
    if (m.has_mixer(i)) d += attention_on_device(m, p, m.is_linear_layer(i));
    if (m.has_ffn(i)) d += ffn_on_device(m, i, p);
    d.other += m.norms_per_layer * (m.norm == norm_kind::layer_norm ? 2.0 : 1.0) * static_cast<double>(m.hidden);
    return d;
}

// Contiguous layer counts per stage, extra layers to the middle stages first, then the last, then the first.
inline std::vector<int> stage_layers(std::int64_t layers, int pp) {
    std::vector<int> n(static_cast<std::size_t>(pp), static_cast<int>(layers / pp));
    int extra = static_cast<int>(layers % pp);
    std::vector<int> order;
    for (int s = 1; s + 1 < pp; ++s) order.push_back(s);
    if (pp > 1) order.push_back(pp - 1);
    order.push_back(0);
    for (int s : order) {
        if (extra == 0) break;
        ++n[static_cast<std::size_t>(s)];
        --extra;
    }
    return n;
}

}  // namespace detail

inline weight_sharding shard_weights(const model_spec& m, const parallelism_spec& p) {
    weight_sharding w;
    if (m.heads % p.attention_tp() != 0)
        w.problems.push_back("tp = " + std::to_string(p.tp) + " does not divide the " + std::to_string(m.heads) +
                             " attention heads of " + m.name);
    if (!m.mla && m.kv_heads >= p.attention_tp() && m.kv_heads % p.attention_tp() != 0)
        w.problems.push_back("tp = " + std::to_string(p.tp) + " does not divide the " + std::to_string(m.kv_heads) +
                             " key/value heads of " + m.name);
    if (m.linear_layer_count() > 0 && m.linear.value_heads % p.attention_tp() != 0)
        w.problems.push_back("tp = " + std::to_string(p.tp) + " does not divide the " + std::to_string(m.linear.value_heads) +
                             " linear-attention value heads of " + m.name);
    if (m.layers < p.pp)
        w.problems.push_back("pp = " + std::to_string(p.pp) + " exceeds the " + std::to_string(m.layers) + " layers");
    if (m.is_moe() && m.moe.routed_experts % p.ep != 0)
        w.problems.push_back("ep = " + std::to_string(p.ep) + " does not divide the " +
                             std::to_string(m.moe.routed_experts) + " routed experts");
    const int pp = static_cast<int>(std::min<std::int64_t>(p.pp, m.layers));
    const auto counts = detail::stage_layers(m.layers, pp);
    const double h = static_cast<double>(m.hidden);
    const double norm = m.norm == norm_kind::layer_norm ? 2 * h : h;
    int first = 0;
    std::array<std::optional<device_parameters>, model_spec::layer_kinds> per_kind;
    for (int s = 0; s < pp; ++s) {
        pipeline_stage st;
        st.first_layer = first;
        st.layers = counts[static_cast<std::size_t>(s)];
        m.for_layer_runs(first, st.layers, [&](std::int64_t i, std::int64_t n) {  // alike layers: each kind costed once
            std::optional<device_parameters>& kind = per_kind[m.layer_kind(i)];
            if (!kind) kind = detail::layer_on_device(m, i, p);
            st.params += n == 1 ? *kind : *kind * static_cast<double>(n);
        });
        st.cache = count_cache_layers(m, first, st.layers);
        st.has_embedding = s == 0;
        st.has_lm_head = s == pp - 1;
        if (st.has_embedding) {
            st.params.other += static_cast<double>(m.vocab) * h / p.attention_tp();  // vocab-parallel embedding
            if (m.learned_positions) st.params.other += static_cast<double>(m.max_position) * h;
            // A multimodal release's vision tower sits beside the embedding, whole on every rank (vLLM loads it
            // unless told not to; capplan does not run it).
            st.params.other += static_cast<double>(m.vision_parameters);
        }
        if (st.has_lm_head) {
            st.params.other += norm;  // final norm
            // A tied head shares the embedding matrix; on a separate last stage it is a second copy.
            if (!m.tied_embeddings || pp > 1) st.params.other += static_cast<double>(m.vocab) * h / p.attention_tp();
        }
        first += st.layers;
        w.stages.push_back(st);
    }
    for (int s = 1; s < pp; ++s)
        if (w.stages[static_cast<std::size_t>(s)].params.total() > w.stages[static_cast<std::size_t>(w.largest_stage)].params.total())
            w.largest_stage = s;
    return w;
}

// `n` multi-token-prediction modules on the last stage's devices (DeepSeek-V3 arXiv:2412.19437 §2.2): each one
// transformer block (as the model's last layer), the projection M (2h -> h, column-parallel) and its two input norms;
// unless the devices already hold the embedding the modules share (pp = 1, a tied head's copy, DualPipe's rank
// holding both ends: DeepSeek-V3 §3.2.3), a copy of it (Megatron-Core keeps one on the last stage, kept in sync).
inline device_parameters mtp_on_device(const model_spec& m, const parallelism_spec& p, int n, int pp) {
    device_parameters d;
    const double h = static_cast<double>(m.hidden);
    for (int i = 0; i < n; ++i) {
        d += detail::layer_on_device(m, m.layers - 1, p);
        d.block_linear += 2.0 * h * h / p.attention_tp();
        d.other += 2.0 * h;
    }
    const bool embedding_here = pp == 1 || m.tied_embeddings || p.dualpipe();
    if (n > 0 && !embedding_here) d.other += static_cast<double>(m.vocab) * h / p.attention_tp();
    return d;
}

// Bytes of a device's parameters: block matrices in `weights`, the rest in 16 bits when
// `weights` is quantized (the same rule as weight_bytes()).
inline data_size device_weight_bytes(const device_parameters& d, const number_format& weights,
                                     const number_format* experts = nullptr) {
    const double other_bpe = weights.quantized() ? 2.0 : weights.bytes_per_element();
    const double expert_bpe = (experts ? experts : &weights)->bytes_per_element();
    return ((d.block_linear - d.routed_experts) * weights.bytes_per_element() + d.routed_experts * expert_bpe +
            d.other * other_bpe) * units::B;
}

}  // namespace capplan
