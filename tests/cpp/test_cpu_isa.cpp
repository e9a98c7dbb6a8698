// The CPU probes' instruction set (chosen at run time, never one the CPU lacks), their threads, and
// the CPU's peak beside the measurement (formulas §18). No test here times anything.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "capplan/calibration/cpu_backend.hpp"
#include "capplan/calibration/cpu_isa.hpp"
#include "capplan/calibration/efficiency_fit.hpp"
#include "capplan/detail/threads.hpp"
#include "capplan/detail/cpu_probe_kernels.hpp"
#include "capplan/detail/threads.hpp"
#include "test_support.hpp"

using namespace capplan;
using namespace capplan::units;
using capplan::test::error_of;

namespace {

const std::vector<cpu_isa> all_isas{cpu_isa::baseline, cpu_isa::avx2_fma, cpu_isa::avx512};

// Every combination of the six features.
std::vector<cpu_features> all_feature_sets() {
    std::vector<cpu_features> out;
    for (int bits = 0; bits < 64; ++bits)
        out.push_back({(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0, (bits & 8) != 0, (bits & 16) != 0, (bits & 32) != 0});
    return out;
}

bool usable_here(cpu_isa isa) {
    const auto built = built_cpu_isas();
    return std::find(built.begin(), built.end(), isa) != built.end() && cpu_runs(host_cpu_features(), isa);
}

}  // namespace

TEST_CASE("CPU peak: physical cores used x clock x FLOPs per cycle, hyperthreads not counted") {
    // Hand calculation: 4 cores x 2.5 GHz x 32 FLOP/cycle (AVX2+FMA) = 320 GFLOP/s fp32, 160 fp64.
    const cpu_peak p = cpu_peak_of(cpu_isa::avx2_fma, 8, 4, {2.5 * units::GHz, "test"}, 32);
    CHECK(p.cores == 4);  // 8 threads on 4 cores: the hyperthreads share the FMA units
    CHECK(p.fp32().in(GFLOP / s) == doctest::Approx(320.0));
    CHECK(p.fp64().in(GFLOP / s) == doctest::Approx(160.0));
    // 2 threads on the same CPU: 2 x 2.5 x 32 = 160 GFLOP/s.
    CHECK(cpu_peak_of(cpu_isa::avx2_fma, 2, 4, {2.5 * units::GHz, "test"}, 32).fp32().in(GFLOP / s) == doctest::Approx(160.0));
    // One AVX-512 core at 3.0 GHz x 64 = 192 GFLOP/s.
    CHECK(cpu_peak_of(cpu_isa::avx512, 1, 32, {3.0 * units::GHz, "test"}, 64).fp32().in(GFLOP / s) == doctest::Approx(192.0));
}

TEST_CASE("FLOPs per cycle by ISA: FMA units x lanes x 2, AMD's split vector units halved") {
    const cpu_identity intel{"GenuineIntel", 6, 143}, zen4{"AuthenticAMD", 0x19, 0x11}, zen1{"AuthenticAMD", 0x17, 0x01},
        zen2{"AuthenticAMD", 0x17, 0x31}, zen5{"AuthenticAMD", 0x1a, 0x02};
    CHECK(fp32_flops_per_cycle(cpu_isa::avx512, intel) == 2 * 16 * 2);
    CHECK(fp32_flops_per_cycle(cpu_isa::avx512, zen4) == 32);  // 512-bit ops as two 256-bit halves
    CHECK(fp32_flops_per_cycle(cpu_isa::avx512, zen5) == 64);
    CHECK(fp32_flops_per_cycle(cpu_isa::avx2_fma, intel) == 2 * 8 * 2);
    CHECK(fp32_flops_per_cycle(cpu_isa::avx2_fma, zen2) == 32);
    CHECK(fp32_flops_per_cycle(cpu_isa::avx2_fma, zen1) == 16);  // 256-bit ops as two 128-bit halves
#if defined(__x86_64__)
    CHECK(fp32_flops_per_cycle(cpu_isa::baseline, intel) == 4 + 4);  // a 4-wide mul and a 4-wide add
    CHECK(fp32_flops_per_cycle(cpu_isa::baseline, zen2) == 2 * (4 + 4));
    CHECK(cpu_isa_name(cpu_isa::baseline) == "SSE2");
#endif
    CHECK(cpu_isa_name(cpu_isa::avx512) == "AVX-512");
    CHECK(cpu_isa_name(cpu_isa::avx2_fma) == "AVX2+FMA");
}

TEST_CASE("the ISA chosen is always one the CPU runs and the library has, the widest such") {
    const std::vector<std::vector<cpu_isa>> builds{{cpu_isa::baseline}, {cpu_isa::baseline, cpu_isa::avx2_fma}, all_isas};
    for (const auto& built : builds)
        for (const cpu_features& f : all_feature_sets()) {
            const cpu_isa chosen = select_cpu_isa(f, built);
            CHECK(cpu_runs(f, chosen));
            CHECK(std::find(built.begin(), built.end(), chosen) != built.end());
            for (cpu_isa wider : built)
                if (wider > chosen) CHECK_FALSE(cpu_runs(f, wider));
        }
    cpu_features no_bw{true, true, true, true, false, true};  // AVX-512F without BW: not the AVX-512 path
    CHECK(select_cpu_isa(no_bw, all_isas) == cpu_isa::avx2_fma);
    cpu_features no_fma{true, false, true, true, true, true};  // no FMA: neither vector path
    CHECK(select_cpu_isa(no_fma, all_isas) == cpu_isa::baseline);

    // This machine: the choice is runnable, and kernels of an ISA it lacks are refused, never run.
    CHECK(cpu_runs(host_cpu_features(), host_cpu_isa()));
    for (cpu_isa isa : all_isas) {
        if (usable_here(isa))
            CHECK(cpu_probe_kernels(isa).simd != nullptr);
        else
            CHECK(error_of([&] { cpu_probe_kernels(isa); }).field() == "/isa");
    }
}

TEST_CASE("every ISA's GEMM kernel computes the product, slice by slice") {
    // C[5,37] = A[5,19] B[19,37] in two column slices, against the triple loop.
    const std::int64_t m = 5, n = 37, k = 19;
    std::vector<float> a(m * k), b(k * n), want(m * n, 0.0f);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3.0f;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) * 0.5f;
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j)
            for (std::int64_t l = 0; l < k; ++l) want[i * n + j] += a[i * k + l] * b[l * n + j];
    for (cpu_isa isa : all_isas) {
        if (!usable_here(isa)) continue;
        CAPTURE(cpu_isa_name(isa));
        std::vector<float> c(m * n, -1.0f);
        const auto& kernels = cpu_probe_kernels(isa);
        kernels.gemm_f32(a.data(), b.data(), c.data(), m, n, k, 0, 16);
        kernels.gemm_f32(a.data(), b.data(), c.data(), m, n, k, 16, n);
        for (std::size_t i = 0; i < c.size(); ++i) CHECK(c[i] == doctest::Approx(want[i]));
    }
}

