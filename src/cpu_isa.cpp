#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "capplan/calibration/cpu_isa.hpp"
#include "capplan/detail/cpu_probe_kernels.hpp"
#include "capplan/detail/threads.hpp"
#include "capplan/error.hpp"

namespace capplan {

namespace {

#if defined(__x86_64__) || defined(_M_X64)
constexpr bool x86_64 = true;
#else
constexpr bool x86_64 = false;
#endif

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\n");
    return b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

// "key<tabs>: value" -> {key, value}; {"", ""} for a line without a colon.
std::pair<std::string, std::string> cpuinfo_line(const std::string& line) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) return {};
    return {trim(line.substr(0, colon)), trim(line.substr(colon + 1))};
}

std::optional<std::string> read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// One core_cpus_list (else thread_siblings_list, older kernels) per logical CPU the kernel lists.
std::vector<std::string> sysfs_core_lists() {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/cpu", ec)) {
        const std::string name = e.path().filename().string();
        if (name.size() < 4 || name.rfind("cpu", 0) != 0 ||
            !std::all_of(name.begin() + 3, name.end(), [](unsigned char c) { return std::isdigit(c); }))
            continue;
        auto list = read_text(e.path() / "topology" / "core_cpus_list");
        if (!list) list = read_text(e.path() / "topology" / "thread_siblings_list");
        if (list) out.push_back(*list);
    }
    return out;
}

}  // namespace

std::string cpu_isa_name(cpu_isa isa) {
    switch (isa) {
        case cpu_isa::avx512: return "AVX-512";
        case cpu_isa::avx2_fma: return "AVX2+FMA";
        case cpu_isa::baseline: break;
    }
    return x86_64 ? "SSE2" : "baseline";
}

cpu_features host_cpu_features() {
    cpu_features f;
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
    // libgcc and compiler-rt also read XGETBV: a feature counts only where the OS saves its registers.
    __builtin_cpu_init();
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512dq = __builtin_cpu_supports("avx512dq");
#endif
    return f;
}

bool cpu_runs(const cpu_features& f, cpu_isa isa) {
    switch (isa) {
        case cpu_isa::avx512: return f.avx512f && f.avx512vl && f.avx512bw && f.avx512dq && f.fma && f.avx2;
        case cpu_isa::avx2_fma: return f.avx2 && f.fma;
        case cpu_isa::baseline: break;
    }
    return true;
}

std::vector<cpu_isa> built_cpu_isas() {
    std::vector<cpu_isa> out{cpu_isa::baseline};
#ifdef CAPPLAN_PROBES_AVX2
    out.push_back(cpu_isa::avx2_fma);
#endif
#ifdef CAPPLAN_PROBES_AVX512
    out.push_back(cpu_isa::avx512);
#endif
    return out;
}

cpu_isa select_cpu_isa(const cpu_features& f, const std::vector<cpu_isa>& built) {
    cpu_isa best = cpu_isa::baseline;
    for (cpu_isa isa : built)
        if (cpu_runs(f, isa) && isa > best) best = isa;
    return best;
}

cpu_isa host_cpu_isa() {
    static const cpu_isa isa = select_cpu_isa(host_cpu_features(), built_cpu_isas());
    return isa;
}

const detail::probe_kernels& cpu_probe_kernels(cpu_isa isa) {
    const auto built = built_cpu_isas();
    if (std::find(built.begin(), built.end(), isa) == built.end() || !cpu_runs(host_cpu_features(), isa)) {
        std::string allowed;
        for (cpu_isa b : built)
            if (cpu_runs(host_cpu_features(), b)) allowed += (allowed.empty() ? "" : ", ") + cpu_isa_name(b);
        throw config_error("/isa", cpu_isa_name(isa), "not built into this library or not run by this CPU", allowed);
    }
    switch (isa) {
#ifdef CAPPLAN_PROBES_AVX512
        case cpu_isa::avx512: return *capplan_probe_kernels_avx512();
#endif
#ifdef CAPPLAN_PROBES_AVX2
        case cpu_isa::avx2_fma: return *capplan_probe_kernels_avx2();
#endif
        default: return *capplan_probe_kernels_baseline();
    }
}

int cpu_probe_threads(int threads) {
    // 1024 is above the largest machines sold (2 sockets x AMD EPYC 9965, 192 cores with 2 threads
    // each: 768), so more is a typo.
    if (threads < 0 || threads > 1024)
        throw config_error("/threads", std::to_string(threads), "out of range",
                           "an integer in [1, 1024], or 0 for every hardware thread");
    return std::min(detail::thread_count(threads), 1024);
}

std::string cpuinfo_value(const std::string& cpuinfo, const std::string& key) {
    std::istringstream in(cpuinfo);
    for (std::string line; std::getline(in, line);)
        if (auto [k, v] = cpuinfo_line(line); k == key) return v;
    return "";
}

