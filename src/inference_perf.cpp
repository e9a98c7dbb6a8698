#include "capplan/analysis/inference_perf.hpp"

#include "capplan/detail/ceil_div.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/engine_profile.hpp"
#include "capplan/units_parse.hpp"

namespace capplan {

namespace {

using namespace units;

}  // namespace

perf_setup perf_setup::from(const scenario& s, bool explain) {
    perf_setup out;
    out.explain = explain;
    out.model = &s.model;
    out.kinds = layer_kinds(s.model);
    out.parallelism = s.parallelism;
    out.precision = s.precision;
    const accelerator_spec& a = s.system.accelerator;
    const peak_rate peak = a.peak(s.precision.compute.peak_key);
    if (peak.status != peak_rate::state::known)
        throw config_error("/precision/compute", "'" + s.precision.compute.name + "'",
                           "the catalog has no " + s.precision.compute.peak_key + " peak for " + a.name,
                           "a format the accelerator's peak_dense_flops lists, or an inline accelerator");
    if (!a.memory_bandwidth)
        throw config_error("/system/accelerator", "'" + a.name + "'", "the catalog does not know its memory bandwidth",
                           "an accelerator with memory.bandwidth");
    out.peak = peak.value;
    out.memory_bandwidth = *a.memory_bandwidth;
    out.efficiency = s.calibration ? calibrated_perf_efficiency(*s.calibration, a, s.precision.compute)
                                   : default_perf_efficiency(a, s.precision.compute, explain);
    if (s.inference) {
        // Eager prefill: the host time to dispatch one kernel from Python, serial with the kernels.
        // 36.6 us = the mean of SGLang's two measured savings from capturing prefill in a CUDA graph,
        // each divided by this model's kernel count for that prefill: Llama-3.1-8B-FP8 TP 8, 1,024
        // tokens, mean TTFT 29.97 -> 19.66 ms (sgl-project/sglang PR #13094): 10.31 ms / 322 kernels
        // = 32.0 us; DeepSeek-V3, one new token, forward 82.64 -> 23.10 ms (PR #12160): 59.54 ms /
        // 1,445 kernels = 41.2 us.
        const duration eager_dispatch = 36.6 * units::us;
        if (s.inference->prefill_dispatch == "eager") out.efficiency.per_prefill_kernel = eager_dispatch;
        const engine_overhead_spec& o = s.inference->engine_overhead;
        if (o.step) out.efficiency.per_step = *o.step;
        if (o.prefill_step) out.efficiency.per_prefill_step = *o.prefill_step;
        if (o.prefill_kernel) out.efficiency.per_prefill_kernel = *o.prefill_kernel;
        if (explain && s.inference->prefill_dispatch == "eager" && !o.prefill_kernel)
            out.efficiency.source += ", eager prefill: + " + format(eager_dispatch) + " of host dispatch per kernel (SGLang PRs #13094, #12160)";
        if (explain && o.step) out.efficiency.source += ", " + format(*o.step) + " per step (inference.engine_overhead)";
        if (explain && o.prefill_step) out.efficiency.source += ", " + format(*o.prefill_step) + " per prefill step (inference.engine_overhead)";
        if (explain && o.prefill_kernel) out.efficiency.source += ", " + format(*o.prefill_kernel) + " of host dispatch per prefill kernel (inference.engine_overhead)";
    }
    if (s.inference && s.inference->speculative) {
        const speculative_spec& sp = *s.inference->speculative;
        out.draft_tokens = sp.tokens;
        out.tokens_per_step = sp.tokens_per_step();
        if (sp.draft_model) {
            // The drafter runs on the target's devices with the target's split (one pipeline stage).
            auto d = std::make_shared<drafter_setup>();
            d->drafter = s;
            d->drafter.model = *sp.draft_model;
            d->drafter.inference->speculative.reset();
            d->drafter.parallelism.pp = 1;
            d->drafter.parallelism.vpp = 1;
            d->setup = perf_setup::from(d->drafter, explain);
            // Copies of this setup share the drafter (threads of a sweep among them), so its collective
            // grids are filled now rather than on first use: nothing in it changes afterwards.
            for (const auto* g : {&d->setup.allreduce_grid, &d->setup.alltoall_grid})
                if (!g->empty())
                    for (int k = 0; k < static_cast<int>(g->seconds.size()); ++k) g->at(*d->setup.system, k);
            out.drafter = std::move(d);
        }
    }
    const int tp = s.parallelism.attention_tp();  // attention data parallelism has no tp all-reduce
    out.system = &s.system;
    auto grid = [&](collective_op op, int ranks) {
        perf_setup::collective_grid g;
        g.op = op;
        g.group = {ranks, std::min(ranks, s.system.per_node)};
        g.seconds.assign(37, -1.0);
        return g;
    };
    if (tp > 1) {
        out.allreduce_grid = grid(collective_op::all_reduce, tp);
        if (s.inference && s.inference->custom_allreduce) {
            out.allreduce_grid.engine = &find_engine_profile(s.inference->engine, "/inference/engine").allreduce;
            out.allreduce_grid.engine_bandwidth = engine_allreduce_bandwidth(s.system, tp);
        }
    }
    if (s.model.is_moe() && s.parallelism.ep > 1) {
        out.alltoall_grid = grid(collective_op::all_to_all, s.parallelism.ep);
        if (s.training && s.training->moe_dispatcher != "alltoall")
            out.alltoall_grid.options.node_dedup_topk = static_cast<int>(s.model.moe.experts_per_token);
        // Megatron's rank order tp-cp-ep-dp-pp: an expert-parallel group's ranks range over tp x cp x ep GPUs.
        if (s.training)
            out.alltoall_grid.group.span_nodes = static_cast<int>(
                detail::ceil_div(std::int64_t{s.parallelism.tp} * s.parallelism.cp * s.parallelism.ep, s.system.per_node));
    }
    // The first point now: a system that cannot run these groups fails here, with its reason.
    if (!out.allreduce_grid.empty()) out.allreduce_grid.at(s.system, 0);
    if (!out.alltoall_grid.empty()) out.alltoall_grid.at(s.system, 0);
    // The routed experts by their own format (gpt-oss's MXFP4) by the same rule.
    const peak_rate fp32 = a.peak("fp32");
    if (fp32.status == peak_rate::state::known) {
        out.vector_peak = fp32.value;
        out.dequant_ops = dequant_ops_per_weight(s.precision.weights, s.precision.compute.peak_key);
        out.expert_dequant_ops = dequant_ops_per_weight(s.precision.experts(), s.precision.compute.peak_key);
    }
    if (s.parallelism.pp > 1 && s.system.count >= 2) {
        // Stage to stage: a send/recv between neighbouring ranks, across nodes when stages span them.
        const int group = std::min(2, s.system.count);
        const collective_group g{group, pipeline_spans_nodes(s) ? 1 : group};
        const auto small = collective_time(collective_op::send_recv, 8 * B, s.system, g);
        const auto big = collective_time(collective_op::send_recv, 1 * GiB, s.system, g);
        out.pipeline_send_latency = small.time;
        out.pipeline_send_bandwidth = (1 * GiB) / (big.time - small.time);
    }
    return out;
}

duration perf_setup::collective_grid::at(const system_spec& sys, int k) const {
    double& t = seconds[static_cast<std::size_t>(k)];
    if (t < 0) t = collective_time(op, std::ldexp(1.0, k) * B, sys, group, options).time.si();
    return t * s;
}

duration perf_setup::interpolate(const collective_grid& grid, data_size bytes) const {
    if (grid.empty() || bytes.si() <= 0) return {};
    const int last = static_cast<int>(grid.seconds.size()) - 1;
    const double x = bytes.si();
    if (x <= 1.0) return grid.at(*system, 0);
    const int k = std::min(last - 1, static_cast<int>(std::floor(std::log2(x))));
    const double x0 = std::ldexp(1.0, k), x1 = std::ldexp(1.0, k + 1);
    const duration y0 = grid.at(*system, k), y1 = grid.at(*system, k + 1);
    return y0 + (y1 - y0) * ((x - x0) / (x1 - x0));  // beyond the grid: the last segment's slope
}

namespace {

// The drafter's share of a step: one pass over the step's prompt chunks and one position per decoding
// request (it reads the accepted tokens), then k - 1 more passes drafting for the decoding requests
// alone; its kernels and communication, without another step's engine overhead.
op_time drafter_time(const drafter_setup& d, const batch_step& st, std::int64_t k) {
    batch_step first = st;
    first.decode_positions = 1;
    const step_breakdown one = step_time_breakdown(d.setup, first);
    duration time = one.compute + one.communication;
    flop_count flops;
    data_size bytes;
    for (const auto& o : one.ops) flops += o.flops, bytes += o.bytes;
    if (st.decode_requests > 0 && k > 1) {
        batch_step more;
        more.decode_requests = st.decode_requests;
        more.context_tokens = st.context_tokens;
        const step_breakdown next = step_time_breakdown(d.setup, more);
        const double passes = static_cast<double>(k - 1);
        time += passes * (next.compute + next.communication);
        for (const auto& o : next.ops) flops += passes * o.flops, bytes += passes * o.bytes;
    }
    const bool compute_bound = flops / d.setup.peak > bytes / d.setup.memory_bandwidth;
    return {"speculative drafter", flops, bytes, time, compute_bound};
}

}  // namespace

namespace {

// A step's shares of its token counts (what every operator but the attention core reads).
struct step_shape {
    double positions, decode_tokens, step_tokens;
    // Attention data parallelism: each rank runs everything but the routed experts for its own
    // requests, with those weights whole, and the busiest rank (ceil(n / ranks) of n whole requests)
    // sets the pace; the experts see the whole step's tokens.
    double prefill_share, decode_share;
    double tokens;  // this rank's, but for the experts
    double h, tp;   // hidden size, attention tensor parallelism
    double q_out;   // query width on this rank

