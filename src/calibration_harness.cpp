#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "capplan/calibration/harness.hpp"
#include "capplan/detail/percentile.hpp"
#include "capplan/error.hpp"

namespace capplan {

double percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return detail::percentile_of_sorted(v, q);
}

double relative_iqr(const std::vector<double>& samples) {
    if (samples.size() < 2) return 0.0;
    std::vector<double> v = samples;
    std::sort(v.begin(), v.end());
    const double median = detail::percentile_of_sorted(v, 50.0);
    return median > 0 ? (detail::percentile_of_sorted(v, 75.0) - detail::percentile_of_sorted(v, 25.0)) / median : 0.0;
}

measurement measure(std::string probe, std::string kind, probe_work work, const std::function<duration()>& run_once,
                    const measure_options& o) {
    if (o.warmup < 0) throw config_error("/warmup", std::to_string(o.warmup), "negative", "an integer >= 0");
    if (o.min_runs < 1) throw config_error("/min_runs", std::to_string(o.min_runs), "too small", "an integer >= 1");
    if (o.max_runs < o.min_runs)
        throw config_error("/max_runs", std::to_string(o.max_runs), "below min_runs", "an integer >= min_runs");
    if (!(o.target_spread > 0))
        throw config_error("/target_spread", std::to_string(o.target_spread), "not positive", "a number > 0");
    if (stop_requested(o.watch)) throw stopped_early("calibration stopped before probe '" + probe + "'");
    for (int i = 0; i < o.warmup; ++i) run_once();
    measurement m;
    m.probe = std::move(probe);
    m.kind = std::move(kind);
    m.work = work;
    std::vector<double> times;
    double spent = 0.0;
    while (static_cast<int>(times.size()) < o.max_runs) {
        const double t = run_once().si();
        times.push_back(t);
        spent += t;
        if (static_cast<int>(times.size()) >= o.min_runs) {
            if (relative_iqr(times) <= o.target_spread) {
                m.converged = true;
                break;
            }
            if (spent >= o.max_time.si()) break;
        }
    }
    m.time = duration::from_si(percentile(times, 50.0));
    m.spread = relative_iqr(times);
    m.runs = static_cast<int>(times.size());
    if (o.watch) o.watch->advance();
    return m;
}

namespace {

nlohmann::ordered_json peak_json(const cpu_peak& pk) {
    return {{"fp32_flops_per_s", pk.fp32().si()},
            {"fp64_flops_per_s", pk.fp64().si()},
            {"cores", pk.cores},
            {"physical_cores", pk.physical_cores},
            {"clock_hz", pk.clock.rate.in(units::Hz)},
            {"clock_source", pk.clock.source},
            {"flops_per_cycle", {{"fp32", pk.fp32_per_cycle}, {"fp64", pk.fp32_per_cycle / 2}}},
            {"basis", "cores x clock_hz x flops_per_cycle per core of the ISA; cores = min(threads, physical_cores): "
                      "the hyperthreads of a core share its FMA units"}};
}

}  // namespace

std::string measurements_json(const provenance& p, const std::vector<measurement>& ms, int indent) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& m : ms) {
        nlohmann::ordered_json row{{"probe", m.probe}, {"kind", m.kind}};
        if (!m.format.empty()) row["format"] = m.format;
        if (m.m > 0) row.update({{"m", m.m}, {"n", m.n}, {"k", m.k}});
        row.update({{"flops", m.work.flops.si()}, {"bytes", m.work.bytes.si()}, {"time_s", m.time.si()},
                    {"spread", m.spread}, {"runs", m.runs}, {"converged", m.converged},
                    {"achieved_flops_per_s", m.achieved_flops().si()},
                    {"achieved_bytes_per_s", m.achieved_bandwidth().si()}});
        rows.push_back(row);
    }
    nlohmann::ordered_json where{{"backend", p.backend}, {"device", p.device}, {"runtime", p.runtime},
                                 {"clocks", p.clocks},   {"date", p.date},     {"threads", p.threads}};
    if (!p.isa.empty()) where["isa"] = p.isa;
    if (p.peak) where["cpu_peak"] = peak_json(*p.peak);
    return nlohmann::ordered_json{{"provenance", where}, {"measurements", rows}}.dump(indent);
}

}  // namespace capplan
