#include "capplan/analysis/sizing.hpp"

#include "capplan/estimate.hpp"
#include "capplan/spec/engine_profile.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include "capplan/analysis/inference_memory.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/engine_scheduler.hpp"
#include "capplan/analysis/serving_sim.hpp"
#include "capplan/error.hpp"
#include "capplan/units_parse.hpp"

namespace capplan {

namespace {

// The weight formats sizing tries. Integer formats are weight-only (W8A16, W4A16: the GEMMs run in bf16 after
// dequantising); fp8 and the FP4 formats run their GEMMs in their own format.
const std::vector<std::string> sizing_weight_formats{"bf16", "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4"};
std::string sizing_compute_format(const std::string& w) { return w == "int8" || w == "int4" ? "bf16" : w; }
// Why an accelerator cannot run a weight format's GEMMs ("": it can). fp8 needs FP8 matrix units. The FP4 formats
// need FP4 matrix units and a catalog FP4 efficiency of the part's own (an estimate would derive one from its 16-bit
// fraction, or take the mean; sizing does not recommend a format no FP4 GEMM of the part was measured in), and NVFP4
// NVIDIA's tensor cores (Blackwell's E4M3 block scales). 16-bit and integer
// formats are always tried (a missing bf16 peak is the estimate's own error, as before).
std::string cannot_run(const accelerator_spec& a, const std::string& w) {
    if (w != "fp8" && w != "nvfp4" && w != "mxfp4") return "";
    const std::string key = find_format(w).peak_key;
    if (a.peak(key).status != peak_rate::state::known) return w + " needs an " + key + " peak";
    if (w == "fp8") return "";
    if (find_by_peak(a.matmul_efficiency, key) == a.matmul_efficiency.end())
        return w + " needs a catalog " + key + " matrix efficiency";
    if (w == "nvfp4" && a.vendor != "NVIDIA") return "nvfp4 runs on NVIDIA's FP4 tensor cores";
    return "";
}
// The KV-cache formats tried with a weight format: fp8 weights with a bf16 or an fp8 cache; FP4 weights with an fp8
// cache, as the published FP4 checkpoints run (ModelOpt's NVFP4 exports set kv_cache_quant_algo FP8); else bf16.
std::vector<std::string> sizing_kv_formats(const std::string& w) {
    if (w == "fp8") return {"bf16", "fp8"};
    if (w == "nvfp4" || w == "mxfp4") return {"fp8"};
    return {"bf16"};
}

struct trial {
    bool fits = false;
    sim_result sim;
};

// One layout: `replicas` copies of a tp-wide engine; every user's cache must fit.
trial run(const scenario& sc, std::int64_t users, std::int64_t input, std::int64_t output) {
    trial t;
    const inference_setup mem = inference_setup::from(sc);
    const std::int64_t per_replica = (users + sc.parallelism.dp - 1) / sc.parallelism.dp;
    if (!inference_budget(mem, per_replica, input + output).fits) return t;
    t.fits = true;
    const perf_setup perf = perf_setup::from(sc);
    workload_spec w;
    w.arrival = workload_spec::arrival_kind::closed_loop;
    w.users = users;
    w.turnaround = default_turnaround_s * units::s;
    w.input = length_dist::fixed(input);
    w.output = length_dist::fixed(output);
    w.warmup_requests = users;
    w.requests = std::max<std::int64_t>(100, 2 * users);
    w.seed = 1;
    check_simulation_budget(w, output, "/concurrency", std::to_string(users));
    const inference_spec& inf = *sc.inference;
    if (inf.prefix_cache) w.prefix_cache = *inf.prefix_cache;
    scheduler_spec sch = engine_scheduler(mem, input + output, sc.parallelism.dp);
    if (inf.speculative) sch.draft_tokens = inf.speculative->tokens, sch.acceptance = inf.speculative->acceptance;
    step_timer timer(perf);
    t.sim = simulate(w, sch, [&](const batch_step& st) { return timer(st); });
    return t;
}

// The request's model and load on `base` in weight format `w` and KV format `kv`, before a layout.
scenario sizing_scenario(const sizing_request& q, const system_spec& base, const std::string& w, const std::string& kv) {
    scenario sc;
    sc.model = q.model;
    sc.system = base;
    sc.precision.weights = find_format(w);
    sc.precision.kv_cache = find_format(kv);
    sc.precision.compute = find_format(sizing_compute_format(w));
    inference_spec inf;
    inf.input_tokens = q.input_tokens;
    inf.output_tokens = q.output_tokens;
    inf.concurrency = q.concurrency;
    const engine_profile& engine = find_engine_profile(q.engine, "/engine");
    inf.engine = engine.name;
    inf.prefill_dispatch = q.prefill_dispatch.empty() ? engine.prefill_dispatch : q.prefill_dispatch;
    inf.kv_admission = q.kv_admission.empty() ? engine.kv_admission : q.kv_admission;
    inf.chunked_prefill = engine.chunked_prefill;
    inf.kv_block_tokens = engine.kv_block_tokens;
    inf.memory_utilization = engine.memory_utilization;
    inf.prefix_cache = q.prefix_cache;
    inf.prefill_chunk_tokens = q.prefill_chunk_tokens;
    inf.max_num_seqs = q.max_num_seqs;
    sc.inference = inf;
    apply_released_expert_format(sc);  // as the scenario reader does: gpt-oss sized with its MXFP4 experts
    return sc;
}

// The disaggregated scenario's simulated p99 TTFT and TPOT when they meet the targets (empty: they miss,
// or the layout cannot run).
std::optional<inference_result> meets_targets(const sizing_request& q, const scenario& sc, const catalog& cat) {
    estimate_result r;
    try {
        r = estimate(sc, cat);
    } catch (const config_error&) {
        return std::nullopt;
    }
    if (r.feasible == false || !r.inference || !r.inference->ttft_p99_s) return std::nullopt;
    const inference_result& i = *r.inference;
    if (*i.ttft_p99_s > q.ttft_p99.si() || *i.tpot_p99_s > q.tpot_p99.si()) return std::nullopt;
    return i;
}

// The aggregated search's simulation (run()): a first wave of the users left out, then max(100, 2 x
// users) measured requests, seed 1, so the p99s compare like for like.
void sizing_workload(const sizing_request& q, scenario& sc) {
    workload_input wi;
    wi.requests = std::max<std::int64_t>(100, 2 * q.concurrency);
    wi.warmup_requests = q.concurrency;
    wi.seed = 1;
    sc.inference->workload = wi;
}

// The smallest power-of-two tp within `node` that divides the heads and holds the weights and one request.
std::optional<int> smallest_pool_tp(const sizing_request& q, const scenario& sc) {
    std::vector<int> tps;
    for (int tp = 1; tp <= sc.system.per_node; tp *= 2)
        if (q.model.heads % tp == 0) tps.push_back(tp);
    return smallest_fitting_tp(inference_setup::from(sc), 1, q.input_tokens + q.output_tokens, tps);
}

// Pools of tp-wide replicas on `acc`, tp the smallest power of two (within a node) that divides the heads
// and holds the weights with room for one request; prefill:decode replica counts by total, then prefill
// count ascending.
std::optional<sizing_option> size_disaggregated(const sizing_request& q, const catalog& cat, const system_spec& base,
                                                const std::string& preset, const accelerator_spec& acc,
                                                const std::vector<std::pair<std::string, std::string>>& formats,
                                                const std::optional<sizing_option>& aggregated) {
    for (const auto& [w, kv] : formats) {
        scenario sc = sizing_scenario(q, base, w, kv);
        const auto tp = smallest_pool_tp(q, sc);
        if (!tp) continue;
        // Fewer devices than the aggregated answer; without one, at most 16 replicas in all (each total
        // tries every split: 120 simulations).
        const int most = aggregated ? (aggregated->count - 1) / *tp : std::min(q.max_replicas, 16);
        sizing_workload(q, sc);
        for (int total = 2; total <= most; ++total) {
            for (int p = 1; p < total; ++p) {
                disaggregation_spec d;
                d.prefill = {p * *tp, *tp, 1, std::nullopt};
                d.decode = {(total - p) * *tp, *tp, 1, std::nullopt};
                sc.inference->disaggregation = d;
                sc.system.count = std::max(base.count, total * *tp);
                const auto met = meets_targets(q, sc, cat);
                if (!met) continue;
                const inference_result& i = *met;
                sizing_option o{acc.name, preset.empty() ? "inline 8-" + acc.name + " node" : preset, total * *tp, *tp, 1,
                                total, w, kv, *i.ttft_p99_s * units::s, *i.tpot_p99_s * units::s,
                                *i.throughput_tokens_per_s, {}, "catalog", 1, false, false, p, total - p};
                if (const auto price = q.price_per_hour.find(acc.name); price != q.price_per_hour.end())
                    o.cost_per_hour = price->second * o.count;
                return o;
            }
        }
    }
    return std::nullopt;
}

// Prefill pools of `pre` and decode pools of `dec` (their own nodes; the caches cross the prefill node's
// scale-out network): replica counts 1..8 each, cheapest first, at most 64 simulations; the first that
// meets the targets.
std::optional<sizing_option> size_two_accelerators(const sizing_request& q, const catalog& cat, const accelerator_spec& pre,
                                                   const accelerator_spec& dec, double pre_price, double dec_price) {
    std::string preset;
    system_spec base = accelerator_node(cat, pre, &preset);
    const system_spec other = accelerator_node(cat, dec);
    if (!base.scale_out) base.scale_out = other.scale_out;  // the caches cross the cluster's network
    std::vector<std::string> weights = q.weights.empty() ? std::vector<std::string>{"bf16", "fp8"} : q.weights;
    for (const auto& w : weights) {
        if (!cannot_run(pre, w).empty() || !cannot_run(dec, w).empty()) continue;
        const std::string kv = sizing_kv_formats(w).back();  // the narrowest cache: the pools pass it between them
        scenario sc = sizing_scenario(q, base, w, kv);
        scenario on_dec = sc;
        on_dec.system = other;
        const auto tp_pre = smallest_pool_tp(q, sc), tp_dec = smallest_pool_tp(q, on_dec);
        if (!tp_pre || !tp_dec) continue;
        sizing_workload(q, sc);
        std::vector<std::tuple<double, int, int>> splits;  // (cost per hour, prefill replicas, decode replicas)
        for (int p = 1; p <= 8; ++p)
            for (int d = 1; d <= 8; ++d) splits.emplace_back(p * *tp_pre * pre_price + d * *tp_dec * dec_price, p, d);
        std::sort(splits.begin(), splits.end());
        for (const auto& [cost, p, d] : splits) {
            disaggregation_spec pools;
            pools.prefill = {p * *tp_pre, *tp_pre, 1, std::nullopt, std::nullopt};
            pools.decode = {d * *tp_dec, *tp_dec, 1, dec, other};
            sc.inference->disaggregation = pools;
            sc.system.count = std::max(base.count, p * *tp_pre);
            const auto met = meets_targets(q, sc, cat);
            if (!met) continue;
            sizing_option o{dec.name, preset.empty() ? "inline 8-" + pre.name + " node" : preset, p * *tp_pre + d * *tp_dec,
                            *tp_dec, 1, p + d, w, kv, *met->ttft_p99_s * units::s,
                            *met->tpot_p99_s * units::s, *met->throughput_tokens_per_s, cost, "catalog", 1, false, false,
                            p, d, pre.name, *tp_pre};
            return o;
        }
    }
    return std::nullopt;
}

// The request with one engine configuration for every candidate: the step budget and sequence limit given, else the
// profile's for the candidates' common tier, else for its largest GPUs (vLLM gives an A100 2,048 tokens a step and an
// H100 8,192, which made an A100 beat an H100 on TTFT). `said` states it in words.
sizing_request with_one_engine_config(const sizing_request& q, const catalog& cat,
                                      const std::vector<std::string>& accels, std::string& said) {
    const engine_profile& engine = find_engine_profile(q.engine, "/engine");
    std::vector<const engine_limits_tier*> tiers;
    for (const auto& a : accels) {
        const engine_limits_tier* t = &engine.limits(cat.accelerator(a, "/accelerators"));
        if (std::find(tiers.begin(), tiers.end(), t) == tiers.end()) tiers.push_back(t);
    }
    const engine_limits_tier& common = tiers.size() == 1 ? *tiers.front() : engine.tiers.front();
    sizing_request out = q;
    if (out.prefill_chunk_tokens <= 0) out.prefill_chunk_tokens = common.step_tokens;
    if (out.max_num_seqs <= 0) out.max_num_seqs = common.max_num_seqs;
    said = engine.engine + " with " + std::to_string(out.prefill_chunk_tokens) +
           " batched tokens and " + std::to_string(out.max_num_seqs) +
           " sequences a step on every accelerator";
    if (tiers.size() > 1 && out.prefill_chunk_tokens == common.step_tokens && out.max_num_seqs == common.max_num_seqs)
        said += " (its defaults for the largest GPUs; its own differ by GPU; --prefill-chunk and --max-num-seqs set them)";
    return out;
}

// "(tp 2, fp8 weights, fp8 KV cache)": a layout as the sizing table's columns would show it.
std::string layout_words(int tp, int pp, int ep, bool attention_dp, const std::string& w, const std::string& kv) {
    return "(tp " + std::to_string(tp) + (pp > 1 ? " x pp " + std::to_string(pp) : std::string()) +
           (ep > 1 ? " x ep " + std::to_string(ep) : std::string()) + (attention_dp ? ", attention dp" : "") + ", " +
           w + " weights, " + kv + " KV cache)";
}

// "p99 TPOT 62 ms, 24% over 50 ms": each p99 over its target and by how much.
std::string misses(const sim_result& sim, const sizing_request& q) {
    std::string out;
    const auto over = [&](const char* what, duration got, duration target) {
        if (got <= target) return;
        if (!out.empty()) out += "; ";
        out += std::string("p99 ") + what + " " + format(got) + ", " +
               format_number(std::round(100.0 * (got / target - 1.0))) + "% over " + format(target);
    };
    over("TTFT", sim.ttft.p99, q.ttft_p99);
    over("TPOT", sim.tpot.p99, q.tpot_p99);
    return out;
}

}  // namespace

sizing_result size_inference(const sizing_request& request, const catalog& cat, progress* watch) {
    sizing_request q = request;  // with one engine configuration once the candidates are known
    if (q.concurrency < 1) throw config_error("/concurrency", std::to_string(q.concurrency), "must be at least 1", "an integer >= 1");
    if (q.input_tokens < 1 || q.output_tokens < 1)
        throw config_error("/input", std::to_string(q.input_tokens) + "/" + std::to_string(q.output_tokens),
                           "input and output must be at least one token", "integers >= 1");
    if (q.ttft_p99.si() <= 0 || q.tpot_p99.si() <= 0)
        throw config_error("/ttft_p99", "", "latency targets must be positive", "e.g. 2s and 50ms");
    auto one_of = [](const std::string& field, const std::string& value, const std::vector<std::string>& allowed,
                     const std::string& what) {
        if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        throw config_error(field, value, what, list);
    };
    for (const auto& w : q.weights) one_of("/weights", w, sizing_weight_formats, "not a weight format sizing can try");
    if (!q.prefill_dispatch.empty()) one_of("/prefill_dispatch", q.prefill_dispatch, prefill_dispatches, "not a prefill dispatch");
    if (!q.kv_admission.empty()) one_of("/kv_admission", q.kv_admission, kv_admission_policies, "not a KV admission policy");
    (void)find_engine_profile(q.engine, "/engine");
    // Candidates: the named accelerators, else every one a system preset uses; each on its preset node.
    std::vector<std::string> accels = q.accelerators;
    if (accels.empty())
        for (const auto& sys : cat.names(entry_kind::system)) {
            const std::string a = cat.system_preset(sys).accelerator;
            if (std::find(accels.begin(), accels.end(), a) == accels.end()) accels.push_back(a);
        }
    for (std::size_t i = 0; i < q.calibrations.size(); ++i) {
        const std::string& on = q.calibrations[i].accelerator;
        const bool candidate = std::any_of(accels.begin(), accels.end(), [&](const std::string& a) {
            return cat.accelerator(a, "/accelerators").name == on;
        });
        if (!candidate)
            throw config_error("/calibrations/" + std::to_string(i), "'" + q.calibrations[i].name + "'",
                               "measured on " + on + ", which is not among the accelerators sized",
                               "a calibration of one of the accelerators (or add " + on + " to them)");
    }
    if (q.prefill_chunk_tokens < 0 || q.max_num_seqs < 0)
        throw config_error(q.prefill_chunk_tokens < 0 ? "/prefill_chunk_tokens" : "/max_num_seqs",
                           std::to_string(std::min(q.prefill_chunk_tokens, q.max_num_seqs)), "must be positive",
                           "an integer >= 1 (or leave it out: the engine profile's)");
    sizing_result out;
    q = with_one_engine_config(q, cat, accels, out.engine_config);
    // Progress by accelerator; asked to stop, the accelerator being searched is dropped (its best may not be found
    // yet) and the ones searched are ranked.
    const bool pairs = q.disaggregated && accels.size() >= 2;
    if (watch) watch->add_total(static_cast<std::int64_t>(accels.size() + (pairs ? accels.size() * accels.size() : 0)));
    for (const auto& name : accels) {
        if (stop_requested(watch)) {
            out.stopped = true;
            break;
        }
        const accelerator_spec& acc = cat.accelerator(name, "/accelerators");
        const efficiency_table* calibration = nullptr;
        for (const auto& t : q.calibrations)
            if (t.accelerator == acc.name) calibration = &t;
        std::string preset;
        const system_spec base = accelerator_node(cat, acc, &preset);
        std::vector<std::pair<std::string, std::string>> formats;
        std::string skipped;  // the formats this accelerator cannot run, each with why
        for (const auto& w : q.weights.empty() ? std::vector<std::string>{"bf16", "fp8"} : q.weights) {
            if (const std::string why_not = cannot_run(acc, w); !why_not.empty()) {
                skipped += (skipped.empty() ? "" : "; ") + why_not;
                continue;
            }
            for (const auto& kv : sizing_kv_formats(w)) formats.emplace_back(w, kv);
        }
        // Speculative decoding, when the request gives it, is tried after the plain engine: it wins a
        // layout only with fewer devices or, at the same count, a lower p99 TTFT.
        std::vector<bool> speculation{false};
        if (q.speculative) speculation.push_back(true);
        std::optional<sizing_option> best;
        std::string why = formats.empty() ? "none of the weight formats runs here (" + skipped + ")"
                                          : "no layout fits the weights and " + std::to_string(q.concurrency) +
                                                " users' caches";
        // Layouts: tp within a node; pipeline stages across nodes once tp fills one (a model too large
        // for a node's memory); for MoE models also the experts spread over the tp group (ep = tp),
        // with tensor-parallel attention or with attention data parallelism; replicas. At equal
        // device counts the first found stays: for MoE the experts over ep come before tensor-parallel
        // experts, whose narrow slices published kernels run slower than this model says
        // (docs/formulas.md section 14, MoE gaps).
        // Per device count below the answer: the layout that came closest to the targets (its worst p99 over its
        // target), and whether some layout did not fit at all: why fewer devices would not do.
        std::map<int, std::pair<double, std::string>> near_miss;
        int fewest_unfit = 0;  // the fewest devices of a layout that did not hold the weights and caches
        struct shape { int tp, pp, ep; bool attention_dp; };
        std::vector<shape> shapes;
        for (int tp = 1; tp <= base.per_node; tp *= 2) {
            const bool experts_over_tp = tp >= 2 && q.model.is_moe() && q.model.moe.routed_experts % tp == 0;
            if (experts_over_tp && q.model.heads % tp == 0) shapes.push_back({tp, 1, tp, false});
            if (q.model.heads % tp == 0)
                for (int pp : {1, 2, 4, 8})
                    if (pp == 1 || (tp == base.per_node && pp <= q.model.layers)) shapes.push_back({tp, pp, 1, false});
            if (experts_over_tp) shapes.push_back({tp, 1, tp, true});
        }
        for (const auto& [tp, pp, ep, attention_dp] : shapes) {
            for (const auto& [w, kv] : formats) {
              for (const bool speculate : speculation) {
                for (int r = 1; r <= q.max_replicas && !stop_requested(watch); r = r < 4 ? r + 1 : r * 2) {
                    // Cannot beat what we have (speculation may still win at the same count, on TPOT).
                    if (best && (tp * pp * r > best->count || (tp * pp * r == best->count && !speculate))) break;
                    scenario sc = sizing_scenario(q, base, w, kv);
                    sc.system.count = tp * pp * r;
                    sc.system.per_node = std::min(base.per_node, tp * pp * r);
                    if (sc.system.count % sc.system.per_node != 0) continue;
                    sc.parallelism.tp = tp;
                    sc.parallelism.pp = pp;
                    sc.parallelism.ep = ep;
                    sc.parallelism.etp = ep > 1 ? 1 : tp;
                    sc.parallelism.attention_dp = attention_dp;
                    sc.parallelism.dp = r;
                    const bool calibrated =
                        calibration &&
                        find_by_peak(calibration->gemm, sc.precision.compute.peak_key) != calibration->gemm.end();
                    if (calibrated) sc.calibration = *calibration;
                    if (speculate) sc.inference->speculative = q.speculative;
                    trial t;
                    try {
                        t = run(sc, q.concurrency, q.input_tokens, q.output_tokens);
                    } catch (const config_error& e) {  // e.g. stages across nodes without a scale-out network
                        why = std::string("tp ") + std::to_string(tp) + " x pp " + std::to_string(pp) + ": " + e.what();
                        continue;
                    }
                    if (!t.fits) {
                        if (fewest_unfit == 0 || tp * pp * r < fewest_unfit) fewest_unfit = tp * pp * r;
                        continue;
                    }
                    if (t.sim.ttft.p99 > q.ttft_p99 || t.sim.tpot.p99 > q.tpot_p99) {
                        const double worst = std::max(t.sim.ttft.p99 / q.ttft_p99, t.sim.tpot.p99 / q.tpot_p99);
                        auto& slot = near_miss[tp * pp * r];
                        if (slot.second.empty() || worst < slot.first)
                            slot = {worst, layout_words(tp, pp, ep, attention_dp, w, kv) + ": " + misses(t.sim, q)};
                        why = "at " + std::to_string(tp * pp * r) + " devices (tp " + std::to_string(tp) +
                              (pp > 1 ? " x pp " + std::to_string(pp) : std::string()) +
                              (ep > 1 ? " x ep " + std::to_string(ep) : std::string()) +
                              (attention_dp ? " with attention dp" : std::string()) + ", " + w +
                              (speculate ? ", speculative " + q.speculative->method : std::string()) +
                              ") p99 TTFT " + format(t.sim.ttft.p99) + ", p99 TPOT " + format(t.sim.tpot.p99) +
                              " miss the targets";
                        continue;
                    }
                    sizing_option o{acc.name, preset.empty() ? "inline 8-" + acc.name + " node" : preset,
                                    tp * pp * r, tp, pp, r, w, kv, t.sim.ttft.p99, t.sim.tpot.p99, t.sim.output_tokens_per_s, {},
                                    calibrated ? calibration->name : std::string("catalog"), ep, attention_dp,
                                    speculate};
                    if (const auto p = q.price_per_hour.find(acc.name); p != q.price_per_hour.end())
                        o.cost_per_hour = p->second * o.count;
                    const bool tie = best && o.count == best->count;
                    const bool better = !best || o.count < best->count ||
                                        (tie && (o.speculative != best->speculative ? o.tpot_p99 < best->tpot_p99
                                                                                    : o.ttft_p99 < best->ttft_p99));
                    if (better) best = o;
                    break;  // more replicas only cost more
                }
              }
            }
        }
        // Disaggregated pools on this accelerator with fewer devices than the best aggregated layout (or up
        // to max_replicas replicas in all): the first (fewest devices) that meets the targets, beside it.
        if (stop_requested(watch)) {
            out.stopped = true;
            break;
        }
        std::optional<sizing_option> split;
        if (q.disaggregated) split = size_disaggregated(q, cat, base, preset, acc, formats, best);
        if (split) out.options.push_back(*split);
        if (best) {
            const auto below = near_miss.lower_bound(best->count);
            if (below != near_miss.begin())
                best->why_not_fewer = std::to_string(std::prev(below)->first) + " x " + acc.name + " " +
                                      std::prev(below)->second.second;
            else if (fewest_unfit > 0 && fewest_unfit < best->count)
                best->why_not_fewer = "fewer than " + std::to_string(best->count) +
                                      " do not hold the weights and the users' caches in any layout tried";
            out.options.push_back(*best);
        }
        if (!best && !split) out.rejected.emplace_back(acc.name, why);
        if (watch) watch->advance();
        ++out.accelerators_searched;
    }
    out.accelerators = static_cast<int>(accels.size());
    // Pools of two accelerators: compute-rich prefill, memory-rich decode. Ranked by cost, so both need prices;
    // listed unless one of the two accelerators alone is as cheap.
    if (pairs && !out.stopped)
        for (const auto& a : accels)
            for (const auto& b : accels) {
                if (stop_requested(watch)) {
                    out.stopped = true;
                    break;
                }
                if (watch) watch->advance();
                const accelerator_spec& pre = cat.accelerator(a, "/accelerators");
                const accelerator_spec& dec = cat.accelerator(b, "/accelerators");
                const auto pa = q.price_per_hour.find(pre.name), pb = q.price_per_hour.find(dec.name);
                if (pre.name == dec.name || pa == q.price_per_hour.end() || pb == q.price_per_hour.end()) continue;
                const auto mixed = size_two_accelerators(q, cat, pre, dec, pa->second, pb->second);
                if (!mixed) continue;
                const bool beaten = std::any_of(out.options.begin(), out.options.end(), [&](const sizing_option& o) {
                    return o.prefill_accelerator.empty() && (o.accelerator == pre.name || o.accelerator == dec.name) &&
                           o.cost_per_hour &&
                           *o.cost_per_hour <= *mixed->cost_per_hour;
                });
                if (!beaten) out.options.push_back(*mixed);
            }
    std::stable_sort(out.options.begin(), out.options.end(), [](const sizing_option& a, const sizing_option& b) {
        if (a.cost_per_hour && b.cost_per_hour) return *a.cost_per_hour < *b.cost_per_hour;
        if (a.cost_per_hour != b.cost_per_hour) return a.cost_per_hour.has_value();
        return a.count < b.count;
    });
    return out;
}

}  // namespace capplan
