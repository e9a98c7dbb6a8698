#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

#include "capplan/calibration/cpu_backend.hpp"
#include "capplan/analysis/flops.hpp"
#include "capplan/error.hpp"

namespace capplan {
using namespace units;

namespace {

using clock_type = std::chrono::steady_clock;

template <class F>
duration timed(F&& f) {
    const auto t0 = clock_type::now();
    f();
    return duration::from_si(std::chrono::duration<double>(clock_type::now() - t0).count());
}

template <class Scalar>
measurement gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& format, const measure_options& o) {
    // Row-major, as the layer's buffers and the frameworks' tensors.
    using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Matrix a = Matrix::Random(m, k), b = Matrix::Random(k, n);
    Matrix c(m, n);
    const double elems = static_cast<double>(m * k + k * n + m * n);
    const probe_work w{2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * FLOP,
                       elems * static_cast<double>(sizeof(Scalar)) * B};
    measurement r = measure("gemm " + format + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
                            "gemm", w, [&] { return timed([&] { c.noalias() = a * b; }); }, o);
    r.format = format;
    r.m = m;
    r.n = n;
    r.k = k;
    return r;
}

using row_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using strided = Eigen::Map<row_matrix, 0, Eigen::OuterStride<>>;

void check_layer(const model_spec& m, std::int64_t tokens) {
    if (tokens < 1 || tokens > 16384)
        throw config_error("/tokens", std::to_string(tokens), "out of range", "an integer in [1, 16384]");
    if (m.is_moe() || m.mla || m.sliding_window > 0)
        throw config_error("/model", "'" + m.name + "'", "the CPU layer runs dense layers with full attention only",
                           "a dense model without MLA or sliding windows (e.g. Llama-3.2-1B or an inline config)");
    if (m.hidden < 1 || m.heads < 1 || m.kv_heads < 1 || m.heads % m.kv_heads != 0 || m.head_dim < 1 || m.intermediate < 1)
        throw config_error("/model", "'" + m.name + "'", "incomplete layer shape", "hidden, heads, kv_heads dividing heads, head_dim, intermediate");
}

// Buffers of one layer's forward pass on `t` tokens (random weights: timing does not depend on values).
struct layer_buffers {
    std::int64_t t, h, q, kv, inter, up;
    row_matrix x, a, y, qkv, attn, w_qkv, w_o, w_up, w_down, gate_up, act, mlp_out;
    layer_buffers(const model_spec& m, std::int64_t tokens)
        : t(tokens), h(m.hidden), q(m.heads * m.head_dim), kv(m.kv_heads * m.head_dim), inter(m.intermediate),
          up((m.gated_mlp ? 2 : 1) * m.intermediate) {
        x = row_matrix::Random(t, h);
        a = row_matrix::Random(t, h);
        y = row_matrix::Zero(t, h);
        qkv = row_matrix::Random(t, q + 2 * kv);
        attn = row_matrix::Zero(t, q);
        w_qkv = row_matrix::Random(h, q + 2 * kv) * 0.02f;
        w_o = row_matrix::Random(q, h) * 0.02f;
        w_up = row_matrix::Random(h, up) * 0.02f;
        w_down = row_matrix::Random(inter, h) * 0.02f;
        gate_up = row_matrix::Zero(t, up);
        act = row_matrix::Zero(t, inter);
        mlp_out = row_matrix::Zero(t, h);
    }
};

void causal_attention(const model_spec& m, layer_buffers& b) {
    const std::int64_t t = b.t, d = m.head_dim, group = m.heads / m.kv_heads, stride = b.q + 2 * b.kv;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    constexpr std::int64_t block = 32;
    row_matrix s;
    for (std::int64_t hq = 0; hq < m.heads; ++hq) {
        const std::int64_t g = hq / group;
        const strided qh(b.qkv.data() + hq * d, t, d, Eigen::OuterStride<>(stride));
        const strided kh(b.qkv.data() + b.q + g * d, t, d, Eigen::OuterStride<>(stride));
        const strided vh(b.qkv.data() + b.q + b.kv + g * d, t, d, Eigen::OuterStride<>(stride));
        strided oh(b.attn.data() + hq * d, t, d, Eigen::OuterStride<>(b.q));
        for (std::int64_t r0 = 0; r0 < t; r0 += block) {
            const std::int64_t rows = std::min(block, t - r0), keys = r0 + rows;
            s.noalias() = (qh.middleRows(r0, rows) * kh.topRows(keys).transpose()) * scale;
            for (std::int64_t i = 0; i < rows; ++i)  // causal mask inside the diagonal block
                s.row(i).tail(keys - (r0 + i + 1)).setConstant(-std::numeric_limits<float>::infinity());
            s = (s.colwise() - s.rowwise().maxCoeff()).array().exp().matrix();
            s.array().colwise() /= s.array().rowwise().sum();
            oh.middleRows(r0, rows).noalias() = s * vh.topRows(keys);
        }
    }
}

// y = RMSNorm(x) row by row (unit weights: timing only).
void rms_norm(const row_matrix& x, row_matrix& y) {
    const float inv_h = 1.0f / static_cast<float>(x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i)
        y.row(i) = x.row(i) * (1.0f / std::sqrt(x.row(i).squaredNorm() * inv_h + 1e-5f));
}

// x += r; y = RMSNorm(x), one row at a time so the row is still in L1 for the norm (one pass each
// over x, r, x and y, as an engine's fused residual-add + norm kernel).
void add_rms_norm(row_matrix& x, const row_matrix& r, row_matrix& y) {
    const float inv_h = 1.0f / static_cast<float>(x.cols());
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
        x.row(i) += r.row(i);
        y.row(i) = x.row(i) * (1.0f / std::sqrt(x.row(i).squaredNorm() * inv_h + 1e-5f));
    }
}