TEST_CASE("probe threads: 0 means every hardware thread, 1..1024 as given, otherwise /threads") {
    CHECK(cpu_probe_threads(0) == detail::available_cpus());
    CHECK(cpu_probe_threads(3) == 3);
    CHECK(cpu_probe_threads(1024) == 1024);
    for (int bad : {-1, 1025})
        CHECK(error_of([&] { cpu_probe_threads(bad); }).field() == "/threads");
    measure_options o;
    o.threads = 2000;
    CHECK(error_of([&] { cpu_gemm(8, 8, 8, "fp32", o); }).field() == "/threads");
    CHECK(error_of([&] { cpu_memory("copy", 8.0 * KiB, o); }).field() == "/threads");
    cpu_calibration_options c;
    c.probe.threads = -4;  // refused before any probe runs
    CHECK(error_of([&] { calibrate_cpu(test::shipped_catalog().model("Llama-3.2-1B"), c); }).field() == "/threads");
}

TEST_CASE("a worker pool runs each share once per run, its caller included") {
    detail::worker_pool pool(3);
    CHECK(pool.size() == 3);
    std::vector<std::atomic<int>> calls(3);
    auto work = [&](int k, int n) {
        CHECK(n == 3);
        ++calls[static_cast<std::size_t>(k)];
    };
    for (int run = 0; run < 50; ++run) pool.run(work);
    for (const auto& c : calls) CHECK(c.load() == 50);
}

