// hf_config.hpp: family rules from Hugging Face config.json fields.
#include <doctest/doctest.h>

#include "capplan/error.hpp"
#include "capplan/spec/hf_config.hpp"
#include "test_support.hpp"

using namespace capplan;

TEST_CASE("a Llama config with extra HF keys (ignored)") {
    const auto m = model_from_hf_config(R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
        "bos_token_id": 128000, "rope_scaling": {"factor": 8.0}, "torch_dtype": "bfloat16"})", "l8b");
    CHECK(m.name == "l8b");
    CHECK(m.head_dim == 128);  // hidden / heads when head_dim is absent
    CHECK(m.kv_heads == 8);
    CHECK_FALSE(m.tied_embeddings);
    CHECK(m.gated_mlp);
    CHECK(m.sliding_window == 0);
}

TEST_CASE("Gemma 2 alternates sliding and global layers, starting with sliding") {
    const auto m = model_from_hf_config(R"({"model_type": "gemma2", "hidden_size": 3584, "intermediate_size": 14336,
        "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
        "vocab_size": 256000, "sliding_window": 4096})");
    CHECK(m.tied_embeddings);  // Gemma2Config default
    CHECK(m.sliding_window == 4096);
    CHECK(m.sliding_layer_count() == 21);
    CHECK(m.sliding_layer[0]);
    CHECK_FALSE(m.sliding_layer[1]);
    CHECK(m.norms_per_layer == 4);
}

TEST_CASE("Qwen3-MoE layer placement follows decoder_sparse_step and mlp_only_layers") {
    const auto m = model_from_hf_config(R"({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
        "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
        "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
        "decoder_sparse_step": 2, "mlp_only_layers": [3]})");
    // (i + 1) % 2 == 0 -> layers 1, 3, 5, 7; layer 3 is dense-only -> 1, 5, 7
    CHECK(m.moe_layer_count() == 3);
    CHECK(m.moe_layer[1]);
    CHECK_FALSE(m.moe_layer[3]);
    CHECK(m.qk_norm);
}

TEST_CASE("DeepSeek-V3: MLA and MoE from first_k_dense_replace") {
    const auto m = model_from_hf_config(R"({"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
        "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 129280,
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "moe_intermediate_size": 2048,
        "first_k_dense_replace": 3, "moe_layer_freq": 1})");
    CHECK(m.mla);
    CHECK(m.head_dim == 192);
    CHECK(m.moe_layer_count() == 58);
    CHECK_FALSE(m.moe_layer[2]);
    CHECK(m.moe_layer[3]);
}

TEST_CASE("errors name the field") {
    CHECK_THROWS_WITH_AS(model_from_hf_config(R"({"model_type": "bert", "hidden_size": 768})"),
                         doctest::Contains("/model/model_type: unsupported model_type"), config_error);
    CHECK_THROWS_WITH_AS(model_from_hf_config(R"({"model_type": "llama", "hidden_size": 4096})"),
                         doctest::Contains("/model/num_hidden_layers: required field is missing"), config_error);
    CHECK_THROWS_WITH_AS(model_from_hf_config(R"({"model_type": "llama", "hidden_size": -4, "intermediate_size": 1,
        "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 1})"),
                         doctest::Contains("/model/hidden_size: must be at least 1"), config_error);
    CHECK_THROWS_WITH_AS(model_from_hf_config(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 1,
        "num_hidden_layers": 1, "num_attention_heads": 6, "num_key_value_heads": 4, "vocab_size": 1})"),
                         doctest::Contains("/model/num_key_value_heads: must divide"), config_error);
    CHECK_THROWS_AS(model_from_hf_config("{not json"), json_error);
}

TEST_CASE("config sizes beyond any model are errors naming the key, before anything is allocated per layer") {
    const std::string base = R"({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 14336, "vocab_size": 128256, "num_hidden_layers": )";
    // A billion layers took seconds and gigabytes before answering.
    const config_error layers = test::error_of([&] { model_from_hf_config(base + "1000000000}"); });
    CHECK(layers.field() == "/model/num_hidden_layers");
    CHECK(layers.problem() == "must be at most 4096");
    const config_error experts = test::error_of([&] {
        model_from_hf_config(R"({"model_type": "qwen3_moe", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 48,
                                 "intermediate_size": 12288, "vocab_size": 151936, "num_experts": 1000000, "num_experts_per_tok": 8,
                                 "moe_intermediate_size": 1536})");
    });
    CHECK(experts.field() == "/model/num_experts");
    // At the bound the config reads.
    const model_spec big = model_from_hf_config(base + "4096}");
    CHECK(big.layers == 4096);
}
