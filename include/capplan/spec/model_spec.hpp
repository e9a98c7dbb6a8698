// A transformer's architecture, family-neutral: what parameter, memory and FLOP models need.
// Built from a Hugging Face config.json (see hf_config.hpp) or a catalog entry.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace capplan {

enum class norm_kind { rms_norm, layer_norm };  // LayerNorm carries a bias vector, RMSNorm does not

struct mla_spec {                 // DeepSeek-V2/V3 multi-head latent attention (arXiv:2405.04434 §2.1)
    std::int64_t q_lora_rank = 0;  // 0: queries are projected directly from the hidden state
    std::int64_t kv_lora_rank = 0;
    std::int64_t qk_nope_head_dim = 0;
    std::int64_t qk_rope_head_dim = 0;
    std::int64_t v_head_dim = 0;
};

struct moe_spec {
    std::int64_t routed_experts = 0;           // experts a token may be routed to
    std::int64_t experts_per_token = 0;        // top-k
    std::int64_t shared_experts = 0;           // always-active experts (DeepSeek, Llama 4, Qwen3-Next)
    std::int64_t expert_intermediate = 0;      // FFN width of one expert
    std::int64_t shared_intermediate = 0;      // a shared expert's width when it differs (Qwen3-Next: 512); 0 = expert_intermediate
    bool expert_bias = false;                  // biases on the experts' projections (gpt-oss)
    bool router_bias = false;                  // a bias per expert on the router (gpt-oss; DeepSeek's score correction)
    bool gated = true;                         // gate, up and down per expert; false: up and down (Nemotron-H's ReLU^2)
    bool shared_gate = false;                  // a sigmoid gate (h x 1) on the shared expert's output (Qwen3-Next)

    std::int64_t shared_width() const { return shared_intermediate > 0 ? shared_intermediate : expert_intermediate; }
};

// Gated linear attention / state-space layers (Qwen3-Next's gated DeltaNet, Yang et al. 2024 arXiv:2412.06464;
// Mamba-2, Dao & Gu 2024 arXiv:2405.21060): each request keeps a fixed-size recurrent state per layer, value_heads
// x key_head_dim x value_head_dim, and a short causal convolution's last conv_kernel - 1 inputs, whatever its context.
// Mamba-2 maps onto the same fields: value heads = mamba_num_heads of mamba_head_dim, key heads = n_groups of
// ssm_state_size (B and C are shared per group); its layer differs in its projections (mamba2 below).
struct linear_attention_spec {
    std::int64_t key_heads = 0, value_heads = 0, key_head_dim = 0, value_head_dim = 0, conv_kernel = 0;
    bool mamba2 = false;
    double state_element_bytes = 2.0;  // the recurrent state's format (Nemotron-H keeps it in fp32: mamba_ssm_cache_dtype)
    std::int64_t conv_channels() const { return 2 * key_heads * key_head_dim + value_heads * value_head_dim; }
};

// DeepSeek Sparse Attention (DeepSeek-V3.2): a lightning indexer (index_heads x index_head_dim, fp8) scores every
// cached key, and the MLA core attends only to the top `topk` of them (DeepSeek-V3.2-Exp report §2.1).
struct sparse_attention_spec {
    std::int64_t index_heads = 0, index_head_dim = 0, topk = 0;
    bool active() const { return topk > 0; }
};

struct model_spec {
    std::string name;
    std::string model_type;  // HF model_type: llama, mixtral, qwen3_moe, deepseek_v3, gemma2, gpt2, ...
    std::string source;

    // Hugging Face's own modules for this model_type (what PEFT wraps and autocast casts): one fused q/k/v projection
    // (GPT-2's c_attn, GPT-NeoX's query_key_value, Phi-3's qkv_proj), one fused gate/up projection (Phi-3's
    // gate_up_proj); other types keep q, k, v (and gate, up) apart.
    bool hf_fused_qkv() const { return model_type == "gpt2" || model_type == "gpt_neox" || model_type == "phi3"; }
    bool hf_fused_gate_up() const { return model_type == "phi3"; }

    std::int64_t hidden = 0;
    std::int64_t layers = 0;
    std::int64_t heads = 0;
    std::int64_t kv_heads = 0;
    std::int64_t head_dim = 0;
    std::int64_t intermediate = 0;  // dense FFN width
    std::int64_t vocab = 0;
    std::int64_t max_position = 0;  // 0 = not stated

    bool tied_embeddings = false;
    bool gated_mlp = true;          // SwiGLU / GeGLU: gate, up and down matrices
    bool qkv_bias = false;
    bool o_bias = false;
    bool mlp_bias = false;
    bool qk_norm = false;           // per-head RMSNorm on q and k (Qwen3)
    norm_kind norm = norm_kind::rms_norm;
    int norms_per_layer = 2;        // Gemma 2 has 4 (pre/post attention and pre/post FFN)
    bool learned_positions = false; // GPT-2/GPT-3 absolute position embeddings

    bool mla = false;
    mla_spec mla_dims;
    moe_spec moe;

    bool attention_sinks = false;   // a learned logit per head and layer (gpt-oss)
    bool attention_output_gate = false;  // q_proj also yields a sigmoid gate on the output (Qwen3-Next: 2x its width)
    linear_attention_spec linear;
    sparse_attention_spec sparse;
    std::int64_t vision_parameters = 0;  // a vision tower and projector (multimodal releases): counted, never run
    // The routed experts' format as released when only they are quantised (gpt-oss: "mxfp4", from its
    // quantization_config); a scenario's precision.expert_weights overrides it.
    std::string released_expert_format;