TEST_CASE("a GEMM on 2 threads declares the whole product's work; provenance names ISA, threads, peak") {
    measure_options quick;
    quick.min_runs = 3;
    quick.max_time = 0.05 * s;
    quick.threads = 2;
    const auto g = cpu_gemm(64, 48, 32, "fp32", quick);
    CHECK(g.work.flops.si() == 2.0 * 64 * 48 * 32);

    const provenance p = cpu_provenance(1);
    CHECK(p.threads == 1);
    CHECK(p.isa == cpu_isa_name(host_cpu_isa()));
    const auto j = nlohmann::json::parse(measurements_json(p, {g}))["provenance"];
    CHECK(j["isa"] == p.isa);
    CHECK(j["threads"] == 1);
    if (p.peak) {  // where /proc/cpuinfo or cpufreq give a clock
        CHECK(p.peak->cores == 1);
        const auto& pk = j["cpu_peak"];
        CHECK(pk["fp32_flops_per_s"].get<double>() ==
              doctest::Approx(pk["clock_hz"].get<double>() * pk["flops_per_cycle"]["fp32"].get<int>()));
        CHECK(pk["fp64_flops_per_s"].get<double>() == doctest::Approx(pk["fp32_flops_per_s"].get<double>() / 2));
    }
}

TEST_CASE("clock, cores and vendor from /proc/cpuinfo and sysfs text") {
    const std::string cpuinfo =
        "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\ncpu MHz\t\t: 2596.152\n"
        "physical id\t: 0\ncore id\t\t: 0\n\n"
        "processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu MHz\t\t: 2596.152\nphysical id\t: 0\ncore id\t\t: 1\n\n"
        "processor\t: 2\nphysical id\t: 0\ncore id\t\t: 0\n\n"  // the hyperthread of core 0
        "processor\t: 3\nphysical id\t: 1\ncore id\t\t: 0\n";   // a second package's core 0
    const cpu_identity id = parse_cpu_identity(cpuinfo);
    CHECK(id.vendor == "AuthenticAMD");
    CHECK(id.family == 25);
    CHECK(id.model == 17);

    const cpu_clock max = parse_cpu_clock(std::string("3700000\n"), cpuinfo);  // kHz
    CHECK(max.rate.in(units::GHz) == doctest::Approx(3.7));
    CHECK(max.source.find("cpuinfo_max_freq") != std::string::npos);
    const cpu_clock mhz = parse_cpu_clock(std::nullopt, cpuinfo);
    CHECK(mhz.rate.in(units::MHz) == doctest::Approx(2596.152));
    CHECK(mhz.source.find("cpu MHz") != std::string::npos);
    CHECK(parse_cpu_clock(std::nullopt, "").rate.si() == 0.0);

    // sysfs: one core_cpus_list per logical CPU; 8 logical CPUs on 4 cores.
    CHECK(count_physical_cores({"0,4\n", "1,5\n", "2,6\n", "3,7\n", "0,4\n", "1,5\n", "2,6\n", "3,7\n"}, cpuinfo) == 4);
    CHECK(count_physical_cores({"0-1\n", "0-1\n"}, "") == 1);
    // Without sysfs: distinct (physical id, core id) pairs -> (0,0), (0,1), (1,0).
    CHECK(count_physical_cores({}, cpuinfo) == 3);
    CHECK(count_physical_cores({}, "") == 0);
}

TEST_CASE("a calibration asked to stop measures nothing more: before its first round, stopped_early") {
    progress watch;
    measure_options o;
    o.watch = &watch;
    o.max_time = 0.01 * units::s;
    const measurement one = cpu_gemm(16, 16, 16, "fp32", o);
    CHECK(one.runs >= o.min_runs);
    CHECK(watch.done() == 1);  // each probe measured counts
    watch.request_stop();
    CHECK_THROWS_AS(cpu_gemm(16, 16, 16, "fp32", o), stopped_early);  // the next one does not run
    CHECK(watch.done() == 1);
    cpu_calibration_options c;
    c.probe.watch = &watch;
    CHECK_THROWS_WITH_AS(calibrate_cpu(test::shipped_catalog().model("Llama-3.2-1B"), c),
                         doctest::Contains("before its first round finished"), stopped_early);
}
