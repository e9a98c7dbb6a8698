// The CPU calibration backend (issue 8.2), always built: GEMM throughput through Eigen by shape and
// number format, and memory bandwidth by STREAM's copy and triad (McCalpin 1995) on buffers well
// beyond the last-level cache. Byte counts follow STREAM: copy moves 2 x 8 bytes per element
// (read a, write c), triad 3 x 8 (read b and c, write a).
#pragma once

#include <string>
#include <vector>

#include "capplan/calibration/harness.hpp"

namespace capplan {

// Formats the CPU GEMM probe supports ("fp32", "fp64").
const std::vector<std::string>& cpu_gemm_formats();

// C[m,n] = A[m,k] B[k,n]: 2mnk FLOPs; bytes = the three matrices once (the compulsory traffic).
measurement cpu_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& format,
                     const measure_options& options = {});

// kind "copy" or "triad"; `array` is the size of one of the double arrays (default 256 MiB).
measurement cpu_memory(const std::string& kind, data_size array, const measure_options& options = {});

provenance cpu_provenance();

}  // namespace capplan
