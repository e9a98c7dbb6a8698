// Calibration of the collective-communication model from nccl-tests / rccl-tests output.
//
// nccl-tests (github.com/NVIDIA/nccl-tests) prints one row per message size: size in bytes,
// element count, type, reduction, [root,] then out-of-place and in-place time (us), algbw and
// busbw (GB/s, GB = 10^9 B) and a correctness column. With -J it also writes the same rows as JSON
// (src/util.cu, JSON_FILE_VERSION 2). This header reads both and fits
//     time(S) = latency + S * bus_factor(op, n) / bus_bandwidth
// to the measured times, the alpha-beta form capplan's collective model uses.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capplan/analysis/collective_ops.hpp"
#include "capplan/units.hpp"

namespace capplan {

// One row of an nccl-tests table. A half the run did not measure (JSON "out_of_place": null in
// trace replay, or "nan") holds NaN quantities; fit_collective skips it.
struct nccl_tests_point {
    data_size size;        // "size" column: bytes of the whole buffer (nccl-tests' S)
    std::int64_t count = 0;  // elements
    std::string type, redop;
    duration time_out, time_in;  // out-of-place and in-place time per operation
    byte_rate algbw_out, busbw_out, algbw_in, busbw_in;
};

struct nccl_tests_run {
    std::string source;                // file name or caller-given label
    std::string citation;              // a "# source: ..." comment line, if the saved output has one
    std::optional<collective_op> op;   // "# Collective test starting: X", or an "X_perf" on a command line
    int ranks = 0;                     // "#  Rank N ... device" lines; 0 if absent, elided ("...") or gapped
    std::string nccl_version;          // "NCCL 2.18.5+cuda12.2", "RCCL 2.18.3+hip6.0"; "" if not printed
    std::string tests_version;         // "nccl-tests 2.13.8", "rccl-tests develop:a7809b3"; "" if not printed
    std::vector<nccl_tests_point> points;
};

// The stdout of an nccl-tests / rccl-tests binary. Reads the current layout (with "root" and
// "#wrong"), the old one (no "root", float "error"), per-iteration and timestamp columns, and skips
// log lines (NCCL INFO, SHARP, mpirun) and srun "0: " / mpirun "[1,0]<stdout>:" prefixes. A
// malformed row is a config_error at "line N"; output without result rows is a config_error.
nccl_tests_run parse_nccl_tests_text(std::string_view text, const std::string& source);

// The file written by nccl-tests -J. Malformed JSON is a json_error; a missing or mistyped key a
// config_error at its JSON pointer (/results/3/out_of_place/time). ranks = devices x nthreads x ngpus.
nccl_tests_run parse_nccl_tests_json(std::string_view text, const std::string& source);

// Reads a file, as JSON when its first non-blank character is '{', else as text; source = file name.
nccl_tests_run read_nccl_tests_file(const std::filesystem::path& file);

struct collective_fit {
    collective_op op = collective_op::all_reduce;
    int ranks = 0;
    duration latency;          // alpha
    byte_rate bus_bandwidth;   // S * bus_factor / (time - latency) at large S
    double r_squared = 0.0;    // of the weighted fit (weights 1/t), 1 = perfect
    int points = 0;
    data_size min_size, max_size;
    bool in_place = false;     // fitted on the in-place times
};

// Weighted least squares (Eigen) of time = latency + S * bus_factor(op, ranks) / bus_bandwidth
// over the run's points with size in [from, to], on out-of-place times or in-place ones. Each point
// is weighted by 1/t (minimises sum (t - model)^2 / t): plain least squares would be dominated by
// the largest sizes and relative error (weight 1/t^2) by the many latency-bound small ones, where
// 1/t fits both the latency floor and the bandwidth plateau. config_error when op or ranks
// contradict what the run says, with fewer than 3 usable points, or when the fitted bandwidth is
// not positive or the latency negative.
collective_fit fit_collective(const nccl_tests_run& run, collective_op op, int ranks, bool in_place = false,
                              std::optional<data_size> from = {}, std::optional<data_size> to = {});

// A catalog calibration entry (models/schema/collective_calibration.schema.json), pretty-printed,
// with the run's file and citation as its source.
std::string calibration_json(const collective_fit& fit, const std::string& system, const nccl_tests_run& run);

}  // namespace capplan
