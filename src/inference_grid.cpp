#include "capplan/search/inference_grid.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>

#include "capplan/analysis/inference_memory.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/detail/threads.hpp"
#include "capplan/error.hpp"

namespace capplan {

const std::vector<std::string>& inference_grid_keys() {
    static const std::vector<std::string> keys{"inference.input_tokens", "inference.output_tokens", "inference.batch",
                                               "parallelism.tp"};
    return keys;
}

inference_grid sweep_inference_grid(const scenario& base, const std::vector<grid_axis>& axes, int threads) {
    if (!base.inference)
        throw config_error("/inference", "", "an inference grid needs an inference workload", "an inference object");
    const auto& known = inference_grid_keys();
    std::size_t points = 1;
    for (std::size_t a = 0; a < axes.size(); ++a) {
        const std::string where = "/grid/" + std::to_string(a);
        if (std::find(known.begin(), known.end(), axes[a].key) == known.end())
            throw config_error(where, "'" + axes[a].key + "'", "not a key the inference grid varies",
                               "inference.input_tokens, inference.output_tokens, inference.batch, parallelism.tp");
        if (axes[a].values.empty()) throw config_error(where, "[]", "no values", "a list of integers >= 1");
        for (auto v : axes[a].values)
            if (v < 1) throw config_error(where, std::to_string(v), "must be at least 1", "integers >= 1");
        if (points > (std::size_t{1} << 32) / axes[a].values.size())
            throw config_error("/grid", std::to_string(points), "more than 2^32 points", "a smaller grid");
        points *= axes[a].values.size();
    }
    inference_grid g;
    for (const auto& axis : axes) g.keys.push_back(axis.key);
    g.inputs.assign(axes.size(), std::vector<std::int64_t>(points));
    g.fits.assign(points, 0);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    g.per_device_bytes.assign(points, nan);
    g.ttft_s.assign(points, nan);
    g.tpot_s.assign(points, nan);
    g.output_tokens_per_s.assign(points, nan);
    g.errors.assign(points, {});

    // One speed/memory set-up per tensor-parallel degree: the step costs reuse its collective grid.
    std::vector<std::int64_t> tps{base.parallelism.tp};
    for (const auto& axis : axes)
        if (axis.key == "parallelism.tp") tps = axis.values;
    struct layout {
        scenario sc;
        inference_setup memory;
        perf_setup speed;
        std::string error;
    };
    std::map<std::int64_t, layout> layouts;
    for (auto tp : tps) {
        layout& l = layouts[tp];
        l.sc = base;
        parallelism_spec& p = l.sc.parallelism;
        const auto model_ranks = tp * p.pp * p.cp;
        if (base.system.count % model_ranks != 0) {
            l.error = "tp x pp x cp = " + std::to_string(model_ranks) + " does not divide the system's " +
                      std::to_string(base.system.count) + " accelerators";
            continue;
        }
        p.tp = static_cast<int>(tp);
        p.etp = p.ep > 1 ? 1 : p.tp;
        p.dp = static_cast<int>(base.system.count / model_ranks);
        try {
            l.memory = inference_setup::from(l.sc);
            l.speed = perf_setup::from(l.sc);
        } catch (const config_error& e) {
            l.error = e.what();
        }
        if (l.error.empty() && !l.memory.weights.problems.empty()) l.error = l.memory.weights.problems.front();
    }

    const inference_spec& inf = *base.inference;
    std::atomic<std::size_t> next{0};
    auto work = [&] {
        // Each thread its own copy: the speed set-up fills its collective-time grid on first use.
        const std::map<std::int64_t, layout> local = layouts;
        for (std::size_t i = next++; i < points; i = next++) {
            std::int64_t input = inf.input_tokens, output = inf.output_tokens;
            std::int64_t batch = inf.batch.value_or(inf.concurrency.value_or(1)), tp = base.parallelism.tp;
            std::size_t rest = i;
            for (std::size_t a = axes.size(); a-- > 0;) {  // the last axis varies fastest
                const auto& values = axes[a].values;
                const std::int64_t v = values[rest % values.size()];
                rest /= values.size();
                g.inputs[a][i] = v;
                if (axes[a].key == "inference.input_tokens")
                    input = v;
                else if (axes[a].key == "inference.output_tokens")
                    output = v;
                else if (axes[a].key == "inference.batch")
                    batch = v;
                else
                    tp = v;
            }
            const layout& l = local.at(tp);
            if (!l.error.empty()) {
                g.errors[i] = l.error;
                continue;
            }
            // As estimate(): replicas share the batch; each holds its share at full length.
            const std::int64_t dp = l.sc.parallelism.dp;
            const std::int64_t per_replica = std::max<std::int64_t>(1, (batch + dp - 1) / dp);
            const inference_memory m = inference_budget(l.memory, per_replica, input + output);
            const latency_estimate e = estimate_latency(l.speed, input, output, per_replica);
            g.fits[i] = m.fits ? 1 : 0;
            g.per_device_bytes[i] = m.per_device.si();
            g.ttft_s[i] = e.ttft.si();
            g.tpot_s[i] = e.tpot.si();
            g.output_tokens_per_s[i] = e.output_tokens_per_s * static_cast<double>(dp);
        }
    };
    detail::run_threads(threads, [&](int, int) { work(); });
    return g;
}

}  // namespace capplan