    std::int64_t sliding_window = 0;  // 0 = full attention everywhere
    // Local layers attend within fixed chunks of sliding_window tokens instead of a sliding window (Llama 4's
    // chunked attention, attention_chunk_size): a token at position p sees p - floor(p / W) x W + 1 keys.
    bool chunked_local = false;
    // Per layer: true where the layer is a mixture of experts / uses the sliding window / is a linear-attention layer.
    std::vector<bool> moe_layer;
    std::vector<bool> sliding_layer;
    std::vector<bool> linear_layer;
    // Hybrid block stacks (Nemotron-H's hybrid_override_pattern) run a mixer or a feed-forward per block, not
    // both: true where layer i has no attention / linear mixer, or no feed-forward.
    std::vector<bool> mixer_free_layer, ffn_free_layer;

    bool is_moe() const { return moe.routed_experts > 0; }
    // Layer i is a mixture of experts / keeps only the sliding window.
    bool is_moe_layer(std::int64_t i) const {
        return is_moe() && i >= 0 && static_cast<std::size_t>(i) < moe_layer.size() && moe_layer[static_cast<std::size_t>(i)];
    }
    bool is_sliding_layer(std::int64_t i) const {
        return sliding_window > 0 && i >= 0 && static_cast<std::size_t>(i) < sliding_layer.size() &&
               sliding_layer[static_cast<std::size_t>(i)];
    }
    bool has_mixer(std::int64_t i) const {
        return !(i >= 0 && static_cast<std::size_t>(i) < mixer_free_layer.size() && mixer_free_layer[static_cast<std::size_t>(i)]);
    }
    bool has_ffn(std::int64_t i) const {
        return !(i >= 0 && static_cast<std::size_t>(i) < ffn_free_layer.size() && ffn_free_layer[static_cast<std::size_t>(i)]);
    }
    bool is_linear_layer(std::int64_t i) const {
        return i >= 0 && static_cast<std::size_t>(i) < linear_layer.size() && linear_layer[static_cast<std::size_t>(i)];
    }
    // What sets a layer's shape apart, as a number below layer_kinds (MoE FFN, linear attention, a mixer, an FFN):
    // the per-layer formulas depend on nothing else, so a stage of alike layers is computed once.
    static constexpr unsigned layer_kinds = 16;  // four yes/no traits
    unsigned layer_kind(std::int64_t i) const {
        return (is_moe_layer(i) ? 1u : 0u) | (is_linear_layer(i) ? 2u : 0u) | (has_mixer(i) ? 4u : 0u) | (has_ffn(i) ? 8u : 0u);
    }
    // Layers from this one on are alike in every trait above: no per-layer list reaches them (a dense model's all are).
    std::int64_t alike_from() const {
        const std::size_t listed = std::max({moe_layer.size(), sliding_layer.size(), linear_layer.size(),
                                             mixer_free_layer.size(), ffn_free_layer.size()});
        return std::min(layers, static_cast<std::int64_t>(listed));
    }
    // Drops each per-layer list's trailing entries that say what a layer beyond the list is anyway (no MoE, no sliding
    // window, no linear attention, a mixer and an FFN): the same model, whose alike layers alike_from() then finds
    // when its config lists every layer.
    void trim_layer_lists() {
        for (std::vector<bool>* list : {&moe_layer, &sliding_layer, &linear_layer, &mixer_free_layer, &ffn_free_layer})
            while (!list->empty() && !list->back()) list->pop_back();
    }
    // f(i, n) over the layers [first, first + count): each layer before alike_from() alone (n = 1), then the alike
    // ones at once, n layers like layer i (a layer's value computed once; a caller that must round as a per-layer
    // sum still adds it n times).
    template <class F>
    void for_layer_runs(std::int64_t first, std::int64_t count, F&& f) const {
        const std::int64_t end = first + count, alike = std::max(first, alike_from());
        for (std::int64_t i = first; i < std::min(end, alike); ++i) f(i, std::int64_t{1});
        if (end > alike) f(alike, end - alike);
    }
    // Layers a per-layer list marks (layers beyond a list are unmarked).
    static std::int64_t marked(const std::vector<bool>& list) {
        return static_cast<std::int64_t>(std::count(list.begin(), list.end(), true));
    }
    std::int64_t moe_layer_count() const { return marked(moe_layer); }
    std::int64_t ffn_free_layer_count() const { return marked(ffn_free_layer); }
    std::int64_t mixer_free_layer_count() const { return marked(mixer_free_layer); }
    std::int64_t sliding_layer_count() const { return marked(sliding_layer); }
    std::int64_t linear_layer_count() const { return marked(linear_layer); }
    // Layers with a dense feed-forward: neither feed-forward-free nor mixture-of-experts.
    std::int64_t dense_ffn_layer_count() const { return layers - ffn_free_layer_count() - moe_layer_count(); }
    // Residual branches: a mixer's and a feed-forward's per layer, where the layer has them.
    std::int64_t residual_branch_count() const { return 2 * layers - ffn_free_layer_count() - mixer_free_layer_count(); }
};

}  // namespace capplan
