// Inference speed: a per-operator roofline of one engine step, and TTFT / TPOT / throughput.
//
// Each operator of a forward step on one device (one tensor-parallel rank) costs
//     time = ||(FLOPs / (peak x gemm efficiency), bytes / (memory bandwidth x memory efficiency))||_p
//            + kernels x launch overhead          (p-norm: the larger of the two away from the ridge)
// (Williams, Waterman & Patterson 2009, "Roofline", CACM 52(4)); tensor-parallel all-reduces come
// from the collective model; the step adds the engine's per-step overhead. Operators: attention
// projections, the attention core (prefill: FlashAttention, compute-bound, no score matrix; decode:
// reads the KV cache), the MLP or the routed experts a step touches, norms and elementwise passes,
// and the LM head for the positions that are sampled. Efficiencies and overheads are data
// (perf_efficiency), with their sources; a calibration replaces them.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "capplan/analysis/collectives.hpp"
#include "capplan/analysis/engine_allreduce.hpp"
#include "capplan/analysis/eager_class.hpp"
#include "capplan/analysis/flops.hpp"
#include "capplan/analysis/kv_cache.hpp"
#include "capplan/analysis/sharding.hpp"
#include "capplan/analysis/step_model.hpp"
#include "capplan/spec/scenario.hpp"

