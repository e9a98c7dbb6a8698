// The measurement harness of the calibration backends (issue 8), independent of the hardware: a
// probe declares its work (FLOPs, bytes) and how to run it once; the harness warms it up, repeats
// it until the run times agree (relative interquartile range under a target) or a budget runs out,
// and reports the median time with the spread, the number of runs and whether it converged.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "capplan/calibration/cpu_isa.hpp"
#include "capplan/progress.hpp"
#include "capplan/units.hpp"

namespace capplan {

// Where and how a measurement was taken, kept beside every number it produced.
struct provenance {
    std::string backend;   // "cpu" or "cuda"
    std::string device;    // CPU model name / GPU name
    std::string runtime;   // compiler + library (Eigen, CUDA runtime, driver) versions
    std::string clocks;    // what the clocks were, where readable ("" when not)
    std::string date;      // UTC, ISO 8601
    int threads = 1;
    std::string isa;       // CPU: the instruction set the probes ran (cpu_isa_name)
    std::optional<cpu_peak> peak;  // CPU: its peak for that ISA and those threads, where readable
};

struct probe_work {
    flop_count flops;  // per run (0 for a pure memory probe)
    data_size bytes;   // moved per run (reads + writes)
};

struct measure_options {
    int warmup = 2;               // runs discarded before timing (caches, page faults, clocks)
    int min_runs = 5;
    int max_runs = 100;
    double target_spread = 0.05;  // stop when (p75 - p25) / median falls to this
    duration max_time = duration::from_si(2.0);  // total timed budget per probe
    int threads = 0;  // CPU probes: threads to spread each probe over, 0 = every hardware thread
    // Counts each probe measured; asked to stop, the next probe throws stopped_early instead of running.
    progress* watch = nullptr;
};

struct measurement {
    std::string probe;    // e.g. "gemm fp32 1024x1024x1024", "memory triad 256 MiB"
    std::string kind;     // "gemm", "memory_copy", "memory_triad", ...
    std::string format;   // number format of a compute probe ("" for memory)
    std::int64_t m = 0, n = 0, k = 0;  // GEMM shape (C[m,n] = A[m,k] B[k,n]); 0 otherwise
    probe_work work;
    duration time;        // median of the timed runs
    double spread = 0.0;  // (p75 - p25) / median of the timed runs
    int runs = 0;
    bool converged = false;  // spread reached the target within the budget
    flop_rate achieved_flops() const { return time.si() > 0 ? work.flops / time : flop_rate{}; }
    byte_rate achieved_bandwidth() const { return time.si() > 0 ? work.bytes / time : byte_rate{}; }
};

// Percentile of unsorted samples with linear interpolation between order statistics (as
// numpy.percentile's default), q in [0, 100].
double percentile(std::vector<double> samples, double q);
// (p75 - p25) / p50; 0 for fewer than two samples.
double relative_iqr(const std::vector<double>& samples);

// Runs `run_once` (which does the work once and returns how long it took, so a GPU probe can time
// itself with events) under the options. Throws config_error on options that cannot work.
measurement measure(std::string probe, std::string kind, probe_work work, const std::function<duration()>& run_once,
                    const measure_options& options = {});

// {"provenance": {..., isa, cpu_peak}, "measurements": [{probe, kind, format, m, n, k, flops, bytes,
// time_s, spread, runs, converged, achieved_flops_per_s, achieved_bytes_per_s}]}: the raw table a
// fit is made from.
std::string measurements_json(const provenance& p, const std::vector<measurement>& ms, int indent = 2);

}  // namespace capplan
