// Training memory per device: model states (weights, gradients, optimizer states, master weights)
// and activations, on every pipeline stage; the fullest stage is reported.
//
// Model states, bytes per parameter (Rajbhandari et al. 2020, ZeRO, arXiv:1910.02054 §3.1, §5, Figure 1):
//   mixed-precision Adam   2 (16-bit weights) + 2 (16-bit gradients) + K = 12 (fp32 master + momentum + variance)
//   ZeRO-1 shards K over the shard group, ZeRO-2 also the gradients, ZeRO-3 also the weights.
//   FSDP FULL_SHARD = ZeRO-3, SHARD_GRAD_OP = ZeRO-2 (Zhao et al. 2023, arXiv:2304.11277); HSDP shards over
//   shard_group and replicates across dp / shard_group.
//   Megatron distributed optimizer: main gradients kept whole (fp32 unless training.grad_reduce_in_fp32 is false),
//   optimizer states + master weights sharded over data parallelism: 6 + 12/d bytes per parameter with fp32
//   gradients (Megatron Core user guide, "Distributed Optimizer").
// Activations per layer: Korthikanti et al. 2022, arXiv:2205.05198 §4.1 (Eq. 1) and Table 2, generalised per
// tensor (see layer_activation_bytes); pipeline in-flight micro-batches from Narayanan et al. 2021,
// arXiv:2104.04473 §2.2.1 (1F1B) and §2.2.2 / Korthikanti §4.2.3 (interleaved).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capplan/analysis/lora.hpp"
#include "capplan/analysis/sharding.hpp"
#include "capplan/dtype.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/model_spec.hpp"
#include "capplan/spec/scenario.hpp"
#include "capplan/units.hpp"
#include "capplan/units_parse.hpp"

