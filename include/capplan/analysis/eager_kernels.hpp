// PyTorch's eager element-wise kernels in one training micro-batch (training.kernels "eager": Hugging Face
// transformers, litgpt, torchtune without torch.compile), counted kernel by kernel around the GEMMs and attention:
// the norms, the residual adds, rotary embedding, the attention output's and q/k/v gradients' copies, autocast's casts
// and autograd's gradient casts and accumulations. The MLP's activation and the loss are training_perf's (§15).
//
// Bytes per element come from each kernel's operands' dtypes as PyTorch runs them (docs/formulas.md §15, "Eager
// element-wise kernels"). Under torch.autocast over fp32 weights (training.autocast) the residual stream is fp32: the
// embedding's output is, and an fp32 tensor plus a 16-bit GEMM output stays fp32; autograd casts each gradient back
// to its input's dtype (torch/csrc/autograd/engine.cpp validate_outputs). Otherwise the residual has the
// activations' width and the norms run as Hugging Face's fp32 chains and PyTorch's autocast layer_norm do.
//
// Each kernel is priced by its class (eager_class.hpp) at the class's measured efficiency in the catalog
// (efficiency.eager_elementwise); a class without one runs at the memory efficiency of its kernels' size.
#pragma once

#include <array>
#include <cstddef>

#include "capplan/analysis/eager_class.hpp"
#include "capplan/spec/scenario.hpp"

namespace capplan {

// Bytes moved and kernels launched, by class.
struct eager_traffic {
    std::array<double, eager_classes> bytes{}, kernels{};
    // `b` bytes in all over `k` kernels in all.
    void add(eager_class c, double b, double k) {
        bytes[static_cast<std::size_t>(c)] += b;
        kernels[static_cast<std::size_t>(c)] += k;
    }
    // Another's bytes, and its kernels `count` times (a module's kernels of one instance, repeated).
    void add(const eager_traffic& o, double count = 1.0) {
        for (std::size_t c = 0; c < eager_classes; ++c) bytes[c] += o.bytes[c], kernels[c] += count * o.kernels[c];
    }
    // Another's bytes and kernels, both `share` times (the model's kernels standing for more or fewer layers).
    void add_share(const eager_traffic& o, double share) {
        for (std::size_t c = 0; c < eager_classes; ++c) bytes[c] += share * o.bytes[c], kernels[c] += share * o.kernels[c];
    }
};

struct eager_step_traffic {
    eager_traffic forward, backward;
};

// The eager element-wise kernels of one micro-batch through the whole model on one tensor-parallel rank (the caller
// divides by the pipeline stages). `tokens`: the rank's tokens of the micro-batch; `cast_parameters`: the weights a
// forward casts to 16 bits under autocast (each GEMM's; the embedding lookup's table is not cast; none for a quantised
// LoRA base, which its dequantisation writes in 16 bits, and no gradient casts for a frozen base).
eager_step_traffic eager_elementwise_traffic(const scenario& s, double tokens, double cast_parameters);

// The weight matrices autocast casts a step, one kernel each: Hugging Face's modules, layer by layer. Softmax attention:
// q, k, v apart or fused (model_spec::hf_fused_qkv), and o; MLA: q (or q_a and q_b), kv_a, kv_b and o; another mixer:
// its in and out projections. A dense MLP: gate and up apart or fused (or a lone up), down; a MoE layer: every expert's
// (as Mixtral's per-expert modules), the shared experts' one MLP and the router (Qwen's shared-expert gate not
// counted). And the LM head.
double hf_weight_matrices(const model_spec& m);

}  // namespace capplan
