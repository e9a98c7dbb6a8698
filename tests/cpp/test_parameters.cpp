// analysis/parameters.hpp: parameter counts by hand from the layer shapes, and weight bytes.
#include <doctest/doctest.h>

#include "capplan/analysis/parameters.hpp"
#include "capplan/spec/hf_config.hpp"

using namespace capplan;

TEST_CASE("Llama-3.1-8B: 8,030,261,248 parameters, exactly the Hugging Face safetensors total") {
    const auto m = model_from_hf_config(R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
        "tie_word_embeddings": false})");
    const auto p = count_parameters(m);
    // By hand: embedding 128256*4096 = 525,336,576 (x2, untied head);
    // per layer q 4096*4096 + k,v 2*4096*1024 + o 4096*4096 = 41,943,040; MLP 3*4096*14336 = 176,160,768;
    // 2 RMSNorms 8,192 -> 218,112,000 x 32 layers = 6,979,584,000; final norm 4,096.
    CHECK(p.embedding == 525'336'576);
    CHECK(p.lm_head == 525'336'576);
    CHECK(p.attention == 32 * 41'943'040LL);
    CHECK(p.dense_mlp == 32 * 176'160'768LL);
    CHECK(p.norms == 32 * 8'192LL + 4'096);
    CHECK(p.total() == 8'030'261'248LL);
    CHECK(p.active() == p.total());
}

TEST_CASE("GPT-2 small: 124,439,808 parameters (biases, LayerNorm, learned positions, tied head)") {
    const auto m = model_from_hf_config(R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
        "n_positions": 1024, "vocab_size": 50257})");
    // 124,439,808 is the well-known count of the HF "gpt2" checkpoint; by hand:
    // wte 50257*768 + wpe 1024*768 + 12 * (c_attn 768*2304+2304 + c_proj 768*768+768 + c_fc 768*3072+3072
    //   + mlp c_proj 3072*768+768 + 2 LayerNorms 2*2*768) + ln_f 2*768
    CHECK(count_parameters(m).total() == 124'439'808LL);
}

TEST_CASE("GPT-NeoX (Pythia-70M): 70,426,624 parameters, Pythia paper Table 1") {
    // Biderman et al. 2023 (arXiv:2304.01373) Table 1: Pythia-70M has 70,426,624 parameters,
    // 18,915,328 non-embedding; untied embed_in/embed_out of 50304 x 512.
    const auto m = model_from_hf_config(R"({"model_type": "gpt_neox", "hidden_size": 512, "intermediate_size": 2048,
        "num_hidden_layers": 6, "num_attention_heads": 8, "vocab_size": 50304, "max_position_embeddings": 2048,
        "rotary_pct": 0.25, "use_parallel_residual": true, "tie_word_embeddings": false})");
    const auto p = count_parameters(m);
    CHECK(p.total() == 70'426'624LL);
    CHECK(p.total() - p.embedding - p.lm_head == 18'915'328LL);
}

TEST_CASE("Mixtral-8x7B: total and active by hand") {
    const auto m = model_from_hf_config(R"({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
        "num_local_experts": 8, "num_experts_per_tok": 2})");
    const auto p = count_parameters(m);
    // per layer: attention 41,943,040 + experts 8*3*4096*14336 = 1,409,286,144 + router 4096*8 = 32,768
    // + norms 8,192 = 1,451,270,144; x32 = 46,440,644,608; + embeddings 2*32000*4096 + final norm 4,096
    CHECK(p.total() == 46'702'792'704LL);
    // inactive: 6 of 8 experts, 6*3*4096*14336*32 = 33,822,867,456
    CHECK(p.active() == 46'702'792'704LL - 33'822'867'456LL);
    CHECK(p.router == 32 * 32'768LL);
}

TEST_CASE("DeepSeek-V3 MLA attention per layer by hand") {
    const auto m = model_from_hf_config(R"({"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
        "num_hidden_layers": 61, "num_attention_heads": 128, "vocab_size": 129280,
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
        "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "moe_intermediate_size": 2048,
        "first_k_dense_replace": 3})");
    const auto p = count_parameters(m);
    // q_a 7168*1536 + q_a_norm 1536 + q_b 1536*128*192 + kv_a 7168*(512+64) + kv_a_norm 512
    // + kv_b 512*128*(128+128) + o 128*128*7168 = 187,107,328 per layer
    CHECK(p.attention == 61 * 187'107'328LL);
    // 58 MoE layers of 256 routed + 1 shared expert of 3*7168*2048 = 44,040,192
    CHECK(p.routed_experts == 58 * 256 * 44'040'192LL);
    CHECK(p.shared_experts == 58 * 44'040'192LL);
    CHECK(p.router == 58 * (7168 * 256LL + 256));  // + e_score_correction_bias
    CHECK(p.dense_mlp == 3 * 3 * 7168 * 18432LL);
    // DeepSeek-V3 report: 671B total, 37B activated per token.
    CHECK(static_cast<double>(p.total()) == doctest::Approx(671e9).epsilon(0.01));
    CHECK(static_cast<double>(p.active()) == doctest::Approx(37e9).epsilon(0.02));
}

TEST_CASE("weight bytes: quantized block matrices, 16-bit embeddings/norms") {
    const auto m = model_from_hf_config(R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256})");
    const auto p = count_parameters(m);
    CHECK(p.block_linear() == 6'979'321'856LL);
    CHECK(weight_bytes(p, find_format("bf16")).in(units::B) == 2.0 * 8'030'261'248LL);
    CHECK(weight_bytes(p, find_format("fp32")).in(units::B) == 4.0 * 8'030'261'248LL);
    // int4: 6,979,321,856 * 0.51953125 + (8,030,261,248 - 6,979,321,856) * 2 = 5,727,854,592
    CHECK(weight_bytes(p, find_format("int4")).in(units::B) == 5'727'854'592.0);
}