cpu_identity parse_cpu_identity(const std::string& cpuinfo) {
    return {cpuinfo_value(cpuinfo, "vendor_id"), std::atoi(cpuinfo_value(cpuinfo, "cpu family").c_str()),
            std::atoi(cpuinfo_value(cpuinfo, "model").c_str())};
}

// FMA units x fp32 lanes x 2 (a fused multiply-add is 2 FLOPs) per core and cycle:
// - AVX-512: 2 x 16 x 2 = 64, two 512-bit FMA units (Intel 64 and IA-32 Architectures Optimization
//   Reference Manual, Skylake Server: FMA on ports 0 and 5). Xeons with only the port-0 unit (Bronze,
//   Silver, some Gold 5xxx) and Intel's client AVX-512 cores (Ice Lake, Tiger Lake, Rocket Lake) do
//   32, which CPUID does not tell: their peak reads twice too high.
//   AMD Zen 4 (family 19h; its Zen 3 siblings lack AVX-512) runs a 512-bit op as two halves on its
//   two 256-bit FMA pipes: 32 (A. Fog, "The microarchitecture of Intel, AMD and VIA CPUs", Zen 4;
//   A. J. Yee, "Zen4's AVX512 Teardown", numberworld.org, 2022). Zen 5 (family 1Ah) desktop and
//   server cores have full 512-bit datapaths (64); its mobile cores keep 256-bit ones (32), which
//   the family does not tell apart: their peak reads twice too high.
// - AVX2+FMA: 2 x 8 x 2 = 32 (Intel since Haswell: FMA on ports 0 and 1, the optimization manual;
//   AMD since Zen 2, Fog). Zen and Zen+ (family 17h, models below 30h) split 256-bit ops into two
//   128-bit halves: 16 (Fog, Zen).
// - SSE2 (x86-64's baseline, no FMA): a 4-wide multiply and a 4-wide add per cycle = 8 (Intel: one
//   multiply and one add port up to Broadwell, two ports shared by both since Skylake; Fog's
//   instruction tables). AMD Zen (family 17h on) has two multiply and two add pipes: 16 (Fog, Zen).
int fp32_flops_per_cycle(cpu_isa isa, const cpu_identity& id) {
    const bool amd = id.vendor == "AuthenticAMD";
    switch (isa) {
        case cpu_isa::avx512: return amd && id.family == 0x19 ? 32 : 64;
        case cpu_isa::avx2_fma: return amd && id.family == 0x17 && id.model < 0x30 ? 16 : 32;
        case cpu_isa::baseline: break;
    }
    if (!x86_64) return 0;
    return amd && id.family >= 0x17 ? 16 : 8;
}

cpu_clock parse_cpu_clock(const std::optional<std::string>& max_freq_khz, const std::string& cpuinfo) {
    if (max_freq_khz)
        if (const double khz = std::atof(max_freq_khz->c_str()); khz > 0)
            return {khz * units::kHz, "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"};
    if (const double mhz = std::atof(cpuinfo_value(cpuinfo, "cpu MHz").c_str()); mhz > 0)
        return {mhz * units::MHz, "/proc/cpuinfo cpu MHz"};
    return {};
}

int count_physical_cores(const std::vector<std::string>& core_cpu_lists, const std::string& cpuinfo) {
    std::set<std::string> cores;
    for (const auto& list : core_cpu_lists)
        if (!trim(list).empty()) cores.insert(trim(list));
    if (!cores.empty()) return static_cast<int>(cores.size());
    std::istringstream in(cpuinfo);
    std::string package;
    for (std::string line; std::getline(in, line);) {
        const auto [k, v] = cpuinfo_line(line);
        if (k == "processor") package.clear();
        if (k == "physical id") package = v;
        if (k == "core id") cores.insert(package + ":" + v);
    }
    return static_cast<int>(cores.size());
}

flop_rate cpu_peak::fp32() const {
    return static_cast<double>(cores) * static_cast<double>(fp32_per_cycle) * units::FLOP * clock.rate;
}

flop_rate cpu_peak::fp64() const { return 0.5 * fp32(); }

cpu_peak cpu_peak_of(cpu_isa isa, int threads, int physical_cores, cpu_clock clock, int fp32_per_cycle) {
    return {isa, std::min(threads, physical_cores), physical_cores, std::move(clock), fp32_per_cycle};
}

std::optional<cpu_peak> host_cpu_peak(cpu_isa isa, int threads) {
    const std::string cpuinfo = read_text("/proc/cpuinfo").value_or("");
    cpu_clock clock = parse_cpu_clock(read_text("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"), cpuinfo);
    const int cores = count_physical_cores(sysfs_core_lists(), cpuinfo);
    const int per_cycle = fp32_flops_per_cycle(isa, parse_cpu_identity(cpuinfo));
    if (clock.rate.si() <= 0 || cores < 1 || per_cycle < 1) return std::nullopt;
    return cpu_peak_of(isa, cpu_probe_threads(threads), cores, std::move(clock), per_cycle);
}

}  // namespace capplan
