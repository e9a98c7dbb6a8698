// analysis/inference_memory.hpp: the budget's parts by hand, its monotonicity, and the solvers.
#include <doctest/doctest.h>

#include "capplan/analysis/inference_memory.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "test_support.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
scenario read(const std::string& text) { return read_scenario(text, test::shipped_catalog()); }
inference_setup setup(const std::string& text) {
    static std::vector<scenario> keep;  // inference_setup points at the scenario's model
    keep.push_back(read(text));
    return inference_setup::from(keep.back());
}
const char* llama8b_h100 = R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM"},
    "inference": {"input_tokens": 1000, "output_tokens": 24, "batch": 1, "kv_block_tokens": 16}})";
}  // namespace

TEST_CASE("the budget's parts, by hand, for Llama-3.1-8B on one H100") {
    const auto s = setup(llama8b_h100);
    const auto b = inference_budget(s, 10, 1024);
    CHECK(b.capacity.in(GiB) == doctest::Approx(79.18));      // driver-visible memory from the catalog
    CHECK(b.usable.in(GiB) == doctest::Approx(0.9 * 79.18));
    CHECK(b.weights.in(B) == 2.0 * 8'030'261'248);             // bf16, one device
    CHECK(b.kv_cache.in(B) == 10.0 * 1024 * 131'072);          // 1,024 tokens = 64 whole blocks each
    CHECK(b.kv_cache_per_token.in(B) == 131'072.0);
    // vLLM V1 server defaults on H100 (>= 70 GiB, not A100): 8192-token steps, 1024 sequences.
    CHECK(s.step_tokens == 8192);
    CHECK(s.max_num_seqs == 1024);
    // Sampler: 1024 rows x 128,256 vocab x 4 B x 8 fp32 rows.
    CHECK(b.logits.in(B) == 1024.0 * 128'256 * 4 * 8);
    // Step activations: 8192 tokens x (2 x 4096 + max(attention (2 x 32 + 2 x 8) x 128, FFN 3 x 14336)) x 2 B.
    CHECK(b.activations.in(B) == 8192.0 * (2 * 4096 + 3 * 14336) * 2);
    // Runtime reservation: 274 MiB context (PR #86509: 287,047,680 B) + 32 MiB cuBLAS workspace, no NCCL at tp 1.
    CHECK(b.overhead.in(B) == 287'047'680.0 + 32.0 * 1048576);
    CHECK(b.per_device == b.weights + b.kv_cache + b.activations + b.logits + b.overhead);
    CHECK(b.fits);
}

TEST_CASE("never less memory for more requests, longer contexts or wider formats") {
    const auto s = setup(llama8b_h100);
    data_size last;
    for (std::int64_t batch : {1, 2, 7, 64, 300, 1025, 2000}) {
        const auto b = inference_budget(s, batch, 4000);
        CHECK(b.per_device >= last);
        last = b.per_device;
    }
    last = data_size{};
    for (std::int64_t ctx : {1, 15, 16, 17, 1000, 65536, 131072}) {
        const auto b = inference_budget(s, 8, ctx);
        CHECK(b.per_device >= last);
        last = b.per_device;
    }
    auto fp8 = s;
    fp8.precision.kv_cache = find_format("fp8");
    CHECK(inference_budget(fp8, 8, 4000).per_device < inference_budget(s, 8, 4000).per_device);
}

TEST_CASE("solvers agree with the budget at their boundary") {
    const auto s = setup(llama8b_h100);
    const std::int64_t n = max_concurrency(s, 8192);
    REQUIRE(n > 0);
    CHECK(inference_budget(s, n, 8192).fits);
    CHECK_FALSE(inference_budget(s, n + 1, 8192).fits);
    // By hand: free = usable - weights - activations - sampler(at max(n, 1024) rows) - reserve; each
    // request holds 8192 x 131,072 B = 1 GiB; so n = floor(free / 1 GiB) with the sampler at 1024 rows.
    const auto b = inference_budget(s, 1, 8192);
    const double free = (b.usable - b.weights - b.activations - b.logits - b.overhead).in(GiB);
    CHECK(n == static_cast<std::int64_t>(free));

    const std::int64_t ctx = max_context(s, 16);
    CHECK(inference_budget(s, 16, ctx).fits);
    CHECK_FALSE(inference_budget(s, 16, ctx + 16).fits);  // one more block does not fit
}

TEST_CASE("smallest tp: Llama-3.1-70B in bf16 on H100 80 GB") {
    const auto s = setup(R"({"model": "Llama-3.1-70B", "system": {"accelerator": "H100-SXM", "count": 8},
        "inference": {"input_tokens": 1000, "output_tokens": 24, "batch": 1}})");
    // 141.1 GB of weights cannot fit one 85 GB device; over 2 devices they take 70.6 GB of 76.5 usable.
    CHECK(smallest_fitting_tp(s, 1, 1024, {1, 2, 4, 8}) == 2);
    // 16 requests of 32,768 tokens: at tp 4 the cache (16 x 32768 x 81,920 B = 42.9 GB) and the weights
    // (35.3 GB) exceed the 76.5 GB usable; at tp 8 they take 21.5 + 17.6 GB.
    CHECK(smallest_fitting_tp(s, 16, 32768, {1, 2, 4, 8}) == 8);
    CHECK_FALSE(smallest_fitting_tp(s, 4096, 131072, {1, 2, 4, 8}).has_value());
}

TEST_CASE("sliding-window models stop growing; MLA caches the latent") {
    const auto mistral = setup(R"({"model": "Mistral-7B", "system": {"accelerator": "L40S"},
        "inference": {"input_tokens": 100, "output_tokens": 1, "batch": 1}})");
    CHECK(inference_budget(mistral, 4, 8192).kv_cache == inference_budget(mistral, 4, 32768).kv_cache);
    const auto ds = setup(R"({"model": "DeepSeek-V3", "system": {"preset": "HGX-H200"}, "parallelism": {"tp": 8},
        "precision": {"weights": "fp8"}, "inference": {"input_tokens": 100, "output_tokens": 1, "batch": 1}})");
    CHECK(inference_budget(ds, 1, 1024).kv_cache_per_token.in(B) == 70'272.0);  // whole latent on every rank
}

TEST_CASE("runtime reservation: defaults by parallelism, and the scenario override") {
    CHECK(default_runtime_reserve(1).communication.si() == 0.0);
    CHECK(default_runtime_reserve(2).communication.in(GiB) == doctest::Approx(0.40));
    const auto s = setup(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM"},
        "inference": {"input_tokens": 10, "output_tokens": 1, "batch": 1, "runtime_reserve": "2 GiB",
                      "memory_utilization": 0.8, "max_num_seqs": 64, "prefill_chunk_tokens": 512}})");
    CHECK(s.reserve.in(GiB) == 2.0);
    CHECK(s.memory_utilization == 0.8);
    CHECK(s.max_num_seqs == 64);
    CHECK(s.step_tokens == 512);
}

TEST_CASE("an engine on a smaller GPU profiles smaller steps (vLLM defaults)") {
    const auto s = setup(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "L4"},
        "inference": {"input_tokens": 10, "output_tokens": 1, "batch": 1}})");
    CHECK(s.step_tokens == 2048);
    CHECK(s.max_num_seqs == 256);
}

