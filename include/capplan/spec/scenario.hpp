// The scenario: a model, a system, number formats, a parallel layout and a workload.
// Parsed from the public scenario JSON (docs/scenario.md) by scenario_io.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capplan/units.hpp"

#include "capplan/dtype.hpp"
#include "capplan/spec/cost_spec.hpp"
#include "capplan/spec/efficiency_table.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/spec/model_spec.hpp"
#include "capplan/spec/serving_features.hpp"

namespace capplan {

// The format a precision defaults to, found once.
inline const number_format& bf16_format() {
    static const number_format& f = find_format("bf16");
    return f;
}

struct precision_spec {
    number_format weights = bf16_format();
    number_format activations = bf16_format();
    number_format kv_cache = bf16_format();
    number_format compute = bf16_format();
    // The routed experts' own format when it differs (gpt-oss ships them in MXFP4, the rest in bf16).
    std::optional<number_format> expert_weights = {};

    const number_format& experts() const { return expert_weights ? *expert_weights : weights; }
};

struct parallelism_spec {
    int tp = 1;   // tensor parallel
    int pp = 1;   // pipeline parallel
    int dp = 1;   // data parallel (inference: replicas)
    int cp = 1;   // context parallel
    int ep = 1;   // expert parallel: ranks the routed experts are spread over (whole experts per rank)
    int etp = 1;  // expert tensor parallel: each expert split over etp ranks (default: tp when ep = 1, else 1)
    int vpp = 1;  // virtual pipeline stages per rank (interleaved schedule)
    bool sequence_parallel = false;
    // Routed-token load of the busiest expert-parallel rank over the mean (>= 1; 1 = balanced, as
    // forced-balance benchmarks run; real routing without EPLB is higher). It sets the pace of the
    // expert GEMMs and all-to-alls; with ep = 1 every device holds every expert and it has no effect.
    double expert_imbalance = 1.0;
    // Attention data parallelism (serving MoE models; TensorRT-LLM enable_attention_dp, SGLang
    // --enable-dp-attention): within each tp group everything but the routed experts (attention,
    // embeddings, dense and shared MLPs, the LM head) is replicated and each rank serves its own 1/tp
    // of the requests with their whole KV cache; the routed experts are spread over ep = tp ranks.
    bool attention_dp = false;
    // How context-parallel ranks share the sequence's keys and values (training): "ring" (ring attention, K/V chunks
    // passed around and overlapped with attention), "all_gather" (Llama 3: K/V all-gathered before attention,
    // gradients reduce-scattered, on the critical path), "all_to_all" (DeepSpeed-Ulysses: Q, K, V and the output
    // re-split from sequence to heads and back, on the critical path).
    std::string cp_algorithm = "ring";
    // Training's pipeline schedule: "1f1b" (PipeDream-Flush; interleaved when vpp > 1) or "dualpipe" (DeepSeek-V3
    // arXiv:2412.19437 §3.2.1: micro-batches fed from both ends, each rank holding two stages, a forward and a backward
    // chunk overlapped so that their all-to-alls and pipeline sends run under the other's compute).
    std::string pipeline_schedule = "1f1b";
    // How ranks map to GPUs, fastest-varying first: "tp-cp-ep-dp-pp" (Megatron-LM's default: a data-parallel group
    // spans tp x cp x dp GPUs) or "tp-cp-pp-dp" (Llama 3 §3.3.2, TorchTitan: data parallelism outermost, its groups
    // range over the whole cluster, so they are the ones that cross pods).
    std::string rank_order = "tp-cp-ep-dp-pp";
    bool dualpipe() const { return pipeline_schedule == "dualpipe"; }

