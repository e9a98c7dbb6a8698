// The calibration harness (stopping rule, statistics) and the CPU backend's probes (issue 8.1-8.2).
#include <doctest/doctest.h>

#include "capplan/calibration/cpu_backend.hpp"
#include "capplan/calibration/efficiency_fit.hpp"
#include "capplan/error.hpp"

using namespace capplan;
using namespace capplan::units;

TEST_CASE("percentile and relative IQR interpolate like numpy.percentile") {
    // Hand calculation: sorted {1,2,3,4,5}: p25 = 2, p50 = 3, p75 = 4 -> IQR / median = 2/3.
    CHECK(percentile({5, 1, 4, 2, 3}, 25) == doctest::Approx(2.0));
    CHECK(relative_iqr({5, 1, 4, 2, 3}) == doctest::Approx(2.0 / 3.0));
    // {10, 20, 30, 40}: p25 at position 0.75 -> 17.5, p75 at 2.25 -> 32.5, p50 = 25 -> 0.6.
    CHECK(relative_iqr({10, 20, 30, 40}) == doctest::Approx(0.6));
    CHECK(relative_iqr({7}) == 0.0);
}

TEST_CASE("the harness stops once the runs agree, and reports when they never do") {
    int calls = 0;
    const probe_work w{1e9 * FLOP, 1e6 * B};
    const auto steady = measure("steady", "test", w, [&] { ++calls; return 2.0 * ms; });
    CHECK(calls == 2 + 5);  // warm-up + min_runs, then the spread is 0
    CHECK(steady.converged);
    CHECK(steady.runs == 5);
    CHECK(steady.time.in(ms) == doctest::Approx(2.0));
    CHECK(steady.achieved_flops().in(TFLOP / s) == doctest::Approx(0.5));  // 1 GFLOP in 2 ms
    CHECK(steady.achieved_bandwidth().in(GB / s) == doctest::Approx(0.5));  // 1 MB in 2 ms

    int i = 0;  // alternating 1 ms / 3 ms: the IQR stays at 100% of the median
    measure_options o;
    o.max_runs = 40;
    const auto noisy = measure("noisy", "test", w, [&] { return (i++ % 2 ? 3.0 : 1.0) * ms; }, o);
    CHECK_FALSE(noisy.converged);
    CHECK(noisy.runs == 40);
    CHECK(noisy.spread == doctest::Approx(1.0));

    measure_options budget;  // the time budget ends it before max_runs
    budget.max_time = 10.0 * ms;
    int j = 0;
    const auto capped = measure("capped", "test", w, [&] { return (j++ % 2 ? 3.0 : 1.0) * ms; }, budget);
    CHECK(capped.runs == 6);  // 1+3+1+3+1 = 9 ms after min_runs (< 10 ms), the 6th brings 12 ms: stop
    CHECK_FALSE(capped.converged);

    measure_options bad;
    bad.max_runs = 2;
    CHECK_THROWS_AS(measure("bad", "test", w, [] { return 1.0 * ms; }, bad), config_error);
}

TEST_CASE("CPU GEMM probe: 2mnk FLOPs, the three matrices' bytes, typed errors") {
    measure_options quick;
    quick.min_runs = 3;
    quick.max_time = 0.2 * s;
    const auto g = cpu_gemm(64, 32, 128, "fp32", quick);
    CHECK(g.work.flops.si() == 2.0 * 64 * 32 * 128);
    CHECK(g.work.bytes.si() == 4.0 * (64 * 128 + 128 * 32 + 64 * 32));
    CHECK(g.kind == "gemm");
    CHECK(g.format == "fp32");
    CHECK(g.time.si() > 0);
    CHECK(g.runs >= 3);
    CHECK_THROWS_WITH_AS(cpu_gemm(64, 64, 64, "bf16"), doctest::Contains("fp32, fp64"), config_error);
    CHECK_THROWS_WITH_AS(cpu_gemm(0, 64, 64, "fp32"), doctest::Contains("/m"), config_error);
}

TEST_CASE("CPU memory probes count bytes as STREAM does") {
    measure_options quick;
    quick.min_runs = 3;
    quick.max_time = 0.2 * s;
    const auto copy = cpu_memory("copy", 8.0 * MiB, quick);
    CHECK(copy.work.bytes.si() == 2.0 * 8 * 1024 * 1024);   // read a, write c
    const auto triad = cpu_memory("triad", 8.0 * MiB, quick);
    CHECK(triad.work.bytes.si() == 3.0 * 8 * 1024 * 1024);  // read b, c; write a
    CHECK(triad.work.flops.si() == 2.0 * 1024 * 1024);       // one multiply-add per element
    CHECK(copy.achieved_bandwidth().si() > 0);
    CHECK_THROWS_WITH_AS(cpu_memory("scale", 8.0 * MiB), doctest::Contains("copy, triad"), config_error);
    CHECK_THROWS_AS(cpu_memory("copy", 1.0 * KiB), config_error);
    const provenance p = cpu_provenance();
    CHECK(p.backend == "cpu");
    CHECK_FALSE(p.device.empty());
    CHECK(p.runtime.find("Eigen 3.") != std::string::npos);
    CHECK(p.date.size() == 20);
}

TEST_CASE("the GEMM curve is fitted from the GEMMs at or above the ridge, all of them when none is") {
    // Peaks 1 PFLOP/s and 5 TB/s: the ridge is 200 FLOP/B. Efficiency = FLOPs / time / 1 PFLOP/s.
    auto gemm = [](double flops, double bytes, double seconds) {
        measurement m;
        m.kind = "gemm";
        m.format = "bf16";
        m.work = {flops * FLOP, bytes * B};
        m.time = duration::from_si(seconds);
        return m;
    };
    const measurement small = gemm(1e9, 1e8, 20e-6);         // 10 FLOP/B: 0.05, memory-bound
    const measurement wide = gemm(3.8e10, 1e9, 500e-6);      // 38 FLOP/B: 0.076, memory-bound, near `mid`'s FLOPs
    const measurement mid = gemm(4e10, 1e8, 80e-6);          // 400 FLOP/B: 0.5
    const measurement large = gemm(1.6e11, 2e8, 200e-6);     // 800 FLOP/B: 0.8
    reference_peaks peaks;
    peaks.flops["bf16"] = flop_rate::from_si(1e15);
    peaks.memory = byte_rate::from_si(5e12);
    const auto t = fit_efficiency_table({small, wide, mid, large}, peaks, "t", "X", "test");
    const auto& curve = t.gemm.at("bf16").points;
    REQUIRE(curve.size() == 2);  // two samples, two knots: the fit goes through both
    CHECK(curve[0].work == doctest::Approx(4e10));
    CHECK(curve[0].value == doctest::Approx(0.5));
    CHECK(curve[1].work == doctest::Approx(1.6e11));
    CHECK(curve[1].value == doctest::Approx(0.8));
    // None at the ridge (a slow memory): every GEMM counts.
    const auto below = fit_efficiency_table({small, wide}, peaks, "t", "X", "test");
    REQUIRE(below.gemm.at("bf16").points.size() == 2);
    CHECK(below.gemm.at("bf16").points[0].value == doctest::Approx(0.05));
    CHECK(below.gemm.at("bf16").points[1].value == doctest::Approx(0.076));
}