namespace capplan {

struct perf_efficiency {
    double gemm = 0.0;          // achieved / peak dense matrix throughput (large kernels)
    // Mixture-of-experts expert GEMMs (grouped / fused MoE kernels): their ceiling, below the dense
    // one in today's engines (catalog efficiency.grouped_matmul); 0: as dense.
    double grouped_gemm = 0.0;
    double memory = 0.0;        // achieved / peak memory bandwidth (large kernels)
    // PyTorch's eager element-wise kernels by eager_class (catalog efficiency.eager_elementwise); 0: as memory_at.
    std::array<double, eager_classes> eager{};
    duration per_kernel;        // launch and tail per kernel (CUDA graphs in decode)
    duration per_step;          // engine scheduling, sampling and host work per step
    duration per_prefill_step;  // more for a step that runs a prompt (no CUDA graph for prefill)
    duration per_prefill_kernel;  // and more per kernel it launches: an eager (Python) prefill's host dispatch
    double roofline_norm = std::numeric_limits<double>::infinity();  // p of overlapped_roofline
    std::string source;         // where the numbers come from
    std::string table = "catalog";  // the efficiency table used: "catalog" or a calibration's name
    // By the work of one kernel, from a calibration, as fractions of the accelerator's own peaks;
    // empty: the scalars above at every size.
    efficiency_curve gemm_by_size, attention_by_size, memory_by_size, norm_by_size;
    double gemm_at(double flops_per_kernel) const {
        return gemm_by_size.empty() ? gemm : gemm_by_size.at(flops_per_kernel);
    }
    // A grouped kernel is no faster than a dense one of the same work, nor than its own ceiling.
    double grouped_gemm_at(double flops_per_kernel) const {
        const double dense = gemm_at(flops_per_kernel);
        return grouped_gemm > 0.0 ? std::min(dense, grouped_gemm) : dense;
    }
    // A training attention kernel's published rate / the compute format's peak (attention_kernel.hpp); 0: none named.
    double attention_kernel = 0.0;
    double attention_at(double flops_per_kernel) const {
        return attention_by_size.empty() ? gemm_at(flops_per_kernel) : attention_by_size.at(flops_per_kernel);
    }
    // The softmax attention core: the named kernel's rate, else as attention_at.
    double softmax_attention_at(double flops_per_kernel) const {
        return attention_kernel > 0.0 ? attention_kernel : attention_at(flops_per_kernel);
    }
    double memory_at(double bytes_per_kernel) const {
        return memory_by_size.empty() ? memory : memory_by_size.at(bytes_per_kernel);
    }
    double eager_at(eager_class c, double bytes_per_kernel) const {
        const double v = eager[static_cast<std::size_t>(c)];
        return v > 0.0 ? v : memory_at(bytes_per_kernel);
    }
    double norm_at(double bytes_per_kernel) const {
        return norm_by_size.empty() ? memory_at(bytes_per_kernel) : norm_by_size.at(bytes_per_kernel);
    }
};

// One kernel's time from its compute time c and its memory time m: the p-norm (c^p + m^p)^(1/p).
// Far from the ridge that is the larger one (Williams et al. 2009); near it a kernel runs slower than
// either when its loads and its matrix work do not overlap well (at the ridge 2^(1/p) x the larger).
// p is the accelerator's (catalog efficiency.roofline_norm, fitted to published GEMM times across the
// ridge: A100 2; docs/formulas.md section 14); without one, max(c, m) (p infinite: Hopper's GEMMs
// fit that best, their small-kernel losses being in the by-size curve).
inline duration overlapped_roofline(duration compute, duration memory, double p) {
    const double c = compute.si(), m = memory.si(), larger = std::max(c, m);
    if (larger <= 0.0 || std::isinf(p)) return larger * units::s;
    if (p == 2.0) return std::hypot(c, m) * units::s;
    return larger * std::pow(std::pow(c / larger, p) + std::pow(m / larger, p), 1.0 / p) * units::s;
}

// Defaults with their sources (src/inference_perf.cpp); explain false leaves `source` empty (the numbers only).
perf_efficiency default_perf_efficiency(const accelerator_spec& a, const number_format& compute, bool explain = true);
// The defaults with a calibration's curves in their place. The table must have been measured on
// this accelerator and hold a curve for the compute format (config_error at "/calibration" otherwise).
perf_efficiency calibrated_perf_efficiency(const efficiency_table& t, const accelerator_spec& a,
                                           const number_format& compute);

// The step's operator for the norms, residual adds and rotary passes (training with eager kernels replaces it).
inline constexpr const char* norms_op_name = "norms and elementwise";

struct op_time {
    std::string_view op;  // a string literal: a step is costed thousands of times a simulation, without allocating
    flop_count flops;
    data_size bytes;
    duration time;
    bool compute_bound = false;
};

struct step_breakdown {
    std::vector<op_time> ops;  // summed over the layers of the model (one device's share)
    duration compute;          // sum of operator times
    duration communication;    // the three below, not overlapped
    duration tp_allreduce;     // tensor-parallel all-reduces
    duration ep_alltoall;      // expert-parallel dispatch and combine
    duration pipeline_send;    // activations passed from stage to stage (pp - 1 sends)
    duration overhead;         // per-step engine overhead
    duration kv_reload;        // offloaded KV blocks the step attends, back over the host link (overlapped)
    double kernels = 0.0;      // kernels launched (all layers)
    // Of `compute`: the MoE layers' operators outside the attention core, of those the routed experts' grouped GEMMs,
    // and the MoE layers' attention cores (training's combined 1F1B pairs them with the all-to-alls phase by phase).
    duration moe_layers, routed_experts, moe_attention_core;
    // The reload is prefetched layer by layer under the step's kernels: the slower of the two sets the pace.
    duration total() const { return std::max(compute + communication, kv_reload) + overhead; }
};

// Layers differ only in keeping a sliding window or routing to experts: each kind is costed once, at its first
// layer, and counted (a 96-layer model costs at most four layers). Kinds: full, windowed, linear or no mixer;
// dense, MoE or no feed-forward (hybrid block stacks).
struct layer_kinds {
    struct kind {
        std::int64_t first = 0, count = 0;
    };
    kind kinds[12];
    int n = 0;  // 0: not computed
    layer_kinds() = default;
    explicit layer_kinds(const model_spec& m);
};

struct drafter_setup;

// Everything the step model needs, precomputed once per scenario.
struct perf_setup {
    const model_spec* model = nullptr;
    layer_kinds kinds;  // the model's, when made by from(); a setup built by hand leaves n = 0 (each step finds them)
    layer_kinds layers() const { return kinds.n > 0 ? kinds : layer_kinds(*model); }
    parallelism_spec parallelism;
    precision_spec precision;
    flop_rate peak;            // dense peak of the compute format on one device
    byte_rate memory_bandwidth;
    perf_efficiency efficiency;
    // Collective times by size, from the collective model at powers of two, interpolated; each grid
    // point is computed the first time a size near it is asked for (steps reuse a handful of sizes).
    struct collective_grid {
        collective_op op = collective_op::all_reduce;
        collective_group group;
        mutable std::vector<double> seconds;  // by log2(bytes); < 0 = not computed yet
        // All-reduces below the engine's limit run its own kernel at this bandwidth (engine_allreduce.hpp),
        // costed at their exact size by allreduce(); the grid holds NCCL's times.
        const engine_allreduce* engine = nullptr;
        std::optional<byte_rate> engine_bandwidth;
        collective_options options;  // e.g. a node-deduplicating MoE dispatcher
        bool empty() const { return group.gpus <= 1; }
        duration at(const system_spec& sys, int k) const;
    };
    collective_grid allreduce_grid;  // tensor parallel
    collective_grid alltoall_grid;   // expert-parallel dispatch/combine
    const system_spec* system = nullptr;  // the scenario's (a setup lives within its scenario, as `model` does)
    flop_rate vector_peak;     // fp32 (non-tensor) peak: dequantising weight-only formats runs there
    double dequant_ops = 0.0;  // operations per weight element to dequantise (0: none)
    double expert_dequant_ops = 0.0;  // the same for the routed experts (their own format, precision.expert_weights)
    bool flash_attention = true;  // false: the s x s scores computed in full and kept in memory (training_perf_setup)
    bool dropout = false;         // training with attention and hidden dropout (training_perf_setup)
    // LoRA under FP8 GEMMs: the adapters' r-wide GEMMs run in 16 bits, at that format's peak and efficiency
    // (training_perf_setup); null: at `peak` and `efficiency`.
    struct gemm_rate {
        flop_rate peak;
        perf_efficiency efficiency;
    };
    std::shared_ptr<const gemm_rate> adapter_gemm;
    duration pipeline_send_latency;
    byte_rate pipeline_send_bandwidth;
    // Speculative decoding (inference.speculative): the drafter's own step model (none for n-gram
    // lookup), the tokens it drafts per step and the tokens a request gains per step on average.
    std::shared_ptr<const drafter_setup> drafter;
    std::int64_t draft_tokens = 0;
    double tokens_per_step = 1.0;
    // KV-cache offload (inference.kv_offload): cache tokens a replica holds in GPU memory; beyond them a
    // step's attended tokens come back over the host link at `reload_rate`, bytes_per_token each per device.
    struct offload {
        std::int64_t gpu_tokens = 0;
        data_size bytes_per_token;
        byte_rate reload_rate;
        bool active() const { return reload_rate.si() > 0; }
    } kv_offload;

