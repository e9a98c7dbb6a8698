// Engine host work (inference.prefill_dispatch, inference.engine_overhead): what a serving engine adds
// to its steps beyond the kernels, by hand for Qwen3-30B-A3B on 8 H200s (tp 8, experts over ep 8).
#include <doctest/doctest.h>

#include <deque>
#include <string>

#include "capplan/analysis/inference_perf.hpp"
#include "capplan/spec/scenario_io.hpp"
#include "test_support.hpp"

using namespace capplan;

TEST_CASE("eager prefill: host dispatch per kernel launched, serial with the kernels; decode steps keep their graphs") {
    auto setup = [](const std::string& inference) {
        static std::deque<scenario> keep;
        keep.push_back(read_scenario(R"({"model": "Qwen3-30B-A3B", "system": {"accelerator": "H200", "count": 8},
            "parallelism": {"tp": 8, "ep": 8}, "inference": {"input_tokens": 1000, "output_tokens": 8, "batch": 1)" +
                                         inference + "}}",
                                     test::shipped_catalog()));
        return perf_setup::from(keep.back());
    };
    batch_step prompt;
    prompt.prefill_tokens = 1000;
    prompt.prefill_requests = 1;
    batch_step decode;
    decode.decode_requests = 4;
    decode.context_tokens = 4000;
    // Kernels a layer launches: QKV and output GEMMs, 2 in the attention core; the router GEMM, top-k,
    // alignment, the two expert GEMMs, activation and sum (7); 3 norm/residual passes: 14 x 48 layers,
    // plus the LM head and embedding (2) = 674.
    const perf_setup graph = setup(""), eager = setup(R"(, "prefill_dispatch": "eager")");
    CHECK(step_time_breakdown(graph, prompt).kernels == doctest::Approx(674.0));
    CHECK((step_time_breakdown(eager, prompt).total() - step_time_breakdown(graph, prompt).total()).in(units::ms) ==
          doctest::Approx(674.0 * 0.0366));
    CHECK(step_time_breakdown(eager, decode).total().si() == doctest::Approx(step_time_breakdown(graph, decode).total().si()));
    // A measured engine's own values replace them: 50 us per prefill kernel, 1 ms per step, 5 ms per prefill step.
    const perf_setup own = setup(R"(, "prefill_dispatch": "eager",
        "engine_overhead": {"prefill_kernel": "50 us", "step": "1 ms", "prefill_step": "5 ms"})");
    CHECK(step_time_breakdown(own, prompt).overhead.in(units::ms) == doctest::Approx(1.0 + 5.0 + 674.0 * 0.050));
    CHECK(step_time_breakdown(own, decode).overhead.in(units::ms) == doctest::Approx(1.0));
}
