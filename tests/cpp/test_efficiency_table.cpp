// Efficiency by kernel size (issues 5.1, 8.4): the curve, its least-squares fit, the calibration
// file reader, and how a table changes the step model.
#include <doctest/doctest.h>

#include <cmath>

#include "capplan/analysis/inference_perf.hpp"
#include "capplan/calibration/efficiency_fit.hpp"
#include "capplan/catalog.hpp"
#include "capplan/error.hpp"

using namespace capplan;
using namespace capplan::units;

TEST_CASE("a curve interpolates linearly in log10(work) and keeps its end values beyond") {
    const efficiency_curve c{{{1e6, 0.2}, {1e8, 0.6}, {1e9, 0.8}}};
    CHECK(c.at(1e3) == doctest::Approx(0.2));
    CHECK(c.at(1e7) == doctest::Approx(0.4));  // halfway in log between 1e6 and 1e8
    CHECK(c.at(std::sqrt(1e8 * 1e9)) == doctest::Approx(0.7));
    CHECK(c.at(1e12) == doctest::Approx(0.8));
}

TEST_CASE("more work never takes less time: a steep rise holds the time of the point before") {
    // From 1% at 1e6 to 50% at 1e8 the line reaches 8.4% at 2e6, which would run 2e6 in less time than 1e6 at 1%;
    // the time stays at 1e6 / 0.01 until the line passes it (here 2% at 2e6), then follows the line.
    const efficiency_curve c{{{1e6, 0.01}, {1e8, 0.5}}};
    CHECK(c.at(2e6) == doctest::Approx(0.02));
    CHECK(c.at(1e7) == doctest::Approx(0.1));    // the line's 25.5% would run 1e7 in 3.9e7 < 1e8: held
    CHECK(c.at(5e7) == doctest::Approx(0.01 + 0.49 * std::log10(50.0) / 2));  // 42.6%: 1.17e8, the line again
    // A whole segment steeper than the work (0.01 to 0.05 for twice the work): at its upper point too the time
    // stays at 1e6 / 0.01 (was 2e6 / 0.05 = 4e7 < 1e8), and beyond the last point.
    const efficiency_curve steep{{{1e6, 0.01}, {2e6, 0.05}}};
    CHECK(steep.at(2e6) == doctest::Approx(0.02));
    CHECK(steep.at(4e6) == doctest::Approx(0.04));
    for (const efficiency_curve& curve : {c, steep}) {
        double last = 0.0;
        for (double w = 1e5; w < 1e10; w *= 1.05) {
            const double time = w / curve.at(w);
            CHECK(time >= last * (1 - 1e-12));
            last = time;
        }
    }
}

TEST_CASE("the least-squares spline recovers exact data and averages repeats by relative error") {
    // Samples on a line in log10(work): knots at the three sizes reproduce them exactly.
    const auto exact = fit_efficiency_curve({{1e6, 0.2}, {1e7, 0.4}, {1e8, 0.6}});
    REQUIRE(exact.points.size() == 3);
    CHECK(exact.points[1].work == doctest::Approx(1e7));
    CHECK(exact.points[1].value == doctest::Approx(0.4));
    // One size measured at 0.5 and 1.0: minimising sum((c - y)/y)^2 gives
    // c = sum(1/y) / sum(1/y^2) = (2 + 1) / (4 + 1) = 0.6.
    const auto repeat = fit_efficiency_curve({{1e6, 0.5}, {1e6, 1.0}});
    REQUIRE(repeat.points.size() == 1);
    CHECK(repeat.points[0].value == doctest::Approx(0.6));
    // Two knots, a midpoint sample pulls both: data (1e6, 0.2), (1e7, 0.3), (1e8, 0.6) with knots at
    // 1e6 and 1e8 only (max_knots 2). Hand solution of the 3x2 weighted system: rows (each divided
    // by its y) [5, 0] = 1, [5/3, 5/3] = 1 (the midpoint weighs both knots 1/2), [0, 5/3] = 1.
    const auto two = fit_efficiency_curve({{1e6, 0.2}, {1e7, 0.3}, {1e8, 0.6}}, 2);
    REQUIRE(two.points.size() == 2);
    // Normal equations: a(25 + 25/9) + b(25/9) = 5 + 5/3 ; a(25/9) + b(25/9 + 25/9) = 5/3 + 5/3.
    const double a11 = 25.0 + 25.0 / 9, a12 = 25.0 / 9, a22 = 25.0 / 9 + 25.0 / 9, r1 = 5.0 + 5.0 / 3, r2 = 10.0 / 3;
    const double det = a11 * a22 - a12 * a12;
    CHECK(two.points[0].value == doctest::Approx((r1 * a22 - a12 * r2) / det));
    CHECK(two.points[1].value == doctest::Approx((a11 * r2 - a12 * r1) / det));
    CHECK_THROWS_AS(fit_efficiency_curve({}), config_error);
    CHECK_THROWS_AS(fit_efficiency_curve({{1e6, -0.1}}), config_error);
}