    // Sources and notes written (efficiency.source, the training step's notes); false: the numbers only (a headline
    // estimate, a layout search), the same numbers.
    bool explain = true;

    // The setup keeps pointers into `s` (its model and system): `s` must outlive it, and a temporary cannot be given.
    static perf_setup from(const scenario& s, bool explain = true);
    static perf_setup from(scenario&&, bool explain = true) = delete;
    // An engine's own kernel at the message's exact size (its switch points fall between grid sizes), else NCCL's grid.
    duration allreduce(data_size bytes) const {
        if (allreduce_grid.engine && !allreduce_grid.empty())
            if (const auto t = engine_allreduce_time(*allreduce_grid.engine, bytes, allreduce_grid.group.gpus,
                                                     allreduce_grid.engine_bandwidth))
                return *t;
        return interpolate(allreduce_grid, bytes);
    }
    duration alltoall(data_size bytes) const { return interpolate(alltoall_grid, bytes); }
    duration interpolate(const collective_grid& grid, data_size bytes) const;
};

// A draft model, EAGLE head or MTP module costed as its own model on the target's devices. It owns
// the scenario its step model points into.
struct drafter_setup {
    scenario drafter;
    perf_setup setup;
};

// One operator kind's totals over the layers of a step.
struct op_totals {
    flop_count flops;
    data_size bytes;
    duration time;
    duration compute_part, memory_part;
    double kernels = 0.0;
};

// What a step costs apart from its attention cores and KV reload: every other operator and the
// communication. It depends on the step's token and request counts alone, not on the contexts read.
struct step_token_costs {
    op_totals projections, mlp, norms, head;
    duration tp_allreduce, ep_alltoall, pipeline_send;
    duration moe_layers, routed_experts;  // as step_breakdown's
    static step_token_costs of(const perf_setup& s, const batch_step& step, const layer_kinds& kinds);
};

step_breakdown step_time_breakdown(const perf_setup& s, const batch_step& step);
// The same, with the step's token costs given (step_token_costs::of of the same counts) and the model's layer kinds.
step_breakdown step_time_breakdown(const perf_setup& s, const batch_step& step, const step_token_costs& token_costs,
                                   const layer_kinds& kinds);
inline duration step_time(const perf_setup& s, const batch_step& step) { return step_time_breakdown(s, step).total(); }

// step_time for the thousands of steps of one serving simulation: their token and request counts repeat (a
// closed loop of 50 users runs a few hundred distinct counts in thousands of steps) while the contexts grow,
// so each distinct count's token costs are computed once and only the attention cores and the KV reload every
// step. The same numbers as step_time, bit for bit (the same sums in the same order). Not thread-safe: one
// per simulation.
class step_timer {
public:
    explicit step_timer(const perf_setup& s) : setup_(s), kinds_(s.layers()) {}
    duration operator()(const batch_step& step);

private:
    struct shape {
        std::int64_t prefill_tokens, prefill_requests, decode_requests, decode_positions;
        bool rank_tokens;
        bool operator==(const shape&) const = default;
    };
    struct shape_hash {
        std::size_t operator()(const shape& k) const;
    };
    static constexpr std::size_t max_shapes = 1 << 14;  // ~5 MB of costs at most
    const perf_setup& setup_;
    layer_kinds kinds_;
    std::unordered_map<shape, step_token_costs, shape_hash> memo_;
};

struct latency_estimate {
    duration ttft;       // the static batch's prefill (no queueing) -> first tokens
    duration tpot;       // one decode step at `batch` requests of mid-answer context / tokens per step
    duration e2e;        // ttft + (output - 1) x tpot
    double output_tokens_per_s = 0.0;  // batch x output / (ttft + output x tpot), one replica
    std::int64_t prefill_steps = 0;    // forward steps the batch's prompts take
    step_breakdown prefill, decode;    // the batch's first prefill step (its whole prompts); one decode step
};

// How a static batch's prompts reach the engine.
struct prefill_plan {
    std::int64_t step_tokens = 0;    // prompt tokens one forward step may run (0: the whole batch at once)
    std::int64_t cached_tokens = 0;  // of each prompt, found in the prefix cache (not computed)
    std::int64_t reload_tokens = 0;  // of those, brought back from the KV-offload tier
};

// A static batch of `batch` requests: the prompts prefill together, as many whole prompts per step as
// the step's token budget holds (at least one), and the first tokens come when the last step ends;
// then the batch decodes together (Yu et al. 2022, Orca, OSDI '22 §2.2: static batching).
latency_estimate estimate_latency(const perf_setup& s, std::int64_t input_tokens, std::int64_t output_tokens,
                                  std::int64_t batch, const prefill_plan& plan = {});

}  // namespace capplan
