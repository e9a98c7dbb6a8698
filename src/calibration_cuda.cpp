#include <algorithm>
#include <ctime>

#include "capplan/calibration/cuda_backend.hpp"
#include "capplan/error.hpp"

#ifdef CAPPLAN_WITH_CUDA
#include "capplan/calibration/cuda_probes.hpp"
#endif

namespace capplan {
using namespace units;

#ifndef CAPPLAN_WITH_CUDA

namespace {
[[noreturn]] void not_built() {
    throw device_error(
        "the CUDA calibration backend was not built (nvcc was not found when capplan was compiled); "
        "allowed: --backend cpu, or rebuild with the CUDA Toolkit on PATH");
}
}  // namespace

bool cuda_backend_built() { return false; }
std::vector<std::string> cuda_gemm_formats(int) { not_built(); }
measurement cuda_gemm(std::int64_t, std::int64_t, std::int64_t, const std::string&, const measure_options&, int) {
    not_built();
}
measurement cuda_memory_copy(data_size, const measure_options&, int) { not_built(); }
measurement cuda_host_copy(data_size, bool, bool, const measure_options&, int) { not_built(); }
measurement cuda_decode_attention(std::int64_t, std::int64_t, std::int64_t, std::int64_t, const measure_options&, int) {
    not_built();
}
measurement cuda_launch_latency(const measure_options&, int) { not_built(); }
provenance cuda_provenance(int) { not_built(); }
calibration_run calibrate_cuda(const model_spec&, const accelerator_spec&, const cuda_calibration_options&) {
    not_built();
}

#else

namespace {

// Runs a probe factory and the harness, turning CUDA failures into device_error.
template <class Make>
measurement run(const std::string& name, const std::string& kind, const measure_options& o, Make&& make) {
    try {
        std::unique_ptr<cuda::timed_probe> p = make();
        return measure(
            name, kind, {p->flops * FLOP, p->bytes * B}, [&] { return duration::from_si(p->run_once()); }, o);
    } catch (const cuda::probe_failure& e) {
        throw device_error(name + ": " + e.what());
    }
}

cuda::device_properties props(int device) {
    try {
        return cuda::properties(device);
    } catch (const cuda::probe_failure& e) {
        throw device_error(std::string("no usable CUDA device: ") + e.what());
    }
}

std::string mib(data_size s) { return std::to_string(static_cast<long long>(s.si() / 1048576.0)) + " MiB"; }

void check_size(data_size s, const char* field) {
    if (s.si() < 1024 || s.in(GiB) > 64)
        throw config_error(field, std::to_string(s.si()) + " B", "out of range", "1 KiB to 64 GiB");
}

}  // namespace

bool cuda_backend_built() { return true; }

std::vector<std::string> cuda_gemm_formats(int device) {
    props(device);
    try {
        return cuda::gemm_formats(device);
    } catch (const cuda::probe_failure& e) {
        throw device_error(e.what());
    }
}

measurement cuda_gemm(std::int64_t m, std::int64_t n, std::int64_t k, const std::string& format,
                      const measure_options& o, int device) {
    for (auto [name, v] : {std::pair{"/m", m}, std::pair{"/n", n}, std::pair{"/k", k}})
        if (v < 1 || v > 131072)
            throw config_error(name, std::to_string(v), "out of range", "an integer in [1, 131072]");
    const auto formats = cuda_gemm_formats(device);
    if (std::find(formats.begin(), formats.end(), format) == formats.end()) {
        std::string allowed;
        for (const auto& f : formats) allowed += (allowed.empty() ? "" : ", ") + f;
        throw device_error("GEMM format '" + format + "' is not supported on " + props(device).name +
                           "; allowed: " + (allowed.empty() ? "none (compute capability below 8.0)" : allowed));
    }
    measurement r = run("gemm " + format + " " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
                        "gemm", o, [&] { return cuda::gemm(device, m, n, k, format); });
    r.format = format;
    r.m = m, r.n = n, r.k = k;
    return r;
}

measurement cuda_memory_copy(data_size size, const measure_options& o, int device) {
    check_size(size, "/size");
    props(device);
    return run("device copy " + mib(size), "memory_copy", o, [&] { return cuda::device_copy(device, size.si()); });
}

measurement cuda_host_copy(data_size size, bool to_device, bool pinned, const measure_options& o, int device) {
    check_size(size, "/size");
    props(device);
    return run(
        std::string(to_device ? "host to device " : "device to host ") + (pinned ? "pinned " : "pageable ") + mib(size),
        to_device ? "host_to_device" : "device_to_host", o,
        [&] { return cuda::host_copy(device, size.si(), to_device, pinned); });
}

measurement cuda_decode_attention(std::int64_t batch, std::int64_t context, std::int64_t kv_heads,
                                  std::int64_t head_dim, const measure_options& o, int device) {
    if (batch < 1 || context < 1 || kv_heads < 1 || batch * kv_heads > (1 << 24) || context > (1 << 22))
        throw config_error("/decode_attention", std::to_string(batch) + "x" + std::to_string(context), "out of range",
                           "batch x kv_heads up to 2^24, context up to 2^22");
    props(device);
    measurement r =
        run("decode attention batch " + std::to_string(batch) + " context " + std::to_string(context),
            "decode_attention", o, [&] { return cuda::decode_attention(device, batch, context, kv_heads, head_dim); });
    r.format = "bf16";
    return r;
}

measurement cuda_launch_latency(const measure_options& o, int device) {
    props(device);
    return run("kernel in a CUDA graph", "launch", o, [&] { return cuda::launch(device); });
}

provenance cuda_provenance(int device) {
    const cuda::device_properties p = props(device);
    provenance out;
    out.backend = "cuda";
    out.device = p.name + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
                 std::to_string(p.multiprocessors) + " SMs)";
    out.runtime = "CUDA runtime " + std::to_string(p.runtime_version / 1000) + "." +
                  std::to_string(p.runtime_version % 1000 / 10) + ", driver " +
                  std::to_string(p.driver_version / 1000) + "." + std::to_string(p.driver_version % 1000 / 10) +
                  ", cuBLASLt (dlopen)";
    if (p.sm_clock_khz > 0)
        out.clocks = "SM " + std::to_string(static_cast<int>(p.sm_clock_khz / 1000)) + " MHz, memory " +
                     std::to_string(static_cast<int>(p.memory_clock_khz / 1000)) + " MHz (maximum, as reported)";
    const std::time_t now = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    out.date = buf;
    return out;
}

calibration_run calibrate_cuda(const model_spec& m, const accelerator_spec& a, const cuda_calibration_options& o) {
    const cuda::device_properties dev = props(o.device);
    calibration_run run;
    run.model = m.name;
    run.layer_tokens = o.layer_tokens;
    run.accelerator = a;
    run.where = cuda_provenance(o.device);
    reference_peaks peaks;
    std::vector<std::string> formats = o.formats;
    const auto supported = cuda_gemm_formats(o.device);
    if (formats.empty()) formats = supported;
    for (const auto& f : formats) {
        const peak_rate p = a.peak(f);
        if (p.status != peak_rate::state::known)
            throw config_error("/accelerator", "'" + a.name + "'",
                               "the catalog has no " + f + " peak to refer the " + f + " curve to",
                               "an accelerator whose peak_dense_flops lists " + f);
        peaks.flops[f] = p.value;
    }
    if (!a.memory_bandwidth)
        throw config_error("/accelerator", "'" + a.name + "'", "no memory bandwidth in the catalog",
                           "an accelerator with memory.bandwidth");
    peaks.memory = *a.memory_bandwidth;
    std::vector<std::int64_t> tokens = o.gemm_tokens;
    tokens.push_back(o.layer_tokens);
    const auto shapes = layer_gemm_shapes(m, tokens);
    for (const auto& f : formats)
        for (const auto& s : shapes) {
            try {
                run.measurements.push_back(cuda_gemm(s[0], s[1], s[2], f, o.probe, o.device));
            } catch (const device_error&) {
                if (std::find(supported.begin(), supported.end(), f) == supported.end())
                    throw;  // the format, not a shape
            }
        }
    std::vector<data_size> sizes = o.copy_sizes;
    if (sizes.empty())
        for (double mb = 1; mb <= 4096 && 2.5 * mb * 1048576.0 < dev.memory_bytes; mb *= 4) sizes.push_back(mb * MiB);
    for (const auto& s : sizes) run.measurements.push_back(cuda_memory_copy(s, o.probe, o.device));
    for (bool to_device : {true, false})
        for (bool pinned : {true, false})
            run.measurements.push_back(cuda_host_copy(o.host_copy, to_device, pinned, o.probe, o.device));
    if (!m.mla && m.head_dim % 32 == 0 && m.head_dim <= 256)
        for (std::int64_t batch : {1, 16, 64})
            for (std::int64_t context : {1024, 8192})
                run.measurements.push_back(
                    cuda_decode_attention(batch, context, m.kv_heads, m.head_dim, o.probe, o.device));
    const measurement launch = cuda_launch_latency(o.probe, o.device);
    run.measurements.push_back(launch);
    if (o.on_measured) o.on_measured(run);

    run.table = fit_efficiency_table(run.measurements, peaks, "cuda " + dev.name + " " + run.where.date, a.name,
                                     "capplan calibrate --backend cuda, layer shapes of " + m.name);
    run.table.kernel_launch = launch.time;
    // The GEMM operators of one layer at the prompt: projections = QKV + output, MLP = up + down.
    const std::string f = std::find(formats.begin(), formats.end(), "bf16") != formats.end() ? "bf16" : formats.front();
    auto at = [&](const std::array<std::int64_t, 3>& s) -> std::optional<duration> {
        for (const auto& ms : run.measurements)
            if (ms.kind == "gemm" && ms.format == f && ms.m == s[0] && ms.n == s[1] && ms.k == s[2]) return ms.time;
        return std::nullopt;
    };
    const auto layer = layer_gemm_shapes(m, {o.layer_tokens});
    std::vector<measurement> ops;
    auto op = [&](const char* name, const std::array<std::int64_t, 3>& x, const std::array<std::int64_t, 3>& y) {
        const auto tx = at(x), ty = at(y);
        if (!tx || !ty) return;
        measurement r;
        r.probe = name;
        r.kind = "layer_op";
        r.format = f;
        r.time = *tx + *ty;
        ops.push_back(r);
    };
    if (layer.size() == 4) {
        op("attention projections", layer[0], layer[1]);
        op("mlp / experts", layer[2], layer[3]);
    }
    if (!ops.empty()) run.report = check_layer_ops(m, o.layer_tokens, f, a, run.table, ops);
    return run;
}

#endif

}  // namespace capplan