namespace {

const char* table_json = R"({
  "kind": "efficiency_calibration", "name": "test table", "accelerator": "H100-SXM", "source": "hand-made",
  "peaks": {"flops": {"bf16": "989.5 TFLOP/s"}, "memory_bandwidth": "3.35 TB/s"},
  "curves": {"gemm": {"bf16": [{"flops": 1e9, "efficiency": 0.3}, {"flops": 1e12, "efficiency": 0.6}]},
             "memory": [{"bytes": 1e6, "efficiency": 0.5}, {"bytes": 1e9, "efficiency": 0.9}]}
})";

}  // namespace

TEST_CASE("a calibration file reads into a table, and bad ones name the field") {
    const efficiency_table t = read_efficiency_table(table_json, "");
    CHECK(t.name == "test table");
    CHECK(t.gemm.at("bf16").at(1e9) == doctest::Approx(0.3));
    CHECK(t.memory_bandwidth->in(TB / s) == doctest::Approx(3.35));
    std::string text = table_json;
    auto with = [&](const std::string& from, const std::string& to) {
        std::string s = text;
        s.replace(s.find(from), from.size(), to);
        return s;
    };
    CHECK_THROWS_WITH_AS(read_efficiency_table(with("1e12", "1e8"), "/calibration"),
                         doctest::Contains("/calibration/curves/gemm/bf16/1/flops"), config_error);
    CHECK_THROWS_WITH_AS(read_efficiency_table(with("\"bf16\": \"989.5 TFLOP/s\"", "\"fp8\": \"1979 TFLOP/s\""), ""),
                         doctest::Contains("bf16 curve has no reference peak"), config_error);
    CHECK_THROWS_WITH_AS(read_efficiency_table(with("\"efficiency\": 0.3", "\"efficiency\": 0"), ""),
                         doctest::Contains("not an efficiency"), config_error);
    CHECK_THROWS_AS(read_efficiency_table(with("3.35 TB/s", "3.35 Tb"), ""), unit_error);
}

TEST_CASE("a table changes the step by kernel size; the catalog defaults are the table-less case") {
    const catalog cat = catalog::load(CAPPLAN_TEST_CATALOG_DIR);
    const model_spec m = cat.model("Llama-3.1-8B", "/model");
    const accelerator_spec a = cat.accelerator("H100-SXM", "/a");
    const number_format& bf16 = find_format("bf16");
    perf_setup su;
    su.model = &m;
    su.peak = a.peak("bf16").value;
    su.memory_bandwidth = *a.memory_bandwidth;
    su.efficiency = default_perf_efficiency(a, bf16);
    batch_step prompt;
    prompt.prefill_tokens = 4096;
    prompt.prefill_requests = 1;
    const step_breakdown plain = step_time_breakdown(su, prompt);

    const efficiency_table t = read_efficiency_table(table_json, "");
    su.efficiency = calibrated_perf_efficiency(t, a, bf16);
    CHECK(su.efficiency.table == "test table");
    const step_breakdown calibrated = step_time_breakdown(su, prompt);
    // The MLP of one layer at 4096 tokens: up+gate 2 x 4096 x 4096 x 28672 = 9.62e11 FLOPs -> efficiency
    // 0.3 + 0.3 x log10(962) / 3 = 0.5983; down 2 x 4096 x 14336 x 4096 = 4.81e11 -> 0.3 + 0.3 x
    // log10(481) / 3 = 0.5682 (hand calculation); both compute-bound: time = FLOPs / (989.5e12 x eff)
    // each, x 32 layers, + 3 launches per layer (up, activation, down).
    const double up = 2.0 * 4096 * 4096 * 28672, down = 2.0 * 4096 * 14336 * 4096;
    auto eff = [](double f) { return 0.3 + 0.3 * std::log10(f / 1e9) / 3.0; };
    CHECK(eff(up) == doctest::Approx(0.5983).epsilon(1e-3));
    const double expected =
        32 * (up / (989.5e12 * eff(up)) + down / (989.5e12 * eff(down)) + 3 * su.efficiency.per_kernel.si());
    CHECK(calibrated.ops[2].op == "mlp / experts");
    CHECK(calibrated.ops[2].time.si() == doctest::Approx(expected).epsilon(1e-6));
    CHECK(calibrated.ops[2].time > plain.ops[2].time);  // 0.514 < the catalog's 0.61
    // Another accelerator or an unmeasured format: errors at /calibration.
    CHECK_THROWS_WITH_AS(calibrated_perf_efficiency(t, cat.accelerator("A100-80GB-SXM", "/a"), bf16),
                         doctest::Contains("measured on H100-SXM"), config_error);
    CHECK_THROWS_WITH_AS(calibrated_perf_efficiency(t, a, find_format("fp8")),
                         doctest::Contains("no matrix curve for fp8"), config_error);
}

