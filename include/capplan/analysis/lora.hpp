// LoRA adapters (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models", arXiv:2106.09685 §4.1):
// a frozen projection W (d_in -> d_out) gains a trained update B·A with A: r x d_in and B: d_out x r, so each
// targeted projection adds r·(d_in + d_out) parameters. QLoRA (Dettmers et al. 2023, arXiv:2305.14314) keeps the
// frozen base in 4-bit NF4 and dequantises it for every GEMM.
//
// What the frozen base changes, by the training memory and speed models:
//   states     only the adapters have gradients, optimizer states and master weights; the base is held in
//              precision.weights (any format), embeddings, head and norms in 16 bits when that is narrower.
//   activations a frozen 16-bit projection needs no weight gradient, so its input is not saved for one
//              (PyTorch's generated autograd saves a matmul input only when the other operand's gradient is
//              needed); a 4-bit base still keeps it (bitsandbytes' MatMul4Bit.forward: ctx.tensors = (A, B)
//              whenever any input needs a gradient). A targeted projection's adapter keeps x (dA = x^T·(dY·B^T))
//              and its r-wide intermediate x·A; with LoRA dropout on the input, the dropped copy and its 1-byte
//              mask in place of x (A's input is the dropped copy); on the output (dropout_position "post"), x and a
//              1-byte mask of the output.
//   speed      no weight-gradient GEMMs: the backward of the linear layers is their input gradients only,
//              one forward's worth (the attention core still 2.5x with FlashAttention); the adapters' own kernels
//              (lora_adapter_traffic_per_token) on top.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "capplan/analysis/sharding.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/model_spec.hpp"
#include "capplan/spec/scenario.hpp"