    int model_parallel() const { return tp * pp * cp; }
    // The tensor-parallel split of attention and the other non-expert weights (1 with attention_dp).
    int attention_tp() const { return attention_dp ? 1 : tp; }
    // The ranks a step's requests are spread over for everything but the routed experts.
    int attention_ranks() const { return attention_dp ? tp : 1; }
};

enum class recompute_kind { none, selective, full };

// What "selective" recompute redoes in the backward: Megatron-Core's TransformerConfig.recompute_modules (bit i is
// recompute_module_names[i]). core_attn alone is Korthikanti et al. 2022 §5; the others free a module's saved tensors
// and rerun its forward (the MoE recipes of Megatron-Bridge: DeepSeek-V3 mla_up_proj and mlp).
enum class recompute_module : unsigned {
    core_attn = 1u << 0, mla_up_proj = 1u << 1, layernorm = 1u << 2, mlp = 1u << 3,
    moe = 1u << 4, moe_act = 1u << 5, shared_experts = 1u << 6
};
inline const std::vector<std::string> recompute_module_names{"core_attn", "mla_up_proj", "layernorm", "mlp",
                                                             "moe", "moe_act", "shared_experts"};

// LoRA fine-tuning (Hu et al. 2021, arXiv:2106.09685): the base is frozen (in any format: QLoRA's NF4 too) and
// each targeted projection W (d_in -> d_out) learns B·A, A: rank x d_in, B: d_out x rank (lora.hpp).
// qkv_proj and gate_up_proj: one adapter over a fused projection (Megatron / NeMo linear_qkv and linear_fc1; Phi-3's
// qkv_proj and gate_up_proj), in place of separate ones on its parts.
enum class lora_target { q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, qkv_proj, gate_up_proj };
inline const std::vector<std::string> lora_projections{"q_proj", "k_proj", "v_proj", "o_proj",   "gate_proj",
                                                       "up_proj", "down_proj", "qkv_proj", "gate_up_proj"};  // in order
// "all_linear": each projection its own adapter (q_proj .. down_proj), as PEFT wraps a Llama-style model's.
inline const std::vector<std::string> lora_all_linear(lora_projections.begin(),
                                                      lora_projections.begin() + static_cast<std::ptrdiff_t>(lora_target::down_proj) + 1);
struct lora_spec {
    std::int64_t rank = 0;
    double dropout = 0.0;      // LoRA dropout (PEFT lora_dropout)
    // Where the dropout applies: on each adapter's input (PEFT, torchtune, litgpt, NeMo 2 and Megatron-Bridge) or on
    // its output (NeMo AutoModel's LinearLoRA and NeMo 1.x's ParallelLinearAdapter by default).
    bool dropout_on_output = false;
    bool all_linear = false;   // targets given as "all_linear": the model's own linear modules (lora.hpp)

    // Names from lora_projections (the reader has checked them; others are ignored).
    void set_targets(const std::vector<std::string>& names) {
        targets_ = names;
        on_.fill(false);
        for (const auto& n : names) {
            const auto it = std::find(lora_projections.begin(), lora_projections.end(), n);
            if (it != lora_projections.end()) on_[static_cast<std::size_t>(it - lora_projections.begin())] = true;
        }
    }
    const std::vector<std::string>& targets() const { return targets_; }
    // A flag per projection: the memory and speed models ask it per layer of every layout a search ranks.
    bool has(lora_target t) const { return on_[static_cast<std::size_t>(t)]; }

private:
    std::vector<std::string> targets_;
    std::array<bool, static_cast<std::size_t>(lora_target::gate_up_proj) + 1> on_{};
};

struct training_spec {
    std::int64_t seq_len = 0;
    // Sequence packing (fine-tuning): the mean tokens of one sample among those packed into a sequence, each attending
    // only within itself (THD layout, cu_seqlens); 0: one sample a sequence.
    std::int64_t packed_sample_tokens = 0;
    std::int64_t global_batch = 0;  // sequences per optimizer step
    std::int64_t micro_batch = 1;
    recompute_kind recompute = recompute_kind::none;
    unsigned recompute_modules = static_cast<unsigned>(recompute_module::core_attn);  // with recompute "selective"
    int zero = 0;                   // ZeRO stage over the shard group: 1 optimizer, 2 + gradients, 3 + weights
    int shard_group = 0;            // ranks ZeRO/FSDP shards over; 0 = all of dp (HSDP: a divisor of dp)
    bool distributed_optimizer = false;  // Megatron-LM: optimizer states sharded over dp (= ZeRO-1)
    // Megatron's main gradients (DDP grad_reduce_in_fp32): accumulated and reduced in fp32 (true) or in 16 bits
    // (false, as Megatron-Bridge's performance recipes set it); unset: fp32 with the distributed optimizer only.
    std::optional<bool> grad_reduce_in_fp32;
    std::string optimizer = "adamw";     // adamw, adam, sgd (momentum), adafactor
    bool master_weights = true;          // fp32 master copy when weights are stored in < 32 bits
    std::string optimizer_state_format = "fp32";  // Adam moments: fp32 or bf16
    bool offload_optimizer = false;      // optimizer states (and master weights) in host memory
    bool async_checkpoint = true;        // training stalls only for the copy to host memory
    bool ckpt_fully_parallel_save = true;   // replicated shards written once, spread over their replicas (Megatron default)
    bool ckpt_fully_parallel_load = false;  // read once and exchanged among replicas (Megatron --ckpt-fully-parallel-load)
    double straggler_factor = 1.0;       // >= 1: the slowest rank's compute time / the model's
    bool tp_comm_overlap = false;        // tensor-parallel communication pipelined with the GEMMs
    // Data-parallel traffic under compute (both on by default, as PyTorch DDP / FSDP and Megatron-Bridge's recipes run):
    // gradient reductions bucketed behind the backward, parameter all-gathers prefetched behind the forward.
    bool overlap_grad_reduce = true;
    bool overlap_param_gather = true;
    bool ep_comm_overlap = false;        // expert-parallel all-to-alls under another micro-batch's compute
    // The MoE token dispatcher: "alltoall" (NCCL all-to-all, every routed copy sent) or "deepep" / "hybridep"
    // (DeepEP normal kernels, HybridEP: each token crosses the network once per node, then NVLink fans it out).
    std::string moe_dispatcher = "alltoall";
    bool flash_attention = true;         // false: attention scores materialised (Megatron-LM before 2023)
    // The fused attention kernel: "fused" (at the matrix units' efficiency) or one with published rates on the
    // accelerator (measured_attention_kernels: FlashAttention v1, v2, Triton; analysis/attention_kernel.hpp).
    std::string attention_kernel = "fused";
    bool dropout = false;                // attention and hidden dropout (Megatron-LM's GPT default 0.1)
    bool fp8_params = false;             // FP8 primary weights (Megatron --fp8-param-gather): no 16-bit copy
    // Megatron-Core activation_func_fp8_input_store: the gated activation's input (SwiGLU's gate and up) kept in FP8.
    bool activation_func_fp8_input_store = false;
    // Data loading (data_pipeline.hpp): bytes per token (default by vocabulary), or per sample for
    // non-token datasets, files per sample for small-file datasets, the host's decode rate.
    std::optional<data_size> data_bytes_per_token, data_sample_size;
    double data_files_per_sample = 0.0;
    std::optional<double> data_decode_samples_per_s_per_node;
    std::optional<lora_spec> lora;       // LoRA / QLoRA fine-tuning: a frozen base, trained adapters
    bool eager_kernels = false;          // kernels "eager": unfused PyTorch norms and SwiGLU (Hugging Face, litgpt)
    // torch.autocast over fp32 weights (the Hugging Face Trainer's bf16=True on an fp32 model, Composer's amp_bf16,
    // Lightning's bf16-mixed): the residual stream stays fp32 and each GEMM casts its weight; with eager kernels
    // (eager_kernels.hpp). Otherwise the model is held in its 16-bit format (fp32 master weights in the optimizer).
    bool autocast = false;
    // The loss kernel ("cross_entropy"): fused (Transformer Engine / Liger / flash-attn xentropy: one pass that writes the
    // gradient in place) or unfused (PyTorch F.cross_entropy in fp32, Megatron-LM without --cross-entropy-loss-fusion).
    bool fused_cross_entropy = true;
    std::optional<double> tokens;        // tokens to train on: gives time and GPU-hours
    std::optional<double> price_per_device_hour;  // gives the cost
    int mtp_layers = 0;                  // multi-token-prediction modules trained beside the model (DeepSeek-V3 §2.2)