TEST_CASE("the catalog's small-GEMM curve caps each kernel, in its own format's terms") {
    const catalog cat = catalog::load(CAPPLAN_TEST_CATALOG_DIR);
    const accelerator_spec h100 = cat.accelerator("H100-SXM", "/a");
    // H100-SXM efficiency.matmul_by_size (bf16, OpenXLA sm_90 table): 0.2059 at 2.147e9 FLOPs, 0.4584 at
    // 8.59e9, 0.6991 at 3.436e10; large-kernel values bf16 0.61, fp8 0.47 (the catalog's matmul block).
    const perf_efficiency bf16 = default_perf_efficiency(h100, find_format("bf16"));
    CHECK(bf16.gemm_at(2.147e9) == doctest::Approx(0.2059));
    CHECK(bf16.gemm_at(1e13) == doctest::Approx(0.61));  // the curve's 0.82 is capped by the in-engine value
    // fp8's peak is twice bf16's: a kernel of W fp8 FLOPs takes the curve at W / 2.
    const perf_efficiency fp8 = default_perf_efficiency(h100, find_format("fp8"));
    CHECK(fp8.gemm_at(2 * 2.147e9) == doctest::Approx(0.2059));
    CHECK(fp8.gemm_at(2 * 8.59e9) == doctest::Approx(0.4584));   // min(0.47, 0.4584)
    CHECK(fp8.gemm_at(2 * 3.436e10) == doctest::Approx(0.47));   // min(0.47, 0.6991)
    // An accelerator without the curve keeps one value at every size.
    const perf_efficiency a100 = default_perf_efficiency(cat.accelerator("A100-80GB-SXM", "/a"), find_format("bf16"));
    CHECK(a100.gemm_at(1e6) == doctest::Approx(a100.gemm_at(1e13)));
}

TEST_CASE("a format without its own matrix fraction derives it from the part's measured 16-bit one") {
    const catalog cat = catalog::load(CAPPLAN_TEST_CATALOG_DIR);
    // MI300X measures bf16 only (0.42): fp8 keeps 0.77 of it (H100's fp8 / bf16, 0.47 / 0.61), fp16 all of it; the
    // source says so. Before, both took the 0.61 mean of measured parts: above MI300X's own bf16.
    const accelerator_spec mi300 = cat.accelerator("MI300X", "/a");
    const perf_efficiency fp8 = default_perf_efficiency(mi300, find_format("fp8"), true);
    CHECK(fp8.gemm == doctest::Approx(0.42 * 0.77));
    CHECK(fp8.source.find("derived: the 16-bit 0.42 (MI300X catalog) x 0.77 for fp8") != std::string::npos);
    CHECK(default_perf_efficiency(mi300, find_format("fp16")).gemm == doctest::Approx(0.42));
    // fp6 runs at fp4's rate on CDNA4 (MI350X, sharing MI300X's 0.42): fp4's ratio, so it is not faster than fp4 there.
    const accelerator_spec mi350 = cat.accelerator("MI350X", "/a");
    REQUIRE(mi350.peak("fp6").value == mi350.peak("fp4").value);
    CHECK(default_perf_efficiency(mi350, find_format("fp6")).gemm == doctest::Approx(0.42 * 0.75 * 0.77));
    // Formats with nothing to derive from keep the mean: fp32 on MI300X, int8 on H100 (as before the rule).
    CHECK(default_perf_efficiency(mi300, find_format("fp32")).gemm == doctest::Approx(0.61));
    CHECK(default_perf_efficiency(cat.accelerator("H100-SXM", "/a"), find_format("int8")).gemm == doctest::Approx(0.61));
    // RTX PRO 6000 measures 16 bits only: fp4 keeps 0.75 x 0.77 of it (B200's derivation).
    const accelerator_spec rtx = cat.accelerator("RTX-PRO-6000-Server", "/a");
    CHECK(default_perf_efficiency(rtx, find_format("nvfp4")).gemm ==
          doctest::Approx(rtx.matmul_efficiency.at("bf16") * 0.75 * 0.77));
    // A part that measures nothing keeps the mean in every format; one that measures the format keeps its own.
    const accelerator_spec l40s = cat.accelerator("L40S", "/a");
    CHECK(default_perf_efficiency(l40s, find_format("fp8")).gemm == doctest::Approx(0.61));
    CHECK(default_perf_efficiency(cat.accelerator("H100-SXM", "/a"), find_format("fp8")).gemm == doctest::Approx(0.47));
}

