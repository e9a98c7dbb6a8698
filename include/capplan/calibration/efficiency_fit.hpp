// From measurements to an efficiency table (issue 8.4), and the check of a transformer layer's
// operators, predicted against measured before and after calibration (issue 8.5).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "capplan/calibration/harness.hpp"
#include "capplan/spec/efficiency_table.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/spec/model_spec.hpp"

namespace capplan {

// The rates the curves are fractions of.
struct reference_peaks {
    std::map<std::string, flop_rate> flops;  // by format key
    byte_rate memory;
};

// Curves from the measurements: "gemm" probes -> gemm[format] by FLOPs, "attention" probes ->
// attention[format] by FLOPs per kernel (the step model runs the core as 2 kernels), "memory_triad"
// and "memory_copy" probes -> memory, "norm" -> norm, by bytes. Each a least-squares spline
// (fit_efficiency_curve).
efficiency_table fit_efficiency_table(const std::vector<measurement>& ms, const reference_peaks& peaks,
                                      std::string name, std::string accelerator, std::string source);

// One operator of a layer: measured, and predicted by the step model with the accelerator's
// default efficiencies (before) and with the table (after).
struct op_check {
    std::string op;
    duration measured, before, after;
};

// Predictions for the operators in `measured` (named as step_breakdown names them) of one layer of
// `m` at a prompt of `tokens`, all formats `format`.
std::vector<op_check> check_layer_ops(const model_spec& m, std::int64_t tokens, const std::string& format,
                                      const accelerator_spec& a, const efficiency_table& table,
                                      const std::vector<measurement>& measured);

// The GEMMs of one transformer layer of `m` (one tensor-parallel rank of 1) at each token count:
// QKV projection, attention output, MLP up (+gate), MLP down, as {m, n, k}, without repeats.
std::vector<std::array<std::int64_t, 3>> layer_gemm_shapes(const model_spec& m, std::vector<std::int64_t> tokens);

struct cpu_calibration_options {
    std::vector<std::int64_t> gemm_tokens{1, 16, 128};  // GEMM shapes of the layer at these token counts
    std::int64_t layer_tokens = 128;                    // the prompt of the layer check
    std::vector<std::string> formats{"fp32"};
    std::vector<data_size> triad_arrays;  // empty: 16 KiB .. 256 MiB by factors of 4
    int rounds = 3;                       // interleaved repetitions; the fastest median counts
    measure_options probe;                // its threads: every probe's and the layer's
};

struct calibration_run {
    std::string model;
    std::int64_t layer_tokens = 0;
    accelerator_spec accelerator;  // the host CPU as an accelerator: peaks = the references
    efficiency_table table;
    provenance where;
    std::vector<measurement> measurements;  // every probe: the fastest round's median
    std::vector<op_check> report;
    int rounds = 0;  // rounds measured: all asked for, unless stopped (measure_options::watch)
};

// Measures this CPU on `m`'s layer shapes, fits the table and checks the layer (issue 8.2, 8.4, 8.5).
// The probes and the layer run in `rounds` interleaved passes so that a machine whose speed drifts
// drifts for both alike. Asked to stop (o.probe.watch), it fits the rounds finished, or throws stopped_early
// before the first one finished.
calibration_run calibrate_cpu(const model_spec& m, const cpu_calibration_options& o);

// The calibration file (models/schema/efficiency_calibration.schema.json): the table, provenance,
// the command, the raw measurements, the layer report, and for the CPU backend the host CPU as an
// inline accelerator.
std::string calibration_json(const calibration_run& run, const std::string& command, int indent = 2);

}  // namespace capplan