    // Whether selective recompute reruns module `r` (never under "none"; "full" reruns every layer whole).
    bool recomputes(recompute_module r) const {
        return recompute == recompute_kind::selective && (recompute_modules & static_cast<unsigned>(r)) != 0;
    }
};

// How requests arrive and how long they are, for the serving simulation (serving_sim.hpp).
struct length_spec {
    std::string kind = "fixed";  // fixed (the scenario's token count), uniform, lognormal, trace
    std::int64_t min = 1, max = 0;  // uniform bounds; lognormal cap (0: none)
    double sigma = 0.0;             // lognormal: standard deviation of ln(length); median = the token count
};
struct trace_request {
    std::int64_t input_tokens = 0, output_tokens = 0;
    std::optional<duration> arrival;
};
struct workload_input {
    std::string arrival = "closed_loop";  // closed_loop (concurrency users), poisson, constant_rate, trace
    double rate_per_s = 0.0;
    duration think_time;                   // closed loop: mean think time between a user's requests
    std::optional<duration> turnaround;    // closed loop: an answer's end to the next request reaching the engine
    length_spec input, output;
    std::vector<trace_request> trace;      // rows of a CSV trace (input_tokens,output_tokens[,arrival_s])
    std::int64_t requests = 0;             // measured requests (0: max(200, 4 x users))
    std::optional<std::int64_t> warmup_requests;  // issued first, left out of the statistics (closed loop: users)
    std::uint64_t seed = 1;
};

// Host work a serving engine adds to its steps, beyond the kernels (each unset: the engine's value).
struct engine_overhead_spec {
    std::optional<duration> step;           // every step: scheduling, sampling, output
    std::optional<duration> prefill_step;   // a step that runs a prompt, once
    std::optional<duration> prefill_kernel; // a step that runs a prompt, per kernel it launches (eager host dispatch)
};

// The serving-engine behaviours a scenario (and sizing) may name.
inline const std::vector<std::string> kv_admission_policies{"on_demand", "reserve"};
inline const std::vector<std::string> prefill_dispatches{"graph", "eager"};

// Disaggregated serving: prompts on one pool of engines, decoding on another, the KV cache crossing
// between them (DistServe arXiv:2401.09670, Splitwise arXiv:2311.18677; NVIDIA Dynamo, SGLang and vLLM
// PD disaggregation).
struct serving_pool {
    int count = 1;   // accelerators in the pool (a multiple of tp): count / tp replicas
    int tp = 1;
    int ep = 1;      // MoE: routed experts over ep ranks of each replica
    std::optional<accelerator_spec> accelerator;  // another accelerator than the system's
    std::optional<system_spec> node = {};            // then its own node (links, size): catalog::accelerator_node
    int replicas() const { return count / tp; }
};
struct disaggregation_spec {
    serving_pool prefill, decode;
    std::optional<link_spec> kv_transfer;  // the link the caches cross; none: NVLink within a node, the NICs across
};

// KV-cache offload (vLLM's CPU offloading connector, LMCache, SGLang HiCache, Dynamo's KV block
// manager): cache blocks beyond GPU memory live in host memory or on a storage tier and come back over
// the host link when attended.
struct kv_offload_spec {
    std::string tier;     // "host", or the catalog storage name
    data_size capacity;   // per node
    byte_rate reload;     // one device's rate back to GPU memory (resolved from the catalog when read)
    std::string how;      // where that rate comes from
};

struct inference_spec {
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::optional<std::int64_t> batch;        // requests decoded together
    bool batch_max = false;                   // batch "max": the largest that fits
    std::optional<std::int64_t> concurrency;  // users with a request in flight
    double memory_utilization = 0.9;          // share of device memory the engine may use (vLLM default 0.9)
    std::int64_t kv_block_tokens = 16;        // paged KV-cache block size in tokens (vLLM default 16)
    std::int64_t prefill_chunk_tokens = 0;    // tokens in one forward step (chunked-prefill budget); 0 = engine default
    std::int64_t max_num_seqs = 0;            // sequences the engine schedules at most; 0 = engine default
    std::string kv_admission = "on_demand";   // on_demand (vLLM, SGLang: preempts) or reserve (TensorRT-LLM: no eviction)
    std::optional<data_size> runtime_reserve; // overrides the per-device runtime reservation
    std::optional<workload_input> workload;   // arrivals and length distributions for the simulation
    // How a prompt's kernels reach the GPU: "graph" (a TensorRT engine or a captured CUDA graph) or
    // "eager" (PyTorch engines' prefill: Python dispatches each kernel, serial with them).
    std::string prefill_dispatch = "graph";
    engine_overhead_spec engine_overhead;     // overrides of the engine's per-step host work
    std::optional<speculative_spec> speculative;
    std::optional<prefix_cache_spec> prefix_cache;
    std::optional<disaggregation_spec> disaggregation;
    std::optional<kv_offload_spec> kv_offload;
    std::string engine = "vllm-v1";           // the engine profile (engine_profile.hpp) the defaults above came from
    bool chunked_prefill = true;              // prompts split over steps of prefill_chunk_tokens (TensorRT-LLM: off)
    // Tensor-parallel all-reduces of decode size through the engine's own kernel (engine_allreduce.hpp);
    // false: NCCL for every size (vLLM --disable-custom-all-reduce).
    bool custom_allreduce = true;
};

// How weights reach the GPUs at start-up (cold_start.hpp has the model).
struct cold_start_spec {
    bool page_cache_warm = false;
    bool pinned = false;
    bool gpudirect_storage = false;
    bool overlapped = false;
    int connections = 16;
    std::optional<duration> engine_init;
};

struct scenario {
    model_spec model;
    system_spec system;
    precision_spec precision;
    parallelism_spec parallelism;
    std::optional<training_spec> training;
    std::optional<inference_spec> inference;
    cold_start_spec cold_start;
    std::optional<efficiency_table> calibration;  // efficiency by kernel size measured on the accelerator
    std::optional<cost_spec> cost;                // asked for: what the plan costs to own or rent (analysis/cost.hpp)
};

// The site a scenario's `cost` uses when it names none (models/sites/).
inline constexpr const char* default_cost_site = "US-colocation";

// Served as released: an inference scenario that names no expert format keeps the experts in the format the
// model's release quantises them alone to (gpt-oss: mxfp4). The scenario reader and sizing both call it.
inline void apply_released_expert_format(scenario& s) {
    if (!s.training && !s.precision.expert_weights && !s.model.released_expert_format.empty())
        s.precision.expert_weights = find_format(s.model.released_expert_format, "/precision/expert_weights");
}

// One pipeline (tp x pp ranks) does not fit a node: its stage-to-stage sends cross the scale-out network.
inline bool pipeline_spans_nodes(const scenario& s) {
    return s.parallelism.tp * s.parallelism.pp > s.system.per_node;
}

}  // namespace capplan
