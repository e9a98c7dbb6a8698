#include "capplan/search/inference_grid.hpp"

#include "capplan/analysis/engine_scheduler.hpp"

#include <algorithm>
#include <atomic>
#include <limits>

#include "capplan/analysis/inference_memory.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/detail/threads.hpp"
#include "capplan/error.hpp"

namespace capplan {

const std::vector<std::string>& inference_grid_keys() {
    static const std::vector<std::string> keys{"inference.input_tokens", "inference.output_tokens", "inference.batch"};
    return keys;
}

namespace {

struct prepared {
    const scenario* sc = nullptr;
    inference_setup memory;
    perf_setup speed;
    std::optional<prefix_cache_spec> prefix;  // the scenario's, reloaded or recomputed with KV offload
    std::string error;
};

}  // namespace

inference_grid sweep_inference_grid(const std::vector<scenario>& layouts, const std::vector<std::string>& layout_errors,
                                    const std::vector<grid_axis>& axes, int threads) {
    const auto& known = inference_grid_keys();
    std::size_t combos = 1;
    for (std::size_t a = 0; a < axes.size(); ++a) {
        const std::string where = "/grid/" + std::to_string(a);
        if (std::find(known.begin(), known.end(), axes[a].key) == known.end())
            throw config_error(where, "'" + axes[a].key + "'", "not a workload key the grid varies per point",
                               "inference.input_tokens, inference.output_tokens, inference.batch (other keys: one "
                               "scenario per value)");
        if (axes[a].values.empty()) throw config_error(where, "[]", "no values", "a list of integers >= 1");
        for (auto v : axes[a].values)
            if (v < 1) throw config_error(where, std::to_string(v), "must be at least 1", "integers >= 1");
        if (combos > (std::size_t{1} << 32) / axes[a].values.size())
            throw config_error("/grid", std::to_string(combos), "more than 2^32 points", "a smaller grid");
        combos *= axes[a].values.size();
    }
    if (layouts.size() != layout_errors.size()) throw internal_error("one error slot per layout");

    // Each layout's memory and speed set-ups once; a layout that cannot run keeps its reason.
    std::vector<prepared> setups(layouts.size());
    for (std::size_t l = 0; l < layouts.size(); ++l) {
        prepared& p = setups[l];
        p.sc = &layouts[l];
        p.error = layout_errors[l];
        if (!p.error.empty()) continue;
        if (!p.sc->inference) {
            p.error = "/inference: the scenario has no inference workload";
            continue;
        }
        if (p.sc->inference->disaggregation) {  // a grid point is one aggregated engine's static batch
            p.error = "/inference/disaggregation: sweeps cost aggregated engines; estimate() a disaggregated scenario";
            continue;
        }
        try {
            p.memory = inference_setup::from(*p.sc);
            p.speed = perf_setup::from(*p.sc);
            apply_kv_offload(p.speed, *p.sc, p.memory);
            p.prefix = offload_aware_prefix(p.speed, *p.sc->inference);
            if (!p.memory.weights.problems.empty()) p.error = p.memory.weights.problems.front();
        } catch (const config_error& e) {
            p.error = e.what();
        }
    }

    const std::size_t points = combos * layouts.size();
    inference_grid g;
    for (const auto& axis : axes) g.keys.push_back(axis.key);
    g.layout.assign(points, 0);
    g.inputs.assign(axes.size(), std::vector<std::int64_t>(points));
    g.fits.assign(points, 0);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    g.per_device_bytes.assign(points, nan);
    g.ttft_s.assign(points, nan);
    g.tpot_s.assign(points, nan);
    g.output_tokens_per_s.assign(points, nan);
    g.errors.assign(points, {});

    std::atomic<std::size_t> next{0};
    detail::run_threads(threads, [&](int, int) {
        // Each thread its own copies: a speed set-up fills its collective-time grid on first use.
        const std::vector<prepared> local = setups;
        for (std::size_t i = next++; i < points; i = next++) {
            const std::size_t l = i / combos;
            const prepared& p = local[l];
            g.layout[i] = static_cast<std::uint32_t>(l);
            const inference_spec* inf = p.sc->inference ? &*p.sc->inference : nullptr;
            std::int64_t input = inf ? inf->input_tokens : 0, output = inf ? inf->output_tokens : 0;
            std::int64_t batch = inf ? inf->batch.value_or(inf->concurrency.value_or(1)) : 1;
            std::size_t rest = i % combos;
            for (std::size_t a = axes.size(); a-- > 0;) {  // the last axis varies fastest
                const auto& values = axes[a].values;
                const std::int64_t v = values[rest % values.size()];
                rest /= values.size();
                g.inputs[a][i] = v;
                if (axes[a].key == "inference.input_tokens") input = v;
                else if (axes[a].key == "inference.output_tokens") output = v;
                else batch = v;
            }
            if (!p.error.empty()) {
                g.errors[i] = p.error;
                continue;
            }
            // As estimate(): replicas share the batch; each holds its share at full length.
            const std::int64_t dp = p.sc->parallelism.dp;
            const std::int64_t per_replica = std::max<std::int64_t>(1, (batch + dp - 1) / dp);
            // A shared prefix is stored once up to the prompt's last block: the grid's prompt length sets it.
            const bool shared = inf && inf->prefix_cache && inf->prefix_cache->shared_prefix_tokens > 0;
            inference_setup reshared;
            if (shared) {
                reshared = p.memory;
                reshared.shared_prefix_tokens = inf->prefix_cache->shared_tokens(input, p.memory.block_tokens);
            }
            const inference_memory m = inference_budget(shared ? reshared : p.memory, per_replica, input + output);
            const latency_estimate e = estimate_latency(p.speed, input, output, per_replica,
                                                        inf ? static_prefill_plan(p.memory, p.prefix, input) : prefill_plan{});
            g.fits[i] = m.fits ? 1 : 0;
            g.per_device_bytes[i] = m.per_device.si();
            g.ttft_s[i] = e.ttft.si();
            g.tpot_s[i] = e.tpot.si();
            g.output_tokens_per_s[i] = e.output_tokens_per_s * static_cast<double>(dp);
        }
    });
    return g;
}

}  // namespace capplan
