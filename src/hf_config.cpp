// Family rules that turn HF config fields into a model_spec. Each rule names the HF modelling
// file whose layer structure it mirrors (transformers/models/<family>/modeling_<family>.py).
#include "capplan/spec/hf_config.hpp"

#include <algorithm>

#include "hf_config_json.hpp"

namespace capplan {

const std::vector<std::string>& supported_model_types() {
    static const std::vector<std::string> types{"llama",     "mistral",     "mixtral", "qwen2", "qwen3",
                                                "qwen3_moe", "deepseek_v3", "gemma2",  "phi3",  "gpt2",
                                                "gpt_neox"};
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
        "activation_function", "rotary_pct", "use_parallel_residual"};
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
    m.tied_embeddings = r.boolean("tie_word_embeddings").value_or(type == "gemma2");
    const bool attention_bias = r.boolean("attention_bias").value_or(type == "gpt_neox");
    m.qkv_bias = attention_bias || type == "qwen2";  // Qwen2 always has q/k/v biases (modeling_qwen2.py)
    m.o_bias = attention_bias;
    m.mlp_bias = r.boolean("mlp_bias").value_or(false);
}

void read_sliding_window(object_reader& r, model_spec& m, const std::string& type) {
    const auto window = r.integer("sliding_window", 1, max_positions);
    m.sliding_layer.assign(static_cast<std::size_t>(m.layers), false);
    if (!window) return;
    if (type == "gemma2") {
        // Gemma 2 alternates local (sliding) and global layers, starting with local
        // (modeling_gemma2.py: is_sliding = not bool(layer_idx % 2); Gemma 2 report §2).
        m.sliding_window = *window;
        for (std::int64_t i = 0; i < m.layers; i += 2) m.sliding_layer[static_cast<std::size_t>(i)] = true;
        return;
    }
    if (type == "qwen2" || type == "qwen3" || type == "qwen3_moe") {
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
    } else if (type == "qwen3_moe") {
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
    } else if (type == "deepseek_v3") {
        // modeling_deepseek_v3.py: MoE from layer first_k_dense_replace on, every moe_layer_freq-th.
        m.moe.routed_experts = r.required_integer("n_routed_experts", 1, max_experts);
        m.moe.experts_per_token = r.required_integer("num_experts_per_tok", 1, max_experts);
        m.moe.shared_experts = r.integer("n_shared_experts", 0, max_experts).value_or(0);
        m.moe.expert_intermediate = r.required_integer("moe_intermediate_size", 1, max_expert_intermediate);
        const auto first_dense = r.integer("first_k_dense_replace", 0, max_layers).value_or(0);
        const auto freq = r.integer("moe_layer_freq", 1, max_layers).value_or(1);
        for (std::int64_t i = first_dense; i < m.layers; ++i)
            m.moe_layer[static_cast<std::size_t>(i)] = (i % freq) == 0;
    }
    if (m.is_moe() && m.moe.experts_per_token > m.moe.routed_experts)
        throw config_error(r.path("num_experts_per_tok"), std::to_string(m.moe.experts_per_token),
                           "more experts per token than experts", "at most " + std::to_string(m.moe.routed_experts));
}

}  // namespace

model_spec model_from_hf_json(const json& config, std::string name, const std::string& field, bool strict) {
    object_reader r(config, field, strict);
    const auto type_value = r.get("model_type");
    if (!type_value || !type_value->is_string())
        throw config_error(r.path("model_type"), type_value ? short_value(*type_value) : "",
                           type_value ? "expected a string" : "required field is missing (a Hugging Face config.json has it)",
                           "one of llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, deepseek_v3, gemma2, phi3, gpt2, gpt_neox");
    const std::string type = type_value->get<std::string>();
    const auto& types = supported_model_types();
    if (std::find(types.begin(), types.end(), type) == types.end()) {
        std::string allowed;
        for (const auto& t : types) allowed += (allowed.empty() ? "" : ", ") + t;
        throw config_error(r.path("model_type"), "'" + type + "'", "unsupported model_type", allowed);
    }

    model_spec m;
    m.name = std::move(name);
    m.model_type = type;
    if (type == "gpt2") {
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
        if (type == "qwen3" || type == "qwen3_moe") m.qk_norm = true;
        if (type == "deepseek_v3") {
            m.mla = true;
            m.mla_dims.q_lora_rank = r.integer("q_lora_rank", 1, max_hidden).value_or(0);
            m.mla_dims.kv_lora_rank = r.required_integer("kv_lora_rank", 1, max_hidden);
            m.mla_dims.qk_nope_head_dim = r.required_integer("qk_nope_head_dim", 1, max_heads);
            m.mla_dims.qk_rope_head_dim = r.required_integer("qk_rope_head_dim", 1, max_heads);
            m.mla_dims.v_head_dim = r.required_integer("v_head_dim", 1, max_heads);
            m.head_dim = m.mla_dims.qk_nope_head_dim + m.mla_dims.qk_rope_head_dim;
        }
    }
    if (m.sliding_layer.empty()) read_sliding_window(r, m, type);
    read_moe(r, m, type);
    // Fields capplan knowingly does not use (they do not change sizes or FLOPs).
    for (const auto& k : hf_config_known_keys()) r.get(k);
    r.finish();
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
