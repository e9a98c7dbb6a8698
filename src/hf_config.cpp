// Family rules that turn HF config fields into a model_spec. Each rule names the HF modelling
// file whose layer structure it mirrors (transformers/models/<family>/modeling_<family>.py).
#include "capplan/spec/hf_config.hpp"

#include <algorithm>

#include "capplan/dtype.hpp"
#include "hf_config_json.hpp"

namespace capplan {

const std::vector<std::string>& supported_model_types() {
    static const std::vector<std::string> types{"llama",       "mistral",  "mixtral",      "qwen2",     "qwen3",
                                                "qwen3_moe",   "qwen3_next", "deepseek_v3", "deepseek_v32", "kimi_k2",
                                                "glm4_moe",    "gpt_oss",  "gemma2",       "gemma3",    "gemma3_text",
                                                "llama4",      "nemotron_h", "phi3",   "gpt2",         "gpt_neox"};
    return types;
}

const std::vector<std::string>& hf_config_known_keys() {
    static const std::vector<std::string> keys{
        "model_type", "architectures", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size", "max_position_embeddings",
        "tie_word_embeddings", "hidden_act", "hidden_activation", "attention_bias", "mlp_bias", "sliding_window",
        "use_sliding_window", "max_window_layers", "rope_theta", "rms_norm_eps", "layer_norm_eps",
        "layer_norm_epsilon", "torch_dtype", "num_local_experts", "num_experts", "num_experts_per_tok",
        "moe_intermediate_size", "decoder_sparse_step", "mlp_only_layers", "norm_topk_prob", "q_lora_rank",
        "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_routed_experts",
        "n_shared_experts", "first_k_dense_replace", "moe_layer_freq", "n_group", "topk_group",
        "num_nextn_predict_layers", "query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping",
        "original_max_position_embeddings", "n_embd", "n_layer", "n_head", "n_inner", "n_positions",
        "activation_function", "rotary_pct", "use_parallel_residual",
        // gpt_oss, qwen3_next, deepseek_v32, glm4_moe, gemma3 (read below or size-neutral)
        "layer_types", "num_local_experts", "experts_per_token", "swiglu_limit", "initial_context_length",
        "full_attention_interval", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
        "linear_value_head_dim", "linear_conv_kernel_dim", "shared_expert_intermediate_size", "partial_rotary_factor",
        "index_n_heads", "index_head_dim", "index_topk", "use_qk_norm", "qkv_bias", "routed_scaling_factor",
        "scoring_func", "topk_method", "sliding_window_pattern", "rope_local_base_freq", "text_config",
        "vision_config", "mm_tokens_per_image", "router_aux_loss_coef", "output_router_logits",
        "attention_chunk_size", "intermediate_size_mlp", "interleave_moe_layer_step", "moe_layers", "no_rope_layers",
        "quantization_config", "hybrid_override_pattern", "mamba_num_heads", "mamba_head_dim", "n_groups",
        "ssm_state_size", "conv_kernel", "moe_shared_expert_intermediate_size", "mamba_ssm_cache_dtype",
        "mlp_hidden_act", "use_conv_bias", "mamba_proj_bias"};
    return keys;
}

namespace detail {
namespace {

// Bounds on a config's sizes: at least eight times the largest in the catalog (models/llm: hidden
// 16,384, 126 layers and a 53,248-wide MLP in Llama-3.1-405B; 256 experts of 2,048 and a 163,840
// context in DeepSeek-V3; a 256,000-token vocabulary in Gemma-2-27B; head_dim 256 in Gemma-2),
// low enough that per-layer tables stay small and that parameter counts stay exact in int64: routed and shared
// experts are each at most experts x 3 x expert MLP x hidden x layers = 3 x 2^12 x 2^17 x 2^17 x 2^12
// = 3 x 2^58, the dense MLP 3 x 2^20 x 2^17 x 2^12, attention 4 x 2^24 x 2^17 x 2^12: far below 2^63.
constexpr std::int64_t max_hidden = std::int64_t{1} << 17, max_layers = std::int64_t{1} << 12,
                       max_heads = std::int64_t{1} << 12, max_vocab = std::int64_t{1} << 22,
                       max_intermediate = std::int64_t{1} << 20, max_expert_intermediate = std::int64_t{1} << 17,
                       max_experts = std::int64_t{1} << 12, max_positions = std::int64_t{1} << 31;

void read_gpt2(object_reader& r, model_spec& m) {
    // GPT-2 / GPT-3 layout (modeling_gpt2.py): fused c_attn with bias, LayerNorm with bias,
    // 4h MLP with bias, learned absolute positions, tied embeddings.
    m.hidden = r.required_integer("n_embd", 1, max_hidden);
    m.layers = r.required_integer("n_layer", 1, max_layers);
    m.heads = r.required_integer("n_head", 1, max_heads);
    m.kv_heads = m.heads;
    m.head_dim = m.hidden / m.heads;
    m.intermediate = r.integer("n_inner", 1, max_intermediate).value_or(4 * m.hidden);
    m.vocab = r.required_integer("vocab_size", 1, max_vocab);
    m.max_position = r.required_integer("n_positions", 1, max_positions);
    m.tied_embeddings = r.boolean("tie_word_embeddings").value_or(true);
    m.gated_mlp = false;
    m.qkv_bias = m.o_bias = m.mlp_bias = true;
    m.norm = norm_kind::layer_norm;
    m.learned_positions = true;
}

void read_common(object_reader& r, model_spec& m, const std::string& type) {
    m.hidden = r.required_integer("hidden_size", 1, max_hidden);
    m.layers = r.required_integer("num_hidden_layers", 1, max_layers);
    m.heads = r.required_integer("num_attention_heads", 1, max_heads);
    m.kv_heads = r.integer("num_key_value_heads", 1, max_heads).value_or(m.heads);
    if (m.heads % m.kv_heads != 0)
        throw config_error(r.path("num_key_value_heads"), std::to_string(m.kv_heads),
                           "must divide num_attention_heads (" + std::to_string(m.heads) + ")",
                           "a divisor of num_attention_heads");
    m.head_dim = r.integer("head_dim", 1, max_heads).value_or(m.hidden / m.heads);
    m.vocab = r.required_integer("vocab_size", 1, max_vocab);
    m.max_position = r.integer("max_position_embeddings", 1, max_positions).value_or(0);
    // gemma2 ties by default (Gemma2Config); the others default to untied.
    m.tied_embeddings = r.boolean("tie_word_embeddings").value_or(type == "gemma2" || type == "gemma3" || type == "gemma3_text");
    // GPTNeoXConfig and GptOssConfig default to biased projections.
    const bool attention_bias = r.boolean("attention_bias").value_or(type == "gpt_neox" || type == "gpt_oss");
    m.qkv_bias = attention_bias || type == "qwen2";  // Qwen2 always has q/k/v biases (modeling_qwen2.py)
    m.o_bias = attention_bias && type != "glm4_moe";  // GLM-4.5's o_proj has none (modeling_glm4_moe.py)
    m.mlp_bias = r.boolean("mlp_bias").value_or(false);
}

// "layer_types" (transformers >= 4.53: one "sliding_attention" / "full_attention" / "linear_attention" per layer).
std::optional<std::vector<std::string>> layer_types(object_reader& r, std::int64_t layers) {
    const json* v = r.get("layer_types");
    if (!v || v->is_null()) return std::nullopt;
    if (!v->is_array() || static_cast<std::int64_t>(v->size()) != layers)
        r.wrong_type("layer_types", *v, "a list of num_hidden_layers (" + std::to_string(layers) + ") layer types");
    std::vector<std::string> out;
    for (const auto& x : *v) {
        const std::string t = x.is_string() ? x.get<std::string>() : "";
        if (t != "sliding_attention" && t != "full_attention" && t != "linear_attention" && t != "chunked_attention")
            r.wrong_type("layer_types", *v, "sliding_attention, full_attention, chunked_attention or linear_attention per layer");
        out.push_back(t);
    }
    return out;
}

void read_sliding_window(object_reader& r, model_spec& m, const std::string& type) {
    m.sliding_layer.assign(static_cast<std::size_t>(m.layers), false);
    if (type == "gemma3" || type == "gemma3_text") {
        // Gemma 3: five local layers to one global (Gemma3TextConfig: sliding_window 4096, sliding_window_pattern 6
        // by default; layer i is global when (i + 1) % 6 == 0; Gemma 3 report arXiv:2503.19786 §2.2).
        m.sliding_window = r.integer("sliding_window", 1, max_positions).value_or(4096);
        const auto types = layer_types(r, m.layers);
        const auto pattern = r.integer("sliding_window_pattern", 1, max_layers).value_or(6);
        for (std::int64_t i = 0; i < m.layers; ++i)
            m.sliding_layer[static_cast<std::size_t>(i)] =
                types ? (*types)[static_cast<std::size_t>(i)] == "sliding_attention" : (i + 1) % pattern != 0;
        return;
    }
    const auto window = type == "gpt_oss" ? r.integer("sliding_window", 1, max_positions).value_or(128)  // GptOssConfig
                                          : r.integer("sliding_window", 1, max_positions);
    if (!window) return;
    if (type == "gpt_oss") {
        // gpt-oss alternates banded (128-token) and dense layers, banded first (layer_types; the model card).
        m.sliding_window = *window;
        const auto types = layer_types(r, m.layers);
        for (std::int64_t i = 0; i < m.layers; ++i)
            m.sliding_layer[static_cast<std::size_t>(i)] = types ? (*types)[static_cast<std::size_t>(i)] == "sliding_attention" : i % 2 == 0;
        return;
    }
    if (type == "gemma2") {
        // Gemma 2 alternates local (sliding) and global layers, starting with local
        // (modeling_gemma2.py: is_sliding = not bool(layer_idx % 2); Gemma 2 report §2).
        m.sliding_window = *window;
        for (std::int64_t i = 0; i < m.layers; i += 2) m.sliding_layer[static_cast<std::size_t>(i)] = true;
        return;
    }
    if (type == "qwen2" || type == "qwen3" || type == "qwen3_moe" || type == "qwen3_next") {
        // Qwen: window only when use_sliding_window, on layers >= max_window_layers.
        if (!r.boolean("use_sliding_window").value_or(false)) return;
        const auto from = r.integer("max_window_layers", 0, max_layers).value_or(0);
        m.sliding_window = *window;
        for (std::int64_t i = from; i < m.layers; ++i) m.sliding_layer[static_cast<std::size_t>(i)] = true;
        return;
    }
    m.sliding_window = *window;  // Mistral, Mixtral, Phi-3: every layer uses the window
    m.sliding_layer.assign(static_cast<std::size_t>(m.layers), true);
}

void read_moe(object_reader& r, model_spec& m, const std::string& type) {
    m.moe_layer.assign(static_cast<std::size_t>(m.layers), false);
    if (type == "mixtral") {
        m.moe.routed_experts = r.required_integer("num_local_experts", 1, max_experts);
        m.moe.experts_per_token = r.required_integer("num_experts_per_tok", 1, max_experts);
        m.moe.expert_intermediate = m.intermediate;
        m.moe_layer.assign(static_cast<std::size_t>(m.layers), true);
    } else if (type == "gpt_oss") {
        // modeling_gpt_oss.py: every layer's MLP is routed (num_local_experts, top experts_per_token), experts of width
        // intermediate_size with biases on gate_up and down, a router with a bias.
        m.moe.routed_experts = r.required_integer("num_local_experts", 1, max_experts);
        const auto top = r.integer("num_experts_per_tok", 1, max_experts);
        m.moe.experts_per_token = top ? *top : r.required_integer("experts_per_token", 1, max_experts);
        m.moe.expert_intermediate = m.intermediate;
        m.moe.expert_bias = m.moe.router_bias = true;
        m.moe_layer.assign(static_cast<std::size_t>(m.layers), true);
    } else if (type == "qwen3_moe" || type == "qwen3_next") {
        // modeling_qwen3_moe.py: a layer is sparse unless listed in mlp_only_layers, and only
        // every decoder_sparse_step-th layer ((i + 1) % step == 0).
        m.moe.routed_experts = r.required_integer("num_experts", 1, max_experts);
        m.moe.experts_per_token = r.required_integer("num_experts_per_tok", 1, max_experts);
        m.moe.expert_intermediate = r.required_integer("moe_intermediate_size", 1, max_expert_intermediate);
        const auto step = r.integer("decoder_sparse_step", 1, max_layers).value_or(1);
        std::vector<std::int64_t> dense_only;
        if (const json* v = r.get("mlp_only_layers"); v && !v->is_null()) {
            if (!v->is_array()) r.wrong_type("mlp_only_layers", *v, "a list of layer indices");
            for (const auto& x : *v) {
                if (!x.is_number_integer()) r.wrong_type("mlp_only_layers", *v, "a list of layer indices");
                dense_only.push_back(x.get<std::int64_t>());
            }
        }
        for (std::int64_t i = 0; i < m.layers; ++i)
            m.moe_layer[static_cast<std::size_t>(i)] =
                std::find(dense_only.begin(), dense_only.end(), i) == dense_only.end() && (i + 1) % step == 0;
        // Qwen3-Next (modeling_qwen3_next.py Qwen3NextSparseMoeBlock): one shared expert of its own width, gated
        // by a sigmoid of h x 1. Qwen3-Coder's qwen3_moe config states a width of 0: none.
        const auto shared = r.integer("shared_expert_intermediate_size", 0, max_expert_intermediate).value_or(0);
        if (shared > 0) {
            m.moe.shared_experts = 1;
            m.moe.shared_intermediate = shared;
            m.moe.shared_gate = type == "qwen3_next";
        }
    } else if (type == "deepseek_v3" || type == "deepseek_v32" || type == "kimi_k2" || type == "glm4_moe") {
        // modeling_deepseek_v3.py (Kimi K2 and DeepSeek-V3.2 keep its layout; modeling_glm4_moe.py likewise): MoE
        // from layer first_k_dense_replace on, every moe_layer_freq-th; routers carry a per-expert score-correction
        // bias (aux-loss-free balancing, DeepSeek-V3 §2.1.2; GLM's e_score_correction_bias).
        m.moe.routed_experts = r.required_integer("n_routed_experts", 1, max_experts);
        m.moe.experts_per_token = r.required_integer("num_experts_per_tok", 1, max_experts);
        m.moe.shared_experts = r.integer("n_shared_experts", 0, max_experts).value_or(0);
        m.moe.expert_intermediate = r.required_integer("moe_intermediate_size", 1, max_expert_intermediate);
        m.moe.router_bias = true;
        const auto first_dense = r.integer("first_k_dense_replace", 0, max_layers).value_or(0);
        const auto freq = r.integer("moe_layer_freq", 1, max_layers).value_or(1);
        for (std::int64_t i = first_dense; i < m.layers; ++i)
            m.moe_layer[static_cast<std::size_t>(i)] = (i % freq) == 0;
    }
    if (m.is_moe() && m.moe.experts_per_token > m.moe.routed_experts)
        throw config_error(r.path("num_experts_per_tok"), std::to_string(m.moe.experts_per_token),
                           "more experts per token than experts", "at most " + std::to_string(m.moe.routed_experts));
}

// Gemma 3's text model: Gemma3TextConfig's defaults for what a release's config.json leaves out
// (transformers configuration_gemma3.py: vocab 262,208, 8 heads of 256, 4 KV heads, 131,072 positions).
void read_gemma3_text(object_reader& r, model_spec& m) {
    m.hidden = r.integer("hidden_size", 1, max_hidden).value_or(2304);
    m.layers = r.integer("num_hidden_layers", 1, max_layers).value_or(26);
    m.heads = r.integer("num_attention_heads", 1, max_heads).value_or(8);
    m.kv_heads = r.integer("num_key_value_heads", 1, max_heads).value_or(4);
    if (m.heads % m.kv_heads != 0)
        throw config_error(r.path("num_key_value_heads"), std::to_string(m.kv_heads),
                           "must divide num_attention_heads (" + std::to_string(m.heads) + ")", "a divisor of num_attention_heads");
    m.head_dim = r.integer("head_dim", 1, max_heads).value_or(256);
    m.intermediate = r.integer("intermediate_size", 1, max_intermediate).value_or(9216);
    m.vocab = r.integer("vocab_size", 1, max_vocab).value_or(262208);
    m.max_position = r.integer("max_position_embeddings", 1, max_positions).value_or(131072);
    m.tied_embeddings = r.boolean("tie_word_embeddings").value_or(true);
    m.qkv_bias = m.o_bias = r.boolean("attention_bias").value_or(false);
    m.qk_norm = true;  // Gemma3Attention's q_norm and k_norm
    m.norms_per_layer = 4;
}

// Patches of a square image.
std::int64_t patches_of(std::int64_t image, std::int64_t patch) { return (image / patch) * (image / patch); }

// A ViT encoder's layers and patch embedding: per layer q, k, v, o with biases (4d^2 + 4d), a 2-matrix MLP with
// biases (2dI + I + d) and two LayerNorms (4d); the patch embedding channels x patch^2 x d. Its bias, the position
// embeddings, extra norms and projectors differ by family and are added by the callers.
std::int64_t vit_parameters(std::int64_t d, std::int64_t I, std::int64_t L, std::int64_t patch, std::int64_t channels) {
    return L * (4 * d * d + 4 * d + 2 * d * I + I + d + 4 * d) + channels * patch * patch * d;
}

// A SigLIP vision tower (Gemma 3's, vision_config) and Gemma 3's projector into the text model, counted so that
// totals match the multimodal releases: per layer q, k, v, o with biases, a 2-matrix MLP with biases and two
// LayerNorms; patch embedding, one position embedding per patch, a final LayerNorm; the projector (d_v x h) and
// its RMSNorm (modeling_siglip.py, modeling_gemma3.py Gemma3MultiModalProjector).
std::int64_t siglip_parameters(object_reader& v, std::int64_t text_hidden) {
    const std::int64_t d = v.integer("hidden_size", 1, max_hidden).value_or(768);
    const std::int64_t I = v.integer("intermediate_size", 1, max_intermediate).value_or(3072);
    const std::int64_t L = v.integer("num_hidden_layers", 1, max_layers).value_or(12);
    const std::int64_t patch = v.integer("patch_size", 1, 1024).value_or(16);
    const std::int64_t image = v.integer("image_size", 1, 1 << 16).value_or(224);
    const std::int64_t channels = v.integer("num_channels", 1, 16).value_or(3);
    v.allow({"model_type", "num_attention_heads", "vision_use_head", "layer_norm_eps", "hidden_act", "attention_dropout"});
    // The patch embedding's bias, one position per patch, the final LayerNorm, the projector and its norm.
    return vit_parameters(d, I, L, patch, channels) + d + patches_of(image, patch) * d + 2 * d + d * text_hidden + d;
}

// Llama 4's text model (modeling_llama4.py, Llama4TextConfig): dense layers of intermediate_size_mlp, MoE layers
// (moe_layers, else every interleave_moe_layer_step-th from step - 1) of num_local_experts routed experts of
// intermediate_size plus one shared expert of the same width, router without bias; RoPE layers attend within
// chunks of attention_chunk_size and every fourth (no_rope_layers: 0) is global (iRoPE; the default when the
// release's config leaves no_rope_layers empty).
void read_llama4_text(object_reader& r, model_spec& m) {
    read_common(r, m, "llama4");
    const std::int64_t expert = r.required_integer("intermediate_size", 1, max_expert_intermediate);
    m.intermediate = r.integer("intermediate_size_mlp", 1, max_intermediate).value_or(expert);
    m.moe.routed_experts = r.required_integer("num_local_experts", 1, max_experts);
    m.moe.experts_per_token = r.integer("num_experts_per_tok", 1, max_experts).value_or(1);
    m.moe.expert_intermediate = expert;
    m.moe.shared_experts = 1;
    const auto step = r.integer("interleave_moe_layer_step", 1, max_layers).value_or(1);
    m.moe_layer.assign(static_cast<std::size_t>(m.layers), false);
    const json* listed = r.get("moe_layers");
    for (std::int64_t i = 0; i < m.layers; ++i) m.moe_layer[static_cast<std::size_t>(i)] = (i + 1) % step == 0;
    if (listed && !listed->is_null()) {
        if (!listed->is_array()) r.wrong_type("moe_layers", *listed, "a list of layer indices below num_hidden_layers");
        if (!listed->empty()) m.moe_layer.assign(static_cast<std::size_t>(m.layers), false);
        for (const auto& x : *listed) {
            if (!x.is_number_integer() || x.get<std::int64_t>() < 0 || x.get<std::int64_t>() >= m.layers)
                r.wrong_type("moe_layers", *listed, "a list of layer indices below num_hidden_layers");
            m.moe_layer[static_cast<std::size_t>(x.get<std::int64_t>())] = true;
        }
    }
    m.sliding_layer.assign(static_cast<std::size_t>(m.layers), false);
    if (const auto chunk = r.integer("attention_chunk_size", 1, max_positions)) {
        m.sliding_window = *chunk;
        m.chunked_local = true;
        // no_rope_layers: one 0/1 per layer (1: RoPE and chunked); empty or absent: transformers' default.
        const json* rope = r.get("no_rope_layers");
        const bool given = rope && rope->is_array() && !rope->empty();
        const std::string expected = "a list of num_hidden_layers (" + std::to_string(m.layers) + ") values 0 or 1";
        if (rope && !rope->is_null() && !rope->is_array()) r.wrong_type("no_rope_layers", *rope, expected);
        if (given && static_cast<std::int64_t>(rope->size()) != m.layers) r.wrong_type("no_rope_layers", *rope, expected);
        for (std::int64_t i = 0; i < m.layers; ++i) {
            bool uses_rope = (i + 1) % 4 != 0;
            if (given) {
                const json& x = (*rope)[static_cast<std::size_t>(i)];
                if (!x.is_number_integer() || (x.get<std::int64_t>() != 0 && x.get<std::int64_t>() != 1))
                    r.wrong_type("no_rope_layers", *rope, expected);
                uses_rope = x.get<std::int64_t>() == 1;
            }
            m.sliding_layer[static_cast<std::size_t>(i)] = uses_rope;
        }
    }
}

// Llama 4's vision tower and projector (modeling_llama4.py): an unfold patch embedding (no bias), a class
// embedding, one position embedding per patch and the class token, pre and post LayerNorms, layers of q, k, v, o
// and a 2-matrix MLP with biases and two LayerNorms, the pixel-shuffle adapter (Llama4VisionMLP2: fc1
// intermediate_size -> projector_input_dim, fc2 projector_output_dim -> projector_output_dim, no biases) and the
// projector into the text model (vision_output_dim x h, no bias).
std::int64_t llama4_vision_parameters(object_reader& v, std::int64_t text_hidden) {
    const std::int64_t d = v.required_integer("hidden_size", 1, max_hidden);
    const std::int64_t I = v.required_integer("intermediate_size", 1, max_intermediate);
    const std::int64_t L = v.required_integer("num_hidden_layers", 1, max_layers);
    const std::int64_t patch = v.required_integer("patch_size", 1, 1024);
    const std::int64_t image = v.required_integer("image_size", 1, 1 << 16);
    const std::int64_t channels = v.integer("num_channels", 1, 16).value_or(3);
    const std::int64_t in = v.required_integer("projector_input_dim", 1, max_intermediate);
    const std::int64_t out = v.required_integer("projector_output_dim", 1, max_intermediate);
    const std::int64_t vision_out = v.integer("vision_output_dim", 1, max_intermediate).value_or(out);
    v.allow({"pixel_shuffle_ratio", "model_type", "num_attention_heads", "norm_eps", "hidden_act", "attention_dropout",
             "initializer_range", "multi_modal_projector_bias", "projector_dropout", "rope_theta", "torch_dtype",
             "vision_feature_layer", "vision_feature_select_strategy"});
    // The class token's embedding, positions for the patches and the class token, pre and post LayerNorms, the
    // adapter and the projector (the unfold patch embedding has no bias).
    return vit_parameters(d, I, L, patch, channels) + d + (patches_of(image, patch) + 1) * d + 4 * d + I * in +
           out * out + vision_out * text_hidden;
}

// Nemotron-H (modeling_nemotron_h.py): a stack of single-purpose blocks, hybrid_override_pattern naming each: M a
// Mamba-2 mixer, * attention, - a ReLU^2 MLP, E a mixture of ReLU^2 experts with a shared expert; one RMSNorm per
// block. capplan's layers are the blocks, each without the part it lacks.
void read_nemotron_h(object_reader& r, model_spec& m) {
    const std::string pattern = r.required_string("hybrid_override_pattern");
    if (static_cast<std::int64_t>(pattern.size()) != m.layers || pattern.find_first_not_of("M*-E") != std::string::npos)
        throw config_error(r.path("hybrid_override_pattern"), "'" + pattern.substr(0, 64) + "'",
                           "not one of M, *, - or E per layer", "num_hidden_layers (" + std::to_string(m.layers) + ") such letters");
    const auto n = static_cast<std::size_t>(m.layers);
    m.linear_layer.assign(n, false);
    m.moe_layer.assign(n, false);
    m.sliding_layer.assign(n, false);
    m.mixer_free_layer.assign(n, false);
    m.ffn_free_layer.assign(n, false);
    for (std::size_t i = 0; i < n; ++i) {
        const char c = pattern[i];
        m.linear_layer[i] = c == 'M';
        m.moe_layer[i] = c == 'E';
        m.mixer_free_layer[i] = c == '-' || c == 'E';
        m.ffn_free_layer[i] = c == 'M' || c == '*';
    }
    auto& l = m.linear;
    l.mamba2 = true;
    l.value_heads = r.required_integer("mamba_num_heads", 1, max_heads);
    l.value_head_dim = r.required_integer("mamba_head_dim", 1, max_heads);
    l.key_heads = r.integer("n_groups", 1, max_heads).value_or(1);
    l.key_head_dim = r.required_integer("ssm_state_size", 1, max_heads);
    l.conv_kernel = r.integer("conv_kernel", 1, 64).value_or(4);
    if (const auto dtype = r.string("mamba_ssm_cache_dtype"))
        l.state_element_bytes = find_format(*dtype, r.path("mamba_ssm_cache_dtype")).bytes_per_element();
    m.gated_mlp = false;  // ReLU^2: up and down
    m.norms_per_layer = 1;
    if (m.moe_layer_count() > 0) {
        m.moe.routed_experts = r.required_integer("n_routed_experts", 1, max_experts);
        m.moe.experts_per_token = r.required_integer("num_experts_per_tok", 1, max_experts);
        m.moe.expert_intermediate = r.required_integer("moe_intermediate_size", 1, max_expert_intermediate);
        m.moe.shared_experts = r.integer("n_shared_experts", 0, max_experts).value_or(0);
        m.moe.shared_intermediate = r.integer("moe_shared_expert_intermediate_size", 1, max_expert_intermediate).value_or(0);
        m.moe.gated = false;
        m.moe.router_bias = true;  // the score-correction bias of its DeepSeek-style router
        if (m.moe.experts_per_token > m.moe.routed_experts)
            throw config_error(r.path("num_experts_per_tok"), std::to_string(m.moe.experts_per_token),
                               "more experts per token than experts", "at most " + std::to_string(m.moe.routed_experts));
    }
}

void read_qwen3_next_layers(object_reader& r, model_spec& m) {
    // Gated DeltaNet layers with full (gated-output) attention every full_attention_interval-th layer
    // (Qwen3NextConfig: layer i is full attention when (i + 1) % interval == 0, unless layer_types says).
    auto& l = m.linear;
    l.key_heads = r.required_integer("linear_num_key_heads", 1, max_heads);
    l.value_heads = r.required_integer("linear_num_value_heads", 1, max_heads);
    l.key_head_dim = r.required_integer("linear_key_head_dim", 1, max_heads);
    l.value_head_dim = r.required_integer("linear_value_head_dim", 1, max_heads);
    l.conv_kernel = r.required_integer("linear_conv_kernel_dim", 1, 64);
    const auto interval = r.integer("full_attention_interval", 1, max_layers).value_or(4);
    const auto types = layer_types(r, m.layers);
    m.linear_layer.assign(static_cast<std::size_t>(m.layers), false);
    for (std::int64_t i = 0; i < m.layers; ++i)
        m.linear_layer[static_cast<std::size_t>(i)] = types ? (*types)[static_cast<std::size_t>(i)] == "linear_attention"
                                                            : (i + 1) % interval != 0;
    m.attention_output_gate = true;
}

}  // namespace

model_spec model_from_hf_json(const json& config, std::string name, const std::string& field, bool strict) {
    object_reader r(config, field, strict);
    const auto type_value = r.get("model_type");
    const auto& types = supported_model_types();
    std::string allowed;
    for (const auto& t : types) allowed += (allowed.empty() ? "" : ", ") + t;
    if (!type_value || !type_value->is_string())
        throw config_error(r.path("model_type"), type_value ? short_value(*type_value) : "",
                           type_value ? "expected a string" : "required field is missing (a Hugging Face config.json has it)",
                           "one of " + allowed);
    const std::string type = type_value->get<std::string>();
    if (std::find(types.begin(), types.end(), type) == types.end())
        throw config_error(r.path("model_type"), "'" + type + "'",
                           "unsupported model_type (a new architecture needs its layer rule in src/hf_config.cpp and "
                           "its formulas in docs/formulas.md; or give an inline config of a supported type with the same shapes)",
                           allowed);

    model_spec m;
    m.name = std::move(name);
    m.model_type = type;
    if (type == "gemma3" || type == "llama4") {
        // The multimodal release nests the text model (text_config) beside its vision tower (vision_config).
        const json* text = r.get("text_config");
        if (!text || !text->is_object()) r.missing("text_config", "the text model's settings (an object)");
        object_reader tr(*text, r.path("text_config"), strict);
        tr.allow({"model_type"});
        if (type == "gemma3") {
            read_gemma3_text(tr, m);
            read_sliding_window(tr, m, type);
        } else {
            read_llama4_text(tr, m);
        }
        for (const auto& k : hf_config_known_keys()) tr.get(k);
        tr.finish();
        if (const json* vision = r.get("vision_config"); vision && vision->is_object()) {
            object_reader vr(*vision, r.path("vision_config"), strict);
            m.vision_parameters = type == "gemma3" ? siglip_parameters(vr, m.hidden) : llama4_vision_parameters(vr, m.hidden);
            vr.finish();
        }
        r.allow({"boi_token_index", "eoi_token_index", "image_token_index", "initializer_range", "eos_token_id",
                 "transformers_version", "image_processor_config"});
    } else if (type == "gemma3_text") {
        read_gemma3_text(r, m);
    } else if (type == "gpt2") {
        read_gpt2(r, m);
    } else {
        read_common(r, m, type);
        m.intermediate = r.required_integer("intermediate_size", 1, max_intermediate);
        if (type == "gpt_neox") {
            // modeling_gpt_neox.py: LayerNorm with bias, non-gated 2-matrix MLP with biases.
            m.gated_mlp = false;
            m.mlp_bias = true;
            m.norm = norm_kind::layer_norm;
        }
        if (type == "gemma2") m.norms_per_layer = 4;
        if (type == "qwen3" || type == "qwen3_moe" || type == "qwen3_next") m.qk_norm = true;
        if (type == "glm4_moe") m.qk_norm = r.boolean("use_qk_norm").value_or(false);
        if (type == "gpt_oss") {
            m.attention_sinks = true;  // one learned sink logit per head (modeling_gpt_oss.py)
            // The release quantises the experts alone (quantization_config: quant_method mxfp4, attention, router,
            // embeddings and LM head in modules_to_not_convert).
            if (const json* q = r.get("quantization_config"); q && q->is_object()) {
                const auto method = q->find("quant_method");
                if (method != q->end() && method->is_string() && method->get<std::string>() == "mxfp4")
                    m.released_expert_format = "mxfp4";
            }
        }
        if (type == "qwen3_next") read_qwen3_next_layers(r, m);
        if (type == "nemotron_h") read_nemotron_h(r, m);
        if (type == "deepseek_v3" || type == "deepseek_v32" || type == "kimi_k2") {
            m.mla = true;
            m.mla_dims.q_lora_rank = r.integer("q_lora_rank", 1, max_hidden).value_or(0);
            m.mla_dims.kv_lora_rank = r.required_integer("kv_lora_rank", 1, max_hidden);
            m.mla_dims.qk_nope_head_dim = r.required_integer("qk_nope_head_dim", 1, max_heads);
            m.mla_dims.qk_rope_head_dim = r.required_integer("qk_rope_head_dim", 1, max_heads);
            m.mla_dims.v_head_dim = r.required_integer("v_head_dim", 1, max_heads);
            m.head_dim = m.mla_dims.qk_nope_head_dim + m.mla_dims.qk_rope_head_dim;
        }
        if (type == "deepseek_v32") {
            m.sparse.index_heads = r.required_integer("index_n_heads", 1, max_heads);
            m.sparse.index_head_dim = r.required_integer("index_head_dim", 1, max_heads);
            m.sparse.topk = r.required_integer("index_topk", 1, max_positions);
        }
    }
    if (m.sliding_layer.empty()) read_sliding_window(r, m, type);
    if (type != "llama4" && type != "nemotron_h") read_moe(r, m, type);  // these place their experts themselves
    // Fields capplan knowingly does not use (they do not change sizes or FLOPs).
    for (const auto& k : hf_config_known_keys()) r.get(k);
    r.finish();
    m.trim_layer_lists();
    return m;
}

namespace {

// Deeper nesting than any scenario, config or calibration file has; parsing and destroying a
// document tens of thousands of levels deep would overflow the stack.
constexpr int max_json_depth = 256;

// The deepest nesting of arrays and objects in `text`, ignoring brackets inside strings.
int json_depth(std::string_view text) {
    int depth = 0, deepest = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            deepest = std::max(deepest, ++depth);
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return deepest;
}

}  // namespace

json parse_json_text(std::string_view text, const std::string& what) {
    if (json_depth(text) > max_json_depth)
        throw json_error("/", "", "malformed JSON in " + what + ": nested deeper than " + std::to_string(max_json_depth) +
                                      " levels");
    try {
        return json::parse(text);
    } catch (const json::exception& e) {
        // nlohmann reports "[json.exception.parse_error.101] parse error at line 3, column 5: ..." and
        // "[json.exception.out_of_range.406] number overflow parsing '1e400'".
        std::string msg = e.what();
        const auto pos = msg.find("] ");
        throw json_error("/", "", "malformed JSON in " + what + ": " + (pos == std::string::npos ? msg : msg.substr(pos + 2)));
    }
}

}  // namespace detail

model_spec model_from_hf_config(std::string_view json_text, std::string name, std::string field) {
    const auto j = detail::parse_json_text(json_text, "config.json text");
    return detail::model_from_hf_json(j, std::move(name), field, false);
}

}  // namespace capplan
