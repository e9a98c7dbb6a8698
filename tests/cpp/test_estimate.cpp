// estimate.hpp + report/result.hpp: the fields this stage computes, and absent ones stay absent.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
const catalog& cat() { return test::shipped_catalog(); }
estimate_result run(const std::string& text) { return estimate(read_scenario(text, cat()), cat()); }
}  // namespace

TEST_CASE("Llama-3.1-70B in bf16 over tp=8 on H200: weights per device by hand") {
    const auto r = run(default_scenario_json());
    // 70,553,706,496 parameters x 2 B = 141,107,412,992 B; / 8 = 17,638,426,624 B per device
    CHECK(r.model.parameters == 70'553'706'496LL);
    CHECK(r.memory.weights_total->in(B) == 141'107'412'992.0);
    CHECK(r.memory.weights->in(B) == 17'638'426'624.0);
    CHECK(r.memory.capacity->in(GB) == 141.0);
    CHECK_FALSE(r.feasible.has_value());  // nothing proves it infeasible; fits needs the full memory model
}

TEST_CASE("weights that cannot fit make the plan infeasible, with a reason") {
    const auto r = run(R"({"model": "Llama-3.1-405B", "system": {"accelerator": "L4"}})");
    REQUIRE(r.feasible.has_value());
    CHECK_FALSE(*r.feasible);
    REQUIRE(r.reasons.size() == 1);
    CHECK(r.reasons[0].find("weights alone need 811.7 GB per device") == 0);  // 405.85e9 x 2 B
}

TEST_CASE("a compute format the accelerator lacks is infeasible; weight-only fp8 is fine") {
    // A100 has no FP8 tensor cores (NVIDIA A100 datasheet lists TF32/BF16/FP16/INT8/INT4 only).
    const auto r = run(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "A100-80GB-SXM"},
                          "precision": {"weights": "fp8"}})");
    REQUIRE(r.feasible.has_value());
    CHECK_FALSE(*r.feasible);
    CHECK(r.reasons[0].find("A100-80GB-SXM has no fp8 matrix units") == 0);
    const auto ok = run(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "A100-80GB-SXM"},
                           "precision": {"weights": "fp8", "compute": "bf16"}})");
    CHECK_FALSE(ok.feasible.has_value());
}

TEST_CASE("MoE experts shard over ep") {
    // Mixtral-8x7B bf16, tp=2 ep=2 on 2 GPUs: experts / (tp*ep) = /4, the rest / tp = /2.
    const auto r = run(R"({"model": "Mixtral-8x7B", "system": {"accelerator": "H100", "count": 2},
                          "parallelism": {"tp": 2, "ep": 2}})");
    const double experts = 32.0 * 8 * 3 * 4096 * 14336 * 2;  // bytes
    const double rest = 46'702'792'704.0 * 2 - experts;
    CHECK(r.memory.weights->in(B) == doctest::Approx(rest / 2 + experts / 4));
}

TEST_CASE("result JSON: computed fields present, the rest absent (never zero)") {
    const auto j = nlohmann::json::parse(to_json(run(default_scenario_json())));
    CHECK(j["model"]["parameters"] == 70'553'706'496LL);
    CHECK(j["memory"]["weights_bytes"] == 17'638'426'624.0);
    CHECK_FALSE(j["memory"].contains("kv_cache_bytes"));
    CHECK_FALSE(j.contains("inference"));
    CHECK_FALSE(j.contains("training"));
    CHECK_FALSE(j.contains("feasible"));
    CHECK(j["system"]["parallelism"]["tp"] == 8);
}