    step_shape(const perf_setup& su, const batch_step& st) {
        const model_spec& m = *su.model;
        const parallelism_spec& p = su.parallelism;
        positions = static_cast<double>(std::max<std::int64_t>(1, st.decode_positions));
        decode_tokens = static_cast<double>(st.decode_requests) * positions;
        step_tokens = static_cast<double>(st.prefill_tokens) + decode_tokens;
        const double ranks = p.attention_ranks();
        auto busiest = [&](std::int64_t n) { return n > 0 ? std::ceil(static_cast<double>(n) / ranks) / static_cast<double>(n) : 1.0; };
        prefill_share = busiest(st.prefill_requests);
        decode_share = busiest(st.decode_requests);
        tokens = static_cast<double>(st.prefill_tokens) * prefill_share + decode_tokens * decode_share;
        h = static_cast<double>(m.hidden);
        tp = p.attention_tp();
        q_out = m.mla ? m.heads / tp * (m.mla_dims.qk_nope_head_dim + m.mla_dims.qk_rope_head_dim)
                      : m.heads / tp * static_cast<double>(m.head_dim);
    }
};

// Costs operators into their totals: the per-operator roofline of the header's comment.
struct op_costing {
    const perf_setup& su;
    // softmax_attention: the softmax attention core, the one operator a named training kernel replaces
    // (perf_efficiency::attention_kernel); attention: the other cores (linear attention, DSA's indexer).
    enum class unit { matrix, grouped_matrix, attention, softmax_attention, norm };

