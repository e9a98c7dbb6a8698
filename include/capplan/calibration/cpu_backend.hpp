// The CPU calibration backend (issue 8.2), always built: GEMM throughput through Eigen by shape and
// number format, and memory bandwidth by STREAM's copy and triad (McCalpin 1995) on buffers well
// beyond the last-level cache. Byte counts follow STREAM: copy moves 2 x 8 bytes per element
// (read a, write c), triad 3 x 8 (read b and c, write a). Every probe runs the kernels of the widest
// instruction set this CPU runs (cpu_isa.hpp) on options.threads threads, a GEMM split by columns
// of C, attention by heads, norms by rows, STREAM by ranges; declared work is the whole probe's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "capplan/calibration/harness.hpp"
#include "capplan/spec/model_spec.hpp"

namespace capplan {

// Formats the CPU GEMM probe supports ("fp32", "fp64").
const std::vector<std::string>& cpu_gemm_formats();

// C[m,n] = A[m,k] B[k,n]: 2mnk FLOPs; bytes = the three matrices once (the compulsory traffic).
measurement cpu_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& format,
                     const measure_options& options = {});

// kind "copy" or "triad"; `array` is the size of one of the double arrays (default 256 MiB).
measurement cpu_memory(const std::string& kind, data_size array, const measure_options& options = {});

// Causal self-attention of one prompt of `tokens` in fp32 (every query head; grouped KV heads share
// their K and V), in blocks of 32 query rows so masked blocks are skipped as FlashAttention skips
// them. Declared FLOPs: the model's count, attention_flops_per_key x tokens (tokens + 1) / 2.
measurement cpu_attention(const model_spec& m, std::int64_t tokens, const measure_options& options = {});

// x += r; y = RMSNorm(x) on rows x cols fp32 (a fused residual add + norm): 4 passes of bytes.
measurement cpu_norm(std::int64_t rows, std::int64_t cols, const measure_options& options = {});

// One transformer layer of `m` run for real in fp32 for a prompt of `tokens`, one measurement per
// operator as the step model names them (inference_perf.hpp): "attention projections" (QKV and
// output GEMMs), "attention core", "mlp / experts" (up+gate GEMM, SiLU x gate, down GEMM) and "norms
// and elementwise" (RMSNorm; residual add fused with RMSNorm, twice: 10 passes over the hidden
// state in 3 kernels). Dense layers with full multi-head / grouped-query attention only.
std::vector<measurement> cpu_layer_ops(const model_spec& m, std::int64_t tokens, const measure_options& options = {});

// The CPU, compiler and Eigen (as compiled for the ISA the probes run), the probes' threads
// (cpu_probe_threads(threads)), the ISA and the CPU's peak for it.
provenance cpu_provenance(int threads = 0);
// Installed memory (MemTotal of /proc/meminfo); empty where it cannot be read.
std::optional<data_size> cpu_memory_total();

}  // namespace capplan