namespace {
// The plain bisection the guided search replaced (doubling from 1, then halving): the oracle the solvers must equal.
template <class Fits>
std::int64_t bisection(Fits fits) {
    if (!fits(1)) return 0;
    std::int64_t lo = 1, hi = 2;
    while (fits(hi)) {
        lo = hi;
        if (hi > (std::int64_t{1} << 40)) return hi;
        hi *= 2;
    }
    while (hi - lo > 1) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}
}  // namespace

TEST_CASE("the guided solvers equal a plain bisection on every kind of model and layout") {
    // Dense GQA, sliding windows, MLA, MoE with attention data parallelism, pipeline stages, fp8 caches, an offload
    // tier and a shared prefix: each bends the memory line somewhere (blocks, windows, the sampler's rows).
    const char* scenarios[] = {
        llama8b_h100,
        R"({"model": "Llama-3.1-70B", "system": {"preset": "HGX-H200"}, "parallelism": {"tp": 4, "pp": 2},
            "inference": {"input_tokens": 100, "output_tokens": 1, "batch": 1}})",
        R"({"model": "Mistral-7B", "system": {"accelerator": "L40S"},
            "inference": {"input_tokens": 100, "output_tokens": 1, "batch": 1}})",
        R"({"model": "Gemma-3-27B", "system": {"preset": "HGX-H200"}, "parallelism": {"tp": 2},
            "precision": {"kv_cache": "fp8"}, "inference": {"input_tokens": 100, "output_tokens": 1, "batch": 1}})",
        R"({"model": "DeepSeek-V3", "system": {"preset": "HGX-H200"}, "parallelism": {"tp": 8, "ep": 8, "attention_dp": true},
            "precision": {"weights": "fp8"}, "inference": {"input_tokens": 100, "output_tokens": 1, "batch": 1}})",
        R"({"model": "Qwen3-30B-A3B", "system": {"accelerator": "H100-SXM"},
            "inference": {"input_tokens": 4000, "output_tokens": 1, "batch": 1, "max_num_seqs": 8,
                          "prefix_cache": {"hit_rate": 0.5, "shared_prefix_tokens": 2000},
                          "kv_offload": {"tier": "host", "capacity": "200 GB"}}})",
    };
    int compared = 0;
    for (const char* text : scenarios) {
        const auto s = setup(text);
        for (std::int64_t context : {1, 17, 1000, 8192, 100'000}) {
            const std::int64_t n = max_concurrency(s, context);
            CHECK(n == bisection([&](std::int64_t b) { return inference_budget(s, b, context).fits; }));
            ++compared;
        }
        for (std::int64_t batch : {1, 3, 64, 1000}) {
            const std::int64_t c = max_context(s, batch);
            CHECK(c == bisection([&](std::int64_t t) { return inference_budget(s, batch, t).fits; }));
            ++compared;
        }
    }
    CHECK(compared == 54);
}
