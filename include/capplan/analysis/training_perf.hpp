// Training step time, throughput and MFU for one parallel layout.
//
//   micro-batch forward F on a stage = the per-operator roofline of one forward over its layers
//       (inference_perf.hpp: same operators, all positions through the LM head), tp all-reduces
//       included; backward = 2 F (Narayanan et al. 2021 §3.2: twice the forward FLOPs), the fused
//       attention core 2.5 x its forward (it recomputes the scores; Dao 2023 FlashAttention-2) unless
//       training.flash_attention is off (scores materialised: the full s x s, four passes through memory);
//       recompute: full = + F, selective = + the attention core (Korthikanti et al. 2022 §5)
//   pipeline (Narayanan et al. 2021 §2.2): 1F1B step = (m + p - 1)(F + B + R) per stage,
//       interleaved with v chunks: (m + (p - 1)/v)(F + B + R) (bubble (p-1)/(v m))
//   data parallel: the gradient all-reduce (reduce-scatter + all-gather with ZeRO / distributed
//       optimizer) over dp, overlapped with the last micro-batch's backward (bucketed overlap);
//       ZeRO-3 / FSDP adds a parameter all-gather per micro-batch forward and backward over the
//       shard group (HSDP: a divisor of dp), overlapped with compute
//   pipeline sends: activations forward and gradients back, 1/tp per rank, vpp times per micro-batch;
//       overlapped with compute only in the interleaved schedule (Megatron-LM overlap_p2p_comm)
//   expert parallelism: four all-to-alls per MoE layer and micro-batch (dispatch/combine, fwd/bwd) of
//       each rank's own routed tokens; with ep_comm_overlap hidden under another micro-batch's compute
//   optimizer: memory-bound over the states this rank updates
//   MFU = model FLOPs per step / (step x devices x peak); HFU counts recomputation (flops.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capplan/spec/scenario.hpp"
#include "capplan/units.hpp"

namespace capplan {

// Where a step's term spends its time, as the result's chain names the links: the compute units, the scale-up links
// (tensor, context and expert parallelism; pipeline sends within a node), the scale-out network (data parallelism;
// pipeline sends between nodes), idle in the pipeline bubble, or the optimizer's pass through GPU memory.
enum class step_link { compute, scale_up, scale_out, bubble, optimizer };
inline constexpr std::size_t step_links = 5;

struct training_step_term {
    std::string_view term;  // forward, backward, recompute, pipeline bubble, tp communication, dp gradients, ...
    duration time;          // per step
    duration exposed;       // what is not hidden behind compute
    step_link link = step_link::compute;
};

struct training_performance {
    duration step;
    double tokens_per_s = 0.0;        // whole system
    double mfu = 0.0, hfu = 0.0;
    flop_rate model_flops_per_device; // achieved model FLOP/s per device
    std::int64_t micro_batches = 0;   // per pipeline, per step
    std::vector<training_step_term> terms;
    std::vector<std::string> notes;
};

// Throws config_error when the layout cannot run (batch not divisible, unknown peak); feasibility
// of memory is the memory model's job.
training_performance estimate_training_performance(const scenario& s, bool explain = true);
struct weight_sharding;
// The same with the model's sharding under the scenario's layout (shard_weights), made once by the caller.
training_performance estimate_training_performance(const scenario& s, const weight_sharding& w, bool explain);

struct perf_setup;
struct step_breakdown;
struct batch_step;
// The speed setup of a training scenario (perf_setup::from with the training's attention kernel).
perf_setup training_perf_setup(const scenario& s, bool explain = true);
// One micro-batch's forward as a step of the speed model (every rank routes its own tokens to the experts).
batch_step training_micro_batch(std::int64_t micro_batch, std::int64_t seq_len, int cp, std::int64_t sample_tokens = 0);
// The step's parts as numbers, without the text of a breakdown: what a layout search ranks by.
struct training_step_parts {
    std::int64_t micro_batches = 0;  // per pipeline, per step
    double straggler = 1.0;
    double bubble_micro_batches = 0.0;         // pipeline bubble in micro-batch times
    duration forward, backward, recompute;     // per micro-batch and stage
    duration fp8_casts;                        // per micro-batch and stage (FP8 training)
    duration moe_permute;                      // per micro-batch and stage: MoE token permutations (memory-bound)
    duration loss;                             // per micro-batch and stage: the cross-entropy over the logits
    duration elementwise_backward;             // part of `backward`: the activation's and eager element-wise kernels (no GEMM)
    duration tp_comm, recompute_comm;          // per micro-batch and stage, all of it
    duration tp_exposed;                       // the part of tp_comm + recompute_comm not overlapped
    duration pp_comm, pp_exposed;              // per micro-batch and stage: sends between stages, the part not overlapped
    duration cp_comm, cp_exposed;              // per micro-batch and stage: ring exchange, the part attention cannot hide
    duration ep_comm, ep_exposed;              // per micro-batch and stage: all of it, the part not overlapped
    duration bubble;                           // per step
    duration dp_time, dp_exposed;              // data-parallel gradients (+ ZeRO-3 gathers)
    duration optimizer;
    duration step;
};

// One MoE layer of one micro-batch forward beside another's backward under expert-parallel overlap (Megatron-Core's
// combined 1F1B): its pieces' times, and what its three phases take beyond the compute stream's work
// (docs/formulas.md §15, "Expert-parallel overlap by phase").
struct overlapped_moe_layer {
    duration attention_forward, attention_backward;  // attention, shared experts and router (pre_dispatch)
    duration experts_forward;                        // routed experts and the permutations beside them (mlp)
    duration experts_input_grads, experts_weight_grads;
    duration dispatch, combine;  // each, forward or backward (combine with what follows it on its stream)
    // The phases' time less the compute stream's work: the communication stream's part left exposed (>= 0).
    duration exposed() const;
};

// From pieces a search computes once and reuses: the speed setup (per tp), one micro-batch's forward
// breakdown (per tp, micro-batch, cp) and the weight sharding (per tp, pp, ep).
training_step_parts training_step_time(const scenario& s, const perf_setup& perf, const step_breakdown& forward,
                                       const weight_sharding& w);
// The same with the breakdown, throughput, MFU and notes.
training_performance assemble_training_performance(const scenario& s, const perf_setup& perf, const step_breakdown& forward,
                                                   const weight_sharding& w);

}  // namespace capplan
