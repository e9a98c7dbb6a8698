#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

#include "capplan/calibration/cpu_backend.hpp"
#include "capplan/error.hpp"

namespace capplan {
using namespace units;

namespace {

using clock_type = std::chrono::steady_clock;

template <class F>
duration timed(F&& f) {
    const auto t0 = clock_type::now();
    f();
    return duration::from_si(std::chrono::duration<double>(clock_type::now() - t0).count());
}

template <class Scalar>
measurement gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& format, const measure_options& o) {
    using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
    const Matrix a = Matrix::Random(m, k), b = Matrix::Random(k, n);
    Matrix c(m, n);
    const double elems = static_cast<double>(m * k + k * n + m * n);
    const probe_work w{2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * FLOP,
                       elems * static_cast<double>(sizeof(Scalar)) * B};
    measurement r = measure("gemm " + format + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
                            "gemm", w, [&] { return timed([&] { c.noalias() = a * b; }); }, o);
    r.format = format;
    r.m = m;
    r.n = n;
    r.k = k;
    return r;
}

}  // namespace

const std::vector<std::string>& cpu_gemm_formats() {
    static const std::vector<std::string> formats{"fp32", "fp64"};
    return formats;
}

measurement cpu_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& format,
                     const measure_options& o) {
    // Bounds catch typos before they allocate: 65536^2 fp64 elements is already 32 GiB per matrix.
    for (auto [name, v] : {std::pair{"/m", m}, std::pair{"/n", n}, std::pair{"/k", k}})
        if (v < 1 || v > 65536) throw config_error(name, std::to_string(v), "out of range", "an integer in [1, 65536]");
    if (format == "fp32") return gemm<float>(m, n, k, format, o);
    if (format == "fp64") return gemm<double>(m, n, k, format, o);
    throw config_error("/format", format, "not a CPU GEMM format", "fp32, fp64");
}

measurement cpu_memory(const std::string& kind, data_size array, const measure_options& o) {
    if (kind != "copy" && kind != "triad") throw config_error("/kind", kind, "not a memory probe", "copy, triad");
    const auto elems = static_cast<std::size_t>(array.si() / sizeof(double));
    // At least 8 KiB to time anything; at most 16 GiB per array (48 GiB for triad's three) to stay
    // within the memory of the machines this runs on.
    if (elems < 1024 || array.in(GiB) > 16.0)
        throw config_error("/array", std::to_string(array.si()) + " B", "out of range", "8 KiB to 16 GiB");
    // First touch writes every page, so the timed runs measure bandwidth, not page faults.
    std::vector<double> a(elems, 1.0), b(elems, 2.0), c(elems, 0.0);
    const double scalar = 3.0;
    const double arrays = kind == "copy" ? 2.0 : 3.0;
    const probe_work w{kind == "copy" ? flop_count{} : 2.0 * static_cast<double>(elems) * FLOP,
                       arrays * static_cast<double>(elems * sizeof(double)) * B};
    auto run = [&] {
        return timed([&] {
            if (kind == "copy")
                std::copy(a.begin(), a.end(), c.begin());
            else
                for (std::size_t i = 0; i < elems; ++i) a[i] = b[i] + scalar * c[i];
        });
    };
    measurement r = measure("memory " + kind + " " + std::to_string(elems * sizeof(double) >> 20) + " MiB",
                            "memory_" + kind, w, run, o);
    // Read the results back so the stores are observable and the loops cannot be removed.
    volatile double sink = a[elems / 2] + c[elems / 3];
    (void)sink;
    return r;
}

provenance cpu_provenance() {
    provenance p;
    p.backend = "cpu";
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.rfind("model name", 0) == 0) {
            p.device = line.substr(line.find(':') + 2);
            break;
        }
    if (p.device.empty()) p.device = "unknown CPU";
#if defined(__clang__)
    p.runtime = "clang " __clang_version__;
#elif defined(__GNUC__)
    p.runtime = "gcc " __VERSION__;
#endif
    p.runtime += "; Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
                 std::to_string(EIGEN_MINOR_VERSION) + " (" + Eigen::SimdInstructionSetsInUse() + ")";
    p.threads = Eigen::nbThreads();
    const std::time_t now = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    p.date = buf;
    return p;
}

}  // namespace capplan
