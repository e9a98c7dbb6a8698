#include "capplan/search/layout_search.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>

#include "capplan/analysis/inference_memory.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/sharding.hpp"
#include "capplan/analysis/training_memory.hpp"
#include "capplan/detail/threads.hpp"
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

layout_search_result search_training_layouts(const scenario& base, int top_k, int threads, progress* watch) {
    if (!base.training) throw config_error("/training", "", "a layout search needs a training workload", "a training object");
    const model_spec& m = base.model;
    const training_spec& t0 = *base.training;
    const int n = base.system.count;
    const int per_node = base.system.per_node;

    // Shapes: tp within a node, pp dividing the layers, cp (up to 32, as Llama 3 used 16 at 128k tokens)
    // dividing the sequence, ep dividing the experts.
    std::vector<shape> shapes;
    for (int tp : powers_of_two_up_to(per_node)) {
        if (m.heads % tp != 0) continue;
        for (int pp : divisors(m.layers, n / tp)) {
            for (int cp : powers_of_two_up_to(32)) {
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
    // Candidates keep only what ranks them; the breakdown is assembled for the winners at the end.
    struct ranked {
        duration step;
        parallelism_spec parallelism;
        training_spec training;
        data_size memory;
    };
    auto faster = [](const ranked& a, const ranked& b) { return a.step < b.step; };
    std::vector<ranked> found;
    std::int64_t evaluated = 0, enumerated = 0, fit = 0;
    const data_size usable = base.system.accelerator.usable_memory().value_or(data_size{});
    training_memory_options quiet = memory_options_for(t0, &base.system.accelerator);
    quiet.explain = false;

    // Progress by shape (each a few to thousands of candidates); asked to stop, each thread ends before its next one.
    if (watch) watch->add_total(static_cast<std::int64_t>(shapes.size()));
    std::atomic<std::size_t> shapes_done{0};
    auto work = [&](std::size_t first, std::size_t step) {
        std::vector<ranked> local;  // a max-heap of the k fastest
        std::int64_t ev = 0, en = 0, ft = 0;
        // One shape's candidates into `local`; a shape that cannot run returns early.
        auto search_shape = [&](const shape& sh) {
            scenario sc = base;
            parallelism_spec& p = sc.parallelism;
            p = parallelism_spec{};
            p.expert_imbalance = base.parallelism.expert_imbalance;  // the workload's routing, not a layout choice
            p.cp_algorithm = base.parallelism.cp_algorithm;          // the framework's, not a layout choice
            p.rank_order = base.parallelism.rank_order;              // likewise
            p.tp = sh.tp, p.pp = sh.pp, p.cp = sh.cp, p.ep = sh.ep;
            p.etp = sh.ep > 1 ? 1 : sh.tp;
            p.dp = n / (sh.tp * sh.pp * sh.cp);
            // Ulysses re-splits the heads over the context-parallel ranks: they must divide them.
            if (sh.cp > 1 && p.cp_algorithm == "all_to_all" && (m.heads / sh.tp) % sh.cp != 0) return;
            const perf_setup perf = training_perf_setup(sc, false);  // the numbers only: notes for the layouts kept
            const weight_sharding w = shard_weights(m, p);
            if (!w.problems.empty()) return;
            // The runtime's own reservation counts against the memory, as in an estimate's "fits".
            const data_size reserve = default_runtime_reserve(p.tp * p.pp * p.dp).total();
            const std::int64_t stage_layers = m.layers / sh.pp;
            const std::int64_t per_replica = t0.global_batch / p.dp;
            if (t0.global_batch % p.dp != 0) return;
            for (std::int64_t mbs = 1; mbs <= std::min<std::int64_t>(per_replica, 64); ++mbs) {  // every divisor
                if (per_replica % mbs != 0) continue;
                const std::int64_t mb = per_replica / mbs;
                const step_breakdown f = step_time_breakdown(perf, training_micro_batch(mbs, t0.seq_len, sh.cp, t0.packed_sample_tokens));
                for (std::int64_t vpp = 1; vpp <= stage_layers; ++vpp) {
                    // Interleaving (Narayanan et al. 2021 §2.2) needs whole layers per chunk and a
                    // micro-batch count divisible by pp.
                    if (stage_layers % vpp != 0 || (vpp > 1 && (sh.pp == 1 || mb % sh.pp != 0))) continue;
                    p.vpp = static_cast<int>(vpp);
                    // DualPipe (an even pp, no interleaving, an even micro-batch count of at least 2 pp) beside 1F1B.
                    const bool dual_ok = vpp == 1 && sh.pp >= 2 && sh.pp % 2 == 0 && mb >= 2 * sh.pp && mb % 2 == 0;
                    for (const bool dual : {false, true}) {
                    if (dual && !dual_ok) continue;
                    p.pipeline_schedule = dual ? "dualpipe" : "1f1b";
                    for (bool sp : {false, true}) {
                        if (sp && sh.tp == 1) continue;
                        p.sequence_parallel = sp;
                        for (recompute_kind rc : {recompute_kind::none, recompute_kind::selective, recompute_kind::full}) {
                            for (int zero = 0; zero <= 3; ++zero) {
                                // Stage 0: Megatron's distributed optimizer or not; stages 1-3: the shard
                                // group, all of dp or an HSDP divisor (powers of two). Sharding over one rank
                                // (dp x cp = 1, or a shard group of 1 without cp) is stage 0 again: not listed twice.
                                std::vector<std::pair<bool, int>> options;
                                if (zero == 0) {
                                    options = {{false, p.dp}};
                                    if (p.dp * p.cp > 1) options.push_back({true, p.dp});
                                } else {
                                    for (int g = p.dp; g >= 1; g /= 2) {
                                        if (p.dp % g == 0 && g * p.cp > 1) options.push_back({false, g});
                                        if (g % 2 != 0) break;
                                    }
                                }
                                for (const auto& [dist_opt, group] : options) {
                                    ++en;
                                    training_spec& t = *sc.training;
                                    t.micro_batch = mbs;
                                    t.recompute = rc;
                                    t.zero = zero;
                                    t.shard_group = group;
                                    t.distributed_optimizer = dist_opt;
                                    const data_size mem =
                                        estimate_training_memory(m, w, sc.precision, p, t, quiet).total() + reserve;
                                    if (mem > usable) continue;
                                    ++ft;
                                    const duration stp = training_step_time(sc, perf, f, w).step;
                                    ++ev;
                                    if (static_cast<int>(local.size()) < top_k) {
                                        local.push_back({stp, p, t, mem});
                                        std::push_heap(local.begin(), local.end(), faster);
                                    } else if (top_k > 0 && stp < local.front().step) {
                                        std::pop_heap(local.begin(), local.end(), faster);
                                        local.back() = {stp, p, t, mem};
                                        std::push_heap(local.begin(), local.end(), faster);
                                    }
                                }
                            }
                        }
                    }
                    }
                }
            }
        };
        for (std::size_t i = first; i < shapes.size() && !stop_requested(watch); i += step) {
            search_shape(shapes[i]);
            ++shapes_done;
            if (watch) watch->advance();
        }
        std::lock_guard g(lock);
        found.insert(found.end(), local.begin(), local.end());
        evaluated += ev, enumerated += en, fit += ft;
    };
    if (!base.system.accelerator.usable_memory())
        throw config_error("/system/accelerator", base.system.accelerator.name, "memory capacity unknown",
                           "an accelerator with memory.capacity");
    detail::run_threads(threads, [&](int k, int n) { work(static_cast<std::size_t>(k), static_cast<std::size_t>(n)); });
    std::sort(found.begin(), found.end(), faster);
    if (static_cast<int>(found.size()) > top_k) found.resize(static_cast<std::size_t>(top_k));
    for (const ranked& r : found) {
        scenario sc = base;
        sc.parallelism = r.parallelism;
        *sc.training = r.training;
        const perf_setup perf = training_perf_setup(sc);
        const training_performance perf_full = assemble_training_performance(
            sc, perf, step_time_breakdown(perf, training_micro_batch(r.training.micro_batch, t0.seq_len, r.parallelism.cp, t0.packed_sample_tokens)),
            shard_weights(m, r.parallelism));
        out.best.push_back({r.parallelism, r.training.micro_batch, r.training.recompute, r.training.zero,
                            r.training.distributed_optimizer, r.training.shard_group, perf_full, r.memory});
    }
    out.evaluated = evaluated;
    out.enumerated = enumerated;
    out.fit = fit;
    out.shapes = static_cast<std::int64_t>(shapes.size());
    out.shapes_searched = static_cast<std::int64_t>(shapes_done.load());
    out.stopped = out.shapes_searched < out.shapes;
    return out;
}

}  // namespace capplan
