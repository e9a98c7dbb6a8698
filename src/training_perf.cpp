#include "capplan/analysis/training_perf.hpp"

#include <algorithm>
#include <initializer_list>

#include "capplan/analysis/attention_kernel.hpp"
#include "capplan/analysis/collectives.hpp"
#include "capplan/analysis/eager_kernels.hpp"
#include "capplan/analysis/flops.hpp"
#include "capplan/analysis/inference_perf.hpp"
#include "capplan/analysis/kv_cache.hpp"
#include "capplan/analysis/lora.hpp"
#include "capplan/analysis/sharding.hpp"
#include "capplan/analysis/training_memory.hpp"
#include "capplan/detail/ceil_div.hpp"
#include "capplan/error.hpp"
#include "capplan/units_parse.hpp"

namespace capplan {

perf_setup training_perf_setup(const scenario& s, bool explain) {
    perf_setup perf = perf_setup::from(s, explain);
    perf.flash_attention = s.training->flash_attention;  // (serving engines always fuse attention)
    perf.dropout = s.training->dropout;
    // A named attention kernel runs at its published rate, whatever the GEMMs' format (FP8 training included).
    if (const auto rate = training_attention_rate(s)) perf.efficiency.attention_kernel = *rate / perf.peak;
    // QLoRA's base is dequantised by a kernel of its own before each 16-bit GEMM (bitsandbytes dequantize_4bit,
    // timed in training_step_time), not inside the GEMM as serving kernels do.
    if (s.training->lora) perf.dequant_ops = perf.expert_dequant_ops = 0.0;
    // LoRA under FP8 GEMMs (Transformer Engine's fp8 autocast over the frozen base): the adapters are plain 16-bit
    // linear layers outside it (NeMo's ParallelLinearAdapter: Megatron Core's Column/RowParallelLinear, not TE's).
    if (s.training->lora && s.precision.compute.element_bits < 16.0) {
        const number_format sixteen = s.precision.activations.element_bits == 16.0 ? s.precision.activations : find_format("bf16");
        const peak_rate p16 = s.system.accelerator.peak(sixteen.peak_key);
        if (p16.status == peak_rate::state::known)
            perf.adapter_gemm = std::make_shared<const perf_setup::gemm_rate>(perf_setup::gemm_rate{
                p16.value, s.calibration ? calibrated_perf_efficiency(*s.calibration, s.system.accelerator, sixteen)
                                         : default_perf_efficiency(s.system.accelerator, sixteen, false)});
    }
    return perf;
}

training_performance estimate_training_performance(const scenario& s, bool explain) {
    return estimate_training_performance(s, shard_weights(s.model, s.parallelism), explain);
}

training_performance estimate_training_performance(const scenario& s, const weight_sharding& w, bool explain) {
    const perf_setup perf = training_perf_setup(s, explain);
    const training_spec& t = *s.training;
    const batch_step mb = training_micro_batch(t.micro_batch, t.seq_len, s.parallelism.cp, t.packed_sample_tokens);
    return assemble_training_performance(s, perf, step_time_breakdown(perf, mb), w);
}

batch_step training_micro_batch(std::int64_t micro_batch, std::int64_t seq_len, int cp, std::int64_t sample_tokens) {
    batch_step fwd;
    fwd.prefill_tokens = micro_batch * seq_len / cp;
    fwd.prefill_requests = micro_batch;
    // Packed samples attend within themselves: seq_len / L of them a sequence (L no longer than the sequence).
    if (sample_tokens > 0)
        fwd.attention_segments = static_cast<double>(seq_len) / static_cast<double>(std::min(sample_tokens, seq_len));
    fwd.experts_route_rank_tokens = true;
    // Context parallelism: a rank's queries attend to the keys of the whole sequence before them, and
    // the load-balanced split (two chunks per rank, one from each end; Megatron / Transformer Engine)
    // gives each rank 1/cp of the causal pairs, seq^2 / (2 cp): as if each of its sequences had
    // (seq - seq / cp) / 2 tokens cached before its own seq / cp (packed: each sample split likewise, the same total).
    if (cp > 1) fwd.prefill_context_tokens = micro_batch * (seq_len - seq_len / cp) / 2;
    return fwd;
}

namespace {

// `kernels` memory-bound kernels moving `bytes` in all at `efficiency` of the bandwidth, plus their launches (as §14).
duration memory_passes(const perf_setup& perf, double bytes, double kernels, double efficiency) {
    return bytes * units::B / (perf.memory_bandwidth * efficiency) + kernels * perf.efficiency.per_kernel;
}

// One pass's dequantisation of a QLoRA base on the fullest stage's device (see training_step_time).
duration lora_dequantise_time(const scenario& s, const perf_setup& perf, const weight_sharding& w) {
    using namespace units;
    const precision_spec& prec = s.precision;
    const bool base = lora_base_dequantised(prec), routed = lora_experts_dequantised(prec);
    if (!s.training->lora || !(base || routed)) return duration{};
    const model_spec& m = s.model;
    const parallelism_spec& p = s.parallelism;
    const pipeline_stage& st = w.stages[static_cast<std::size_t>(w.largest_stage)];
    // Each dequantised matrix read in its format and written in 16 bits: the routed experts in theirs.
    const double experts = st.params.routed_experts, dense = st.params.block_linear - experts;
    const data_size bytes = ((base ? dense * (prec.weights.bytes_per_element() + 2.0) : 0.0) +
                             (routed ? experts * (prec.experts().bytes_per_element() + 2.0) : 0.0)) * B;
    // One kernel per matrix: q, k, v, o and each MLP's (gate, up, down; the experts held on this device).
    double kernels = 0.0;
    m.for_layer_runs(st.first_layer, st.layers, [&](std::int64_t i, std::int64_t n) {
        const bool moe = m.is_moe_layer(i);
        const double matrices = moe ? m.moe.gated ? 3.0 : 2.0 : m.gated_mlp ? 3.0 : 2.0;
        const double dense_kernels = 4.0 + matrices * (moe ? static_cast<double>(m.moe.shared_experts) : 1.0);
        const double routed_kernels = moe ? matrices * static_cast<double>(m.moe.routed_experts) / p.ep : 0.0;
        const double per_layer = (base ? dense_kernels : 0.0) + (routed ? routed_kernels : 0.0);
        for (std::int64_t j = 0; j < n; ++j) kernels += per_layer;  // per layer, as before
    });
    kernels = std::max(1.0, kernels);
    return memory_passes(perf, bytes.si(), kernels, perf.efficiency.memory_at(bytes.si() / kernels));
}

// FP8 GEMMs over 16-bit activations (Transformer Engine's recipes): what the FP8 casts, the 16-bit attention core and
// sequence parallelism's FP8 all-gathers below apply to.
bool fp8_gemm_training(const precision_spec& prec) {
    return prec.compute.peak_key == "fp8" && !prec.activations.quantized();
}

// Sequence parallelism under FP8 GEMMs (Transformer Engine): a layer's four all-gathers (forward: the LayerNorm outputs
// into the QKV and first MLP projections; backward: the row-parallel projections' output gradients) move FP8 data, as
// TE casts before it gathers (TE 1.x LayerNormLinear: layernorm_fwd_fp8, then gather_along_first_dim; TE 2.x:
// gather_along_first_dim(..., quantizer)), while its four reduce-scatters stay 16-bit. Exceptions: a LoRA adapter on a
// LayerNorm-fused projection reads the gathered 16-bit norm output (NeMo: return_layernorm_output_gathered), so that
// forward gather stays 16-bit; a block-scaled format (MXFP8, blockwise FP8) gathers both its row- and column-wise
// copies when the weight trains (TE 2.x gathers rowwise alone only where supports_only_rowwise_all_gather()); a MoE
// layer's expert half keeps the 16-bit count (its token dispatcher gathers before any cast). Not modelled: with
// userbuffer overlap NeMo's adapter gathers its own 16-bit copy. The shares of the 16-bit count, of the forward's
// traffic and of the whole step's; the attention and the MLP halves of each layer's traffic are equal (one all-reduce
// each in the 16-bit count).
struct tp_traffic_shares {
    double forward = 1.0, step = 1.0;
};
tp_traffic_shares sequence_parallel_fp8_shares(const scenario& s) {
    const parallelism_spec& p = s.parallelism;
    const precision_spec& prec = s.precision;
    tp_traffic_shares out;
    if (!fp8_gemm_training(prec) || !p.sequence_parallel || p.tp <= 1) return out;
    const auto& lora = s.training->lora;
    const double e16 = prec.activations.bytes_per_element();
    const double tile = prec.compute.activation_bytes_per_element > 0.0 ? prec.compute.activation_bytes_per_element
                                                                        : prec.compute.bytes_per_element();
    const double e8 = prec.compute.block_size > 0 && !lora ? 2.0 * tile : tile;
    auto reads_norm = [&](std::initializer_list<lora_target> targets) {
        return lora && std::any_of(targets.begin(), targets.end(), [&](lora_target t) { return lora->has(t); });
    };
    // One half: forward gather `in`, backward gather e8, a reduce-scatter each way at e16.
    const double attention_in = reads_norm({lora_target::q_proj, lora_target::k_proj, lora_target::v_proj, lora_target::qkv_proj}) ? e16 : e8;
    const double mlp_in = reads_norm({lora_target::gate_proj, lora_target::up_proj, lora_target::gate_up_proj}) ? e16 : e8;
    const double moe = s.model.is_moe() ? static_cast<double>(s.model.moe_layer_count()) / static_cast<double>(s.model.layers) : 0.0;
    auto forward_half = [&](double in) { return (e16 + in) / (2.0 * e16); };
    auto step_half = [&](double in) { return (2.0 * e16 + in + e8) / (4.0 * e16); };
    auto layer = [&](auto half) { return (half(attention_in) + (1.0 - moe) * half(mlp_in) + moe) / 2.0; };
    out.forward = layer(forward_half);
    out.step = layer(step_half);
    return out;
}

// The LoRA adapters' own kernels for one micro-batch on the fullest stage's device (lora.hpp
// lora_adapter_traffic_per_token): the r-wide GEMMs on the roofline (forward; the backward's input and weight
// gradients twice that), the element-wise kernels memory-bound; each kernel's launch.
struct adapter_time {
    duration forward, backward;
};
adapter_time lora_adapter_time(const scenario& s, const perf_setup& perf, const weight_sharding& w, double tokens,
                               unsigned groups = all_adapter_groups) {
    using namespace units;
    adapter_time out;
    if (!s.training->lora) return out;
    const model_spec& m = s.model;
    const pipeline_stage& st = w.stages[static_cast<std::size_t>(w.largest_stage)];
    const parallelism_spec& p = s.parallelism;
    const double e = s.precision.activations.bytes_per_element(), tp = p.tp, etp = p.etp;
    // Routed copies as the step routes them (training_elementwise_passes): the rank's 1/tp of the tokens, k each, over
    // the expert-tensor group, times the load's imbalance.
    const double imbalance = p.ep > 1 ? p.expert_imbalance : 1.0;
    const adapter_split split{tp, etp, imbalance * static_cast<double>(m.moe.experts_per_token) * etp / tp,
                              static_cast<double>(m.moe.routed_experts) / p.ep};
    adapter_traffic sum;
    m.for_layer_runs(st.first_layer, st.layers, [&](std::int64_t i, std::int64_t n) {
        sum.add(lora_adapter_traffic_per_token(m, i, *s.training->lora, e, split, groups), static_cast<double>(n));
    });
    if (sum.gemm_kernels <= 0.0) return out;
    const double flops = sum.gemm_flops * tokens, bytes = sum.gemm_bytes * tokens;
    const flop_rate peak = perf.adapter_gemm ? perf.adapter_gemm->peak : perf.peak;
    const perf_efficiency& rate = perf.adapter_gemm ? perf.adapter_gemm->efficiency : perf.efficiency;
    const duration compute = flops * FLOP / (peak * rate.gemm_at(flops / sum.gemm_kernels));
    const duration memory = bytes * B / (perf.memory_bandwidth * perf.efficiency.memory_at(bytes / sum.gemm_kernels));
    const duration gemms = overlapped_roofline(compute, memory, perf.efficiency.roofline_norm) +
                           sum.gemm_kernels * perf.efficiency.per_kernel;
    auto passes = [&](double b, double kernels) {
        return kernels > 0.0 ? memory_passes(perf, b * tokens, kernels, perf.efficiency.memory_at(b * tokens / kernels))
                             : duration{};
    };
    out.forward = gemms + passes(sum.forward_bytes, sum.forward_kernels);
    out.backward = 2.0 * gemms + passes(sum.backward_bytes, sum.backward_kernels);
    return out;
}

// Selective recompute beyond the attention core (training_spec::recompute_modules): each named module's forward once
// more in the backward, for the whole model on one rank (the caller divides by the stages). `tokens`: the rank's
// tokens of one micro-batch. The MoE module's rerun also repeats its dispatch and combine (`alltoall`).
struct module_rerun {
    duration compute, alltoall;
};
module_rerun selective_module_rerun(const scenario& s, const perf_setup& perf, const step_breakdown& f, double tokens) {
    using namespace units;
    const training_spec& t = *s.training;
    const model_spec& m = s.model;
    const parallelism_spec& p = s.parallelism;
    module_rerun out;
    if (t.recompute != recompute_kind::selective) return out;
    const double h = static_cast<double>(m.hidden), tp = p.tp, e = s.precision.activations.bytes_per_element();
    auto gemm = [&](double flops, double kernels) {  // `kernels` GEMMs of equal size
        return flops * FLOP / (perf.peak * perf.efficiency.gemm_at(flops / kernels));
    };
    auto pass = [&](double bytes) { return bytes * B / (perf.memory_bandwidth * perf.efficiency.memory_at(bytes)); };
    const double moe_layers = m.is_moe() ? static_cast<double>(m.moe_layer_count()) : 0.0;
    if (t.recomputes(recompute_module::mla_up_proj) && m.mla) {
        // q_b (q_lora_rank -> heads x qk) and kv_b (kv_lora_rank -> heads x (qk_nope + v)), column-parallel over tp.
        const auto& a = m.mla_dims;
        const double heads = static_cast<double>(m.heads) / tp;
        const double q = a.q_lora_rank > 0 ? static_cast<double>(a.q_lora_rank) * heads * (a.qk_nope_head_dim + a.qk_rope_head_dim) : 0.0;
        const double kv = static_cast<double>(a.kv_lora_rank) * heads * static_cast<double>(a.qk_nope_head_dim + a.v_head_dim);
        out.compute += static_cast<double>(attention_layers(m, all_layers(m))) * gemm(2.0 * tokens * (q + kv), q > 0 ? 2.0 : 1.0);
    }
    if (t.recomputes(recompute_module::layernorm)) {
        // Each branch's pre-norm (Megatron's input_layernorm and pre_mlp_layernorm; a hybrid's single-purpose block
        // has one, and post-norms are not in the module): read the input, write the output (split over tp with
        // sequence parallelism).
        const double rep = p.sequence_parallel && p.tp > 1 ? tp : 1.0;
        out.compute += static_cast<double>(m.residual_branch_count()) * pass(tokens * 2.0 * e * h / rep);
    }
    if (t.recomputes(recompute_module::mlp)) {
        const double mats = (m.gated_mlp ? 3.0 : 2.0) * h * static_cast<double>(m.intermediate) / tp;
        out.compute += static_cast<double>(m.dense_ffn_layer_count()) * gemm(2.0 * tokens * mats, 2.0);
    }
    if (m.is_moe()) {
        const double imbalance = p.ep > 1 ? p.expert_imbalance : 1.0;
        // This rank's routed copies: its 1/tp sequence shard x k, gathered over the expert-tensor group, as the forward
        // routes them (training_micro_batch).
        const double slots = imbalance * tokens / tp * static_cast<double>(m.moe.experts_per_token) * p.etp;
        const double ie = static_cast<double>(m.moe.expert_intermediate) / p.etp;
        const double shared = static_cast<double>(shared_expert_parameters(m)) / tp;
        const duration shared_time = gemm(2.0 * tokens * shared, 2.0);
        if (t.recomputes(recompute_module::moe)) {
            // Its two grouped GEMMs, each at the efficiency of half the work, as the forward charges them.
            const double routed = 2.0 * slots * static_cast<double>(expert_parameters(m).matrices) / p.etp;
            const duration routed_time = routed * FLOP / (perf.peak * perf.efficiency.grouped_gemm_at(routed / 2.0));
            const duration router = gemm(2.0 * tokens / tp * h * static_cast<double>(m.moe.routed_experts), 1.0);  // its shard
            out.compute += moe_layers * (routed_time + shared_time + router);
            out.alltoall += f.ep_alltoall;  // the forward's dispatch and combine, again
        } else {
            // moe_act: SwiGLU reads the gate and up outputs, writes its product; shared_experts: their MLP again.
            if (t.recomputes(recompute_module::moe_act)) out.compute += moe_layers * pass(slots * ((m.moe.gated ? 3.0 : 2.0) * ie * e));
            if (t.recomputes(recompute_module::shared_experts)) out.compute += moe_layers * shared_time;
        }
    }
    return out;
}

// Memory-bound kernels of a training step that the serving roofline (§14) does not cost, per micro-batch on one rank,
// whole model (the caller divides by the stages): the MLP's activation as its own kernel between the two GEMMs (§14
// counts its traffic inside the up GEMM's roofline, hidden where that GEMM is compute-bound), PyTorch's eager
// element-wise kernels in place of §14's fused norm passes (eager_kernels.hpp), and the loss over every position's
// logits. Bytes per element counted from the kernels; see docs/formulas.md §15.
struct elementwise_passes {
    duration forward, backward;  // activation and eager kernels, in the layers' forward and backward
    duration loss;               // the cross-entropy over the logits, forward and backward
};
// Element-wise kernels by class plus their launches (as §14): eager ones each class at its own measured share of the
// bandwidth, fused ones at the memory efficiency of their size.
duration elementwise_time(const eager_traffic& k, const perf_setup& perf, bool eager) {
    duration out;
    for (std::size_t c = 0; c < eager_classes; ++c) {
        if (k.bytes[c] <= 0.0) continue;
        const double kernels = std::max(1.0, k.kernels[c]), size = k.bytes[c] / kernels;
        const double efficiency = eager ? perf.efficiency.eager_at(static_cast<eager_class>(c), size) : perf.efficiency.memory_at(size);
        out += memory_passes(perf, k.bytes[c], kernels, efficiency);
    }
    return out;
}
elementwise_passes training_elementwise_passes(const scenario& s, const perf_setup& perf, double tokens, double cast_parameters) {
    const training_spec& t = *s.training;
    const model_spec& m = s.model;
    const parallelism_spec& p = s.parallelism;
    const double e = s.precision.activations.bytes_per_element(), tp = p.tp;
    // Activation, in elements of its output width W: SwiGLU fused (Megatron bias_swiglu, Transformer Engine) reads gate
    // and up and writes W (3), its backward reads the gradient, gate and up and writes both gradients (5); eager
    // (silu(gate) * up) adds silu's write and read (5) and, backward, the product's and silu's own passes (9). GeLU
    // (one kernel either way): 2 and 3.
    auto act_fwd = [&](bool gated) { return gated ? (t.eager_kernels ? 5.0 : 3.0) : 2.0; };
    auto act_bwd = [&](bool gated) { return gated ? (t.eager_kernels ? 9.0 : 5.0) : 3.0; };
    const double moe_layers = m.is_moe() ? static_cast<double>(m.moe_layer_count()) : 0.0;
    const double dense_layers = static_cast<double>(m.dense_ffn_layer_count());
    const double dense_width = tokens * static_cast<double>(m.intermediate) / tp;  // elements per layer on this rank
    // The activation's kernels: contiguous element-wise, one class of eager_traffic (fused ones at the memory rate).
    eager_traffic fwd, bwd;
    // Kernels per MLP layer: fused one each way; eager SwiGLU silu and the product forward, three backward.
    const bool eager_glu = t.eager_kernels && m.gated_mlp;
    fwd.add(eager_class::contiguous, dense_layers * act_fwd(m.gated_mlp) * dense_width * e, dense_layers * (eager_glu ? 2.0 : 1.0));
    bwd.add(eager_class::contiguous, dense_layers * act_bwd(m.gated_mlp) * dense_width * e, dense_layers * (eager_glu ? 3.0 : 1.0));
    if (moe_layers > 0) {
        // This rank's routed copies (its 1/tp sequence shard x k over the expert-tensor group, as the forward routes them,
        // each 1/etp of the expert's width) and the shared experts.
        const double imbalance = p.ep > 1 ? p.expert_imbalance : 1.0;
        const double routed = imbalance * tokens / tp * static_cast<double>(m.moe.experts_per_token) *
                              static_cast<double>(m.moe.expert_intermediate);
        const double shared = tokens * static_cast<double>(m.moe.shared_experts * m.moe.shared_width()) / tp;
        const bool eager_moe = t.eager_kernels && m.moe.gated;
        fwd.add(eager_class::contiguous, moe_layers * act_fwd(m.moe.gated) * (routed + shared) * e, moe_layers * (eager_moe ? 2.0 : 1.0));
        bwd.add(eager_class::contiguous, moe_layers * act_bwd(m.moe.gated) * (routed + shared) * e, moe_layers * (eager_moe ? 3.0 : 1.0));
    }
    if (t.eager_kernels) {
        // An MTP module's block, costed as the model's mean layer, runs the mean layer's eager kernels too.
        const double with_mtp = 1.0 + static_cast<double>(t.mtp_layers) / static_cast<double>(m.layers);
        const eager_step_traffic k = eager_elementwise_traffic(s, tokens, cast_parameters);
        fwd.add_share(k.forward, with_mtp);
        bwd.add_share(k.backward, with_mtp);
    }
    const duration fwd_time = elementwise_time(fwd, perf, t.eager_kernels), bwd_time = elementwise_time(bwd, perf, t.eager_kernels);
    // The loss over tokens x V/tp logits of each head (the model's and each MTP module's): fused (Transformer Engine's
    // parallel cross-entropy, Liger, flash-attn xentropy) the head GEMM writes them (2 B), one kernel reads them for
    // the max and sum and another reads them again and writes the gradient in place (6 B), the backward scales it by
    // the loss's gradient (4 B): 12 B. Unfused (PyTorch F.cross_entropy, fp32 under autocast): the write (2), the cast
    // (6), log_softmax (three reads and a write of fp32: 16), nll_loss's backward zero-filling the fp32 gradient (4),
    // log_softmax's backward (16) and the cast back (6): 50 B.
    const double logits = (1.0 + t.mtp_layers) * tokens * static_cast<double>(m.vocab) / tp;
    const double per_logit = t.fused_cross_entropy ? 12.0 : 50.0;
    const double loss_kernels = (1.0 + t.mtp_layers) * (t.fused_cross_entropy ? 3.0 : 6.0);
    const duration loss = memory_passes(perf, logits * per_logit, loss_kernels, perf.efficiency.memory_at(logits * per_logit / loss_kernels));
    return {fwd_time, bwd_time, loss};
}

}  // namespace

// One MoE layer's forward (of one micro-batch) beside another micro-batch's backward of it, as Megatron-Core's
// combined 1F1B runs them (--overlap-moe-expert-parallel-comm; megatron/core/models/common/
// model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run, at NVIDIA/Megatron-LM d98e8a6):
//   comm stream:    combine_bwd      | dispatch_fwd -> dispatch_bwd         | combine_fwd
//   compute stream: pre_dispatch_fwd | mlp_bwd -> mlp_bwd_dw -> mlp_fwd     | pre_dispatch_bwd
// pre_dispatch is the attention, shared experts and router; mlp the routed experts (fine_grained_callables.py).
// Each phase lasts as long as its longer stream; in the middle one mlp_fwd waits for dispatch_fwd, and dispatch_bwd
// for mlp_bwd's input gradients: the weight gradients come after them (mlp_bwd_dw), as with delay_wgrad_compute,
// which Megatron-Bridge sets with the overlap (its moe_a2a_overlap override). A dispatch or combine moves the same
// rows forward and backward.
duration overlapped_moe_layer::exposed() const {
    const duration first = std::max(attention_forward, combine);
    const duration compute_end = std::max(experts_input_grads + experts_weight_grads, dispatch) + experts_forward;
    const duration comm_end = std::max(dispatch, experts_input_grads) + dispatch;
    const duration last = std::max(attention_backward, combine);
    const duration compute = attention_forward + attention_backward + experts_forward + experts_input_grads + experts_weight_grads;
    return first + std::max(compute_end, comm_end) + last - compute;
}

training_step_parts training_step_time(const scenario& s, const perf_setup& perf, const step_breakdown& f,
                                       const weight_sharding& w) {
    using namespace units;
    const training_spec& t = *s.training;
    const model_spec& m = s.model;
    const parallelism_spec& p = s.parallelism;
    training_step_parts out;
    const std::int64_t per_step = t.global_batch;  // sequences
    if (per_step % (static_cast<std::int64_t>(p.dp) * t.micro_batch) != 0)
        throw config_error("/training/global_batch", std::to_string(t.global_batch),
                           "not a multiple of dp x micro_batch = " + std::to_string(p.dp * t.micro_batch),
                           "a multiple of " + std::to_string(p.dp * t.micro_batch));
    const std::int64_t mb = per_step / (p.dp * t.micro_batch);  // micro-batches per pipeline per step
    out.micro_batches = mb;

    // `f`: one micro-batch forward through the whole model on one tp rank (pp splits it into stages).
    // Training runs every position through the LM head (inference only the sampled one).
    const double tokens = static_cast<double>(t.micro_batch * t.seq_len / p.cp);
    const flop_count head = 2.0 * tokens * static_cast<double>(m.hidden) * static_cast<double>(m.vocab) / p.tp * FLOP;
    const duration head_time = head / (perf.peak * perf.efficiency.gemm_at(head.si()));
    const double stages = p.pp;
    // Megatron tensor parallelism: two all-reduces per layer in the forward, two in the backward
    // (Shoeybi et al. 2019 §3), overlapped with the matrix multiplies only with tp_comm_overlap (below).
    const auto core = std::find_if(f.ops.begin(), f.ops.end(), [](const op_time& op) { return op.op == "attention core"; });
    const duration attention_core = core != f.ops.end() ? core->time : duration{};
    // FP8 training with Transformer Engine's default recipe runs the attention core (softmax(QK^T)V)
    // in 16 bits (DotProductAttention: FP8 only with fp8_dpa, default off): at the 16-bit rate.
    duration attention_16bit_extra;
    const bool fp8_training = fp8_gemm_training(s.precision);
    if (fp8_training && core != f.ops.end() && core->compute_bound && perf.efficiency.attention_kernel == 0.0) {
        const peak_rate p16 = s.system.accelerator.peak(s.precision.activations.peak_key);
        if (p16.status == peak_rate::state::known) attention_16bit_extra = (perf.peak / p16.value - 1.0) * attention_core;
    }
    const duration attention_forward = (attention_core + attention_16bit_extra) / stages;  // per stage
    duration forward = (f.compute + head_time + attention_16bit_extra) / stages;
    // Eager kernels: §14's fused norm, residual and rotary passes give way to the eager kernels counted one by one
    // (training_elementwise_passes), in the forward and so in the backward that doubles it.
    duration fused_norms;  // the fused passes the eager kernels replace (in the MTP module's block below too)
    if (t.eager_kernels) {
        const auto norms = std::find_if(f.ops.begin(), f.ops.end(), [](const op_time& op) { return op.op == norms_op_name; });
        if (norms != f.ops.end()) fused_norms = norms->time;
        forward -= fused_norms / stages;
    }
    // Multi-token prediction (DeepSeek-V3 arXiv:2412.19437 §2.2, Eq. 21-22): each module projects [norm(h); norm(emb)]
    // (2h -> h), runs one transformer block and the shared output head over every position. Its block is costed as
    // the model's mean layer and, like the layers, spread over the stages (the pipeline layout balances its stage:
    // Megatron-Bridge's DeepSeek-V3 layouts give that stage fewer decoder layers).
    duration mtp_alltoall;
    if (t.mtp_layers > 0) {
        const double layers = static_cast<double>(m.layers);
        const auto head_op = std::find_if(f.ops.begin(), f.ops.end(), [](const op_time& op) { return op.op == "lm head and embedding"; });
        const duration blocks = f.compute - (head_op != f.ops.end() ? head_op->time : duration{}) - fused_norms;
        const flop_count proj = 2.0 * tokens * 2.0 * static_cast<double>(m.hidden) * static_cast<double>(m.hidden) / p.tp * FLOP;
        const duration module = blocks / layers + head_time + proj / (perf.peak * perf.efficiency.gemm);
        forward += static_cast<double>(t.mtp_layers) * module / stages;
        mtp_alltoall = static_cast<double>(t.mtp_layers) * f.ep_alltoall / std::max(1.0, static_cast<double>(m.moe_layer_count())) / stages;
    }
    const tp_traffic_shares sp_fp8 = sequence_parallel_fp8_shares(s);
    const duration tp_comm = 2.0 * f.tp_allreduce / stages * sp_fp8.step;
    // Backward = 2 x forward (Narayanan et al. 2021 §3.2), except the fused attention core: its
    // backward recomputes the scores, five matrix products to the forward's two, 2.5 x its FLOPs
    // (Dao 2023, FlashAttention-2, arXiv:2307.08691 Algorithm 2; Dao-AILab/flash-attention
    // benchmarks/benchmark_flash_attention.py flops(): bwd = 2.5 x fwd).
    // (Materialised attention keeps its scores: its backward is 2 x its forward like the rest.)
    // LoRA (lora.hpp): the frozen weights need no weight gradients, so the backward is the input gradients only,
    // one forward's worth (the attention core still 2.5x its forward with FlashAttention, 2x without).
    auto backward_of = [&](duration fwd, duration core_fwd) {
        return t.lora ? fwd + (perf.flash_attention ? 1.5 : 1.0) * core_fwd
                      : 2.0 * fwd + (perf.flash_attention ? 0.5 * core_fwd : duration{});
    };
    duration backward = backward_of(forward, attention_forward);
    // The weights autocast casts a forward: the blocks' matrices on this rank (the fullest stage's, for every stage)
    // and the LM head's.
    const double cast_parameters = w.per_device().block_linear * stages + static_cast<double>(m.vocab * m.hidden) / p.tp;
    const elementwise_passes passes = training_elementwise_passes(s, perf, tokens, cast_parameters);
    forward += passes.forward / stages;
    backward += passes.backward / stages;
    const duration loss = passes.loss / stages;
    const module_rerun rerun = selective_module_rerun(s, perf, f, tokens);
    duration recompute = t.recompute == recompute_kind::full ? forward
                         : t.recompute == recompute_kind::selective
                             ? (t.recomputes(recompute_module::core_attn) ? attention_forward : duration{}) + rerun.compute / stages
                             : duration{};
    // LoRA on a base narrower than its GEMMs' inputs: every forward, backward and recomputed forward first dequantises
    // each of the stage's block weights into a 16-bit buffer (read the packed weight, write 2 bytes), memory-bound,
    // one kernel per matrix, serial with the GEMM that reads it (bitsandbytes MatMul4Bit).
    const duration dequant = lora_dequantise_time(s, perf, w);
    const adapter_time adapters = lora_adapter_time(s, perf, w, tokens);
    forward += dequant + adapters.forward;
    backward += dequant + adapters.backward;
    if (t.recompute == recompute_kind::full) recompute += dequant + adapters.forward;
    // Selective recompute of the MLP, the experts or the shared experts reruns their adapters' forward too.
    if (t.lora && t.recompute == recompute_kind::selective) {
        const unsigned rerun_groups = recomputed_adapter_groups([&](recompute_module x) { return t.recomputes(x); });
        if (rerun_groups != 0) recompute += lora_adapter_time(s, perf, w, tokens, rerun_groups).forward;
    }
    // Context parallelism by parallelism.cp_algorithm (ring attention: Liu et al. 2023 arXiv:2310.01889).
    duration cp_comm, cp_exposed;
    if (p.cp > 1) {
        const data_size kv = tokens * kv_bytes_per_token_per_layer(m, p.tp, s.precision.activations);
        const int ranks_per_node = std::max(1, s.system.per_node / std::min(p.tp, s.system.per_node));
        const collective_group g{std::min(p.cp, s.system.count), std::min(p.cp, ranks_per_node)};
        // The cp ranks sit tp GPUs apart (rank order tp-cp-...): with tp wider than a node they range over cp x tp GPUs.
        const int span = static_cast<int>(detail::ceil_div(std::int64_t{g.gpus} * p.tp, s.system.per_node));
        const collective_group group{g.gpus, g.gpus % g.per_node == 0 ? g.per_node : 1, span};
        // Only attention layers exchange K/V (linear-attention layers have none to pass).
        const double layers = static_cast<double>(attention_layers(m, all_layers(m)));
        if (p.cp_algorithm == "all_gather") {
            // Llama 3 (arXiv:2407.21783 §3.3.2): every rank all-gathers the sequence's K and V before attention (and
            // again when recomputing), reduce-scatters their gradients in the backward; on the critical path.
            const data_size whole = static_cast<double>(p.cp) * kv;
            const double gathers = t.recompute == recompute_kind::full ? 2.0 : 1.0;
            const duration per_layer = gathers * collective_time(collective_op::all_gather, whole, s.system, group).time +
                                       collective_time(collective_op::reduce_scatter, whole, s.system, group).time;
            cp_comm = cp_exposed = layers / stages * per_layer;
        } else if (p.cp_algorithm == "all_to_all") {
            // DeepSpeed-Ulysses (Jacobs et al. 2023, arXiv:2309.14509 §3.1): Q, K and V re-split from sequence to
            // heads before attention and the output back after, forward and backward; on the critical path.
            const double e = s.precision.activations.bytes_per_element();
            const double q = static_cast<double>(m.heads * m.head_dim) / p.tp;
            const data_size qkvo = tokens * e * 2.0 * q * units::B + kv;  // Q and O, and this rank's K and V
            const double passes = t.recompute == recompute_kind::full ? 3.0 : 2.0;
            const duration per_layer = passes * collective_time(collective_op::all_to_all, qkvo, s.system, group).time;
            cp_comm = cp_exposed = layers / stages * per_layer;
        } else {
            // Ring attention: K/V chunks passed around the ring (cp - 1 hops forward, twice that backward),
            // overlapped with the attention core; only what the core cannot hide is exposed.
            const duration hop = collective_time(collective_op::send_recv, kv, s.system, group).time;
            const duration per_layer = 3.0 * (p.cp - 1) * hop;
            const duration core_per_layer = 3.0 * attention_core / layers;
            cp_comm = layers / stages * per_layer;
            cp_exposed = layers / stages * std::max(duration{}, per_layer - core_per_layer);
        }
    }
    // Expert parallelism: dispatch and combine all-to-alls of each rank's routed tokens (its 1/tp
    // sequence shard x k), forward and backward, per MoE layer (Lepikhin et al. 2020 GShard §2;
    // DeepSeek-V3 §3.2). With ep_comm_overlap one micro-batch's all-to-alls run under another's
    // compute (DeepSeek-V3 §3.2.1 DualPipe; Megatron Core --overlap-moe-expert-parallel-comm):
    // only what the micro-batch's forward and backward cannot cover stays exposed.
    // A full recompute reruns the forward's dispatch and combine too, as it reruns the TP all-reduces.
    const duration ep_rerun = t.recompute == recompute_kind::full ? f.ep_alltoall / stages + mtp_alltoall : rerun.alltoall / stages;
    const duration ep_comm = 2.0 * (f.ep_alltoall / stages + mtp_alltoall) + ep_rerun;
    // FP8 casts (Transformer Engine, Micikevicius et al. 2022 arXiv:2209.05433 §4): each GEMM's
    // 16-bit input is cast to FP8 with a transposed copy for the other GEMM of the pair (fused
    // cast_transpose: read 2 B, write 1 + 1 B per element): in the forward the activations entering
    // the GEMMs, in the backward the gradients leaving them. Weights are cast once per step (cached
    // across micro-batches) and not counted. Memory-bound passes, serial with the GEMMs.
    duration fp8_casts;
    if (fp8_training) {
        const double h = static_cast<double>(m.hidden), tpd = p.tp;
        const double kv = 2.0 * detail::kv_heads_per_rank(m, p.tp) * static_cast<double>(m.head_dim);
        const double q = static_cast<double>(m.heads) / tpd * static_cast<double>(m.head_dim);
        const double gate = m.gated_mlp ? 2.0 : 1.0;
        // Per token and layer on one rank: forward inputs (QKV h, output q, up h, down I/tp) and
        // backward output gradients (QKV q + kv, output h, up gate x I/tp, down h).
        const double attention = (h + q) + (q + kv + h);
        auto mlp = [&](double width) { return (h + width) + (gate * width + h); };
        const double dense = mlp(static_cast<double>(m.intermediate) / tpd);
        // MoE layers: this rank's routed copies per token, k x etp/tp (its sequence shard over the expert-tensor group),
        // each 1/etp wide.
        const double moe = static_cast<double>(m.moe.experts_per_token) * p.etp / tpd *
                               mlp(static_cast<double>(m.moe.expert_intermediate) / p.etp) +
                           static_cast<double>(m.moe.shared_experts) * mlp(static_cast<double>(m.moe.shared_width()) / tpd);
        const double moe_layers = m.is_moe() ? static_cast<double>(m.moe_layer_count()) : 0.0;
        // Layers with a mixer (a linear-attention one's projections counted as attention's) and dense-FFN layers: a
        // hybrid stack's single-purpose blocks have one or the other.
        const double mixers = static_cast<double>(m.layers - m.mixer_free_layer_count());
        const double elements = tokens * (mixers * attention + static_cast<double>(m.dense_ffn_layer_count()) * dense + moe_layers * moe);
        fp8_casts = (elements * 4.0 * B) / stages / (perf.memory_bandwidth * perf.efficiency.memory);
    }
    // MoE token permutations around the expert GEMMs, memory-bound copies of h-wide rows serial with them
    // (Megatron-Core token_dispatcher.py): MoEAlltoAllTokenDispatcher permutes the tokens into their k routed copies
    // (read and write each copy), sorts the received copies by local expert when a rank holds more than one
    // (sort_chunks_by_idxs, read and write) and back after the experts, and unpermutes (read each copy, write each
    // token); the DeepEP manager permutes after its dispatch and unpermutes before its combine; HybridEP fuses both
    // into its kernels (moe_permute_fusion_into_hybridep). The backward mirrors each copy.
    duration moe_permute;
    // Of those rows, the shares the alltoall dispatcher moves before its dispatch (the permutation, in pre_dispatch)
    // and after its combine (the unpermutation, on the communication stream; moe_layer.py combine_postprocess); the
    // rest (DeepEP's, and the sorts) runs beside the experts. For the overlap by phase below.
    double permute_before_dispatch = 0.0, permute_after_combine = 0.0;
    if (m.is_moe() && p.ep > 1 && t.moe_dispatcher != "hybridep") {
        const double imbalance = p.expert_imbalance;
        const double copies = imbalance * tokens / p.tp * static_cast<double>(m.moe.experts_per_token);  // this rank's
        const bool sorted = t.moe_dispatcher == "alltoall" && m.moe.routed_experts / p.ep > 1;
        const double rows = t.moe_dispatcher == "alltoall" ? (sorted ? 7.0 : 3.0) * copies + tokens / p.tp : 4.0 * copies;
        if (t.moe_dispatcher == "alltoall") {
            permute_before_dispatch = 2.0 * copies / rows;
            permute_after_combine = (copies + tokens / p.tp) / rows;
        }
        const double e = s.precision.activations.bytes_per_element();
        const data_size per_layer = rows * static_cast<double>(m.hidden) * e * B;
        const double layers = static_cast<double>(m.moe_layer_count()) + t.mtp_layers;
        moe_permute = 2.0 * layers / stages * per_layer / (perf.memory_bandwidth * perf.efficiency.memory_at(per_layer.si()));
    }
    // Pipeline sends (Narayanan et al. 2021 §4.1): per micro-batch each stage boundary passes the
    // activations forward and their gradients back, once per model chunk (interleaving multiplies the
    // sends by vpp, ibid. §2.2.2). Megatron's scatter/gather optimisation (sequence parallelism shards
    // the same way) sends 1/tp of the tensor from each tp rank over its own link. Blocking in the
    // plain 1F1B schedule; with interleaving Megatron-LM overlaps them with the next chunk's compute
    // (overlap_p2p_comm: on by default in megatron/training/arguments.py, forced off without vpp).
    duration pp_comm, pp_exposed;
    if (p.pp > 1) {
        const data_size piece = tokens * static_cast<double>(m.hidden) * s.precision.activations.bytes_per_element() * B /
                                static_cast<double>(p.tp);
        pp_comm = 2.0 * static_cast<double>(p.vpp) * (perf.pipeline_send_latency + piece / perf.pipeline_send_bandwidth);
        pp_exposed = p.vpp > 1 || p.dualpipe() ? std::max(duration{}, pp_comm - (forward + backward)) : pp_comm;
    }
    // Stragglers: the slowest rank sets the pace of every synchronous step (an optional factor >= 1).
    const double straggler = t.straggler_factor;
    // A full recomputation reruns the forward's tensor-parallel all-reduces too.
    const duration recompute_comm = t.recompute == recompute_kind::full ? f.tp_allreduce / stages * sp_fp8.forward : duration{};
    // Tensor-parallel overlap (Wang et al. 2023, ASPLOS, "Overlap Communication with Dependent
    // Computation via Decomposition"; Transformer Engine userbuffers): each all-gather / reduce-scatter
    // is split into chunks pipelined with the GEMM that consumes or produces it, so only what the
    // GEMMs cannot cover stays exposed.
    const duration tp_exposed = t.tp_comm_overlap && p.tp > 1
                                    ? std::max(duration{}, tp_comm - (forward + backward)) +
                                          std::max(duration{}, recompute_comm - recompute)
                                    : tp_comm + recompute_comm;
    // DualPipe overlaps a forward chunk with a backward chunk so that each one's all-to-alls run under the other's
    // compute (DeepSeek-V3 §3.2.1), as ep_comm_overlap does.
    const bool ep_hidden = t.ep_comm_overlap || p.dualpipe();
    duration ep_exposed = ep_hidden ? std::max(duration{}, ep_comm - (forward + backward)) : ep_comm;
    if (t.ep_comm_overlap && !p.dualpipe() && m.is_moe() && f.ep_alltoall > duration{}) {
        // Megatron-Core pairs them layer by layer, not over the whole micro-batch (overlapped_moe_layer), for the
        // mean MoE layer; the MTP module's and the reruns' all-to-alls stay serial. The larger of the two bounds.
        const double moe_layers = static_cast<double>(m.moe_layer_count());
        // The MoE layers' attention cores, with their share of FP8 training's 16-bit extra.
        const double share = attention_core > duration{} ? f.moe_attention_core / attention_core : 0.0;
        const duration attention = (f.moe_attention_core + attention_16bit_extra * share) / moe_layers;
        const duration other = (f.moe_layers - f.routed_experts) / moe_layers + attention;  // attention, shared, router
        const duration permute = moe_permute * stages / (2.0 * (moe_layers + t.mtp_layers));  // one direction
        const duration before = permute_before_dispatch * permute, after = permute_after_combine * permute;
        const duration experts = f.routed_experts / moe_layers + (permute - before - after);
        const overlapped_moe_layer layer{.attention_forward = other + before,
                                         .attention_backward = backward_of(other, attention) + before,
                                         .experts_forward = experts,
                                         .experts_input_grads = experts,
                                         .experts_weight_grads = t.lora ? duration{} : f.routed_experts / moe_layers,
                                         .dispatch = f.ep_alltoall / (2.0 * moe_layers),
                                         .combine = f.ep_alltoall / (2.0 * moe_layers) + after};
        const duration serial = ep_comm - 2.0 * f.ep_alltoall / stages;  // the MTP module's and reruns' all-to-alls
        // (An unpermutation hidden under the attention would make the phase term negative: no credit taken, so it
        // cannot cancel the serial all-to-alls.)
        const duration phases = std::max(duration{}, layer.exposed() - 2.0 * after);
        ep_exposed = std::max(ep_exposed, moe_layers / stages * phases + serial);
    }
    const duration per_mb = straggler * (forward + backward + recompute + fp8_casts + moe_permute + loss) + tp_exposed + pp_exposed + cp_exposed + ep_exposed;
    const duration compute = static_cast<double>(mb) * per_mb;
    // Bubbles (DeepSeek-V3 Table 2): 1F1B (pp - 1)(F + B), interleaved / v; DualPipe (pp/2 - 1)(F&B + B - 3W), with the
    // overlapped chunk pair F&B = F + B and the weight-gradient half of the backward W = B / 2 (recompute counts in B).
    double bubble_mbs = p.vpp > 1 ? (stages - 1.0) / p.vpp : stages - 1.0;
    duration bubble = bubble_mbs * per_mb;
    if (p.dualpipe()) {
        // B' = B + R (recomputation belongs to the full backward); W, the weight gradients, is half the backward
        // (none with LoRA's frozen base): F&B + B' - 3W = (F + casts + B') + B' - 3W.
        const duration full_backward = backward + recompute;
        const duration weights = t.lora ? duration{} : (backward - passes.backward / stages) / 2.0;  // GEMM work only
        bubble = (stages / 2.0 - 1.0) * straggler * (forward + fp8_casts + moe_permute + loss + 2.0 * full_backward - 3.0 * weights);
        bubble_mbs = per_mb > duration{} ? bubble / per_mb : 0.0;
    }

    // Data-parallel gradients: every rank reduces its stage's parameters' gradients over the ranks that
    // hold the same weights: dp x cp (context-parallel ranks see other tokens of the same sequences;
    // Megatron-LM reduces over data_parallel_group(with_context_parallel=True), and the distributed
    // optimizer shards over it, as the memory model does).
    // LoRA: only the adapters have gradients and optimizer states; ZeRO-3 gathers the frozen base in its format.
    const pipeline_stage& fullest = w.stages[static_cast<std::size_t>(w.largest_stage)];
    // DualPipe: each rank holds two stages (i and pp - 1 - i) and reduces and updates both (DeepSeek-V3 §3.2.1).
    const double copies = p.dualpipe() ? 2.0 : 1.0;
    // MTP modules sit on the last stage, which may then hold the most (their gradients reduce and update there too).
    const double mtp = t.mtp_layers > 0 && !t.lora ? w.stages.back().params.total() +
                                                         mtp_on_device(m, p, t.mtp_layers, static_cast<int>(w.stages.size())).total()
                                                   : 0.0;
    const double params = copies * (t.lora ? lora_device_parameters(m, *t.lora, fullest.first_layer, fullest.layers, p)
                                           : std::max(w.per_device().total(), mtp));
    const double grad_bytes = main_gradient_bytes(s.precision, t);  // memory's format (fp32 main grads: Megatron's distributed optimizer)
    const int replicas_of_weights = p.dp * p.cp;
    duration grad_time, gather_time;  // gradient reductions; parameter all-gathers (ZeRO 2-3)
    if (replicas_of_weights > 1) {
        // Megatron's rank order tp-cp-ep-dp-pp: tp and cp fastest, pipeline stages outermost, so a node holds
        // per_node / tp consecutive members of the group, whose ranks range over tp x cp x dp GPUs. With data
        // parallelism outermost (tp-cp-pp-dp) a node holds its cp members times the dp replicas that fit beside a
        // whole pipeline, and the group ranges over the whole cluster.
        const bool dp_outer = p.rank_order == "tp-cp-pp-dp";
        const int node = s.system.per_node;
        const std::int64_t pipeline = std::int64_t{p.tp} * p.cp * p.pp;
        const int per_node = dp_outer ? std::max(1, std::min(p.cp, node / std::min(p.tp, node))) *
                                            static_cast<int>(std::max<std::int64_t>(1, node / pipeline))
                                      : std::max(1, node / std::min(p.tp, node));
        const int dp_per_node = std::min(replicas_of_weights, per_node);
        auto span_of = [&](int members) {  // nodes a group of `members` (dp x cp ranks) ranges over
            return static_cast<int>(detail::ceil_div(dp_outer ? pipeline * (members / p.cp) : std::int64_t{p.tp} * members, node));
        };
        const collective_group g{replicas_of_weights, replicas_of_weights % dp_per_node == 0 ? dp_per_node : 1,
                                 span_of(replicas_of_weights)};
        const data_size grads = params * grad_bytes * B;
        const data_size p16 = params * 2.0 * B;  // the updated parameters (16-bit)
        const data_size gathered = t.lora ? frozen_base_bytes(w.per_device(), s.precision) * B : p16;  // ZeRO-3's, per micro-batch
        // ZeRO communication (Rajbhandari et al. 2020, arXiv:1910.02054 §7): stages 0-1 all-reduce the
        // accumulated gradients once per step (2 Psi). Stage 2 keeps only its gradient shard, so every
        // micro-batch's gradients are reduce-scattered, and the updated parameters all-gathered once;
        // stage 3 also all-gathers the parameters for each micro-batch's forward and backward (3 Psi per
        // micro-batch), over the shard group (HSDP: then all-reduced across the groups' replicas).
        const int group = (t.shard_group > 0 ? t.shard_group : p.dp) * p.cp;
        // A shard group no larger than a node's members stays inside the node.
        const collective_group sg{group, group <= dp_per_node ? group : group % dp_per_node == 0 ? dp_per_node : 1, span_of(group)};
        const double mbs = static_cast<double>(mb);
        if (t.zero <= 1) {
            grad_time = collective_time(collective_op::all_reduce, grads, s.system, g).time;
        } else {
            grad_time = mbs * collective_time(collective_op::reduce_scatter, grads, s.system, sg).time;
            if (group < replicas_of_weights) {  // HSDP: the shards' gradients all-reduced across the replicas, once per step
                // Shard groups are consecutive ranks, so a node holds dp_per_node / group replicas of each shard
                // (one when the group fills or spans nodes).
                const int replicas = replicas_of_weights / group;
                const int in_node = std::max(1, dp_per_node / group);
                // The replicas of a shard sit a shard group apart: they range over the whole data-parallel group.
                grad_time += collective_time(collective_op::all_reduce, grads / static_cast<double>(group), s.system,
                                             {replicas, replicas % in_node == 0 ? in_node : 1,
                                              span_of(replicas_of_weights)}).time;
            }
            gather_time = t.zero == 2 ? collective_time(collective_op::all_gather, p16, s.system, sg).time
                                      : 2.0 * mbs * collective_time(collective_op::all_gather, gathered, s.system, sg).time;
        }
    }
    // Overlap: the step-end all-reduce hides behind the last backward; per-micro-batch traffic (stages 2-3) behind all
    // the step's compute. Only what is overlapped hides: gradient reductions with overlap_grad_reduce (PyTorch DDP's
    // buckets, Li et al. 2020 arXiv:2006.15704 §3.2.3; Megatron --overlap-grad-reduce), parameter all-gathers with
    // overlap_param_gather (FSDP prefetch, Zhao et al. 2023 arXiv:2304.11277 §3.3; Megatron --overlap-param-gather).
    const duration dp_time = grad_time + gather_time;
    const duration hidden = (t.overlap_grad_reduce ? grad_time : duration{}) + (t.overlap_param_gather ? gather_time : duration{});
    const duration dp_exposed = dp_time - hidden + std::max(duration{}, hidden - (t.zero >= 2 ? compute : backward));

    // Optimizer: read and write this rank's states (weights, gradients, master, moments), memory-bound.
    // Each rank updates its shard of the states: over the ZeRO shard group (HSDP: smaller than dp), or
    // dp with the distributed optimizer; times cp, whose ranks hold the same weights.
    const double shard = (t.zero >= 1 ? (t.shard_group > 0 ? t.shard_group : p.dp) : t.distributed_optimizer ? p.dp : 1.0) *
                         (t.zero >= 1 || t.distributed_optimizer ? p.cp : 1);
    const data_size optimizer_bytes = params * (2.0 + grad_bytes + (4.0 + 8.0) / shard) * 2.0 * B;
    const duration optimizer = optimizer_bytes / (perf.memory_bandwidth * perf.efficiency.memory);

    out.straggler = straggler;
    out.bubble_micro_batches = bubble_mbs;
    out.forward = forward, out.backward = backward, out.recompute = recompute, out.fp8_casts = fp8_casts, out.moe_permute = moe_permute, out.loss = loss;
    out.elementwise_backward = passes.backward / stages;
    out.tp_comm = tp_comm, out.recompute_comm = recompute_comm, out.tp_exposed = tp_exposed, out.pp_comm = pp_comm, out.pp_exposed = pp_exposed, out.cp_comm = cp_comm, out.cp_exposed = cp_exposed, out.ep_comm = ep_comm, out.ep_exposed = ep_exposed;
    out.bubble = bubble, out.dp_time = dp_time, out.dp_exposed = dp_exposed, out.optimizer = optimizer;
    out.step = compute + bubble + dp_exposed + optimizer;
    return out;
}

training_performance assemble_training_performance(const scenario& s, const perf_setup& perf, const step_breakdown& f,
                                                   const weight_sharding& w) {
    using namespace units;
    const training_spec& t = *s.training;
    const model_spec& m = s.model;
    const training_step_parts parts = training_step_time(s, perf, f, w);
    const auto [mb, straggler, bubble_mbs, forward, backward, recompute, fp8_casts, moe_permute, loss, elementwise_backward, tp_comm, recompute_comm, tp_exposed, pp_comm,
                pp_exposed, cp_comm, cp_exposed, ep_comm, ep_exposed, bubble,
                dp_time, dp_exposed, optimizer, step] = parts;
    training_performance out;
    out.micro_batches = mb;
    out.step = step;
    const double smb = straggler * static_cast<double>(mb);
    const double n = static_cast<double>(mb);
    const std::string_view cp_term = s.parallelism.cp_algorithm == "all_gather"   ? "cp all_gather"
                                     : s.parallelism.cp_algorithm == "all_to_all" ? "cp all_to_all"
                                                                                  : "cp ring exchange";
    const std::string_view dp_term = t.zero <= 1   ? "dp gradients"
                                     : t.zero == 2 ? "dp gradients (zero-2 reduce-scatters + gather)"
                                                   : "dp gradients + zero-3 gathers";
    constexpr step_link compute_units = step_link::compute, up = step_link::scale_up, out_net = step_link::scale_out;
    out.terms = {{"forward", smb * forward, smb * forward, compute_units},
                 {"backward", smb * backward, smb * backward, compute_units},
                 {"recompute", smb * recompute, smb * recompute, compute_units},
                 {"fp8 casts", smb * fp8_casts, smb * fp8_casts, compute_units},
                 {"moe permutations", smb * moe_permute, smb * moe_permute, compute_units},
                 {"loss (cross-entropy)", smb * loss, smb * loss, compute_units},
                 {"tp communication", n * (tp_comm + recompute_comm), n * tp_exposed, up},
                 {"pp sends", n * pp_comm, n * pp_exposed, pipeline_spans_nodes(s) ? out_net : up},
                 {cp_term, n * cp_comm, n * cp_exposed, up},
                 {"ep all-to-all", n * ep_comm, n * ep_exposed, up},
                 {"pipeline bubble", bubble, bubble, step_link::bubble},
                 {dp_term, dp_time, dp_exposed, out_net},
                 {"optimizer step", optimizer, optimizer, step_link::optimizer}};
    const training_flops tf = training_step_flops(m, t.seq_len, t.recompute);
    const double devices = static_cast<double>(s.system.count);
    flop_count model = tf.model * static_cast<double>(t.global_batch);
    flop_count hardware = tf.hardware * static_cast<double>(t.global_batch);
    if (t.lora) {  // no weight-gradient GEMMs: the backward is the input gradients, the attention core's as before
        const flop_count f1 = tf.forward.total(), core = tf.forward.attention;
        const flop_count lora_model = 2.0 * f1 + core;
        const flop_count again = t.recompute == recompute_kind::full        ? tf.forward.blocks()
                                 : t.recompute == recompute_kind::selective ? core
                                                                            : flop_count{};
        model = lora_model * static_cast<double>(t.global_batch);
        hardware = (lora_model + again) * static_cast<double>(t.global_batch);
        if (perf.explain)
            out.notes.push_back("LoRA: the frozen base has no weight-gradient GEMMs: the backward is one forward's worth "
                                "(attention core 2.5x), and MFU counts forward + input gradients (2 x forward + the "
                                "attention core's extra); the adapters' own kernels are timed (their r-wide GEMMs, scaling, add and dropout: "
                                "docs/formulas.md §9), not counted in MFU");
    }
    if (perf.explain && perf.efficiency.attention_kernel > 0.0)
        out.notes.push_back("attention core at " + t.attention_kernel + "'s published forward + backward rate, " +
                            format(perf.efficiency.attention_kernel * perf.peak) + " at head dimension " +
                            format_number(attention_head_dim(m)) + " and " + format_number(attention_kernel_seq_len(s)) +
                            " tokens (between measured points interpolated, beyond them the nearest; the catalog's " +
                            t.attention_kernel + " rates on " + s.system.accelerator.name + ": " +
                            s.system.accelerator.attention_kernel_rates.at(t.attention_kernel).source + ")");
    if (const tp_traffic_shares sp = sequence_parallel_fp8_shares(s); perf.explain && sp.step != 1.0)
        out.notes.push_back("sequence parallelism under FP8: the all-gathers move FP8 data (Transformer Engine casts before "
                            "it gathers), the reduce-scatters 16-bit: the tensor-parallel traffic is " +
                            format_number(sp.step) + " of its 16-bit count" +
                            (t.lora ? " (a LoRA adapter on a LayerNorm-fused projection keeps its forward all-gather 16-bit)"
                                    : ""));
    if (perf.explain && t.packed_sample_tokens > 0)
        out.notes.push_back("packed samples of " + format_number(static_cast<double>(t.packed_sample_tokens)) +
                            " tokens: each attends within itself (Transformer Engine's THD layout, cu_seqlens); MFU and HFU "
                            "count attention over the whole sequence, as Megatron's FLOP formula does");
    if (perf.explain && t.autocast && !t.eager_kernels)
        out.notes.push_back("training.autocast changes the step only with kernels \"eager\": fused kernels' traffic is "
                            "counted at the activations' width (docs/formulas.md §15)");
    out.tokens_per_s = static_cast<double>(t.global_batch * t.seq_len) / out.step.si();
    out.model_flops_per_device = model / (out.step * devices);
    out.mfu = out.model_flops_per_device / perf.peak;
    out.hfu = (hardware / (out.step * devices)) / perf.peak;
    if (perf.explain)
        out.notes.push_back("training speed: " + std::to_string(mb) + " micro-batches per step, pipeline bubble " +
                            format_number(bubble_mbs) + " micro-batch times; " + perf.efficiency.source);
    return out;
}

}  // namespace capplan