// act = SiLU(gate) x up, gate and up side by side in `gate_up` (or act = SiLU(gate_up)).
void activation(const row_matrix& gate_up, row_matrix& act, bool gated) {
    const Eigen::Index w = act.cols();
    const auto g = gate_up.leftCols(w).array();
    if (gated)
        act = (g / (1.0f + (-g).exp()) * gate_up.rightCols(w).array()).matrix();
    else
        act = (g / (1.0f + (-g).exp())).matrix();
}

void check_rows(std::int64_t rows, std::int64_t cols) {
    if (rows < 1 || cols < 1 || rows * cols > (std::int64_t{1} << 30))
        throw config_error("/shape", std::to_string(rows) + "x" + std::to_string(cols), "out of range",
                           "rows and columns >= 1, at most 2^30 elements");
}

}  // namespace

measurement cpu_norm(std::int64_t rows, std::int64_t cols, const measure_options& o) {
    check_rows(rows, cols);
    row_matrix x = row_matrix::Random(rows, cols), r = row_matrix::Random(rows, cols) * 1e-3f, y(rows, cols);
    const double elems = static_cast<double>(rows * cols);
    measurement out = measure("norm fp32 " + std::to_string(rows) + "x" + std::to_string(cols), "norm",
                              {flop_count{}, 4.0 * elems * 4.0 * B}, [&] { return timed([&] { add_rms_norm(x, r, y); }); }, o);
    out.format = "fp32";
    return out;
}

measurement cpu_attention(const model_spec& m, std::int64_t tokens, const measure_options& o) {
    check_layer(m, tokens);
    layer_buffers b(m, tokens);
    const double t = static_cast<double>(tokens);
    const probe_work w{static_cast<double>(detail::attention_flops_per_key(m)) * t * (t + 1.0) / 2.0 * FLOP,
                       t * static_cast<double>(2 * b.q + 2 * b.kv) * 4.0 * B};
    measurement r = measure("attention fp32 " + std::to_string(m.heads) + "x" + std::to_string(m.head_dim) + " heads, " +
                                std::to_string(tokens) + " tokens",
                            "attention", w, [&] { return timed([&] { causal_attention(m, b); }); }, o);
    r.format = "fp32";
    return r;
}

std::vector<measurement> cpu_layer_ops(const model_spec& m, std::int64_t tokens, const measure_options& o) {
    check_layer(m, tokens);
    layer_buffers b(m, tokens);
    const double t = static_cast<double>(tokens), h = static_cast<double>(b.h), f4 = 4.0;
    const double proj_params = h * static_cast<double>(b.q + 2 * b.kv) + static_cast<double>(b.q) * h;
    const double mlp_params = h * static_cast<double>(b.up) + static_cast<double>(b.inter) * h;
    std::vector<measurement> out;
    auto op = [&](const char* name, flop_count f, data_size bytes, auto&& body) {
        measurement r = measure(name, "layer_op", {f, bytes}, [&] { return timed(body); }, o);
        r.format = "fp32";
        out.push_back(std::move(r));
    };
    op("attention projections", 2.0 * t * proj_params * FLOP,
       (proj_params + t * (2.0 * h + 2.0 * static_cast<double>(b.q) + static_cast<double>(2 * b.kv))) * f4 * B, [&] {
           b.qkv.noalias() = b.y * b.w_qkv;
           b.a.noalias() = b.attn * b.w_o;
       });
    const measurement core = cpu_attention(m, tokens, o);
    out.push_back(core);
    out.back().probe = "attention core";
    out.back().kind = "layer_op";
    op("mlp / experts", 2.0 * t * mlp_params * FLOP,
       (mlp_params + t * (2.0 * h + (m.gated_mlp ? 3.0 : 2.0) * static_cast<double>(b.inter))) * f4 * B, [&] {
           b.gate_up.noalias() = b.y * b.w_up;
           activation(b.gate_up, b.act, m.gated_mlp);
           b.mlp_out.noalias() = b.act * b.w_down;
       });
    op("norms and elementwise", flop_count{}, 10.0 * t * h * f4 * B, [&] {
        rms_norm(b.x, b.y);             // pre-attention norm: 2 passes
        add_rms_norm(b.x, b.a, b.y);        // attention residual + pre-MLP norm: 4 passes
        add_rms_norm(b.x, b.mlp_out, b.y);  // MLP residual + the next layer's norm: 4 passes
    });
    return out;
}