    // Dequantising weight-only formats adds vector work per weight element read (serial with the load).
    duration dequant(double weight_elements, double ops) const {
        return ops > 0 ? (weight_elements * ops * units::FLOP) / su.vector_peak : duration{};
    }
    // Efficiencies by the work of one of the op's kernels (the op's work split evenly over them).
    void charge(op_totals& o, unit u, flop_count f, data_size b, int kernels, double weight_elements = 0.0,
                double dequant_ops = -1.0) const {
        const perf_efficiency& eff = su.efficiency;
        const double share = 1.0 / kernels;
        const double ge = u == unit::softmax_attention ? eff.softmax_attention_at(f.si() * share)
                          : u == unit::attention       ? eff.attention_at(f.si() * share)
                          : u == unit::grouped_matrix  ? eff.grouped_gemm_at(f.si() * share)
                                                       : eff.gemm_at(f.si() * share);
        const double me = u == unit::norm ? eff.norm_at(b.si() * share) : eff.memory_at(b.si() * share);
        const duration c = f / (su.peak * ge);
        const duration mem = b / (su.memory_bandwidth * me) + dequant(weight_elements, dequant_ops < 0 ? su.dequant_ops : dequant_ops);
        o.flops += f;
        o.bytes += b;
        o.compute_part += c;
        o.memory_part += mem;
        o.time += overlapped_roofline(c, mem, eff.roofline_norm) + static_cast<double>(kernels) * eff.per_kernel;
        o.kernels += kernels;
    }
    // Kernels an op launches beyond its GEMMs (norms, activations, routing).
    void launches(op_totals& o, double kernels) const {
        o.time += kernels * su.efficiency.per_kernel;
        o.kernels += kernels;
    }
};

void add_layers(op_totals& sum, const op_totals& layer, double n) {
    sum.flops += n * layer.flops;
    sum.bytes += n * layer.bytes;
    sum.time += n * layer.time;
    sum.compute_part += n * layer.compute_part;
    sum.memory_part += n * layer.memory_part;
    sum.kernels += n * layer.kernels;
}

// The attention cores of every layer (the one operator that reads the contexts).
// The step's attention cores, all layers; `moe`: the MoE layers' part of their time.
op_totals attention_core(const perf_setup& su, const batch_step& st, const step_shape& sh, const layer_kinds& lk,
                         duration& moe) {
    const model_spec& m = *su.model;
    const parallelism_spec& p = su.parallelism;
    const op_costing cost{su};
    using unit = op_costing::unit;
    const double tp = sh.tp, tokens = sh.tokens, positions = sh.positions;
    const double ba = su.precision.activations.bytes_per_element();
    // Inputs: keys attended (causal prefill chunks; decodes read their contexts).
    const double pr = static_cast<double>(std::max<std::int64_t>(1, st.prefill_requests));
    const double pt = static_cast<double>(st.prefill_tokens) * sh.prefill_share;
    // Without FlashAttention (Megatron-LM before 2023) the whole s x s score matrix is computed, then
    // masked: every key of the chunk, not the causal half, and the scores go through memory.
    // A request's chunk, or one of its packed samples' (each attending within itself, its share of the context).
    const double segments = std::max(1.0, st.attention_segments);
    const double chunk = static_cast<double>(st.prefill_tokens) / pr / segments;
    const double context = static_cast<double>(st.prefill_context_tokens) / pr / segments;
    const double chunk_keys = su.flash_attention ? (chunk + 1.0) / 2.0 : chunk;
    const double prefill_keys = pt * context + pt * chunk_keys;
    // Every verified position attends to its request's context; the context is read once.
    const double decode_context = static_cast<double>(st.context_tokens) * sh.decode_share;
    const double decode_keys = decode_context * positions;
    const double per_key = static_cast<double>(detail::attention_flops_per_key(m)) / tp;
    // Keys on a layer that keeps at most W of them (a sliding window, DSA's top-k) or attends within chunks of W
    // (Llama 4): prefill counted exactly for this step's average request (flops.hpp's sums); decode per request
    // min(context, W), or for chunks the mean over a request's decode life, which falls from W at a context of W
    // to W / 2 from 2W on (its context sweeps through whole chunks).
    auto windowed_prefill_keys = [&](std::int64_t w, bool chunked) {
        if (!su.flash_attention || chunk <= 0) return prefill_keys;  // materialised scores: the whole matrix
        const auto c0 = static_cast<std::int64_t>(std::llround(context));
        const auto n = static_cast<std::int64_t>(std::llround(chunk));
        const double per_request = chunked ? static_cast<double>(detail::chunked_keys(c0 + n, w) - detail::chunked_keys(c0, w))
                                           : static_cast<double>(detail::causal_keys(c0 + n, w) - detail::causal_keys(c0, w));
        return per_request * pt / chunk;
    };
    auto windowed_decode_context = [&](double w, bool chunked) {
        const double requests = static_cast<double>(st.decode_requests) * sh.decode_share;
        if (requests <= 0) return 0.0;
        const double a = decode_context / requests;
        const double keys = !chunked ? std::min(a, w) : a <= w ? a : a < 2.0 * w ? w - (a - w) / 2.0 : w / 2.0;
        return keys * requests;
    };
    const data_size kv_token = kv_bytes_per_token_per_layer(m, p.attention_tp(), su.precision.kv_cache);

    op_totals sum;
    for (int k = 0; k < lk.n; ++k) {
        const std::int64_t i = lk.kinds[k].first;
        op_totals layer;
        if (!m.has_mixer(i)) {
            // A feed-forward block alone (Nemotron-H's MLP and MoE blocks): no attention work.
        } else if (m.is_linear_layer(i)) {
            // Gated DeltaNet: the core updates each request's fixed state once per token (chunked in prefill) and
            // reads and writes it once per step, its convolution and gated norm beside it (vLLM's fused_recurrent /
            // chunk_gated_delta_rule kernels).
            const double requests = static_cast<double>(st.decode_requests) * sh.decode_share +
                                    static_cast<double>(st.prefill_requests) * sh.prefill_share;
            const data_size state = 2.0 * requests * linear_state_bytes_per_layer(m, p.attention_tp());
            cost.charge(layer, unit::attention, static_cast<double>(detail::linear_flops_per_token(m)) / tp * tokens * units::FLOP,
                        state + tokens * 4.0 * (static_cast<double>(m.linear.conv_channels()) / tp) * ba * units::B, 3);
        } else {
            // A sliding window caps each token's keys; so does DSA's top-k (its indexer still scores and reads
            // every cached token's fp8 key).
            double pk = prefill_keys, dk = decode_keys, dc = decode_context;
            const double window = m.is_sliding_layer(i) ? static_cast<double>(m.sliding_window)
                                                        : static_cast<double>(m.sparse.topk);
            if (window > 0) {
                const bool chunked = m.is_sliding_layer(i) && m.chunked_local;
                pk = windowed_prefill_keys(static_cast<std::int64_t>(window), chunked);
                dc = windowed_decode_context(window, chunked);
                dk = dc * positions;
            }
            const double prefill_cached = static_cast<double>(st.prefill_context_tokens) * sh.prefill_share;
            data_size kv_bytes = (dc + prefill_cached + pt) * kv_token;
            if (m.sparse.active()) {
                // The indexer: every cached key's index entry read, 2·Hi·di per query and key (replicated: not / tp).
                const data_size index_key = index_key_bytes_per_token_per_layer(m);
                kv_bytes = (dc + prefill_cached + pt) * (kv_token - index_key) + (decode_context + prefill_cached + pt) * index_key;
                cost.charge(layer, unit::attention,
                            static_cast<double>(detail::index_flops_per_key(m)) * (prefill_keys + decode_keys) * units::FLOP,
                            tokens * static_cast<double>(m.sparse.index_heads * m.sparse.index_head_dim) * ba * units::B, 2);
            }
            // Materialised scores (no FlashAttention): QK^T writes them, the fused scale-mask-softmax
            // reads and writes them, PV reads them: 4 passes of the activation format per score
            // (Korthikanti et al. 2022 §4.1). Attention dropout reads the probabilities and writes a
            // 1-byte mask and the dropped copy that PV reads: 2 passes and a byte more. (FlashAttention
            // draws the dropout inside its kernel: no traffic.)
            const double per_score = 4.0 * ba + (su.dropout ? 2.0 * ba + 1.0 : 0.0);
            const data_size scores = su.flash_attention ? data_size{} : (m.heads / tp) * pk * per_score * units::B;
            cost.charge(layer, unit::softmax_attention, per_key * (pk + dk) * units::FLOP,
                        kv_bytes + tokens * 2.0 * sh.q_out * ba * units::B + scores, m.mla ? 3 : 2);
        }
        add_layers(sum, layer, static_cast<double>(lk.kinds[k].count));
        if (m.is_moe_layer(i)) moe += static_cast<double>(lk.kinds[k].count) * layer.time;
    }
    return sum;
}

}  // namespace

layer_kinds::layer_kinds(const model_spec& m) {
    std::int64_t count[4][3] = {}, first[4][3] = {};
    m.for_layer_runs(0, m.layers, [&](std::int64_t i, std::int64_t n) {
        const int mixer = !m.has_mixer(i) ? 3 : m.is_linear_layer(i) ? 2 : m.is_sliding_layer(i) ? 1 : 0;
        const int ffn = !m.has_ffn(i) ? 2 : m.is_moe_layer(i) ? 1 : 0;
        if (count[mixer][ffn] == 0) first[mixer][ffn] = i;
        count[mixer][ffn] += n;
    });
    for (int mixer = 0; mixer < 4; ++mixer)
        for (int ffn = 0; ffn < 3; ++ffn)
            if (count[mixer][ffn] > 0) kinds[n++] = {first[mixer][ffn], count[mixer][ffn]};
}

step_token_costs step_token_costs::of(const perf_setup& su, const batch_step& st, const layer_kinds& lk) {
    step_token_costs out;
    const step_shape sh(su, st);
    if (sh.step_tokens <= 0) return out;
    const model_spec& m = *su.model;
    const parallelism_spec& p = su.parallelism;
    const op_costing cost{su};
    using unit = op_costing::unit;
    using units::B;
    using units::FLOP;
    const double h = sh.h, tp = sh.tp, tokens = sh.tokens, step_tokens = sh.step_tokens;
    const double bw = su.precision.weights.bytes_per_element();
    const double be = su.precision.experts().bytes_per_element();  // routed experts (gpt-oss: MXFP4 as released)
    const double bo = su.precision.weights.quantized() ? 2.0 : bw;  // embeddings, head, router
    const double ba = su.precision.activations.bytes_per_element();
    const device_parameters attn = detail::attention_on_device(m, p);
    const double q_out = sh.q_out;
    const double kv_out = m.mla ? static_cast<double>(m.mla_dims.kv_lora_rank + m.mla_dims.qk_rope_head_dim)
                                : 2.0 * detail::kv_heads_per_rank(m, p.attention_tp()) * m.head_dim;
    const double o_in = m.mla ? m.heads / tp * static_cast<double>(m.mla_dims.v_head_dim) : q_out;  // output projection input

    for (int k = 0; k < lk.n; ++k) {
        const std::int64_t i = lk.kinds[k].first;
        op_totals proj, ffn_op, norms;
        duration tp_allreduce, ep_alltoall, routed;
        if (!m.has_mixer(i)) {
            // A feed-forward block alone (Nemotron-H's MLP and MoE blocks): no attention work.
        } else if (m.is_linear_layer(i)) {
            // Gated DeltaNet: the input projections (q, k, v, the output gate, beta and the decay) and the output
            // projection at their sizes (its core: attention_core).
            const double mats = static_cast<double>(attention_layer_parameters(m, true).matrices) / tp;
            const double out_params = static_cast<double>(m.linear.value_heads * m.linear.value_head_dim) / tp * h;
            const double in_params = mats - out_params;
            cost.charge(proj, unit::matrix, 2.0 * tokens * in_params * FLOP, (in_params * bw + tokens * 2.0 * h * ba) * B, 2,
                        in_params);
            cost.charge(proj, unit::matrix, 2.0 * tokens * out_params * FLOP, (out_params * bw + tokens * 2.0 * h * ba) * B,
                        1, out_params);
        } else {
            // Projections, each GEMM at its own size: Q/K/V and the output. MLA launches a chain: q_a, its
            // norm, q_b, kv_a, its norm, the K up-projection (absorbed into q in decode), then W_UV and
            // o_proj, and its core adds the rotary embedding (vLLM vllm/v1/attention/backends/mla/common.py,
            // "Decode path"); other attention is one QKV GEMM and the output.
            const double o_params = o_in * h, qkv_params = attn.block_linear - o_params;
            const bool q_lora = m.mla && m.mla_dims.q_lora_rank > 0;
            cost.charge(proj, unit::matrix, 2.0 * tokens * qkv_params * FLOP,
                        (qkv_params * bw + tokens * (h + q_out + kv_out) * ba) * B, m.mla ? (q_lora ? 4 : 3) : 1, qkv_params);
            if (m.mla) cost.launches(proj, q_lora ? 2.0 : 1.0);  // the latent norms
            cost.charge(proj, unit::matrix, 2.0 * tokens * o_params * FLOP, (o_params * bw + tokens * (o_in + h) * ba) * B,
                        m.mla ? 2 : 1, o_params);
        }
        if (m.has_ffn(i)) {
            // Feed-forward: a dense MLP, or the experts this step's tokens reach on this device.
            const device_parameters ffn = detail::ffn_on_device(m, i, p);
            // The activation's traffic (read 2, write 1 intermediate-wide rows; non-gated 1 and 1)
            // counts with the GEMMs' (fused or overlapped).
            const double act_passes = m.gated_mlp ? 3.0 : 2.0;
            if (!m.is_moe_layer(i)) {
                // Up (+gate) and down GEMMs at their own sizes; the activation kernel between them
                // adds its launch.
                const double width = m.intermediate / tp;
                const double up = ffn.block_linear * (m.gated_mlp ? 2.0 / 3.0 : 0.5), down = ffn.block_linear - up;
                cost.charge(ffn_op, unit::matrix, 2.0 * tokens * up * FLOP,
                            (up * bw + tokens * (h + (act_passes - 1.0) * width) * ba) * B, 1, up);
                cost.charge(ffn_op, unit::matrix, 2.0 * tokens * down * FLOP, (down * bw + tokens * (width + h) * ba) * B, 1,
                            down);
                cost.launches(ffn_op, 1.0);
            } else {
                const double experts_here = static_cast<double>(m.moe.routed_experts) / p.ep;
                // The slots this device's experts receive: balanced routing, times the busiest expert-
                // parallel rank's excess (it sets the pace).
                const double imbalance = p.ep > 1 ? p.expert_imbalance : 1.0;
                // Training routes each rank's 1/tp sequence shard, and an expert split over etp ranks sees the
                // shards of all of them (Megatron all-gathers the tokens over the expert-tensor group): etp x T/tp x k.
                const double slots = imbalance * step_tokens * static_cast<double>(m.moe.experts_per_token) /
                                     (st.experts_route_rank_tokens ? tp / static_cast<double>(p.etp) : static_cast<double>(p.ep));
                // Distinct local experts hit by `slots` uniform picks (expected value).
                const double touched = experts_here * (1.0 - std::pow(1.0 - 1.0 / experts_here, slots));
                const double expert = static_cast<double>(expert_parameters(m).matrices) / p.etp;
                const double shared = ffn.block_linear - ffn.routed_experts;
                const double router = h * m.moe.routed_experts;
                // Kernels as vLLM's fused MoE launches them (vllm/model_executor/layers/fused_moe/fused_moe.py):
                // the router GEMM, top-k, moe_align_block_size, the two expert GEMMs with silu_and_mul
                // between, moe_sum; shared experts add their up, activation and down. The two expert
                // GEMMs are grouped kernels (at most the catalog's grouped_matmul efficiency); the
                // router and the shared experts dense ones.
                const bool has_shared = m.moe.shared_experts > 0;
                const duration before = ffn_op.time;
                cost.charge(ffn_op, unit::grouped_matrix, 2.0 * slots * expert * FLOP,
                            (touched * expert * be + slots * (2.0 * h + (m.moe.gated ? 3.0 : 2.0) * m.moe.expert_intermediate / p.etp) * ba) * B, 2,
                            touched * expert, su.expert_dequant_ops);
                routed = ffn_op.time - before;
                // Training routes only the rank's sequence shard (the router is replicated, not split).
                const double routed_tokens = st.experts_route_rank_tokens ? tokens / tp : tokens;
                cost.charge(ffn_op, unit::matrix, 2.0 * (tokens * shared + routed_tokens * router) * FLOP,
                            (shared * bw + router * bo + tokens * 2.0 * h * ba) * B, has_shared ? 3 : 1, shared);
                cost.launches(ffn_op, has_shared ? 5.0 : 4.0);
                // Expert parallelism: dispatch the routed tokens to their experts' ranks and combine them back.
                // Each rank sends its routed slots: with shared tokens the step's on this rank (its own
                // share under attention data parallelism) x k, with rank-routed tokens its own shard's
                // (the slots it receives / etp). Not when the expert group lies within the attention's
                // tensor-parallel group: every rank already holds all the step's tokens, runs its own
                // experts on those routed to them, and the tensor-parallel all-reduce after the layer
                // combines the partial outputs (vLLM FusedMoE dispatches only with data parallelism;
                // TensorRT-LLM's MoE all-to-all needs attention DP).
                const bool tokens_replicated = !st.experts_route_rank_tokens && p.ep * p.etp <= p.attention_tp();
                const double sent = st.experts_route_rank_tokens ? slots / p.etp : imbalance * tokens * static_cast<double>(m.moe.experts_per_token);
                if (p.ep > 1 && !tokens_replicated) ep_alltoall += 2.0 * su.alltoall(sent * h * ba * B);
            }
        }
        // Norms, residual adds, rotary embedding: ~10 passes over the hidden state, memory-bound;
        // hidden dropout (fused with the bias and residual add) writes a 1-byte mask twice a layer.
        cost.charge(norms, unit::norm, flop_count{}, tokens * (10.0 * ba + (su.dropout ? 2.0 : 0.0)) * h * B, 3);
        // One all-reduce after the mixer and one after the feed-forward (a hybrid block has one of them).
        const double reductions = (m.has_mixer(i) ? 1.0 : 0.0) + (m.has_ffn(i) ? 1.0 : 0.0);
        if (tp > 1) tp_allreduce += reductions * su.allreduce(tokens * h * ba * B);

        const double n = static_cast<double>(lk.kinds[k].count);
        add_layers(out.projections, proj, n);
        add_layers(out.mlp, ffn_op, n);
        add_layers(out.norms, norms, n);
        out.tp_allreduce += n * tp_allreduce;
        out.ep_alltoall += n * ep_alltoall;
        if (m.is_moe_layer(i)) {
            out.moe_layers += n * (proj.time + ffn_op.time + norms.time);
            out.routed_experts += n * routed;
        }
    }
    // LM head for the sampled positions (fp32 logits), embedding lookups for every token.
    const double sampled = sh.decode_tokens * sh.decode_share + static_cast<double>(st.prefill_requests) * sh.prefill_share;
    const double vocab_part = static_cast<double>(m.vocab) / tp;
    cost.charge(out.head, unit::matrix, 2.0 * sampled * h * vocab_part * FLOP,
                (vocab_part * h * bo + sampled * vocab_part * 4.0 + tokens * h * bo) * B, 2);
    if (p.pp > 1)
        out.pipeline_send = static_cast<double>(p.pp - 1) *
                            (su.pipeline_send_latency + (tokens * h * ba * B) / su.pipeline_send_bandwidth);
    return out;
}

step_breakdown step_time_breakdown(const perf_setup& su, const batch_step& st) {
    const layer_kinds lk = su.layers();
    return step_time_breakdown(su, st, step_token_costs::of(su, st, lk), lk);
}

step_breakdown step_time_breakdown(const perf_setup& su, const batch_step& st, const step_token_costs& token_costs,
                                   const layer_kinds& lk) {
    step_breakdown out;
    out.overhead = su.efficiency.per_step;
    if (st.prefill_tokens > 0) out.overhead += su.efficiency.per_prefill_step;
    const step_shape sh(su, st);
    if (sh.step_tokens <= 0) return out;
    const op_totals core = attention_core(su, st, sh, lk, out.moe_attention_core);
    out.tp_allreduce = token_costs.tp_allreduce;
    out.ep_alltoall = token_costs.ep_alltoall;
    out.pipeline_send = token_costs.pipeline_send;
    out.moe_layers = token_costs.moe_layers;
    out.routed_experts = token_costs.routed_experts;
    out.communication = out.tp_allreduce + out.ep_alltoall + out.pipeline_send;

    const std::pair<const char*, const op_totals*> ops[] = {
        {"attention projections", &token_costs.projections}, {"attention core", &core},
        {"mlp / experts", &token_costs.mlp},                  {norms_op_name, &token_costs.norms},
        {"lm head and embedding", &token_costs.head}};
    out.ops.reserve(std::size(ops) + 1);  // one allocation a step: the five sums and a drafter
    for (const auto& [name, o] : ops) {
        out.ops.push_back({name, o->flops, o->bytes, o->time, o->compute_part > o->memory_part});
        out.compute += o->time;
        out.kernels += o->kernels;
    }
    if (su.drafter) {
        const op_time d = drafter_time(*su.drafter, st, su.draft_tokens);
        out.ops.push_back(d);
        out.compute += d.time;
    }
    // Host work an eager (not graph-captured) prefill adds for each kernel it dispatches.
    if (st.prefill_tokens > 0) out.overhead += out.kernels * su.efficiency.per_prefill_kernel;
    if (su.kv_offload.active()) {
        const std::int64_t attended = st.context_tokens + st.prefill_context_tokens;
        const double spilled = static_cast<double>(std::max<std::int64_t>(0, attended - su.kv_offload.gpu_tokens) +
                                                   st.reload_tokens);
        out.kv_reload = spilled * su.kv_offload.bytes_per_token / su.kv_offload.reload_rate;
    }
    return out;
}

duration step_timer::operator()(const batch_step& st) {
    const shape key{st.prefill_tokens, st.prefill_requests, st.decode_requests, st.decode_positions,
                    st.experts_route_rank_tokens};
    auto it = memo_.find(key);
    if (it == memo_.end()) {
        if (memo_.size() >= max_shapes) memo_.clear();  // a bound on memory; the costs are recomputed
        it = memo_.emplace(key, step_token_costs::of(setup_, st, kinds_)).first;
    }
    return step_time_breakdown(setup_, st, it->second, kinds_).total();
}

std::size_t step_timer::shape_hash::operator()(const shape& k) const {
    std::size_t x = static_cast<std::size_t>(k.prefill_tokens);
    for (std::int64_t v : {k.prefill_requests, k.decode_requests, k.decode_positions, std::int64_t{k.rank_tokens}})
        x = x * 0x9E3779B97F4A7C15ull + static_cast<std::size_t>(v);
    return x;
}

latency_estimate estimate_latency(const perf_setup& s, std::int64_t input_tokens, std::int64_t output_tokens,
                                  std::int64_t batch, const prefill_plan& plan) {
    latency_estimate e;
    const std::int64_t cached = std::clamp<std::int64_t>(plan.cached_tokens, 0, input_tokens - 1);
    const std::int64_t computed = input_tokens - cached;
    // Whole prompts per step: as many as the token budget holds, at least one, at most the batch.
    const std::int64_t per_step =
        plan.step_tokens > 0 ? std::clamp<std::int64_t>(plan.step_tokens / computed, 1, batch) : batch;
    auto prompts = [&](std::int64_t n) {
        batch_step st;
        st.prefill_tokens = n * computed;
        st.prefill_requests = n;
        st.prefill_context_tokens = n * cached;  // prefix-cache hits: attended to, not computed
        st.reload_tokens = n * std::min(plan.reload_tokens, cached);
        return st;
    };
    e.prefill = step_time_breakdown(s, prompts(per_step));
    const std::int64_t full = batch / per_step, rest = batch % per_step;
    e.prefill_steps = full + (rest > 0 ? 1 : 0);
    e.ttft = static_cast<double>(full) * e.prefill.total() + (rest > 0 ? step_time(s, prompts(rest)) : duration{});
    batch_step decode;
    decode.decode_requests = batch;
    decode.context_tokens = batch * (input_tokens + output_tokens / 2);
    decode.decode_positions = 1 + s.draft_tokens;
    e.decode = step_time_breakdown(s, decode);
    e.tpot = e.decode.total() / s.tokens_per_step;  // a speculative step yields tokens_per_step tokens
    e.e2e = e.ttft + static_cast<double>(output_tokens - 1) * e.tpot;
    // The batch's prompts, then output_tokens decode steps shared by all of it.
    const duration cycle = e.ttft + static_cast<double>(output_tokens) * e.tpot;
    e.output_tokens_per_s = static_cast<double>(batch * output_tokens) / cycle.si();
    return e;
}

}  // namespace capplan

