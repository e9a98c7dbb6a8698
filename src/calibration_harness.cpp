#include <algorithm>
#include <cmath>
#include <string>

#include "capplan/calibration/harness.hpp"
#include "capplan/error.hpp"

namespace capplan {

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

double relative_iqr(const std::vector<double>& samples) {
    if (samples.size() < 2) return 0.0;
    const double median = percentile(samples, 50.0);
    return median > 0 ? (percentile(samples, 75.0) - percentile(samples, 25.0)) / median : 0.0;
}

measurement measure(std::string probe, std::string kind, probe_work work, const std::function<duration()>& run_once,
                    const measure_options& o) {
    if (o.warmup < 0) throw config_error("/warmup", std::to_string(o.warmup), "negative", "an integer >= 0");
    if (o.min_runs < 1) throw config_error("/min_runs", std::to_string(o.min_runs), "too small", "an integer >= 1");
    if (o.max_runs < o.min_runs)
        throw config_error("/max_runs", std::to_string(o.max_runs), "below min_runs", "an integer >= min_runs");
    if (!(o.target_spread > 0))
        throw config_error("/target_spread", std::to_string(o.target_spread), "not positive", "a number > 0");
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
    return m;
}

}  // namespace capplan