namespace capplan {

struct lora_parameters {
    double dense = 0.0;           // adapters on attention, dense MLPs and shared experts
    double routed_experts = 0.0;  // adapters on the routed experts' projections
    double total() const { return dense + routed_experts; }
};

// A model whose projections this count knows: standard (GQA/MHA) attention, dense or MoE MLPs. MLA's latent
// projections and linear-attention mixers have other names and shapes; targeting them is an error naming the field.
inline void check_lora_model(const model_spec& m, const lora_spec& l) {
    const bool attention = l.has(lora_target::q_proj) || l.has(lora_target::k_proj) || l.has(lora_target::v_proj) ||
                           l.has(lora_target::qkv_proj) || l.has(lora_target::o_proj);
    if (attention && m.mla)
        throw config_error("/training/lora/targets", m.name, "MLA's latent projections (q_a/q_b, kv_a/kv_b) are not "
                           "modelled as LoRA targets", "the MLP projections only (gate_proj, up_proj, gate_up_proj, down_proj)");
    if (attention && m.linear_layer_count() > 0)
        throw config_error("/training/lora/targets", m.name, "linear-attention mixers are not modelled as LoRA targets",
                           "the MLP projections only (gate_proj, up_proj, gate_up_proj, down_proj)");
}

// "all_linear" as PEFT wraps the model's own linear modules: where Hugging Face fuses projections, one adapter each
// (Phi-3 and Phi-4: qkv_proj and gate_up_proj; GPT-2's c_attn and GPT-NeoX's query_key_value: q, k and v together).
inline void resolve_all_linear(const model_spec& m, lora_spec& l) {
    if (!l.all_linear || !(m.hf_fused_qkv() || m.hf_fused_gate_up())) return;
    std::vector<std::string> targets = m.hf_fused_qkv() ? std::vector<std::string>{"qkv_proj"}
                                                         : std::vector<std::string>{"q_proj", "k_proj", "v_proj"};
    targets.push_back("o_proj");
    if (m.hf_fused_gate_up()) targets.push_back("gate_up_proj");
    else if (m.gated_mlp) targets.insert(targets.end(), {"gate_proj", "up_proj"});
    else targets.push_back("up_proj");
    targets.push_back("down_proj");
    l.set_targets(targets);
}

// A LoRA base narrower than 16 bits and than its GEMMs' inputs is dequantised before each GEMM (bitsandbytes'
// MatMul4Bit: a kernel, a 16-bit buffer, the input kept); an FP8 base under FP8 GEMMs is read as it is, and a 16-bit
// base is never dequantised, whatever the compute format.
inline bool lora_dequantised(const number_format& base, const precision_spec& prec) {
    return base.quantized() && base.element_bits < prec.compute.element_bits;
}
inline bool lora_base_dequantised(const precision_spec& prec) { return lora_dequantised(prec.weights, prec); }
// The routed experts, in their own format (precision.expert_weights), likewise.
inline bool lora_experts_dequantised(const precision_spec& prec) { return lora_dequantised(prec.experts(), prec); }

// A device's frozen base in bytes, unsharded: block weights in precision.weights (routed experts in their own
// format), embeddings, head and norms in 16 bits when the base is narrower (they are not quantised).
inline double frozen_base_bytes(const device_parameters& d, const precision_spec& prec) {
    const double base = prec.weights.bytes_per_element(), other = prec.weights.quantized() ? 2.0 : base;
    return (d.block_linear - d.routed_experts) * base + d.routed_experts * prec.experts().bytes_per_element() +
           d.other * other;
}

// The module an adapter's projection belongs to (as selective recompute names them): attention, a dense MLP, each
// shared expert, or each routed expert (a layer holds routed_experts of them; a token passes experts_per_token).
enum class adapter_group : unsigned { attention = 1u << 0, mlp = 1u << 1, shared_expert = 1u << 2, routed_expert = 1u << 3 };
inline constexpr unsigned all_adapter_groups = 0xfu;

// The adapter groups a selective recompute reruns (and so keeps no tensors of): a dense MLP's with `mlp`, a MoE
// layer's routed and shared experts' with `moe` (the whole layer from its input), the shared experts' with
// `shared_experts`. `reruns` answers for a recompute_module.
template <class Reruns>
unsigned recomputed_adapter_groups(Reruns&& reruns) {
    unsigned g = 0u;
    if (reruns(recompute_module::mlp)) g |= static_cast<unsigned>(adapter_group::mlp);
    if (reruns(recompute_module::moe))
        g |= static_cast<unsigned>(adapter_group::routed_expert) | static_cast<unsigned>(adapter_group::shared_expert);
    if (reruns(recompute_module::shared_experts)) g |= static_cast<unsigned>(adapter_group::shared_expert);
    return g;
}

// Calls f(d_in, d_out, column_parallel, group) for each targeted projection of a layer, whole (all tensor-parallel
// ranks together): q, k, v and the MLP's gate and up read the hidden state (column-parallel), o and down write it
// (row-parallel); a non-gated MLP has no gate. A fused target is one adapter over its parts' outputs together
// (gate_up_proj on a non-gated MLP: its one input projection, Megatron's linear_fc1).
template <class F>
void for_each_adapter(const model_spec& m, std::int64_t layer, const lora_spec& l, F&& f) {
    const double h = static_cast<double>(m.hidden);
    if (m.has_mixer(layer) && !m.is_linear_layer(layer) && !m.mla) {
        const double d = static_cast<double>(m.head_dim);
        const double q = static_cast<double>(m.heads) * d * (m.attention_output_gate ? 2.0 : 1.0);
        const double kv = static_cast<double>(m.kv_heads) * d;
        if (l.has(lora_target::q_proj)) f(h, q, true, adapter_group::attention);
        if (l.has(lora_target::k_proj)) f(h, kv, true, adapter_group::attention);
        if (l.has(lora_target::v_proj)) f(h, kv, true, adapter_group::attention);
        if (l.has(lora_target::qkv_proj)) f(h, q + 2.0 * kv, true, adapter_group::attention);
        if (l.has(lora_target::o_proj)) f(static_cast<double>(m.heads) * d, h, false, adapter_group::attention);
    }
    if (!m.has_ffn(layer)) return;
    auto mlp = [&](double width, bool gated, adapter_group g) {
        if (gated && l.has(lora_target::gate_proj)) f(h, width, true, g);
        if (l.has(lora_target::up_proj)) f(h, width, true, g);
        if (l.has(lora_target::gate_up_proj)) f(h, (gated ? 2.0 : 1.0) * width, true, g);
        if (l.has(lora_target::down_proj)) f(width, h, false, g);
    };
    if (m.is_moe_layer(layer)) {
        if (m.moe.shared_experts > 0) mlp(static_cast<double>(m.moe.shared_width()), m.moe.gated, adapter_group::shared_expert);
        mlp(static_cast<double>(m.moe.expert_intermediate), m.moe.gated, adapter_group::routed_expert);
    } else {
        mlp(static_cast<double>(m.intermediate), m.gated_mlp, adapter_group::mlp);
    }
}

// One layer's adapter parameters (all tensor-parallel ranks together).
inline lora_parameters lora_layer_parameters(const model_spec& m, std::int64_t layer, const lora_spec& l) {
    const double r = static_cast<double>(l.rank);
    lora_parameters out;
    for_each_adapter(m, layer, l, [&](double d_in, double d_out, bool, adapter_group g) {
        const double p = r * (d_in + d_out);
        if (g == adapter_group::routed_expert) out.routed_experts += static_cast<double>(m.moe.routed_experts) * p;
        else out.dense += (g == adapter_group::shared_expert ? static_cast<double>(m.moe.shared_experts) : 1.0) * p;
    });
    return out;
}

// How one rank sees the adapters: attention's, dense MLPs' and shared experts' projections split over tp; a routed
// expert's over etp, each token bringing `routed_copies` routed copies to the rank on average (tokens·k·etp/tp, times
// the load's imbalance or the capacity factor) of the `local_experts` experts it holds (routed_experts / ep).
struct adapter_split {
    double tp = 1.0, etp = 1.0, routed_copies = 0.0, local_experts = 0.0;
};

// Adapter copies a token passes on the rank, the ways its widths split there, and the modules (each its own kernels,
// as PEFT wraps every expert's projection) the rank runs.
inline double adapter_copies_per_token(const model_spec& m, adapter_group g, const adapter_split& sp) {
    return g == adapter_group::shared_expert   ? static_cast<double>(m.moe.shared_experts)
           : g == adapter_group::routed_expert ? sp.routed_copies
                                               : 1.0;
}
inline double adapter_width_split(adapter_group g, const adapter_split& sp) {
    return g == adapter_group::routed_expert ? sp.etp : sp.tp;
}
inline double adapter_modules(const model_spec& m, adapter_group g, const adapter_split& sp) {
    return g == adapter_group::shared_expert   ? static_cast<double>(m.moe.shared_experts)
           : g == adapter_group::routed_expert ? sp.local_experts
                                               : 1.0;
}

// Activation bytes per token the adapters of one layer add, on one rank: each targeted projection keeps its r-wide x·A
// for dB, at `e` bytes (whole on every rank: A of a column-parallel projection is replicated, a row-parallel one's
// partial products are all-reduced); with LoRA dropout also the dropped input and its 1-byte mask (torch.nn.Dropout),
// one per adapter as PEFT and torchtune apply it: the hidden-wide inputs of q, k, v, gate and up whole on every rank,
// the split inputs of o and down 1/tp (a routed expert's 1/etp); A keeps the dropped copy, so x itself is kept only
// where something else saves it (layer_activation_bytes). Dropout on the adapter's output instead (NeMo AutoModel's
// LinearLoRA) keeps only its 1-byte mask of the rank's output width: A's input is x itself. Routed experts: per routed
// copy on the rank.
// `groups`: the adapter_group bits whose tensors stay (a selectively recomputed module's adapters keep none).
inline double lora_activation_bytes_per_token(const model_spec& m, std::int64_t layer, const lora_spec& l, double e,
                                              const adapter_split& sp, unsigned groups = all_adapter_groups) {
    const double r = static_cast<double>(l.rank);
    const bool dropout = l.dropout > 0.0;
    double bytes = 0.0;
    for_each_adapter(m, layer, l, [&](double d_in, double d_out, bool column, adapter_group g) {
        if ((groups & static_cast<unsigned>(g)) == 0) return;
        const double split = adapter_width_split(g, sp);
        const double in = column ? d_in : d_in / split, out = column ? d_out / split : d_out;  // this rank's widths
        const double drop = !dropout ? 0.0 : l.dropout_on_output ? out : (e + 1.0) * in;
        bytes += adapter_copies_per_token(m, g, sp) * (e * r + drop);
    });
    return bytes;
}

// The adapters' own kernels in a training step, per token of one layer on one rank (PEFT's lora.Linear.forward:
// result + lora_B(lora_A(dropout(x))) * scaling; litgpt's LoRA layer alike): forward, A's and B's GEMMs (2r/e FLOPs a
// byte: memory-bound below r ~ 300 on an H100), the scaling and the add to the frozen projection's output, and the
// dropout (over the output width when it follows the adapter); backward, the scaling's gradient, each GEMM's input
// and weight gradients, the dropout's mask, and x's gradient summed with the frozen path's. Bytes at `e` per element
// (1 per mask byte); `gemm_*` of the r-wide GEMMs; kernels once per module the rank runs. `groups`: the adapter_group
// bits counted (selective recompute reruns some).
struct adapter_traffic {
    double gemm_flops = 0.0, gemm_bytes = 0.0, gemm_kernels = 0.0;          // forward; the backward is twice each
    double forward_bytes = 0.0, backward_bytes = 0.0, forward_kernels = 0.0, backward_kernels = 0.0;  // element-wise
    // Another's traffic `n` times (n layers alike).
    void add(const adapter_traffic& o, double n) {
        gemm_flops += n * o.gemm_flops, gemm_bytes += n * o.gemm_bytes, gemm_kernels += n * o.gemm_kernels;
        forward_bytes += n * o.forward_bytes, backward_bytes += n * o.backward_bytes;
        forward_kernels += n * o.forward_kernels, backward_kernels += n * o.backward_kernels;
    }
};
inline adapter_traffic lora_adapter_traffic_per_token(const model_spec& m, std::int64_t layer, const lora_spec& l,
                                                      double e, const adapter_split& sp,
                                                      unsigned groups = all_adapter_groups) {
    const double r = static_cast<double>(l.rank);
    const bool dropout = l.dropout > 0.0;
    adapter_traffic out;
    for_each_adapter(m, layer, l, [&](double d_in, double d_out, bool column, adapter_group g) {
        if ((groups & static_cast<unsigned>(g)) == 0) return;
        const double n = adapter_copies_per_token(m, g, sp), modules = adapter_modules(m, g, sp);
        const double split = adapter_width_split(g, sp);
        const double in = column ? d_in : d_in / split, o = column ? d_out / split : d_out;  // this rank's widths
        out.gemm_flops += n * 2.0 * r * (in + o);
        out.gemm_bytes += n * (in + 2.0 * r + o) * e;  // A reads x, writes x·A; B reads it, writes its output
        out.gemm_kernels += 2.0 * modules;
        out.forward_bytes += n * 5.0 * o * e;          // * scaling (read, write), + the frozen output (2 reads, a write)
        out.backward_bytes += n * (2.0 * o + 3.0 * in) * e;  // the scaling's gradient; x's two gradients summed
        out.forward_kernels += 2.0 * modules;
        out.backward_kernels += 2.0 * modules;
        if (dropout) {
            // On the input: read x, write the dropped copy and the mask; on the output, the same over the output
            // width; the backward multiplies the gradient by the mask.
            const double width = l.dropout_on_output ? o : in;
            out.forward_bytes += n * width * (2.0 * e + 1.0);
            out.backward_bytes += n * width * (2.0 * e + 1.0);
            out.forward_kernels += modules;
            out.backward_kernels += modules;
        }
    });
    return out;
}

// The whole model's adapters.
inline lora_parameters lora_model_parameters(const model_spec& m, const lora_spec& l) {
    lora_parameters out;
    for (std::int64_t i = 0; i < m.layers; ++i) {
        const lora_parameters p = lora_layer_parameters(m, i, l);
        out.dense += p.dense;
        out.routed_experts += p.routed_experts;
    }
    return out;
}

// Adapters one device holds for layers [first, first + count): dense adapters split over tp, routed experts' over
// ep x etp (as their weights are; the replicated half of each split adapter, r·d per projection, is left out).
inline double lora_device_parameters(const model_spec& m, const lora_spec& l, int first, int count,
                                     const parallelism_spec& p) {
    // Per layer kind (MoE, linear attention, mixer, FFN), once: a layout search asks per layout.
    std::array<lora_parameters, model_spec::layer_kinds> kind{};
    std::array<bool, model_spec::layer_kinds> known{};
    double dense = 0.0, routed = 0.0;
    m.for_layer_runs(first, count, [&](std::int64_t i, std::int64_t n) {
        const unsigned k = m.layer_kind(i);
        if (!known[k]) kind[k] = lora_layer_parameters(m, i, l), known[k] = true;
        for (std::int64_t j = 0; j < n; ++j) dense += kind[k].dense, routed += kind[k].routed_experts;  // per layer
    });
    return dense / p.tp + routed / (static_cast<double>(p.ep) * p.etp);
}

}  // namespace capplan
