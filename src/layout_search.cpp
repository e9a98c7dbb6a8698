#include "capplan/search/layout_search.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/sharding.hpp"
#include "capplan/analysis/training_memory.hpp"
#include "capplan/error.hpp"

namespace capplan {

namespace {

std::vector<int> powers_of_two_up_to(int n) {
    std::vector<int> v;
    for (int k = 1; k <= n; k *= 2) v.push_back(k);
    return v;
}

std::vector<int> divisors(std::int64_t n, std::int64_t cap) {
    std::vector<int> v;
    for (std::int64_t d = 1; d <= std::min(n, cap); ++d)
        if (n % d == 0) v.push_back(static_cast<int>(d));
    return v;
}

struct shape {  // a layout without its per-candidate knobs
    int tp, pp, cp, ep;
};

}  // namespace

layout_search_result search_training_layouts(const scenario& base, int top_k, int threads) {
    if (!base.training) throw config_error("/training", "", "a layout search needs a training workload", "a training object");
    const model_spec& m = base.model;
    const training_spec& t0 = *base.training;
    const int n = base.system.count;
    const int per_node = base.system.per_node;

    // Shapes: tp within a node, pp dividing the layers, cp dividing the sequence, ep dividing the experts.
    std::vector<shape> shapes;
    for (int tp : powers_of_two_up_to(per_node)) {
        if (m.heads % tp != 0) continue;
        for (int pp : divisors(m.layers, n / tp)) {
            for (int cp : powers_of_two_up_to(8)) {
                if (static_cast<std::int64_t>(tp) * pp * cp > n || n % (tp * pp * cp) != 0) continue;
                if (t0.seq_len % (2 * cp) != 0 && cp > 1) continue;
                const int dp = n / (tp * pp * cp);
                for (int ep : m.is_moe() ? powers_of_two_up_to(static_cast<int>(m.moe.routed_experts)) : std::vector<int>{1}) {
                    if (ep > dp * tp * cp || (m.is_moe() && m.moe.routed_experts % ep != 0)) continue;
                    shapes.push_back({tp, pp, cp, ep});
                }
            }
        }
    }

    layout_search_result out;
    std::mutex lock;
    std::vector<layout_candidate> found;
    std::int64_t evaluated = 0, enumerated = 0, fit = 0;

    auto work = [&](std::size_t first, std::size_t step) {
        std::vector<layout_candidate> local;
        std::int64_t ev = 0, en = 0, ft = 0;
        for (std::size_t i = first; i < shapes.size(); i += step) {
            const shape& sh = shapes[i];
            scenario sc = base;
            parallelism_spec& p = sc.parallelism;
            p = parallelism_spec{};
            p.tp = sh.tp, p.pp = sh.pp, p.cp = sh.cp, p.ep = sh.ep;
            p.etp = sh.ep > 1 ? 1 : sh.tp;
            p.dp = n / (sh.tp * sh.pp * sh.cp);
            p.sequence_parallel = sh.tp > 1;
            const perf_setup perf = perf_setup::from(sc);
            const weight_sharding w = shard_weights(m, p);
            if (!w.problems.empty()) continue;
            std::map<std::int64_t, step_breakdown> forward;  // by micro-batch
            for (std::int64_t mbs : {1, 2, 4, 8}) {
                if (t0.global_batch % (static_cast<std::int64_t>(p.dp) * mbs) != 0) continue;
                const std::int64_t mb = t0.global_batch / (p.dp * mbs);
                batch_step fwd;
                fwd.prefill_tokens = mbs * t0.seq_len / sh.cp;
                fwd.prefill_requests = mbs;
                const step_breakdown& f = forward.emplace(mbs, step_time_breakdown(perf, fwd)).first->second;
                const std::int64_t stage_layers = m.layers / sh.pp;
                for (int vpp : {1, 2, 3, 4, 6, 8}) {
                    if (vpp > 1 && (sh.pp == 1 || stage_layers % vpp != 0 || mb % sh.pp != 0)) continue;
                    for (recompute_kind rc : {recompute_kind::none, recompute_kind::selective, recompute_kind::full}) {
                        for (int zero : {0, 1, 2, 3}) {
                            ++en;
                            p.vpp = vpp;
                            training_spec& t = *sc.training;
                            t.micro_batch = mbs;
                            t.recompute = rc;
                            t.zero = zero;
                            t.shard_group = p.dp;
                            t.distributed_optimizer = false;
                            const training_memory mem = estimate_training_memory(m, w, sc.precision, p, t);
                            if (mem.total() > *sc.system.accelerator.usable_memory()) continue;
                            ++ft;
                            layout_candidate c{p, mbs, rc, zero, assemble_training_performance(sc, perf, f, w), mem.total()};
                            ++ev;
                            local.push_back(std::move(c));
                            std::sort(local.begin(), local.end(), [](const auto& a, const auto& b) {
                                return a.performance.step < b.performance.step;
                            });
                            if (static_cast<int>(local.size()) > top_k) local.pop_back();
                        }
                    }
                }
            }
        }
        std::lock_guard g(lock);
        found.insert(found.end(), local.begin(), local.end());
        evaluated += ev, enumerated += en, fit += ft;
    };
    if (!base.system.accelerator.usable_memory())
        throw config_error("/system/accelerator", base.system.accelerator.name, "memory capacity unknown",
                           "an accelerator with memory.capacity");
    const int nthreads = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    for (int k = 1; k < nthreads; ++k) pool.emplace_back(work, static_cast<std::size_t>(k), static_cast<std::size_t>(nthreads));
    work(0, static_cast<std::size_t>(nthreads));
    for (auto& th : pool) th.join();
    std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.performance.step < b.performance.step; });
    if (static_cast<int>(found.size()) > top_k) found.resize(static_cast<std::size_t>(top_k));
    out.best = std::move(found);
    out.evaluated = evaluated;
    out.enumerated = enumerated;
    out.fit = fit;
    return out;
}

}  // namespace capplan
