#include "capplan/analysis/eager_kernels.hpp"

#include "capplan/analysis/kv_cache.hpp"
#include "capplan/analysis/sharding.hpp"

namespace capplan {

namespace {

using C = eager_class;
constexpr double f32 = 4.0;  // bytes of an fp32 element

// Adds a module's kernels to the step's: `fw` and `bw` hold the bytes of all its `count` instances and the kernels of one.
void add_instances(eager_step_traffic& out, const eager_traffic& fw, const eager_traffic& bw, double count) {
    out.forward.add(fw, count);
    out.backward.add(bw, count);
}

// `count` norms over `n` elements in all, each output cast for the GEMM after it. `e`: the activations' bytes per
// element. LayerNorm (PyTorch's, autocast runs it in fp32): the kernel reads and writes fp32; its backward's
// input-gradient kernel reads the gradient and the input and writes the gradient, the weight's kernel reads both again.
// RMSNorm (Hugging Face's LlamaRMSNorm chain): pow(2), mean, x * rsqrt (a row's scale), weight * x (a weight vector).
void norm_kernels(eager_step_traffic& out, bool rms, bool fp32_input, bool frozen_weight, double count, double n, double e) {
    eager_traffic fw, bw;
    if (!rms) {
        if (!fp32_input) fw.add(C::mixed_dtype, n * (e + f32), 1);  // autocast's cast in
        fw.add(C::reduction, n * 2.0 * f32, 1);
        fw.add(C::mixed_dtype, n * (f32 + e), 1);                    // the fp32 output cast for the GEMM
        bw.add(C::mixed_dtype, n * (e + f32), 1);                    // its gradient back to fp32
        bw.add(C::reduction, n * (3.0 + (frozen_weight ? 0.0 : 2.0)) * f32, frozen_weight ? 1 : 2);
        if (!fp32_input) bw.add(C::mixed_dtype, n * (f32 + e), 1);  // the gradient cast back to the input's dtype
        return add_instances(out, fw, bw, count);
    }
    // The chain in fp32: x.to(fp32) and .to(input dtype) are casts only when the input is 16-bit; weight * x then
    // multiplies in the input's dtype, and with an fp32 input autocast casts the fp32 output for the GEMM.
    const double w = fp32_input ? f32 : e;  // the dtype weight * x runs in
    if (!fp32_input) fw.add(C::mixed_dtype, n * (e + f32), 1);
    fw.add(C::contiguous, n * 2.0 * f32, 1);   // pow(2)
    fw.add(C::reduction, n * f32, 3);          // mean (and the row's + eps, rsqrt)
    fw.add(C::broadcast, n * 2.0 * f32, 1);    // x * rsqrt
    if (!fp32_input) fw.add(C::mixed_dtype, n * (f32 + e), 1);
    fw.add(C::broadcast, n * 2.0 * w, 1);      // weight * x
    if (fp32_input) fw.add(C::mixed_dtype, n * (f32 + e), 1);
    // Backward: the GEMM's input cast (fp32 input) or the chain's own cast back; weight * x's two gradients (the
    // weight's: a product and a row sum, none when it is frozen; x's: times the weight); x * rsqrt's two (times the
    // row's scale; a product and a row sum); mean's, expanded over the row; pow's, grad * (2 * x.pow(1)): a copy, a
    // scaling and the product (PyTorch's pow_backward); the two paths' sum; the cast to the input's dtype.
    bw.add(C::mixed_dtype, n * (e + f32), 1);
    if (!frozen_weight) {
        bw.add(C::contiguous, n * 3.0 * w, 1);
        bw.add(C::reduction, n * w, 1);
    }
    bw.add(C::broadcast, n * 2.0 * w, 1);                  // gradient * weight
    bw.add(C::broadcast, n * 2.0 * f32, 1);                // * rsqrt
    bw.add(C::contiguous, n * 3.0 * f32, 1);               // gradient * x
    bw.add(C::reduction, n * f32, 1);                      // its row sum
    bw.add(C::broadcast, n * f32, 1);                      // mean's, over the row
    bw.add(C::contiguous, n * (2.0 + 2.0 + 3.0) * f32, 3); // pow's copy, scaling and product
    bw.add(C::contiguous, n * 3.0 * f32, 1);               // the two paths' sum
    if (!fp32_input) bw.add(C::mixed_dtype, n * (f32 + e), 1);
    add_instances(out, fw, bw, count);
}

// Hugging Face's apply_rotary_pos_emb, q * cos + rotate_half(q) * sin, over `n` elements of q and k (strided
// [batch, heads, tokens, head_dim] views of the projections' outputs; cos and sin broadcast over batch and heads).
// rotate_half: the negated second half (half the elements) and a concatenation; its backward as a chunk's (one
// concatenation; Hugging Face's slices add zero-filled gradients, not counted). cos and sin take the hidden state's
// dtype: fp32 under autocast over fp32 weights, where the products are fp32 and SDPA's autocast casts q and k back.
// `count`: the q and k tensors.
void rotary_kernels(eager_step_traffic& out, bool fp32_tables, double count, double n, double e) {
    eager_traffic fw, bw;
    const double t = fp32_tables ? f32 : e;  // the products' dtype
    fw.add(C::strided, n * e, 1);            // -x2, half the elements read and written
    fw.add(C::strided, n * 2.0 * e, 1);      // cat
    fw.add(C::strided, n * (e + t), 1);      // q * cos, over the strided view
    fw.add(C::broadcast, n * (e + t), 1);    // rotate_half(q) * sin
    fw.add(C::strided, n * 3.0 * t, 1);      // their sum (one operand strided)
    // Backward: each product's gradient times cos or sin, then cast to q's dtype when the tables are fp32; the negation
    // and the halves put back; the two paths' sum. With fp32 tables also SDPA's cast and its gradient's.
    bw.add(C::broadcast, n * 2.0 * 2.0 * t, 2);
    if (fp32_tables) {
        fw.add(C::mixed_dtype, n * (f32 + e), 1);
        bw.add(C::mixed_dtype, n * (e + f32), 1);
        bw.add(C::mixed_dtype, n * 2.0 * (f32 + e), 2);
    }
    bw.add(C::strided, n * (1.0 + 2.0) * e, 2);
    bw.add(C::contiguous, n * 3.0 * e, 1);
    add_instances(out, fw, bw, count);
}

}  // namespace

double hf_weight_matrices(const model_spec& m) {
    double matrices = 1.0;
    m.for_layer_runs(0, m.layers, [&](std::int64_t i, std::int64_t n) {
        double layer = 0.0;
        if (m.has_mixer(i)) {
            if (m.is_linear_layer(i)) layer += 2.0;
            else if (m.mla) layer += (m.mla_dims.q_lora_rank > 0 ? 2.0 : 1.0) + 3.0;
            else layer += (m.hf_fused_qkv() ? 1.0 : 3.0) + 1.0;
        }
        if (m.has_ffn(i)) {
            if (m.is_moe_layer(i)) {
                const double per_expert = m.moe.gated ? 3.0 : 2.0;
                // Shared experts: one MLP of their summed width (Hugging Face's DeepSeek and Qwen MoE modules).
                layer += per_expert * (static_cast<double>(m.moe.routed_experts) + (m.moe.shared_experts > 0 ? 1.0 : 0.0)) + 1.0;
            } else {
                layer += m.gated_mlp && !m.hf_fused_gate_up() ? 3.0 : 2.0;
            }
        }
        matrices += layer * static_cast<double>(n);
    });
    return matrices;
}

eager_step_traffic eager_elementwise_traffic(const scenario& s, double tokens, double cast_parameters) {
    const training_spec& t = *s.training;
    const model_spec& m = s.model;
    const parallelism_spec& p = s.parallelism;
    const double e = s.precision.activations.bytes_per_element(), tp = p.tp;
    const bool fp32_residual = t.autocast;
    const double layers = static_cast<double>(m.layers);
    // One residual-stream tensor on this rank (split over tp with sequence parallelism).
    const double hidden = tokens * static_cast<double>(m.hidden) / (p.sequence_parallel && p.tp > 1 ? tp : 1.0);
    eager_step_traffic out;
    // Every layer's norms and the final one.
    const double norms = static_cast<double>(m.norms_per_layer) * layers + 1.0;
    norm_kernels(out, m.norm == norm_kind::rms_norm, fp32_residual, t.lora.has_value(), norms, norms * hidden, e);
    // A residual add per branch (two a layer: attention's and the MLP's, where the layer has them). fp32 residual: fp32 +
    // a 16-bit branch output, written fp32; backward, the residual's gradient cast to the branch's dtype and, at each
    // branch point, the norm's input gradient added to it.
    const double branches = static_cast<double>(m.residual_branch_count()), adds = branches * hidden;
    if (fp32_residual) {
        out.forward.add(C::mixed_dtype, adds * (f32 + e + f32), branches);
        out.backward.add(C::mixed_dtype, adds * (f32 + e), branches);
        out.backward.add(C::contiguous, adds * 3.0 * f32, branches);
    } else {
        out.forward.add(C::contiguous, adds * 3.0 * e, branches);
        out.backward.add(C::contiguous, adds * 3.0 * e, branches);
    }
    // Attention, per softmax-attention layer (not linear attention's or Mamba's, whose kernels are not counted): its
    // output's [batch, heads, tokens, head_dim] -> [batch, tokens, hidden] copy; backward, q's, k's and v's gradients
    // copied back into the (fused) projection's layout.
    const double hd = static_cast<double>(m.head_dim), attention = static_cast<double>(attention_layers(m, all_layers(m)));
    const double q = tokens * static_cast<double>(m.heads) * hd / tp;
    const double kv = tokens * detail::kv_heads_per_rank(m, p.tp) * hd;
    if (!m.mla && attention > 0.0) {
        out.forward.add(C::strided, attention * q * 2.0 * e, attention);
        out.backward.add(C::strided, attention * (q + 2.0 * kv) * 2.0 * e, 3.0 * attention);
        if (!m.learned_positions) rotary_kernels(out, fp32_residual, 2.0 * attention, attention * (q + kv), e);
        if (m.qk_norm) norm_kernels(out, true, false, t.lora.has_value(), 2.0 * attention, attention * (q + kv), e);
    }
    // Gated MLPs with separate gate and up projections (Hugging Face, litgpt): their input gradients summed.
    const double dense_layers = static_cast<double>(m.dense_ffn_layer_count());
    if (m.gated_mlp && dense_layers > 0.0) out.backward.add(C::contiguous, dense_layers * hidden * 3.0 * e, dense_layers);
    // Dropout after attention and after the MLP: a 1-byte mask written and applied, read back in the backward.
    if (t.dropout) {
        out.forward.add(C::contiguous, adds * (1.0 + 2.0 * e), branches);
        out.backward.add(C::contiguous, adds * (1.0 + 2.0 * e), branches);
    }
    // Autocast casts each GEMM's fp32 weight once a forward (cached for its backward; a weight already in 16 bits is not
    // cast); backward, each 16-bit weight gradient is cast to the fp32 parameter's. A frozen LoRA base is cast only when
    // held in fp32 (a quantised one is dequantised instead: training_perf) and has no weight gradients (its adapters are
    // small). One kernel per Hugging Face module (hf_weight_matrices).
    if (fp32_residual) {
        const double matrices = hf_weight_matrices(m);
        const bool fp32_base = !s.precision.weights.quantized() && s.precision.weights.bytes_per_element() >= f32;
        if (!t.lora || fp32_base) out.forward.add(C::mixed_dtype, cast_parameters * (f32 + e), matrices);
        if (!t.lora) out.backward.add(C::mixed_dtype, cast_parameters * (e + f32), matrices);
    }
    return out;
}

}  // namespace capplan
