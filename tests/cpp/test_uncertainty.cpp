// spec/uncertainty.hpp and the ranges an estimate carries (issue #22 item 5).
#include <doctest/doctest.h>

#include "test_support.hpp"

#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;

TEST_CASE("a band of signed errors turns a prediction into the range of the measurement") {
    // e = modelled / published - 1 in [-0.1, +0.2]: published = v / (1 + e) in [100 / 1.2, 100 / 0.9].
    const error_band b{-0.1, 0.2, 40};
    const auto [lo, hi] = measured_range(100.0, b);
    CHECK(lo == doctest::Approx(83.333).epsilon(1e-4));
    CHECK(hi == doctest::Approx(111.111).epsilon(1e-4));
    // A rate inverse to the banded time (tokens per second of a step): measured = v (1 + e).
    const auto [rlo, rhi] = measured_range_inverse(100.0, b);
    CHECK(rlo == doctest::Approx(90.0));
    CHECK(rhi == doctest::Approx(120.0));
}

TEST_CASE("an estimate carries the ranges of the quantities the shipped catalog's bands cover") {
    const catalog& cat = test::shipped_catalog();
    // Llama-3.1-8B is dense: the dense rows' band where there is one, else the quantity's.
    const error_band* ttft = cat.uncertainty().find("ttft", false);
    const error_band* step = cat.uncertainty().find("training_step", false);
    REQUIRE(ttft != nullptr);
    REQUIRE(step != nullptr);
    CHECK(ttft->rows >= 10);  // scripts/validation_report.py's BAND_MIN_ROWS
    const auto r = estimate(read_scenario(R"({"model": "Llama-3.1-8B", "system": {"accelerator": "H100-SXM"},
        "inference": {"input_tokens": 1000, "output_tokens": 100, "batch": 4}})", cat), cat);
    const auto expected = measured_range(*r.inference->ttft_s, *ttft);
    CHECK(r.ranges.at("inference.ttft_s").first == doctest::Approx(expected.first));
    CHECK(r.ranges.at("inference.ttft_s").second == doctest::Approx(expected.second));
    CHECK(r.ranges.count("inference.throughput_tokens_per_s") == 1);  // static batch: throughput_static's band
    const auto t = estimate(read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100"},
        "training": {"seq_len": 4096, "global_batch": 64, "zero": 3}})", cat), cat);
    CHECK(t.ranges.at("training.mfu").second == doctest::Approx(t.training->mfu * (1 + step->p90)));
    CHECK(t.ranges.count("memory.per_device_bytes") == 0);  // full training: no validated memory band
    // A LoRA fine-tune of the same model takes the fine-tuning rows' band (Llama rows: the dense family's), not
    // pre-training's.
    const error_band* lora = cat.uncertainty().find("lora_time", false);
    REQUIRE(lora != nullptr);
    CHECK(lora->p90 != step->p90);
    const auto f = estimate(read_scenario(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100"},
        "training": {"seq_len": 4096, "global_batch": 64, "lora": {"rank": 16, "targets": "all_linear"}}})", cat), cat);
    CHECK(f.ranges.at("training.mfu").second == doctest::Approx(f.training->mfu * (1 + lora->p90)));
    CHECK(f.ranges.at("training.step_time_s").first == doctest::Approx(f.training->step_time_s / (1 + lora->p90)));
    // Every fine-tuning row is a dense model's: a MoE fine-tune carries no training range (nor pre-training's).
    CHECK(cat.uncertainty().find("lora_time", true) == nullptr);
    const auto moe = estimate(read_scenario(R"({"model": "Qwen3-30B-A3B", "system": {"preset": "DGX-H100"},
        "training": {"seq_len": 4096, "global_batch": 64, "lora": {"rank": 16, "targets": "all_linear"}}})", cat), cat);
    REQUIRE(moe.training);
    for (const char* key : {"training.step_time_s", "training.tokens_per_s", "training.mfu"}) CHECK(moe.ranges.count(key) == 0);
}

TEST_CASE("a model family's band is taken where the file has one, else the quantity's") {
    uncertainty_bands u;
    u.bands["ttft"] = {-0.2, 0.2, 100};
    u.bands["ttft.moe"] = {-0.1, 0.6, 30};
    CHECK(u.find("ttft", true)->p90 == 0.6);
    CHECK(u.find("ttft", false) == nullptr);  // only MoE has a band: the pooled rows are mostly MoE
    u.bands["tpot"] = {-0.3, 0.1, 20};
    CHECK(u.find("tpot", true)->p90 == 0.1);  // no family band at all: every row's
    CHECK(u.find("e2e", true) == nullptr);
    // The shipped catalog: MoE training steps have a band of their own since Megatron-Bridge 26.06's MoE rows (27
    // held-out rows), wider on the fast side than the dense one; LoRA steps have only the dense family's.
    const auto& shipped = test::shipped_catalog().uncertainty();
    const error_band* dense = shipped.find("training_step", false);
    const error_band* moe = shipped.find("training_step", true);
    REQUIRE(dense != nullptr);
    REQUIRE(moe != nullptr);
    CHECK(moe->rows >= 10);
    CHECK(moe->p10 < dense->p10);
    CHECK(shipped.find("lora_time", true) == nullptr);
}