const std::vector<std::string>& cpu_gemm_formats() {
    static const std::vector<std::string> formats{"fp32", "fp64"};
    return formats;
}

measurement cpu_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& format,
                     const measure_options& o) {
    // Bounds catch typos before they allocate: 65536^2 fp64 elements is already 32 GiB per matrix.
    for (auto [name, v] : {std::pair{"/m", m}, std::pair{"/n", n}, std::pair{"/k", k}})
        if (v < 1 || v > 65536) throw config_error(name, std::to_string(v), "out of range", "an integer in [1, 65536]");
    if (format == "fp32") return gemm<float>(m, n, k, format, o);
    if (format == "fp64") return gemm<double>(m, n, k, format, o);
    throw config_error("/format", format, "not a CPU GEMM format", "fp32, fp64");
}

measurement cpu_memory(const std::string& kind, data_size array, const measure_options& o) {
    if (kind != "copy" && kind != "triad") throw config_error("/kind", kind, "not a memory probe", "copy, triad");
    const auto elems = static_cast<std::size_t>(array.si() / sizeof(double));
    // At least 8 KiB to time anything; at most 16 GiB per array (48 GiB for triad's three) to stay
    // within the memory of the machines this runs on.
    if (elems < 1024 || array.in(GiB) > 16.0)
        throw config_error("/array", std::to_string(array.si()) + " B", "out of range", "8 KiB to 16 GiB");
    // First touch writes every page, so the timed runs measure bandwidth, not page faults.
    std::vector<double> a(elems, 1.0), b(elems, 2.0), c(elems, 0.0);
    const double scalar = 3.0;
    const double arrays = kind == "copy" ? 2.0 : 3.0;
    const probe_work w{kind == "copy" ? flop_count{} : 2.0 * static_cast<double>(elems) * FLOP,
                       arrays * static_cast<double>(elems * sizeof(double)) * B};
    auto run = [&] {
        return timed([&] {
            if (kind == "copy")
                std::copy(a.begin(), a.end(), c.begin());
            else
                for (std::size_t i = 0; i < elems; ++i) a[i] = b[i] + scalar * c[i];
        });
    };
    measurement r = measure("memory " + kind + " " + std::to_string(elems * sizeof(double) >> 20) + " MiB",
                            "memory_" + kind, w, run, o);
    // Read the results back so the stores are observable and the loops cannot be removed.
    volatile double sink = a[elems / 2] + c[elems / 3];
    (void)sink;
    return r;
}

std::optional<data_size> cpu_memory_total() {
    std::ifstream meminfo("/proc/meminfo");
    for (std::string key; meminfo >> key;) {
        double kib = 0;
        meminfo >> kib;
        if (key == "MemTotal:" && kib > 0) return kib * KiB;  // the kernel's "kB" are KiB
        meminfo.ignore(256, '\n');
    }
    return std::nullopt;
}

provenance cpu_provenance() {
    provenance p;
    p.backend = "cpu";
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.rfind("model name", 0) == 0) {
            p.device = line.substr(line.find(':') + 2);
            break;
        }
    if (p.device.empty()) p.device = "unknown CPU";
#if defined(__clang__)
    p.runtime = "clang " __clang_version__;
#elif defined(__GNUC__)
    p.runtime = "gcc " __VERSION__;
#endif
    p.runtime += "; Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
                 std::to_string(EIGEN_MINOR_VERSION) + " (" + Eigen::SimdInstructionSetsInUse() + ")";
    p.threads = Eigen::nbThreads();
    const std::time_t now = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    p.date = buf;
    return p;
}

}  // namespace capplan
