// The Eigen code the CPU calibration probes time, as a table of plain functions: src/cpu_probe_kernels.cpp
// is compiled once per instruction set (cmake/cpu_probes.cmake) and calibration/cpu_isa.hpp picks
// the table the CPU runs. Each kernel does one thread's share (a range of columns, heads, rows or
// elements) so that the caller spreads a probe over threads without OpenMP. Only pointers and
// integers cross into the per-ISA objects, never a library type with code of its own.
#pragma once

#include <cstddef>
#include <cstdint>

namespace capplan::detail {

// Causal self-attention of one prompt: qkv is tokens x (q + 2 kv) row-major, [Q | K | V] with
// q = heads x head_dim and kv = kv_heads x head_dim; the output is tokens x q.
struct attention_shape {
    std::int64_t tokens, head_dim, heads, kv_heads;
};

struct probe_kernels {
    const char* simd;  // Eigen::SimdInstructionSetsInUse() where the kernels were compiled
    // Columns [c0, c1) of C[m,n] = A[m,k] B[k,n], all row-major.
    void (*gemm_f32)(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
                     std::int64_t c0, std::int64_t c1);
    void (*gemm_f64)(const double* a, const double* b, double* c, std::int64_t m, std::int64_t n, std::int64_t k,
                     std::int64_t c0, std::int64_t c1);
    // Query heads [h0, h1), in blocks of 32 query rows (masked blocks skipped, as FlashAttention).
    void (*attention)(const float* qkv, float* out, const attention_shape& s, std::int64_t h0, std::int64_t h1);
    // Rows [r0, r1) of y = RMSNorm(x) (unit weights: timing only).
    void (*rms_norm)(const float* x, float* y, std::int64_t cols, std::int64_t r0, std::int64_t r1);
    // Rows [r0, r1) of x += r; y = RMSNorm(x), a row at a time so it is still in L1 for the norm.
    void (*add_rms_norm)(float* x, const float* r, float* y, std::int64_t cols, std::int64_t r0, std::int64_t r1);
    // Rows [r0, r1) of act = SiLU(gate) x up, gate_up = [gate | up] (2 x width columns), or
    // act = SiLU(gate_up) when not gated.
    void (*activation)(const float* gate_up, float* act, std::int64_t width, bool gated, std::int64_t r0,
                       std::int64_t r1);
    // a[i] = b[i] + s c[i] for i in [i0, i1) (STREAM triad).
    void (*triad)(double* a, const double* b, const double* c, double s, std::size_t i0, std::size_t i1);
};

}  // namespace capplan::detail

// One entry per compiled instruction set; only those built exist (cpu_isa.hpp built_cpu_isas).
extern "C" {
const capplan::detail::probe_kernels* capplan_probe_kernels_baseline();
const capplan::detail::probe_kernels* capplan_probe_kernels_avx2();
const capplan::detail::probe_kernels* capplan_probe_kernels_avx512();
}
