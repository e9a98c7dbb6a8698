// analysis/kv_cache.hpp: bytes per token by hand and from published figures.
#include <doctest/doctest.h>

#include "capplan/analysis/kv_cache.hpp"
#include "test_support.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
const model_spec& model(const char* name) { return test::shipped_catalog().model(name); }
const number_format& bf16() { return find_format("bf16"); }
}  // namespace

TEST_CASE("bytes per token, bf16, whole model on one device") {
    // Llama-3.1-405B: 2 x 126 layers x 8 KV heads x 128 x 2 B = 516,096 B (about 0.5 MB per token).
    CHECK(kv_bytes_per_token(model("Llama-3.1-405B"), 1, bf16(), all_layers(model("Llama-3.1-405B"))).in(B) == 516'096.0);
    // DeepSeek-V3 MLA: 61 x (512 + 64) x 2 B = 70,272 B (DeepSeek-V2 Table 1: (d_c + d_h^R) x l elements).
    CHECK(kv_bytes_per_token(model("DeepSeek-V3"), 1, bf16(), all_layers(model("DeepSeek-V3"))).in(B) == 70'272.0);
    // Llama-2-7B MHA: 2 x 32 x 32 x 128 x 2 B = 524,288 B.
    CHECK(kv_bytes_per_token(model("Llama-2-7B"), 1, bf16(), all_layers(model("Llama-2-7B"))).in(B) == 524'288.0);
    // fp8 halves it.
    CHECK(kv_bytes_per_token(model("Llama-2-7B"), 1, find_format("fp8"), all_layers(model("Llama-2-7B"))).in(B) == 262'144.0);
}

TEST_CASE("tensor parallelism splits KV heads, then replicates them; MLA is not split") {
    const auto& l70 = model("Llama-3.1-70B");  // 8 KV heads
    const auto all = all_layers(l70);
    // tp 8: 1 head per rank: 2 x 80 x 1 x 128 x 2 = 40,960 B; tp 16: still one head per rank.
    CHECK(kv_bytes_per_token(l70, 8, bf16(), all).in(B) == 40'960.0);
    CHECK(kv_bytes_per_token(l70, 16, bf16(), all).in(B) == 40'960.0);
    CHECK(kv_bytes_per_token(l70, 2, bf16(), all).in(B) == 163'840.0);
    CHECK(kv_bytes_per_token(model("DeepSeek-V3"), 8, bf16(), all_layers(model("DeepSeek-V3"))).in(B) == 70'272.0);
}

TEST_CASE("sliding windows cap the cache") {
    // Mistral 7B: every layer keeps at most 4,096 tokens (rolling buffer): 32 x 2 x 8 x 128 x 2 B = 131,072 B
    // per token, so a 32K-token request holds 4,096 x 131,072 B = 512 MiB.
    const auto& mistral = model("Mistral-7B");
    CHECK(kv_bytes_per_request(mistral, 1, bf16(), all_layers(mistral), 32768, 16).in(MiB) == 512.0);
    CHECK(kv_bytes_per_request(mistral, 1, bf16(), all_layers(mistral), 1000, 1).in(B) == 1000.0 * 131'072);
    // Gemma-2-9B at 8,192 tokens: 21 global layers x 8,192 tokens + 21 local x 4,096, each token-layer
    // 2 x 8 x 256 x 2 B = 8,192 B -> (21 x 8192 + 21 x 4096) x 8192 B.
    const auto& gemma = model("Gemma-2-9B");
    CHECK(kv_bytes_per_request(gemma, 1, bf16(), all_layers(gemma), 8192, 16).in(B) == (21.0 * 8192 + 21.0 * 4096) * 8192);
}

TEST_CASE("paged blocks round each request up") {
    const auto& m = model("Llama-3.1-8B");  // 131,072 B per token
    // 1,000 tokens in 16-token blocks occupy 63 blocks = 1,008 tokens.
    CHECK(kv_bytes_per_request(m, 1, bf16(), all_layers(m), 1000, 16).in(B) == 1008.0 * 131'072);
    CHECK(kv_bytes_for_batch(m, 1, bf16(), all_layers(m), {16, 17}, 16).in(B) == (16.0 + 32.0) * 131'072);
}

TEST_CASE("a pipeline stage holds only its layers' cache") {
    const auto& m = model("Llama-3.1-8B");
    CHECK(kv_bytes_per_token(m, 1, bf16(), {0, 16}).in(B) == 65'536.0);
}