namespace capplan {

namespace {

// What a lower-precision GEMM keeps of its peak in engines, relative to the part's 16-bit fraction, as the catalog
// derives B200's and GB200's: fp8 0.77 (H100's fp8 / bf16, 0.47 / 0.61, fitted to H100 FP8 rows), fp4 0.75 x 0.77
// (B200's best cuBLAS FP4 / best BF16 fraction, then as fp8); fp6 as the format whose rate it runs at (fp4's on
// CDNA4, fp8's on Blackwell); 16-bit formats 1. Other formats (fp32, tf32, integers): none, nothing to derive from.
std::optional<double> low_precision_ratio(const accelerator_spec& a, const std::string& peak_key) {
    if (peak_key == "bf16" || peak_key == "fp16") return 1.0;
    if (peak_key == "fp8") return 0.77;
    if (peak_key == "fp4") return 0.75 * 0.77;
    if (peak_key == "fp6") {
        const peak_rate fp6 = a.peak("fp6"), fp4 = a.peak("fp4");
        const bool at_fp4_rate = fp6.status == peak_rate::state::known && fp4.status == peak_rate::state::known &&
                                 fp6.value == fp4.value;
        return at_fp4_rate ? 0.75 * 0.77 : 0.77;
    }
    return std::nullopt;
}

}  // namespace

perf_efficiency default_perf_efficiency(const accelerator_spec& a, const number_format& compute, bool explain) {
    using namespace units;
    perf_efficiency e;
    // Measured values come from the accelerator's catalog entry ("efficiency", each with its
    // source). Where an accelerator has none, the means of the measured ones stand in:
    // memory 0.83 (BabelStream: H100 0.866, H200 0.835, A100 0.79, MI300X 0.78; nvbench: B200 0.873) and matrix units
    // 0.61 in 16 bits (the H100 bf16 in-engine estimate; A100 measured 0.66, MI300X 0.42), less in fp8 and fp4.
    const bool measured_memory = a.memory_efficiency.has_value();
    e.memory = a.memory_efficiency.value_or(0.83);
    const auto mm = find_by_peak(a.matmul_efficiency, compute.peak_key);
    const bool measured_matmul = mm != a.matmul_efficiency.end();
    // A format without its own measured fraction on a part with a measured 16-bit one: that x what lower precision
    // keeps (as the catalog derives B200's); a part without any measured fraction: the mean, in any format.
    const auto mm16 = find_by_peak(a.matmul_efficiency, "bf16");
    const std::optional<double> ratio = low_precision_ratio(a, compute.peak_key);
    const bool derived = !measured_matmul && ratio && mm16 != a.matmul_efficiency.end();
    e.gemm = measured_matmul ? mm->second : derived ? mm16->second * *ratio : 0.61;
    // Small kernels cannot beat the catalog's raw GEMM efficiency by FLOPs per kernel: each kernel
    // gets the smaller of that curve and the large-kernel value (at the knots). In a faster format a
    // kernel reaches the same efficiency at proportionally more FLOPs (the same start-up time).
    if (!a.matmul_by_size.empty()) {
        const peak_rate ref = a.peak(a.matmul_by_size_format), own = a.peak(compute.peak_key);
        const double scale = ref.status == peak_rate::state::known && own.status == peak_rate::state::known
                                 ? own.value / ref.value : 1.0;
        for (const auto& [flops, eff] : a.matmul_by_size) e.gemm_by_size.points.push_back({flops * scale, std::min(e.gemm, eff)});
    }
    // Per kernel: the asynchronous CUDA launch latency, 2.2 us (reframe-hpc kernel_latency reference).
    e.per_kernel = a.kernel_launch.value_or(2.2 * us);
    // A step that runs a prompt also pays host work its kernels do not show (engines capture CUDA
    // graphs for decode steps only; input and output copies, sampling): 2.4 ms, fitted as the median
    // of TensorRT-LLM v0.9.0's batch-1 128-token TTFTs on H100 and H200 (Llama-2-7B, Mistral-7B,
    // Llama-2-70B TP4, Mixtral TP2) minus this model without it (2.2-2.5 ms, independent of model
    // size); the catalog may carry a measured value per accelerator.
    e.per_prefill_step = a.prefill_step_overhead.value_or(2.4 * ms);
    // How a kernel's loads and math overlap near the ridge (catalog; none: the larger of the two).
    if (a.roofline_norm) e.roofline_norm = *a.roofline_norm;
    // Mixture-of-experts expert GEMMs: the engines' grouped kernels' measured ceiling (catalog).
    const auto grouped = find_by_peak(a.grouped_matmul_efficiency, compute.peak_key);
    if (grouped != a.grouped_matmul_efficiency.end()) e.grouped_gemm = grouped->second;

    // PyTorch's eager element-wise kernels by class (catalog, measured; training.kernels "eager").
    for (std::size_t c = 0; c < eager_classes; ++c) {
        const auto it = a.eager_elementwise_efficiency.find(eager_class_names[c]);
        if (it != a.eager_elementwise_efficiency.end()) e.eager[c] = it->second;
    }
    if (!explain) return e;  // the source text below is built only when asked for (the layout search does not)
    // Where the measured values come from (an accelerator may share another's: catalog "efficiency.as").
    const std::string catalog_entry =
        a.efficiency_as.empty() ? a.name + " catalog" : a.efficiency_as + " catalog, shared by " + a.name;
    // The part's own matrix fractions (beside a shared block) are its own catalog's.
    const auto matrix_entry_of = [&](const auto& it) {
        return a.own_matmul_efficiency.count(it->first) ? a.name + " catalog" : catalog_entry;
    };
    const std::string matrix_entry =
        measured_matmul ? matrix_entry_of(mm)
        : derived       ? "derived: the 16-bit " + format_number(mm16->second) + " (" + matrix_entry_of(mm16) + ")" +
                              (*ratio != 1.0 ? " x " + format_number(*ratio) + " for " + compute.peak_key : "")
                        : "mean of measured accelerators";
    const std::string grouped_entry =
        grouped != a.grouped_matmul_efficiency.end() && a.own_grouped_matmul_efficiency.count(grouped->first)
            ? a.name + " catalog" : catalog_entry;
    e.source = "memory " + format_number(e.memory) + " of peak bandwidth (" +
               (measured_memory ? catalog_entry : "mean of measured accelerators") + "), matrix units " +
               format_number(e.gemm) + " of " + compute.peak_key + " peak (" + matrix_entry + ")" +
               (e.gemm_by_size.empty() ? std::string() : ", falling off for small kernels (" + catalog_entry + ")") +
               (a.roofline_norm ? ", compute and memory " + format_number(*a.roofline_norm) + "-norm near the ridge (" +
                                      catalog_entry + ")"
                                : std::string()) +
               (e.grouped_gemm > 0.0 ? ", MoE expert GEMMs at most " + format_number(e.grouped_gemm) + " (" + grouped_entry + ")"
                                     : std::string()) +
               ", " + format(e.per_kernel) + " per kernel, " + format(e.per_prefill_step) + " per prefill step";
    return e;
}

perf_efficiency calibrated_perf_efficiency(const efficiency_table& t, const accelerator_spec& a,
                                           const number_format& compute) {
    if (t.accelerator != a.name)
        throw config_error("/calibration", "'" + t.name + "'",
                           "measured on " + t.accelerator + ", but the scenario runs on " + a.name,
                           "a calibration of " + a.name + " (capplan calibrate on that accelerator)");
    const auto curve = find_by_peak(t.gemm, compute.peak_key);
    if (curve == t.gemm.end()) {
        std::string have;
        for (const auto& [f, c] : t.gemm) have += (have.empty() ? "" : ", ") + f;
        throw config_error("/calibration", "'" + t.name + "'", "has no matrix curve for " + compute.peak_key,
                           "a compute format it measured: " + (have.empty() ? std::string("none") : have));
    }
    perf_efficiency e = default_perf_efficiency(a, compute);
    // Fractions of the table's reference peaks -> fractions of the accelerator's peaks.
    const peak_rate own = a.peak(compute.peak_key);
    auto rescale = [](efficiency_curve c, double factor) {
        for (auto& p : c.points) p.value *= factor;
        return c;
    };
    const std::string& key = curve->first;  // the measured format (bf16 serves fp16 and back)
    const double flop_factor = own.status == peak_rate::state::known ? t.peak_flops.at(key) / own.value : 1.0;
    e.gemm_by_size = rescale(curve->second, flop_factor);
    if (const auto at = t.attention.find(key); at != t.attention.end()) e.attention_by_size = rescale(at->second, flop_factor);
    if (a.memory_bandwidth && t.memory_bandwidth) {
        const double byte_factor = *t.memory_bandwidth / *a.memory_bandwidth;
        e.memory_by_size = rescale(t.memory, byte_factor);
        e.norm_by_size = rescale(t.norm, byte_factor);
    }
    if (t.kernel_launch) e.per_kernel = *t.kernel_launch;
    // The scalars (training's optimizer and head, the roofline chart) take the largest kernels' values.
    e.gemm = e.gemm_by_size.points.back().value;
    if (!e.memory_by_size.empty()) e.memory = e.memory_by_size.points.back().value;
    e.table = t.name;
    e.source = "efficiency by kernel size from calibration '" + t.name + "' (" + t.source + "), " +
               format(e.per_kernel) + " per kernel";
    return e;
}

}  // namespace capplan
