#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <type_traits>

#include "capplan/calibration/cpu_backend.hpp"
#include "capplan/analysis/flops.hpp"
#include "capplan/detail/cpu_probe_kernels.hpp"
#include "capplan/detail/threads.hpp"
#include "capplan/error.hpp"
#include "capplan/units_parse.hpp"

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

// The kernels of the instruction set this CPU runs, and the threads one probe is spread over
// (started before the timed runs).
struct probe_team {
    const detail::probe_kernels& k = cpu_probe_kernels(host_cpu_isa());
    detail::worker_pool pool;
    explicit probe_team(const measure_options& o) : pool(cpu_probe_threads(o.threads)) {}

    // body(begin, end) over [0, count) in one slice per thread, each a whole number of `align` items.
    template <class Body>
    void split(std::int64_t count, std::int64_t align, Body&& body) {
        const std::int64_t chunks = (count + align - 1) / align;
        const std::int64_t parts = std::min<std::int64_t>(pool.size(), chunks);
        if (parts <= 1) return body(std::int64_t{0}, count);
        auto share = [&](int i, int) {
            if (i < parts) body(std::min(count, align * (chunks * i / parts)), std::min(count, align * (chunks * (i + 1) / parts)));
        };
        pool.run(share);
    }
};

// C = A B in column slices of whole 16-column blocks (a 64-byte line of fp32), so that threads
// write separate lines of C; each thread runs Eigen's GEMM on its slice.
template <class Scalar>
void gemm_on(probe_team& t, const Scalar* a, const Scalar* b, Scalar* c, std::int64_t m, std::int64_t n, std::int64_t k) {
    t.split(n, 16, [&](std::int64_t c0, std::int64_t c1) {
        if constexpr (std::is_same_v<Scalar, float>)
            t.k.gemm_f32(a, b, c, m, n, k, c0, c1);
        else
            t.k.gemm_f64(a, b, c, m, n, k, c0, c1);
    });
}

template <class Scalar>
measurement gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& format, const measure_options& o) {
    // Row-major, as the layer's buffers and the frameworks' tensors.
    using Matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Matrix a = Matrix::Random(m, k), b = Matrix::Random(k, n);
    Matrix c(m, n);
    probe_team team(o);
    const double elems = static_cast<double>(m * k + k * n + m * n);
    const probe_work w{2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * FLOP,
                       elems * static_cast<double>(sizeof(Scalar)) * B};
    measurement r = measure("gemm " + format + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k), "gemm", w,
                            [&] { return timed([&] { gemm_on(team, a.data(), b.data(), c.data(), m, n, k); }); }, o);
    r.format = format;
    r.m = m;
    r.n = n;
    r.k = k;
    return r;
}

using row_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

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

void causal_attention(probe_team& t, const model_spec& m, layer_buffers& b) {
    const detail::attention_shape shape{b.t, m.head_dim, m.heads, m.kv_heads};
    t.split(m.heads, 1, [&](std::int64_t h0, std::int64_t h1) { t.k.attention(b.qkv.data(), b.attn.data(), shape, h0, h1); });
}

void rms_norm(probe_team& t, const row_matrix& x, row_matrix& y) {
    t.split(x.rows(), 1, [&](std::int64_t r0, std::int64_t r1) { t.k.rms_norm(x.data(), y.data(), x.cols(), r0, r1); });
}

// One pass each over x, r, x and y, as an engine's fused residual-add + norm kernel.
void add_rms_norm(probe_team& t, row_matrix& x, const row_matrix& r, row_matrix& y) {
    t.split(x.rows(), 1, [&](std::int64_t r0, std::int64_t r1) { t.k.add_rms_norm(x.data(), r.data(), y.data(), x.cols(), r0, r1); });
}

void activation(probe_team& t, const row_matrix& gate_up, row_matrix& act, bool gated) {
    t.split(act.rows(), 1, [&](std::int64_t r0, std::int64_t r1) {
        t.k.activation(gate_up.data(), act.data(), act.cols(), gated, r0, r1);
    });
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
    probe_team team(o);
    const double elems = static_cast<double>(rows * cols);
    // A layer's norms as cpu_layer_ops runs them (one plain norm, two fused residual-add + norms: 10 passes),
    // so the curve carries the same per-call cost as the operator it predicts.
    measurement out = measure("norm fp32 " + std::to_string(rows) + "x" + std::to_string(cols), "norm",
                              {flop_count{}, 10.0 * elems * 4.0 * B}, [&] {
                                  return timed([&] {
                                      rms_norm(team, x, y);
                                      add_rms_norm(team, x, r, y);
                                      add_rms_norm(team, x, r, y);
                                  });
                              }, o);
    out.format = "fp32";
    return out;
}