TEST_CASE("MoE expert GEMMs run at most at the catalog's grouped-kernel efficiency") {
    const catalog cat = catalog::load(CAPPLAN_TEST_CATALOG_DIR);
    const accelerator_spec h100 = cat.accelerator("H100-SXM", "/a");
    // H100-SXM efficiency.grouped_matmul: bf16 0.30, fp8 0.15 (published fused-MoE kernel times).
    const perf_efficiency e = default_perf_efficiency(h100, find_format("bf16"));
    CHECK(e.grouped_gemm_at(1e13) == doctest::Approx(0.30));       // min(dense 0.61, 0.30)
    CHECK(e.grouped_gemm_at(2.147e9) == doctest::Approx(0.2059));  // small kernels: the dense curve is lower
    CHECK(default_perf_efficiency(h100, find_format("fp8")).grouped_gemm_at(1e14) == doctest::Approx(0.15));
    // An accelerator without a measurement runs its experts as dense GEMMs.
    const perf_efficiency a100 = default_perf_efficiency(cat.accelerator("A100-80GB-SXM", "/a"), find_format("bf16"));
    CHECK(a100.grouped_gemm_at(1e13) == doctest::Approx(a100.gemm_at(1e13)));

    // Mixtral-8x7B bf16 on one H100, a 4096-token prompt: per layer 4096 x 2 = 8192 expert slots, each
    // 2 x 3 x 4096 x 14336 FLOPs = 2.887e12 FLOPs over two kernels (1.44e12 each: past the curve, so
    // 0.30 grouped or 0.61 dense); compute-bound either way (all 8 experts' 2.82 GB + activations read
    // in ~1.3 ms). Only the expert GEMMs change: 32 x 2.887e12 x (1/0.30 - 1/0.61) / 989.5e12 (hand).
    const model_spec m = cat.model("Mixtral-8x7B", "/model");
    perf_setup su;
    su.model = &m;
    su.peak = h100.peak("bf16").value;
    su.memory_bandwidth = *h100.memory_bandwidth;
    su.efficiency = e;
    batch_step prompt;
    prompt.prefill_tokens = 4096;
    prompt.prefill_requests = 1;
    const duration grouped = step_time_breakdown(su, prompt).ops[2].time;
    su.efficiency.grouped_gemm = 0.0;  // as dense
    const duration dense = step_time_breakdown(su, prompt).ops[2].time;
    const double expert_flops = 8192.0 * 2.0 * 3.0 * 4096.0 * 14336.0;
    CHECK(expert_flops == doctest::Approx(2.887e12).epsilon(1e-3));
    CHECK((grouped - dense).si() == doctest::Approx(32.0 * expert_flops * (1.0 / 0.30 - 1.0 / 0.61) / 989.5e12).epsilon(1e-6));
}

TEST_CASE("an accelerator on the same die shares another's efficiencies (catalog efficiency.as)") {
    const catalog cat = catalog::load(CAPPLAN_TEST_CATALOG_DIR);
    const accelerator_spec h800 = cat.accelerator("H800", "/a"), h100 = cat.accelerator("H100-SXM", "/a");
    CHECK(h800.efficiency_as == "H100-SXM");
    for (const char* f : {"bf16", "fp8"}) {
        const perf_efficiency a = default_perf_efficiency(h800, find_format(f)), b = default_perf_efficiency(h100, find_format(f));
        CHECK(a.gemm == b.gemm);
        CHECK(a.memory == b.memory);
        CHECK(a.grouped_gemm == b.grouped_gemm);
        CHECK(a.gemm_at(2.147e9) == b.gemm_at(2.147e9));
        CHECK(a.source.find("H100-SXM catalog, shared by H800") != std::string::npos);
    }
}
