#include <algorithm>
#include <array>
#include <cctype>
#include <nlohmann/json.hpp>

#include "capplan/analysis/inference_perf.hpp"
#include "capplan/calibration/cpu_backend.hpp"
#include "capplan/calibration/efficiency_fit.hpp"
#include "capplan/error.hpp"
#include "capplan/units_parse.hpp"

namespace capplan {
using namespace units;

namespace {

// The step model charges the attention core as two kernels (KV-cache write and attention) and
// looks its curve up per kernel; a probe that runs the whole core is recorded at half its work.
constexpr double attention_kernels = 2.0;

std::vector<efficiency_point> samples(const std::vector<measurement>& ms, const std::string& kind,
                                      const std::string& format, double reference, double work_share) {
    std::vector<efficiency_point> out;
    for (const auto& m : ms) {
        if (m.kind != kind || (!format.empty() && m.format != format) || m.time.si() <= 0) continue;
        const bool compute = kind == "gemm" || kind == "attention";
        const double achieved = compute ? m.achieved_flops().si() : m.achieved_bandwidth().si();
        const double work = compute ? m.work.flops.si() : m.work.bytes.si();
        out.push_back({work * work_share, achieved / reference});
    }
    return out;
}

// The GEMM samples of a format whose arithmetic intensity reaches the ridge (peak FLOP/s over peak
// bytes/s; Williams et al. 2009): below it a GEMM's time is its memory time, which the step model
// takes from the memory curve (the larger of the two, inference_perf.hpp). Counted in, such samples
// make the efficiency two-valued at one size (a 16-token GEMM of a large matrix as slow per FLOP as
// a 128-token GEMM of a small matrix is fast) and the spline's knots negative between them. All the
// samples when none reaches the ridge (a slow memory, or no memory peak to compare with).
std::vector<efficiency_point> compute_bound_gemms(const std::vector<measurement>& ms, const std::string& format,
                                                  flop_rate peak, byte_rate memory) {
    std::vector<efficiency_point> all = samples(ms, "gemm", format, peak.si(), 1.0), above;
    if (memory.si() <= 0) return all;
    const double ridge = peak.si() / memory.si();
    for (const auto& m : ms)
        if (m.kind == "gemm" && m.format == format && m.time.si() > 0 && m.work.bytes.si() > 0 &&
            m.work.flops.si() / m.work.bytes.si() >= ridge)
            above.push_back({m.work.flops.si(), m.achieved_flops().si() / peak.si()});
    return above.empty() ? all : above;
}

// The fastest round's median: interference from other work on the machine only ever adds time, so
// the least disturbed round is the best estimate of the kernel's own time (for probes and layer alike).
measurement best_round(const std::vector<std::vector<measurement>>& rounds, std::size_t i) {
    measurement out = rounds.front()[i];
    out.runs = 0;
    for (const auto& r : rounds) {
        if (r[i].time < out.time) {
            out.time = r[i].time;
            out.spread = r[i].spread;
        }
        out.runs += r[i].runs;
        out.converged = out.converged && r[i].converged;
    }
    return out;
}

}  // namespace

efficiency_table fit_efficiency_table(const std::vector<measurement>& ms, const reference_peaks& peaks,
                                      std::string name, std::string accelerator, std::string source) {
    efficiency_table t;
    t.name = std::move(name);
    t.accelerator = std::move(accelerator);
    t.source = std::move(source);
    for (const auto& [format, peak] : peaks.flops) {
        if (peak.si() <= 0) continue;
        if (auto s = compute_bound_gemms(ms, format, peak, peaks.memory); !s.empty()) {
            t.gemm[format] = fit_efficiency_curve(std::move(s));
            t.peak_flops[format] = peak;
        }
        if (auto s = samples(ms, "attention", format, peak.si(), 1.0 / attention_kernels); !s.empty())
            t.attention[format] = fit_efficiency_curve(std::move(s));
    }
    if (peaks.memory.si() > 0)
        for (auto [kinds, curve] : {std::pair{std::vector<std::string>{"memory_triad", "memory_copy"}, &t.memory},
                                    std::pair{std::vector<std::string>{"norm"}, &t.norm}}) {
            std::vector<efficiency_point> s;
            for (const auto& kind : kinds) {
                auto more = samples(ms, kind, "", peaks.memory.si(), 1.0);
                s.insert(s.end(), more.begin(), more.end());
            }
            if (s.empty()) continue;
            *curve = fit_efficiency_curve(std::move(s));
            t.memory_bandwidth = peaks.memory;
        }
    if (t.gemm.empty())
        throw config_error("/measurements", "", "no GEMM measurement with a reference peak to fit",
                           "gemm probes in a format of the reference peaks");
    return t;
}

std::vector<op_check> check_layer_ops(const model_spec& m, std::int64_t tokens, const std::string& format,
                                      const accelerator_spec& a, const efficiency_table& table,
                                      const std::vector<measurement>& measured) {
    model_spec one = m;
    one.layers = 1;
    const number_format& f = find_format(format, "/format");
    perf_setup su;
    su.model = &one;
    su.precision = {f, f, f, f};
    su.peak = a.peak(f.peak_key).value;
    su.memory_bandwidth = a.memory_bandwidth.value_or(byte_rate{});
    if (su.peak.si() <= 0 || su.memory_bandwidth.si() <= 0)
        throw config_error("/accelerator", "'" + a.name + "'", "needs a " + f.peak_key + " peak and a memory bandwidth",
                           "an accelerator with both");
    batch_step prompt;
    prompt.prefill_tokens = tokens;
    prompt.prefill_requests = 1;
    su.efficiency = default_perf_efficiency(a, f);
    const step_breakdown before = step_time_breakdown(su, prompt);
    su.efficiency = calibrated_perf_efficiency(table, a, f);
    const step_breakdown after = step_time_breakdown(su, prompt);
    std::vector<op_check> out;
    for (const auto& ms : measured)
        for (std::size_t i = 0; i < before.ops.size(); ++i)
            if (before.ops[i].op == ms.probe) out.push_back({ms.probe, ms.time, before.ops[i].time, after.ops[i].time});
    return out;
}

std::vector<std::array<std::int64_t, 3>> layer_gemm_shapes(const model_spec& m, std::vector<std::int64_t> tokens) {
    std::sort(tokens.begin(), tokens.end());
    tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
    const std::int64_t q = m.heads * m.head_dim, kv = 2 * m.kv_heads * m.head_dim;
    const std::int64_t up = (m.gated_mlp ? 2 : 1) * m.intermediate;
    std::vector<std::array<std::int64_t, 3>> shapes;
    for (auto t : tokens) {
        if (t < 1) throw config_error("/tokens", std::to_string(t), "not a token count", "integers >= 1");
        for (auto s : {std::array{t, q + kv, m.hidden}, std::array{t, m.hidden, q}, std::array{t, up, m.hidden},
                       std::array{t, m.hidden, m.intermediate}})
            if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
    }
    return shapes;
}

calibration_run calibrate_cpu(const model_spec& m, const cpu_calibration_options& o) {
    if (o.rounds < 1 || o.rounds > 100)
        throw config_error("/rounds", std::to_string(o.rounds), "out of range", "an integer in [1, 100]");
    const int threads = cpu_probe_threads(o.probe.threads);  // before minutes of probes, not after
    std::vector<std::int64_t> gemm_tokens = o.gemm_tokens;
    gemm_tokens.push_back(o.layer_tokens);
    std::sort(gemm_tokens.begin(), gemm_tokens.end());
    gemm_tokens.erase(std::unique(gemm_tokens.begin(), gemm_tokens.end()), gemm_tokens.end());
    std::vector<data_size> arrays = o.triad_arrays;
    if (arrays.empty())
        for (double kib = 16; kib <= 256.0 * 1024; kib *= 4) arrays.push_back(kib * KiB);
    for (const auto& f : o.formats)
        if (std::find(cpu_gemm_formats().begin(), cpu_gemm_formats().end(), f) == cpu_gemm_formats().end())
            throw config_error("/format", f, "not a CPU GEMM format", "fp32, fp64");

    const auto shapes = layer_gemm_shapes(m, gemm_tokens);

    std::vector<std::vector<measurement>> probe_rounds, layer_rounds;
    progress* watch = o.probe.watch;
    for (int r = 0; r < o.rounds; ++r) {
        std::vector<measurement> ms, layer;
        try {
            for (const auto& f : o.formats)
                for (const auto& s : shapes) ms.push_back(cpu_gemm(s[0], s[1], s[2], f, o.probe));
            for (auto t : gemm_tokens) {
                if (t >= 16) ms.push_back(cpu_attention(m, t, o.probe));
                ms.push_back(cpu_norm(t, m.hidden, o.probe));
            }
            for (const auto& a : arrays) ms.push_back(cpu_memory("triad", a, o.probe));
            layer = cpu_layer_ops(m, o.layer_tokens, o.probe);
        } catch (const stopped_early&) {
            if (r == 0) throw stopped_early("calibration stopped before its first round finished: nothing to fit");
            break;  // the rounds finished are fitted; this one is dropped
        }
        // The first round tells how many probes a round runs.
        if (r == 0 && watch) watch->add_total(static_cast<std::int64_t>(ms.size() + layer.size()) * o.rounds);
        probe_rounds.push_back(std::move(ms));
        layer_rounds.push_back(std::move(layer));
    }
    calibration_run run;
    run.rounds = static_cast<int>(probe_rounds.size());
    run.model = m.name;
    run.layer_tokens = o.layer_tokens;
    run.where = cpu_provenance(threads);
    for (std::size_t i = 0; i < probe_rounds.front().size(); ++i)
        run.measurements.push_back(best_round(probe_rounds, i));
    std::vector<measurement> layer;
    for (std::size_t i = 0; i < layer_rounds.front().size(); ++i) layer.push_back(best_round(layer_rounds, i));

    // References: the best GEMM rate per format, STREAM triad on the largest arrays.
    reference_peaks peaks;
    for (const auto& ms : run.measurements)
        if (ms.kind == "gemm" && ms.achieved_flops().si() > peaks.flops[ms.format].si())
            peaks.flops[ms.format] = ms.achieved_flops();
    for (const auto& ms : run.measurements)
        if (ms.kind == "memory_triad" && ms.work.bytes.si() >= 3.0 * arrays.back().si())
            peaks.memory = ms.achieved_bandwidth();

    accelerator_spec& a = run.accelerator;
    // A catalog-style name (letters, digits, . _ + -) that still tells one CPU model from another.
    a.name = "host-cpu";
    for (char c : run.where.device) {
        const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+';
        if (keep)
            a.name += c;
        else if (a.name.back() != '-')
            a.name += '-';
    }
    if (a.name.back() == '-') a.name.pop_back();
    a.vendor = "generic";
    a.source = "capplan calibrate --backend cpu on " + run.where.date +
               ": peaks = best measured GEMM rate per format; "
               "memory bandwidth = STREAM triad on " +
               format(arrays.back(), true) + " arrays (" + run.where.runtime + ")";
    a.memory_bandwidth = peaks.memory;
    a.memory_capacity = cpu_memory_total();
    for (const auto& [f, rate] : peaks.flops) a.peak_dense_flops[f] = {peak_rate::state::known, rate};
    a.kernel_launch = duration{};  // a CPU "kernel" is a function call

    const std::string stopped = run.rounds < o.rounds ? "; stopped after " + std::to_string(run.rounds) + " of " +
                                                            std::to_string(o.rounds) + " rounds"
                                                      : std::string();
    run.table = fit_efficiency_table(run.measurements, peaks, "cpu " + run.where.device + " " + run.where.date, a.name,
                                     "capplan calibrate --backend cpu, layer shapes of " + m.name + stopped);
    if (std::find(o.formats.begin(), o.formats.end(), "fp32") != o.formats.end())
        run.report = check_layer_ops(m, o.layer_tokens, "fp32", a, run.table, layer);
    for (auto& ms : layer) run.measurements.push_back(std::move(ms));
    return run;
}

std::string calibration_json(const calibration_run& run, const std::string& command, int indent) {
    using ojson = nlohmann::ordered_json;
    const efficiency_table& t = run.table;
    auto curve = [](const efficiency_curve& c, const char* work) {
        ojson pts = ojson::array();
        for (const auto& p : c.points) pts.push_back({{work, p.work}, {"efficiency", p.value}});
        return pts;
    };
    ojson gemm = ojson::object(), attention = ojson::object(), flops = ojson::object();
    for (const auto& [f, c] : t.gemm) gemm[f] = curve(c, "flops");
    for (const auto& [f, c] : t.attention) attention[f] = curve(c, "flops");
    for (const auto& [f, p] : t.peak_flops) flops[f] = format(p);
    ojson curves{{"gemm", gemm}};
    if (!t.attention.empty()) curves["attention"] = attention;
    if (!t.memory.empty()) curves["memory"] = curve(t.memory, "bytes");
    if (!t.norm.empty()) curves["norm"] = curve(t.norm, "bytes");

    const accelerator_spec& a = run.accelerator;
    ojson peak_flops{{"bf16", nullptr}};
    for (const auto& [f, p] : a.peak_dense_flops)
        if (p.status == peak_rate::state::known) peak_flops[f] = format(p.value);
    ojson host{{"name", a.name},
               {"vendor", a.vendor},
               {"description", run.where.device + " as measured by capplan calibrate (Eigen GEMM, STREAM triad)."},
               {"source", a.source},
               {"confidence", "measured"},
               {"memory",
                {{"capacity", a.memory_capacity ? ojson(format(*a.memory_capacity, true)) : ojson(nullptr)},
                 {"bandwidth", format(*a.memory_bandwidth)}}},
               {"peak_dense_flops", peak_flops},
               {"efficiency", {{"kernel_launch", {{"value", "0 s"}, {"source", "a CPU kernel is a function call"}}}}}};

    ojson report = ojson::array();
    for (const auto& c : run.report)
        report.push_back({{"op", c.op},
                          {"measured_s", c.measured.si()},
                          {"predicted_before_s", c.before.si()},
                          {"predicted_after_s", c.after.si()},
                          {"error_before", c.before.si() / c.measured.si() - 1.0},
                          {"error_after", c.after.si() / c.measured.si() - 1.0}});
    ojson j{
        {"kind", "efficiency_calibration"},
        {"name", t.name},
        {"accelerator", t.accelerator},
        {"source", t.source},
        {"command", command},
        {"fit",
         "least-squares linear spline in log10(work per kernel), weights 1/efficiency (Eigen "
         "ColPivHouseholderQR); each probe: the fastest of the interleaved rounds' medians"},
        {"peaks",
         {{"flops", flops},
          {"memory_bandwidth", t.memory_bandwidth ? ojson(format(*t.memory_bandwidth)) : ojson(nullptr)},
          {"note", "efficiency = achieved / these rates; memory efficiency exceeds 1 where the data fit in a cache"}}},
        {"curves", curves},
        {"report", {{"model", run.model}, {"layer_tokens", run.layer_tokens}, {"ops", report}}}};
    if (t.kernel_launch) j["kernel_launch"] = format(*t.kernel_launch);
    if (run.where.backend == "cpu") j["host_accelerator"] = host;
    const ojson raw = ojson::parse(measurements_json(run.where, run.measurements, -1));
    j["provenance"] = raw["provenance"];
    j["measurements"] = raw["measurements"];
    return j.dump(indent);
}

}  // namespace capplan
