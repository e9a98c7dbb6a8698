// Efficiency by operation size (issues 5.1 and 8.4): the fraction of peak one kernel achieves as a
// function of its work, per op kind (matrix units by number format, the attention core, memory-bound
// passes, norms). A calibration measures kernels on the user's hardware and fits these curves; estimates
// that are given the table use it in place of the catalog's single efficiency per accelerator.
//
// A curve is a least-squares linear spline in log10(work per kernel): small kernels do not fill the
// device (too few tiles for the cores, launch and pipeline fill dominate), large ones approach a
// plateau, and on a CPU a working set that fits a cache runs faster than one that streams from DRAM,
// so the curve is a table, not a closed form. Beyond the first and last points it keeps their value.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capplan/units.hpp"

namespace capplan {

struct efficiency_point {
    double work = 0.0;   // per kernel: FLOPs (compute curves) or bytes (the memory curve)
    double value = 0.0;  // achieved rate / the table's reference peak
};

struct efficiency_curve {
    std::vector<efficiency_point> points;  // work strictly increasing
    bool empty() const { return points.empty(); }
    double at(double work) const;  // linear in log10(work) between points; the end values beyond
};

// Least-squares fit of a linear spline in log10(work) to (work, efficiency) samples (Eigen QR),
// weighted by 1/efficiency so that each sample counts by its relative error. Knots at the distinct
// sizes when there are at most `max_knots` of them, else at evenly spaced log sizes over the range.
// Throws config_error (field "/measurements") when the samples cannot give a curve.
efficiency_curve fit_efficiency_curve(std::vector<efficiency_point> samples, int max_knots = 16);

// The curves of one accelerator, and the peaks they are fractions of.
struct efficiency_table {
    std::string name;                                   // named in every result that uses it
    std::string accelerator;                            // the accelerator it was measured on
    std::string source;                                 // how it was made (command, file)
    std::map<std::string, flop_rate> peak_flops;        // reference peak per format key
    std::optional<byte_rate> memory_bandwidth;          // reference bandwidth of the memory curve
    std::map<std::string, efficiency_curve> gemm;       // matrix multiplies, by format key (FLOP per kernel)
    std::map<std::string, efficiency_curve> attention;  // attention core, by format key; absent: gemm's
    efficiency_curve memory;                            // memory-bound passes, STREAM-like (bytes per kernel)
    efficiency_curve norm;                  // residual add + RMSNorm kernels (bytes per kernel); empty: memory's
    std::optional<duration> kernel_launch;  // per kernel, when measured
};

// Reads a calibration file (models/schema/efficiency_calibration.schema.json) from JSON text;
// `pointer` prefixes the JSON pointers of errors ("" for a whole file, "/calibration" inline).
efficiency_table read_efficiency_table(std::string_view json_text, const std::string& pointer);
// The same from a file; errors name "file#/pointer".
efficiency_table load_efficiency_table(const std::filesystem::path& file);

}  // namespace capplan
