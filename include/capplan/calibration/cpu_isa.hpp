// The instruction sets the CPU calibration probes are compiled for (cmake/cpu_probes.cmake), the
// one chosen at run time, the probes' thread count, and the CPU's own peak FLOP/s for that
// instruction set, reported beside what the probes measure (formulas §18).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "capplan/units.hpp"

namespace capplan {

namespace detail {
struct probe_kernels;
}

enum class cpu_isa { baseline, avx2_fma, avx512 };

// "AVX-512", "AVX2+FMA", and for the baseline "SSE2" on x86-64 (its baseline), else "baseline".
std::string cpu_isa_name(cpu_isa isa);

// What the CPU runs, and the OS saves the registers of; all false off x86-64 or off GCC/Clang.
struct cpu_features {
    bool avx2 = false, fma = false, avx512f = false, avx512vl = false, avx512bw = false, avx512dq = false;
};
cpu_features host_cpu_features();

// AVX-512 needs F, VL, BW, DQ and FMA; AVX2+FMA needs both; the baseline always runs.
bool cpu_runs(const cpu_features& f, cpu_isa isa);
// The instruction sets compiled into this library, narrowest (the baseline) first.
std::vector<cpu_isa> built_cpu_isas();
// The widest of `built` that `f` runs.
cpu_isa select_cpu_isa(const cpu_features& f, const std::vector<cpu_isa>& built);
// select_cpu_isa for this CPU and this library (decided once).
cpu_isa host_cpu_isa();
// The probe kernels of `isa`; config_error at /isa where it is not built or this CPU lacks it.
const detail::probe_kernels& cpu_probe_kernels(cpu_isa isa);

// The probes' threads: 0 means every CPU this process may run on (detail::available_cpus);
// otherwise 1..1024, else config_error at /threads.
int cpu_probe_threads(int threads);

// The first value of `key` in /proc/cpuinfo text ("" when absent).
std::string cpuinfo_value(const std::string& cpuinfo, const std::string& key);

struct cpu_identity {
    std::string vendor;  // vendor_id: GenuineIntel, AuthenticAMD, ...
    int family = 0, model = 0;
};
cpu_identity parse_cpu_identity(const std::string& cpuinfo);

// fp32 FLOPs per cycle of one core running `isa` (fp64: half); 0 where unknown (not x86-64).
int fp32_flops_per_cycle(cpu_isa isa, const cpu_identity& id);

struct cpu_clock {
    frequency rate;      // zero when neither source is readable
    std::string source;  // which file and field the clock came from
};
// cpufreq's cpuinfo_max_freq (kHz, the maximum clock) when given, else "cpu MHz" of /proc/cpuinfo
// (cpu0's clock when read; on VMs usually the base clock).
cpu_clock parse_cpu_clock(const std::optional<std::string>& max_freq_khz, const std::string& cpuinfo);

// Physical cores: the distinct sets of logical CPUs sharing a core (sysfs topology core_cpus_list
// or thread_siblings_list, one per logical CPU), else the distinct (physical id, core id) pairs of
// /proc/cpuinfo; 0 when neither says.
int count_physical_cores(const std::vector<std::string>& core_cpu_lists, const std::string& cpuinfo);

// The CPU's peak for the probes: cores x clock x FLOPs per cycle, cores = min(threads, physical
// cores) because hyperthreads of one core share its FMA units.
struct cpu_peak {
    cpu_isa isa = cpu_isa::baseline;
    int cores = 0;           // cores the probes' threads occupy
    int physical_cores = 0;  // of the whole machine
    cpu_clock clock;
    int fp32_per_cycle = 0;  // FLOPs per cycle per core
    flop_rate fp32() const;
    flop_rate fp64() const;  // half the lanes of fp32
};
cpu_peak cpu_peak_of(cpu_isa isa, int threads, int physical_cores, cpu_clock clock, int fp32_per_cycle);
// This machine's peak for `isa` on `threads`; empty where the clock, the cores or the FLOPs per
// cycle cannot be read.
std::optional<cpu_peak> host_cpu_peak(cpu_isa isa, int threads);

}  // namespace capplan