measurement cpu_attention(const model_spec& m, std::int64_t tokens, const measure_options& o) {
    check_layer(m, tokens);
    layer_buffers b(m, tokens);
    probe_team team(o);
    const double t = static_cast<double>(tokens);
    const probe_work w{static_cast<double>(detail::attention_flops_per_key(m)) * t * (t + 1.0) / 2.0 * FLOP,
                       t * static_cast<double>(2 * b.q + 2 * b.kv) * 4.0 * B};
    measurement r = measure("attention fp32 " + std::to_string(m.heads) + "x" + std::to_string(m.head_dim) + " heads, " +
                                std::to_string(tokens) + " tokens",
                            "attention", w, [&] { return timed([&] { causal_attention(team, m, b); }); }, o);
    r.format = "fp32";
    return r;
}

std::vector<measurement> cpu_layer_ops(const model_spec& m, std::int64_t tokens, const measure_options& o) {
    check_layer(m, tokens);
    layer_buffers b(m, tokens);
    probe_team team(o);
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
           gemm_on(team, b.y.data(), b.w_qkv.data(), b.qkv.data(), b.t, b.q + 2 * b.kv, b.h);
           gemm_on(team, b.attn.data(), b.w_o.data(), b.a.data(), b.t, b.h, b.q);
       });
    const measurement core = cpu_attention(m, tokens, o);
    out.push_back(core);
    out.back().probe = "attention core";
    out.back().kind = "layer_op";
    op("mlp / experts", 2.0 * t * mlp_params * FLOP,
       (mlp_params + t * (2.0 * h + (m.gated_mlp ? 3.0 : 2.0) * static_cast<double>(b.inter))) * f4 * B, [&] {
           gemm_on(team, b.y.data(), b.w_up.data(), b.gate_up.data(), b.t, b.up, b.h);
           activation(team, b.gate_up, b.act, m.gated_mlp);
           gemm_on(team, b.act.data(), b.w_down.data(), b.mlp_out.data(), b.t, b.h, b.inter);
       });
    op("norms and elementwise", flop_count{}, 10.0 * t * h * f4 * B, [&] {
        rms_norm(team, b.x, b.y);                 // pre-attention norm: 2 passes
        add_rms_norm(team, b.x, b.a, b.y);        // attention residual + pre-MLP norm: 4 passes
        add_rms_norm(team, b.x, b.mlp_out, b.y);  // MLP residual + the next layer's norm: 4 passes
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
    probe_team team(o);
    const std::unique_ptr<double[]> a(new double[elems]), b(new double[elems]), c(new double[elems]);
    // Slices of whole 64-byte lines (8 doubles), the same slice to the same thread every run. First
    // touch writes every page from the thread that uses it (on its NUMA node), so the timed runs
    // measure bandwidth, not page faults.
    auto slices = [&](auto&& body) {
        team.split(static_cast<std::int64_t>(elems), 8, [&](std::int64_t i0, std::int64_t i1) {
            body(static_cast<std::size_t>(i0), static_cast<std::size_t>(i1));
        });
    };
    slices([&](std::size_t i0, std::size_t i1) {
        std::fill(a.get() + i0, a.get() + i1, 1.0);
        std::fill(b.get() + i0, b.get() + i1, 2.0);
        std::fill(c.get() + i0, c.get() + i1, 0.0);
    });
    const double scalar = 3.0;
    const double arrays = kind == "copy" ? 2.0 : 3.0;
    const probe_work w{kind == "copy" ? flop_count{} : 2.0 * static_cast<double>(elems) * FLOP,
                       arrays * static_cast<double>(elems * sizeof(double)) * B};
    auto run = [&] {
        return timed([&] {
            slices([&](std::size_t i0, std::size_t i1) {
                if (kind == "copy")
                    std::copy(a.get() + i0, a.get() + i1, c.get() + i0);
                else
                    team.k.triad(a.get(), b.get(), c.get(), scalar, i0, i1);
            });
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

provenance cpu_provenance(int threads) {
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
    const cpu_isa isa = host_cpu_isa();
    p.runtime += "; Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
                 std::to_string(EIGEN_MINOR_VERSION) + " (" + cpu_probe_kernels(isa).simd + ")";
    p.threads = cpu_probe_threads(threads);
    p.isa = cpu_isa_name(isa);
    p.peak = host_cpu_peak(isa, p.threads);
    if (p.peak) {
        p.clocks = format(p.peak->clock.rate) + " from " + p.peak->clock.source;
    }
    const std::time_t now = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    p.date = buf;
    return p;
}

}  // namespace capplan
