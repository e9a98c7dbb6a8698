// The Eigen code the CPU probes time (detail/cpu_probe_kernels.hpp). Built as part of the library
// for baseline x86-64 and again by cmake/cpu_probes.cmake with CAPPLAN_PROBE_ISA=avx2 / avx512 and
// the matching -m flags; that step leaves only the entry point global, so no inline function
// (Eigen's or the standard library's) compiled for AVX-512 can stand in for a baseline copy.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

#include "capplan/detail/cpu_probe_kernels.hpp"

#ifndef CAPPLAN_PROBE_ISA
#define CAPPLAN_PROBE_ISA baseline
#endif
#define CAPPLAN_PROBE_JOIN2(a, b) a##b
#define CAPPLAN_PROBE_JOIN(a, b) CAPPLAN_PROBE_JOIN2(a, b)

namespace capplan::detail::CAPPLAN_PROBE_ISA {
namespace {

using std::int64_t;
template <class S>
using row_matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using strided = Eigen::Map<row_matrix<float>, 0, Eigen::OuterStride<>>;
using const_strided = Eigen::Map<const row_matrix<float>, 0, Eigen::OuterStride<>>;
using row = Eigen::Map<Eigen::RowVectorXf>;
using const_row = Eigen::Map<const Eigen::RowVectorXf>;

template <class S>
void gemm_cols(const S* a, const S* b, S* c, int64_t m, int64_t n, int64_t k, int64_t c0, int64_t c1) {
    if (c1 <= c0) return;
    const Eigen::Map<const row_matrix<S>> am(a, m, k), bm(b, k, n);
    Eigen::Map<row_matrix<S>> cm(c, m, n);
    cm.middleCols(c0, c1 - c0).noalias() = am * bm.middleCols(c0, c1 - c0);
}

void attention_heads(const float* qkv, float* out, const attention_shape& s, int64_t h0, int64_t h1) {
    const int64_t t = s.tokens, d = s.head_dim, q = s.heads * d, kv = s.kv_heads * d, stride = q + 2 * kv;
    const int64_t group = s.heads / s.kv_heads;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    constexpr int64_t block = 32;
    row_matrix<float> sc;
    for (int64_t hq = h0; hq < h1; ++hq) {
        const int64_t g = hq / group;
        const const_strided qh(qkv + hq * d, t, d, Eigen::OuterStride<>(stride));
        const const_strided kh(qkv + q + g * d, t, d, Eigen::OuterStride<>(stride));
        const const_strided vh(qkv + q + kv + g * d, t, d, Eigen::OuterStride<>(stride));
        strided oh(out + hq * d, t, d, Eigen::OuterStride<>(q));
        for (int64_t r0 = 0; r0 < t; r0 += block) {
            const int64_t rows = std::min(block, t - r0), keys = r0 + rows;
            sc.noalias() = (qh.middleRows(r0, rows) * kh.topRows(keys).transpose()) * scale;
            for (int64_t i = 0; i < rows; ++i)  // causal mask inside the diagonal block
                sc.row(i).tail(keys - (r0 + i + 1)).setConstant(-std::numeric_limits<float>::infinity());
            sc = (sc.colwise() - sc.rowwise().maxCoeff()).array().exp().matrix();
            sc.array().colwise() /= sc.array().rowwise().sum();
            oh.middleRows(r0, rows).noalias() = sc * vh.topRows(keys);
        }
    }
}

void rms_norm_rows(const float* x, float* y, int64_t cols, int64_t r0, int64_t r1) {
    const float inv_h = 1.0f / static_cast<float>(cols);
    for (int64_t i = r0; i < r1; ++i) {
        const const_row xr(x + i * cols, cols);
        row(y + i * cols, cols) = xr * (1.0f / std::sqrt(xr.squaredNorm() * inv_h + 1e-5f));
    }
}

void add_rms_norm_rows(float* x, const float* r, float* y, int64_t cols, int64_t r0, int64_t r1) {
    const float inv_h = 1.0f / static_cast<float>(cols);
    for (int64_t i = r0; i < r1; ++i) {
        row xr(x + i * cols, cols);
        xr += const_row(r + i * cols, cols);
        row(y + i * cols, cols) = xr * (1.0f / std::sqrt(xr.squaredNorm() * inv_h + 1e-5f));
    }
}

void activation_rows(const float* gate_up, float* act, int64_t width, bool gated, int64_t r0, int64_t r1) {
    if (r1 <= r0) return;
    const int64_t in_cols = (gated ? 2 : 1) * width;
    const Eigen::Map<const row_matrix<float>> gu(gate_up + r0 * in_cols, r1 - r0, in_cols);
    Eigen::Map<row_matrix<float>> out(act + r0 * width, r1 - r0, width);
    const auto g = gu.leftCols(width).array();
    if (gated)
        out = (g / (1.0f + (-g).exp()) * gu.rightCols(width).array()).matrix();
    else
        out = (g / (1.0f + (-g).exp())).matrix();
}

void triad_range(double* a, const double* b, const double* c, double s, std::size_t i0, std::size_t i1) {
    for (std::size_t i = i0; i < i1; ++i) a[i] = b[i] + s * c[i];
}

probe_kernels make_table() {
    Eigen::initParallel();  // Eigen's cache sizes, read once before threads share them
    return {Eigen::SimdInstructionSetsInUse(), &gemm_cols<float>, &gemm_cols<double>, &attention_heads,
            &rms_norm_rows, &add_rms_norm_rows, &activation_rows, &triad_range};
}

}  // namespace
}  // namespace capplan::detail::CAPPLAN_PROBE_ISA

extern "C" const capplan::detail::probe_kernels* CAPPLAN_PROBE_JOIN(capplan_probe_kernels_, CAPPLAN_PROBE_ISA)() {
    static const capplan::detail::probe_kernels table = capplan::detail::CAPPLAN_PROBE_ISA::make_table();
    return &table;
}