namespace capplan {

struct training_memory {           // per device, on the fullest pipeline stage
    data_size weights, gradients, optimizer_states, master_weights, activations, logits;
    data_size buffers;             // ZeRO-3 / FSDP all-gather buffers of one unsharded layer (+ the prefetched next)
    data_size host_offload;        // optimizer states (+ master weights) moved to host memory
    int in_flight_microbatches = 1;
    double layer_sets_in_flight = 1.0;  // micro-batches' worth of this stage's layer activations held (fractional
                                        // with the interleaved schedule)
    int stage = 0;                      // the pipeline stage reported
    data_size activations_per_layer;    // one micro-batch, the stage's largest layer, this device
    std::vector<std::string> notes;     // assumptions, with citations
    data_size total() const {           // what the device holds (host_offload excluded)
        return weights + gradients + optimizer_states + master_weights + activations + logits + buffers;
    }
};

// Knobs of the activation model (the scenario sets flash_attention from training.flash_attention).
struct activation_options {
    bool flash_attention = true;   // no s x s score matrix kept; fp32 log-sum-exp per query row and head instead
    bool dropout = false;          // Korthikanti assume dropout (1-byte masks); modern LLM pre-training uses 0
    double gemm_input_bytes = 0;   // bytes of saved GEMM inputs (FP8 under Transformer Engine); 0 = activation format
    double moe_capacity_factor = 1.0;  // routed token copies per top-k slot (1 = dropless, balanced)
    const lora_spec* lora = nullptr;   // LoRA: frozen projections keep no input for a weight gradient (lora.hpp)
    bool frozen_inputs_saved = false;  // LoRA on a dequantised base (bitsandbytes MatMul4Bit) saves its input anyway
    bool frozen_expert_inputs_saved = false;  // likewise for routed experts dequantised from their own format
    bool eager = false;                // unfused PyTorch norms and SwiGLU (training.kernels "eager")
    bool fp8_act_input = false;        // the gated activation's input kept in FP8 (activation_func_fp8_input_store)
    bool fp8_attention = false;        // FP8 attention (attention_kernel cudnn_fp8) keeps FP8 q, k, v and O
    unsigned recompute_modules = 0;    // selective recompute's modules (training_spec); 0: core_attn
};

struct training_memory_options {
    bool flash_attention = true;
    bool dropout = false;
    double moe_capacity_factor = 1.0;
    std::optional<number_format> gradients;  // override the gradient format (default: see bytes_per_parameter)
    bool explain = true;  // false: the numbers only, no notes (a search evaluating many layouts)
    bool states_only = false;  // the model states (weights, gradients, optimizer, master, offload) without activations
    // The tensor cores take FP8 GEMM operands in any layout (fp8_gemm_takes_any_layout): a per-tensor-scaled FP8 weight
    // needs no cached transpose. Unknown hardware keeps both copies.
    bool fp8_any_layout = false;
};

// Bytes per parameter of each model state before any sharding.
struct state_bytes {
    double weights = 0, gradients = 0, optimizer = 0, master = 0;
    double total() const { return weights + gradients + optimizer + master; }
};

namespace detail {

// Training keeps 16-bit (or wider) model weights: a quantized `weights` format (fp8, int4, ...) is not what the
// optimizer updates. FP8 training casts higher-precision weights for the GEMMs (Micikevicius et al. 2022,
// arXiv:2209.05433; DeepSeek-V3, arXiv:2412.19437 §3.3: master weights, gradients, optimizer states kept high).
inline double training_weight_bytes(const precision_spec& prec) {
    return prec.weights.element_bits >= 16.0 ? prec.weights.bytes_per_element() : 2.0;
}

inline bool low_precision_compute(const precision_spec& prec) { return prec.compute.element_bits < 16.0; }

}  // namespace detail

// Bytes per parameter of weights, gradients, optimizer states and master weights.
//   Adam/AdamW: momentum + variance in optimizer_state_format (Kingma & Ba 2015, arXiv:1412.6980 Algorithm 1);
//   SGD with momentum: one buffer; Adafactor: factored second moment, (rows + cols) values per matrix
//   (Shazeer & Stern 2018, arXiv:1804.04235 §3; beta1 = 0, no first moment), counted as 0 per parameter.
//   Master weights: fp32 copy when master_weights and weights narrower than 32 bits (Micikevicius et al.
//   2018, arXiv:1710.03740 §3.1).
//   Gradients: in the weights' format (ZeRO §3.1 counts 2 bytes), except under Megatron's distributed
//   optimizer, which accumulates and reduces fp32 main gradients (Megatron Core "Distributed Optimizer":
//   bf16 param + fp32 grads = 18 bytes, 6 + 12/d distributed).
//   training.grad_reduce_in_fp32 names the main gradients' format: 4 bytes when true, the parameters' dtype when
//   false (Megatron-Core DistributedDataParallelConfig.grad_reduce_in_fp32). With 16-bit gradients the distributed
//   optimizer's table counts a fp32 copy of the gradient shard too (4 + 16/d); it is not counted here: Megatron
//   makes it at the optimizer step (DistributedOptimizer._copy_model_grads_to_main_grads, .float() of the shard)
//   and frees it in zero_grad at the next step's start, so it is never live beside the activations.
inline double main_gradient_bytes(const precision_spec& prec, const training_spec& t) {
    const double weights = detail::training_weight_bytes(prec);
    if (t.grad_reduce_in_fp32) return *t.grad_reduce_in_fp32 ? 4.0 : weights;
    return t.distributed_optimizer ? 4.0 : weights;
}

inline state_bytes bytes_per_parameter(const precision_spec& prec, const training_spec& t,
                                       const training_memory_options& o = {}) {
    state_bytes b;
    b.weights = detail::training_weight_bytes(prec);
    b.gradients = o.gradients ? o.gradients->bytes_per_element() : main_gradient_bytes(prec, t);
    // (the two formats the reader allows without a lookup: a layout search asks per layout)
    const double state = t.optimizer_state_format == "fp32"   ? 4.0
                         : t.optimizer_state_format == "bf16" ? 2.0
                                                              : find_format(t.optimizer_state_format, "/training/optimizer_state_format").bytes_per_element();
    if (t.optimizer == "adamw" || t.optimizer == "adam") b.optimizer = 2.0 * state;
    else if (t.optimizer == "sgd") b.optimizer = state;
    else if (t.optimizer == "adafactor") b.optimizer = 0.0;
    else throw config_error("/training/optimizer", "'" + t.optimizer + "'", "unknown optimizer", "adamw, adam, sgd, adafactor");
    b.master = t.master_weights && b.weights < 4.0 ? 4.0 : 0.0;
    return b;
}

// Activation bytes of one transformer layer for one micro-batch on one device. Per token, with e the activation
// bytes, g the bytes of a saved GEMM input, t = tp, and "replicated" terms divided by t only under sequence
// parallelism (Korthikanti §4.2.2):
//   replicated  n_norms·e·h (norm inputs) + g·h (QKV input) + g·h (MLP input) [+ h + h dropout masks]
//               MLA: + (e+g)·(r_q + r_kv) (latent norm input and up-projection input)
//               MoE: the MLP input at e (the router reads it), + 8·E (fp32 router logits and probabilities)
//   split       e·(H/t·d_qk + K_r·d_qk + K_r·d_v) (Q, K, V; K_r KV heads per rank) + o-proj input H/t·d_v
//               + scores H/t·s·(e [softmax out] [+ 1 mask + e dropout out]) without FlashAttention,
//                 or 4·H/t (fp32 log-sum-exp, Dao 2023 arXiv:2307.08691 §3.1) with it
//               + MLP: e·I/t (GeLU input) or a·2I/t (SwiGLU gate and up; a = e, or 1 B stored in FP8 under
//                 Megatron-Core's activation_func_fp8_input_store) + g·I/t (down-projection input)
//   routed      N = tokens·k·cf·etp/tp copies, each g·h (permuted input) + e·h (expert output, for the combine)
//               + (2a + g)·I_e/etp (gate/up outputs and the down input)
// With e = g = 2, dropout, MHA, a 4h GeLU MLP and no FlashAttention this is Korthikanti's sbh(10 + 24/t + 5as/(ht))
// (Table 2), sbh(34 + 5as/h) at t = 1 (Eq. 1). Selective recompute drops the score terms (§5); full recompute
// keeps the layer input e·h (Table 2: 2sbh; /t with sequence parallelism per §5). Context parallelism splits the tokens
// (each rank keeps s/cp queries against all s keys).
inline data_size layer_activation_bytes(const model_spec& m, std::int64_t layer, std::int64_t seq_len,
                                        std::int64_t micro_batch, const parallelism_spec& p, recompute_kind r,
                                        const number_format& act, const activation_options& o) {
    const double e = act.bytes_per_element();
    const double g = o.gemm_input_bytes > 0 ? std::min(o.gemm_input_bytes, e) : e;
    const double tp = p.tp, h = static_cast<double>(m.hidden), s = static_cast<double>(seq_len);
    const double tokens = s * static_cast<double>(micro_batch) / p.cp;
    const double rep = p.sequence_parallel && p.tp > 1 ? tp : 1.0;
    if (r == recompute_kind::full) return tokens * e * h / rep * units::B;

    // Selective recompute frees what its modules saved and reruns them in the backward (Megatron-Core
    // recompute_modules; core_attn alone is Korthikanti §5): the module's input stays, its inner tensors go.
    const unsigned mods = r == recompute_kind::selective
                              ? (o.recompute_modules ? o.recompute_modules : static_cast<unsigned>(recompute_module::core_attn))
                              : 0u;
    auto rerun = [&](recompute_module x) { return (mods & static_cast<unsigned>(x)) != 0; };
    const bool keep_core = !rerun(recompute_module::core_attn);
    const double act_in = o.fp8_act_input ? std::min(1.0, e) : e;  // a gated activation's kept input, per element
    // layernorm: the two norms' outputs are recomputed; they are the 16-bit GEMM inputs (an FP8 GEMM keeps its own copy;
    // a frozen LoRA base keeps none, so under LoRA the 16-bit output goes whatever the GEMMs' format).
    const double norm_out = rerun(recompute_module::layernorm) && (o.lora || g >= e) ? 0.0 : 1.0;
    // A projection's input is saved for its weight gradient; with LoRA only targeted ones keep it (lora.hpp), and not
    // under dropout on the adapters' inputs, whose A keeps the dropped copy instead (counted with the adapters).
    const lora_spec* lora = o.lora;
    const bool adapters_keep_x = lora && !(lora->dropout > 0.0 && !lora->dropout_on_output);
    auto saved = [&](std::initializer_list<lora_target> projections) {
        if (!lora || o.frozen_inputs_saved) return 1.0;
        if (!adapters_keep_x) return 0.0;
        for (const lora_target t : projections)
            if (lora->has(t)) return 1.0;
        return 0.0;
    };
    // A kept input's bytes: the GEMM's own copy (g: an FP8 GEMM keeps its FP8 input); under LoRA the 16-bit x of the
    // adapter (a frozen Transformer Engine projection keeps none; a dequantised one its 16-bit input).
    const double in_bytes = lora ? e : g;
    const double qkv_in = saved({lora_target::q_proj, lora_target::k_proj, lora_target::v_proj, lora_target::qkv_proj});
    const double mlp_in = saved({lora_target::gate_proj, lora_target::up_proj, lora_target::gate_up_proj});
    const double down_in = saved({lora_target::down_proj});
    // Eager RMSNorm (Hugging Face LlamaRMSNorm, litgpt, torchtune) saves the fp32 upcast of its input, and the
    // normalised 16-bit output for the norm weight's gradient when that weight trains; a fused norm keeps its input.
    const double norm_bytes = o.eager ? 4.0 + (lora ? 0.0 : e) : e;
    double replicated = m.norms_per_layer * norm_bytes * h + norm_out * qkv_in * in_bytes * h;
    double split = 0.0;
    const double heads = m.heads / tp;
    double o_width;
    // q, k and v are kept for the core's backward; Transformer Engine's FP8 attention (FusedAttnFunc with an FP8
    // backward, NVTE_FP8_DPA_BWD's default) keeps their FP8 copies instead.
    if (m.mla) {
        const auto& a = m.mla_dims;
        const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
        replicated += (e + g) * static_cast<double>(a.q_lora_rank + a.kv_lora_rank);
        if (!rerun(recompute_module::mla_up_proj))
            split += (o.fp8_attention ? 1.0 : e) * heads * (2.0 * qk + static_cast<double>(a.v_head_dim));
        o_width = heads * static_cast<double>(a.v_head_dim);
    } else {
        const double d = static_cast<double>(m.head_dim);
        split += (o.fp8_attention ? 1.0 : e) * (heads * d + 2.0 * detail::kv_heads_per_rank(m, p.tp) * d);
        o_width = heads * d;
    }
    if (keep_core) split += o.flash_attention ? heads * 4.0 : heads * s * (e + (o.dropout ? 1.0 + e : 0.0));
    // The attention output O: FlashAttention keeps it for its backward (FP8 attention its FP8 copy); the o-projection
    // keeps its input for its weight gradient (an FP8 GEMM its own FP8 copy; under LoRA only a targeted o_proj, the
    // adapter's 16-bit x). One 16-bit O serves both.
    const double kernel_o = o.flash_attention && keep_core ? (o.fp8_attention ? 1.0 : e) : 0.0;
    const double gemm_o =
        !lora || o.frozen_inputs_saved || (adapters_keep_x && lora->has(lora_target::o_proj)) ? (lora ? e : g) : 0.0;
    split += o_width * (kernel_o == e && gemm_o == e ? e : kernel_o + gemm_o);
    if (o.dropout) replicated += 2.0 * h;  // 1-byte masks after attention and after the MLP

    double routed = 0.0;
    if (!m.is_moe_layer(layer)) {
        // A recomputed MLP reruns from its kept input, whatever its GEMMs and adapters save.
        replicated += norm_out * (rerun(recompute_module::mlp) ? 1.0 : mlp_in) * in_bytes * h;
        const double I = static_cast<double>(m.intermediate) / tp;
        // Eager SwiGLU, silu(gate) * up, also keeps silu's output for the product's backward.
        const double kept_in = m.gated_mlp ? (o.eager ? 3.0 * e : 2.0 * act_in) : e;
        if (!rerun(recompute_module::mlp)) split += kept_in * I + down_in * in_bytes * I;
    } else {
        const double E = static_cast<double>(m.moe.routed_experts);
        const bool whole = rerun(recompute_module::moe);  // the layer rerun from its input: nothing inside kept
        // The router reads the 16-bit norm output (layernorm recompute frees it whatever the GEMMs save).
        replicated += (rerun(recompute_module::layernorm) ? 0.0 : e * h) + (whole ? 0.0 : 8.0 * E);
        const double shared = static_cast<double>(m.moe.shared_experts * m.moe.shared_width()) / tp;
        // Eager SwiGLU keeps silu(gate) too; FP8 storage is the gated unit's alone (a ReLU^2 expert keeps 2e).
        const double gate_up = m.moe.gated ? (o.eager ? 3.0 * e : 2.0 * act_in) : 2.0 * e;
        if (!whole && !rerun(recompute_module::shared_experts)) split += gate_up * shared + down_in * in_bytes * shared;
        const double copies = tokens * static_cast<double>(m.moe.experts_per_token) * o.moe_capacity_factor *
                              static_cast<double>(p.etp) / tp;
        const double Ie = static_cast<double>(m.moe.expert_intermediate) / p.etp;
        // moe_act: the activation's output (the down-projection's input) is recomputed from the kept gate/up outputs.
        // Routed experts dequantised from their own format (bitsandbytes) keep their inputs whatever the base does.
        const double expert_in = o.frozen_expert_inputs_saved ? 1.0 : mlp_in;
        const double expert_down_in = o.frozen_expert_inputs_saved ? 1.0 : down_in;
        const double act_out = rerun(recompute_module::moe_act) ? 0.0 : expert_down_in * in_bytes;
        routed = whole ? 0.0 : copies * ((expert_in * in_bytes + e) * h + (gate_up + act_out) * Ie);
    }
    if (lora) {
        const double routed_copies = static_cast<double>(m.moe.experts_per_token) * o.moe_capacity_factor *
                                     static_cast<double>(p.etp) / tp;
        // A module recomputed selectively (or a whole MoE layer) reruns its adapters too: their tensors are not kept.
        split += lora_activation_bytes_per_token(m, layer, *lora, e, {tp, static_cast<double>(p.etp), routed_copies, 0.0},
                                                 all_adapter_groups & ~recomputed_adapter_groups(rerun));
    }
    return (tokens * (replicated / rep + split) + routed) * units::B;
}

// The brief's form: 16-bit GEMM inputs, no dropout.
inline data_size layer_activation_bytes(const model_spec& m, std::int64_t layer, std::int64_t seq_len,
                                        std::int64_t micro_batch, const parallelism_spec& p, recompute_kind r,
                                        bool flash_attention, const number_format& act) {
    activation_options o;
    o.flash_attention = flash_attention;
    return layer_activation_bytes(m, layer, seq_len, micro_batch, p, r, act, o);
}

// Micro-batches' worth of a stage's layer activations held at the peak, on stage `stage` of `pp`.
//   1F1B (PipeDream-Flush, Narayanan et al. 2021 §2.2.1): stage i keeps min(pp - i, micro-batches).
//   Interleaved with v chunks per rank (Narayanan §2.2.2): rank i runs (pp - i - 1)·2 + (v - 1)·pp warm-up
//   chunk-forwards plus one (Megatron-LM schedules.py, forward_backward_pipelining_with_interleaving), each
//   chunk 1/v of the stage's layers: pp + (pp - 1)/v on the first stage = pp·(1 + (pp - 1)/(pp·v)), the
//   factor of Korthikanti §4.2.3.
inline double pipeline_layer_sets(int pp, int vpp, int stage, std::int64_t microbatches) {
    if (pp <= 1) return 1.0;
    const double n = static_cast<double>(std::max<std::int64_t>(1, microbatches));
    if (vpp <= 1) return std::min(static_cast<double>(pp - stage), n);
    const double chunks = 2.0 * (pp - stage - 1) + static_cast<double>(vpp - 1) * pp + 1.0;
    return std::min(chunks, n * vpp) / vpp;
}

namespace detail {

inline std::int64_t microbatches_per_step(const parallelism_spec& p, const training_spec& t) {
    if (t.global_batch <= 0) return std::int64_t{1} << 30;  // not given: assume the pipeline is full
    return std::max<std::int64_t>(1, t.global_batch / (std::max<std::int64_t>(1, t.micro_batch) * p.dp));
}

}  // namespace detail

namespace detail {

// Per-layer values by model_spec::layer_kind: a stage of 80 alike layers is computed once (a layout search asks
// per layout).
class by_layer_kind {
public:
    template <class F>
    data_size operator()(const model_spec& m, std::int64_t i, F&& compute) {
        const unsigned k = m.layer_kind(i);
        if (!known_[k]) {
            value_[k] = compute();
            known_[k] = true;
        }
        return value_[k];
    }

private:
    std::array<data_size, model_spec::layer_kinds> value_{};
    std::array<bool, model_spec::layer_kinds> known_{};
};

// LoRA / QLoRA model states on one device of `st` (lora.hpp): the frozen base in precision.weights (routed experts
// in their own format; embeddings, head and norms in 16 bits when that is narrower), no gradients or optimizer
// states for it; the adapters' states by `b` (training weights, gradients, optimizer, master), ZeRO-sharded like
// the dense weights. A base narrower than its GEMMs' inputs is dequantised one matrix at a time: a 16-bit copy of
// the largest one is held while it runs (bitsandbytes dequantize_4bit before the matmul).
inline void lora_model_states(const model_spec& m, const pipeline_stage& st, const precision_spec& prec,
                              const parallelism_spec& p, const training_spec& t, const state_bytes& b, double group,
                              double expert_group, int zero, training_memory& out, bool explain) {
    const lora_spec& l = *t.lora;
    const double base = prec.weights.bytes_per_element();
    device_parameters dense = st.params, routed = st.params;
    dense.block_linear -= dense.routed_experts;
    dense.routed_experts = 0.0;
    routed.block_linear = routed.routed_experts;
    routed.other = 0.0;
    const double wd = zero >= 3 ? group : 1.0, we = zero >= 3 ? expert_group : 1.0;
    out.weights = (frozen_base_bytes(dense, prec) / wd + frozen_base_bytes(routed, prec) / we) * units::B;
    const double adapters = lora_device_parameters(m, l, st.first_layer, st.layers, p);
    auto shard = [&](bool sharded) { return sharded ? group : 1.0; };
    out.weights += adapters * b.weights / shard(zero >= 3) * units::B;
    out.gradients = adapters * b.gradients / shard(zero >= 2) * units::B;
    const double od = std::max(shard(zero >= 1), t.distributed_optimizer ? static_cast<double>(p.dp) * p.cp : 1.0);
    out.optimizer_states = adapters * b.optimizer / od * units::B;
    out.master_weights = adapters * b.master / od * units::B;
    const bool dequantised = lora_base_dequantised(prec) || lora_experts_dequantised(prec);
    if (dequantised) {
        const double h = static_cast<double>(m.hidden);
        const double widest = std::max({static_cast<double>(m.heads * m.head_dim), static_cast<double>(m.intermediate),
                                        static_cast<double>(m.moe.expert_intermediate)});
        out.buffers += 2.0 * h * widest / p.tp * units::B;
    }
    if (!explain) return;
    out.notes.push_back("LoRA rank " + std::to_string(l.rank) + " (Hu et al. 2021, arXiv:2106.09685): " +
                        format_number(adapters) + " adapter parameters on this device, each " +
                        format_number(b.total()) + " B (weights, gradients, optimizer, master); the frozen base in " +
                        prec.weights.name + " (" + format_number(base) + " B per block weight" +
                        (prec.weights.quantized() ? ", embeddings, head and norms in 16 bits" : "") +
                        ") with no gradients or optimizer states");
    if (dequantised)
        out.notes.push_back("QLoRA: the " + (lora_base_dequantised(prec) ? prec.weights.name + " base is" : prec.experts().name + " experts are") +
                            " dequantised one matrix at a time; a 16-bit copy "
                            "of the largest is held (bitsandbytes dequantize_4bit)");
}

}  // namespace detail

// One pipeline stage's devices.
inline training_memory estimate_training_memory_stage(const model_spec& m, const weight_sharding& w,
                                                      const precision_spec& prec, const parallelism_spec& p,
                                                      const training_spec& t, int stage,
                                                      const training_memory_options& o = {}) {
    training_memory out;
    out.stage = stage;
    const int pp = static_cast<int>(w.stages.size());
    pipeline_stage st = w.stages.at(static_cast<std::size_t>(stage));
    if (t.mtp_layers > 0 && st.has_lm_head) st.params += mtp_on_device(m, p, t.mtp_layers, pp);
    // DualPipe: the rank also holds stage pp - 1 - i, the other direction's copy (DeepSeek-V3 §3.2.1, Table 2: 2x
    // parameters); its activations stay those of one stage's layers (Table 2: pp + 1 micro-batches in flight).
    if (p.dualpipe() && pp > 1) {
        const pipeline_stage& mirror = w.stages.at(static_cast<std::size_t>(pp - 1 - stage));
        st.params += mirror.params;
        if (t.mtp_layers > 0 && mirror.has_lm_head) st.params += mtp_on_device(m, p, t.mtp_layers, pp);
        st.has_embedding = st.has_embedding || mirror.has_embedding;
        st.has_lm_head = st.has_lm_head || mirror.has_lm_head;
    }
    const state_bytes b = bytes_per_parameter(prec, t, o);

    // Sharding divisors. Weights are replicated over cp as over dp, so ZeRO/FSDP and the distributed
    // optimizer shard over dp x cp (Megatron's data-parallel group "with context parallel"; TorchTitan
    // flattens dp_shard and cp into the FSDP mesh). Routed experts are replicated over the expert-data-parallel
    // ranks, tp x dp x cp / (ep x etp) (Megatron Core MoE README: parallel folding, EP x ETP x EDP).
    const double group = static_cast<double>(t.shard_group > 0 ? t.shard_group : p.dp) * p.cp;
    const double expert_scale = static_cast<double>(p.tp) / (static_cast<double>(p.ep) * p.etp);
    const double expert_group = std::max(1.0, group * expert_scale);
    const double dist_group = static_cast<double>(p.dp) * p.cp;
    const double dist_expert = std::max(1.0, dist_group * expert_scale);
    const int zero = std::clamp(t.zero, 0, 3);
    auto divisor = [&](bool sharded, double g) { return sharded ? g : 1.0; };
    const double experts = st.params.routed_experts, dense = st.params.total() - experts;
    auto per_device = [&](double bytes, double d_dense, double d_expert) {
        return (dense / d_dense + experts / d_expert) * bytes * units::B;
    };
    out.weights = per_device(b.weights, divisor(zero >= 3, group), divisor(zero >= 3, expert_group));
    out.gradients = per_device(b.gradients, divisor(zero >= 2, group), divisor(zero >= 2, expert_group));
    const double od = std::max(divisor(zero >= 1, group), t.distributed_optimizer ? dist_group : 1.0);
    const double oe = std::max(divisor(zero >= 1, expert_group), t.distributed_optimizer ? dist_expert : 1.0);
    out.optimizer_states = per_device(b.optimizer, od, oe);
    out.master_weights = per_device(b.master, od, oe);
    if (t.lora) detail::lora_model_states(m, st, prec, p, t, b, group, expert_group, zero, out, o.explain);

    if (o.explain && !t.lora) out.notes.push_back("model states: ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054 §3.1, §5): " +
                                       format_number(b.total()) + " B/parameter before sharding (weights " +
                                       format_number(b.weights) + ", gradients " + format_number(b.gradients) +
                                       ", optimizer " + format_number(b.optimizer) + ", master " +
                                       format_number(b.master) + ")");
    if (o.explain && t.distributed_optimizer)
        out.notes.push_back("distributed optimizer: main gradients kept whole in " + format_number(b.gradients) +
                            " B, optimizer states and master weights sharded over dp x cp (Megatron Core user guide, "
                            "Distributed Optimizer: 6 + 12/d B with fp32 gradients)");
    else if (o.explain && !o.gradients && t.grad_reduce_in_fp32)
        out.notes.push_back("gradients accumulated and reduced in " + format_number(b.gradients) +
                            " B a parameter (training.grad_reduce_in_fp32)");
    else if (o.explain && !o.gradients)
        out.notes.push_back("gradients kept in the weights' format, as ZeRO counts them (arXiv:1910.02054 §3.1); "
                            "Megatron without the distributed optimizer keeps fp32 main gradients (18 B/parameter)");
    if (o.explain && t.optimizer == "adafactor")
        out.notes.push_back("Adafactor: factored second moment of (rows + columns) values per matrix and no first "
                            "moment (Shazeer & Stern 2018, arXiv:1804.04235 §3, beta1 = 0): counted as 0 B/parameter");
    if (o.explain && t.optimizer == "sgd") out.notes.push_back("SGD: one momentum buffer per parameter");
    if (o.explain && zero > 0 && group > 1)
        out.notes.push_back("ZeRO-" + std::to_string(zero) + " over " + format_number(group) +
                            " ranks" + (t.shard_group > 0 && t.shard_group < p.dp ? " (HSDP: replicated across dp / shard_group)" : ""));

    // FP8 (or FP4) GEMMs: Transformer Engine caches the low-precision weight between micro-batches (TE user guide,
    // "Performance Optimizations: FP8 weight caching"), with its transpose (column-wise copy) for the input gradients
    // unless the tensor cores take a per-tensor-scaled FP8 operand in any layout (Blackwell; TE tests/pytorch/
    // test_cpu_offloading.py _estimate_cached_weight_size: 1 B per weight there, 2 B on Hopper, 2 x (1 + 1/32) B MXFP8).
    // A LoRA base already in the GEMMs' format is the row-wise copy.
    // A checkpoint's states (states_only) are the weights as saved: the GEMMs' caches are not.
    if (detail::low_precision_compute(prec) && zero < 3 && !o.states_only) {
        const bool base_is_copy = t.lora && prec.weights.name == prec.compute.name;
        // Per-tensor scaling (no block scales: TE's Float8Tensor) transposes exactly; block scales do not.
        const bool row_wise_only = o.fp8_any_layout && prec.compute.peak_key == "fp8" && prec.compute.block_size == 0;
        const double copies = (row_wise_only ? 1.0 : 2.0) - (base_is_copy ? 1.0 : 0.0);
        out.weights += copies * st.params.block_linear * prec.compute.bytes_per_element() * units::B;
        const std::string which = row_wise_only ? "row-wise copy" : base_is_copy ? "transpose" : "copies (row- and column-wise)";
        if (o.explain && t.lora && copies > 0)
            out.notes.push_back("LoRA under " + prec.compute.name + " GEMMs: the frozen base's cached " + prec.compute.name + " " +
                                which + " adds " + format_number(copies * prec.compute.bytes_per_element()) +
                                " B per block parameter (Transformer Engine)");
        else if (o.explain && t.lora)
            out.notes.push_back("LoRA under " + prec.compute.name + " GEMMs: the " + prec.compute.name + " base is read as it is; "
                                "these tensor cores need no transpose of it (Transformer Engine is_non_tn_fp8_gemm_supported)");
        else if (o.explain)
            out.notes.push_back("low-precision compute: 16-bit weights + fp32 master kept; cached " + prec.compute.name + " weight " +
                                which + (row_wise_only ? " adds " : " add ") + format_number(copies) + " x " +
                                format_number(prec.compute.bytes_per_element()) +
                                " B per block parameter" + (row_wise_only ? " (no transpose: these tensor cores take FP8 in any layout)" : "") +
                                "; GEMM inputs saved for backward in " + prec.compute.name +
                                " (Micikevicius et al. 2022, arXiv:2209.05433; DeepSeek-V3, arXiv:2412.19437 §3.3.3)");
        // FP8 primary weights (Megatron --fp8-param-gather, Transformer Engine fp8_model_init; on in
        // NeMo 2.0's and Megatron-Bridge's bf16_with_fp8_mixed recipes): the row-wise FP8 copy is the
        // weight, so the 16-bit copy of the block weights is gone; the fp32 master stays in the optimizer.
        if (t.fp8_params) {
            out.weights -= st.params.block_linear * b.weights * units::B;
            if (o.explain) out.notes.push_back("FP8 primary weights: no 16-bit copy of the block weights (the FP8 copies are the weights)");
        }
    }

    // ZeRO-3 / FSDP: one layer (unit) is gathered whole while the next is prefetched.
    if (zero >= 3 && group > 1) {
        // LoRA gathers the frozen base in its own format; its vocabulary matrices stay 16-bit.
        const double block_bytes = t.lora ? prec.weights.bytes_per_element() : b.weights;
        const double vocab_bytes = t.lora && prec.weights.quantized() ? 2.0 : block_bytes;
        double largest = 0.0;
        detail::by_layer_kind unit;
        m.for_layer_runs(st.first_layer, st.layers, [&](std::int64_t i, std::int64_t) {
            largest = std::max(largest, unit(m, i, [&] { return detail::layer_on_device(m, i, p).total() * block_bytes * units::B; }).in(units::B));
        });
        if (st.has_embedding || st.has_lm_head)
            largest = std::max(largest, static_cast<double>(m.vocab * m.hidden) / p.tp * vocab_bytes);
        out.buffers += 2.0 * largest * units::B;
        if (o.explain) out.notes.push_back("ZeRO-3/FSDP: the largest unit (layer or vocabulary matrix) gathered unsharded, twice "
                                           "(current + prefetched; PyTorch FSDP, Zhao et al. 2023, arXiv:2304.11277)");
    }

    if (t.offload_optimizer) {
        out.host_offload = out.optimizer_states + out.master_weights;
        out.optimizer_states = data_size{};
        out.master_weights = data_size{};
        if (o.explain) out.notes.push_back("optimizer states and master weights offloaded to host memory (ZeRO-Offload, Ren et al. "
                                           "2021, arXiv:2101.06840); gradients conservatively kept on the device");
    }

    if (o.states_only) return out;

    // Activations.
    activation_options ao;
    ao.flash_attention = o.flash_attention;
    ao.dropout = o.dropout;
    ao.moe_capacity_factor = o.moe_capacity_factor;
    if (t.lora) ao.lora = &*t.lora;
    // bitsandbytes' MatMul4Bit keeps its input whatever trains; Transformer Engine's Linear (an FP8 base under FP8
    // GEMMs) keeps it only for a weight gradient (pytorch/module/linear.py _Linear.forward: "if weight.requires_grad").
    ao.frozen_inputs_saved = t.lora && lora_base_dequantised(prec);
    ao.frozen_expert_inputs_saved = t.lora && lora_experts_dequantised(prec);
    ao.eager = t.eager_kernels;
    ao.fp8_act_input = t.activation_func_fp8_input_store;
    ao.fp8_attention = t.attention_kernel == "cudnn_fp8";
    ao.recompute_modules = t.recompute_modules;
    if (detail::low_precision_compute(prec)) ao.gemm_input_bytes = prec.compute.saved_activation_bytes();
    const number_format& act = prec.activations;
    const double e = act.bytes_per_element();
    const std::int64_t n_mb = detail::microbatches_per_step(p, t);
    out.layer_sets_in_flight = p.dualpipe() && pp > 1 ? std::min(static_cast<double>(pp + 1), static_cast<double>(n_mb))
                                                      : pipeline_layer_sets(pp, p.vpp, stage, n_mb);
    out.in_flight_microbatches = static_cast<int>(std::ceil(out.layer_sets_in_flight - 1e-9));
    data_size per_set, largest_layer, largest_full;
    detail::by_layer_kind kept, whole;
    m.for_layer_runs(st.first_layer, st.layers, [&](std::int64_t i, std::int64_t n) {
        const data_size l = kept(m, i, [&] { return layer_activation_bytes(m, i, t.seq_len, t.micro_batch, p, t.recompute, act, ao); });
        for (std::int64_t k = 0; k < n; ++k) per_set += l;  // layer by layer, so the sum rounds as a per-layer one
        largest_layer = std::max(largest_layer, l);
        if (t.recompute == recompute_kind::full)
            largest_full = std::max(largest_full, whole(m, i, [&] {
                return layer_activation_bytes(m, i, t.seq_len, t.micro_batch, p, recompute_kind::none, act, ao);
            }));
    });
    const double tokens = static_cast<double>(t.seq_len) * static_cast<double>(t.micro_batch) / p.cp;
    const double rep = p.sequence_parallel && p.tp > 1 ? static_cast<double>(p.tp) : 1.0;
    const double h = static_cast<double>(m.hidden);
    if (t.mtp_layers > 0 && st.has_lm_head) {
        // Each MTP module: its block's activations (as the last layer's) and its projection's 2h-wide input.
        const data_size block = layer_activation_bytes(m, m.layers - 1, t.seq_len, t.micro_batch, p, t.recompute, act, ao);
        const double g = ao.gemm_input_bytes > 0 ? std::min(ao.gemm_input_bytes, e) : e;
        per_set += static_cast<double>(t.mtp_layers) * (block + tokens * 2.0 * g * h / rep * units::B);
    }
    out.activations_per_layer = largest_layer;
    out.activations = per_set * out.layer_sets_in_flight;
    // Full recompute: the layer being back-propagated holds its recomputed activations (Chen et al. 2016,
    // arXiv:1604.06174: checkpoints plus one recomputed segment).
    out.activations += largest_full;

    if (st.has_embedding) {
        // Token ids (int64) for the embedding backward (Megatron theoretical_memory_usage.py) and the embedding
        // dropout mask (Korthikanti §4.3: sbhp/t), per in-flight micro-batch.
        const double emb = tokens * (8.0 + (o.dropout ? h / rep : 0.0));
        out.activations += emb * out.layer_sets_in_flight * units::B;
    }
    if (st.has_lm_head) {
        // Final-norm input and LM-head input (Korthikanti §4.3: 2sbh/t each with SP), one micro-batch; the logits
        // in fp32 for the cross-entropy (§4.3: 4sbv/t) and their fp32 gradient at the start of the backward.
        out.activations += tokens * 2.0 * e * h / rep * units::B;
        // Eager (Hugging Face LlamaForCausalLM.forward: logits.float(), then a shifted .contiguous() copy into
        // CrossEntropyLoss): the fp32 logits it returns, log_softmax's fp32 output kept for its backward, and in
        // the backward the fp32 gradients of both: 16 B per token and vocabulary entry at the peak, twice the fused 8.
        // MTP modules each compute their own logits and loss over every position (DeepSeek-V3 §2.2, Eq. 22-23): each
        // keeps its logits for its loss's backward; one gradient is live at a time.
        const double kept = t.eager_kernels ? 8.0 : 4.0, gradient = kept;
        out.logits = ((1.0 + t.mtp_layers) * kept + gradient) * tokens * static_cast<double>(m.vocab) / p.tp * units::B;
        if (o.explain) out.notes.push_back("logits: fp32 s·b·V/tp for the loss and its fp32 gradient (Korthikanti et al. 2022 §4.3, "
                                           "4sbv/t, + gradient); a fused in-place cross-entropy needs half");
    }

    if (o.explain) out.notes.push_back(std::string("activations: Korthikanti et al. 2022 (arXiv:2205.05198) §4, Table 2, per tensor; ") +
                                       (o.dropout ? "with 1-byte dropout masks" : "dropout 0 (no masks), as modern LLM pre-training") +
                                       (o.flash_attention ? "; FlashAttention: no s² scores, fp32 log-sum-exp kept (Dao 2023, arXiv:2307.08691 §3.1)"
                                                          : "; attention scores materialised (s² per head)"));
    if (o.explain && t.activation_func_fp8_input_store)
        out.notes.push_back("the SwiGLU's input (gate and up outputs) kept for its backward in FP8, 1 B per element "
                            "(Megatron-Core activation_func_fp8_input_store)");
    if (o.explain && t.recompute == recompute_kind::selective) {
        std::string names;
        for (std::size_t i = 0; i < recompute_module_names.size(); ++i)
            if (t.recompute_modules & (1u << i)) names += (names.empty() ? "" : ", ") + recompute_module_names[i];
        out.notes.push_back("selective recompute of " + names + " (Megatron-Core recompute_modules; core_attn: Korthikanti §5): "
                            "their inner tensors freed, their inputs kept");
    }
    if (o.explain && t.recompute == recompute_kind::full)
        out.notes.push_back("full recompute: layer inputs kept (Korthikanti Table 2: 2sbh; /t with SP per §5) + one layer recomputed");
    if (o.explain && pp > 1)
        out.notes.push_back((p.vpp > 1 ? "interleaved 1F1B, v = " + std::to_string(p.vpp) +
                                             ": first stage holds pp·(1 + (pp-1)/(pp·v)) micro-batches' layers (Korthikanti §4.2.3)"
                                       : std::string("1F1B: stage i holds min(pp - i, micro-batches) in flight (Narayanan et al. 2021, arXiv:2104.04473 §2.2.1)")));
    if (o.explain && m.is_moe())
        out.notes.push_back("MoE: dropless routing, capacity factor " + format_number(o.moe_capacity_factor) +
                            ", balanced load; each rank processes tokens·k·etp/tp expert copies; fp32 router logits and "
                            "probabilities (Fedus et al. 2022, arXiv:2101.03961 §2.4 selective precision)");
    if (o.explain && !o.flash_attention && m.sliding_window > 0)
        out.notes.push_back("sliding-window layers without FlashAttention: the full s x s score matrix is counted (eager masking)");
    return out;
}

// The fullest pipeline stage (largest device total).
inline training_memory estimate_training_memory(const model_spec& m, const weight_sharding& w,
                                                const precision_spec& prec, const parallelism_spec& p,
                                                const training_spec& t, const training_memory_options& o) {
    training_memory best;
    for (std::size_t s = 0; s < w.stages.size(); ++s) {
        training_memory cur = estimate_training_memory_stage(m, w, prec, p, t, static_cast<int>(s), o);
        if (s == 0 || cur.total() > best.total()) best = std::move(cur);
    }
    return best;
}

// The activation knobs a training scenario sets (fused attention, dropout), and what its accelerator's FP8 GEMMs need.
inline training_memory_options memory_options_for(const training_spec& t, const accelerator_spec* a = nullptr) {
    training_memory_options o;
    o.flash_attention = t.flash_attention;
    o.dropout = t.dropout;
    o.fp8_any_layout = a && fp8_gemm_takes_any_layout(*a);
    return o;
}

inline training_memory estimate_training_memory(const model_spec& m, const weight_sharding& w,
                                                const precision_spec& prec, const parallelism_spec& p,
                                                const training_spec& t) {
    return estimate_training_memory(m, w, prec, p, t, memory_options_for(t));
}

}  // namespace capplan
