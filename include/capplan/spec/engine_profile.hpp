// Serving-engine profiles (inference.engine): the engine-dependent defaults a scenario would otherwise
// spell out key by key, each with the engine's own source. A scenario's explicit keys override them.
//
// What a profile sets: how a prompt's kernels reach the GPU (prefill_dispatch), how requests are
// admitted to the KV cache (kv_admission), whether prompts are chunked, the paged-cache block, the
// share of memory the engine takes, and the step token budget and sequence limit (by accelerator:
// engines give large-memory GPUs larger defaults). Host work per step is not published as a number for
// any of them (their overlap schedulers hide most of it): 0, as before; measure and set
// inference.engine_overhead. Each engine's own all-reduce kernel for decode-size tensor-parallel
// messages (analysis/engine_allreduce.hpp) replaces NCCL's below its size limit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "capplan/analysis/engine_allreduce.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/hardware_spec.hpp"

namespace capplan {

// An engine's step token budget and sequence limit for accelerators with at least `min_memory` of
// driver-visible memory (A100s excluded where the engine excludes them), largest first.
struct engine_limits_tier {
    double min_memory_gib = 0.0;
    bool excludes_a100 = false;
    std::int64_t step_tokens = 2048, max_num_seqs = 256;
};

struct engine_profile {
    std::string name;     // the scenario's value
    std::string engine;   // engine and version the values were read from
    std::string prefill_dispatch, kv_admission;
    bool chunked_prefill = true;
    std::int64_t kv_block_tokens = 16;
    double memory_utilization = 0.9;
    std::vector<engine_limits_tier> tiers;
    std::string source;   // where each value comes from
    engine_allreduce allreduce;  // its tensor-parallel all-reduce kernel (inference.custom_allreduce)

    // The tier `a` falls in (an accelerator of unknown memory: the smallest).
    const engine_limits_tier& limits(const accelerator_spec& a) const {
        const auto mem = a.usable_memory();
        for (const auto& t : tiers) {
            if (t.excludes_a100 && a.name.rfind("A100", 0) == 0) continue;
            if (mem && *mem >= t.min_memory_gib * units::GiB) return t;
        }
        return tiers.back();
    }
};

inline const std::vector<engine_profile>& engine_profiles() {
    static const std::vector<engine_profile> profiles = [] {
        std::vector<engine_profile> v = {
            {"vllm-v1", "vLLM V1 (v0.11)", "graph", "on_demand", true, 16, 0.9, {{70, true, 8192, 1024}, {0, false, 2048, 256}},
             "vllm/engine/arg_utils.py @99d7eb5 (OpenAI server: 8,192 batched tokens and 1,024 sequences on GPUs with "
             ">= 70 GiB that are not A100, else 2,048 and 256); block_size 16 and gpu_memory_utilization 0.9 (vLLM's cache "
             "config); prompts run in piecewise CUDA graphs (cudagraph_mode FULL_AND_PIECEWISE) up to the 512-token "
             "capture size; chunked prefill and recompute preemption on", {}},
            {"sglang", "SGLang (v0.5)", "eager", "on_demand", true, 16, 0.9,
             {{160, false, 16384, 1024}, {60, false, 8192, 1024}, {35, false, 4096, 256}, {0, false, 2048, 256}},
             "python/sglang/srt/server_args.py _handle_gpu_memory_settings: chunked_prefill_size 16,384 from 160 GiB (B200, "
             "MI300), 8,192 from 60 GiB (H100, H200), 4,096 from 35 GiB, 2,048 below; prefill outside CUDA graphs unless "
             "--enable-piecewise-cuda-graph (capplan's eager dispatch, docs/formulas.md section 14). Not SGLang's own: it "
             "caps running requests by its KV pool rather than a count (capplan keeps vLLM's 1,024 / 256), sizes "
             "mem_fraction_static by a formula (capplan keeps 0.9), and pages by token (costed as 16-token blocks)", {}},
            {"trtllm-pytorch", "TensorRT-LLM PyTorch backend (1.x LLM API, trtllm-serve)", "eager", "reserve", false, 32, 0.9,
             {{0, false, 8192, 2048}},
             "tensorrt_llm/llmapi/llm_args.py: max_num_tokens 8,192, max_batch_size 2,048, KvCacheConfig "
             "free_gpu_memory_fraction 0.9 and tokens_per_block 32; TorchLlmArgs enable_chunked_prefill False; "
             "SchedulerConfig capacity_scheduler_policy GUARANTEED_NO_EVICT (reserve); CUDA graphs for decode only "
             "(prefill dispatched eagerly)", {}},
        };
        using namespace units;
        // vLLM's kernel (SGLang runs a copy of it, sgl-kernel @0bb5d5e9). Not modelled: vLLM >= 0.11 hands some
        // sizes on Hopper and Blackwell to torch symmetric memory or NCCL's symmetric kernels instead
        // (vllm/distributed/device_communicators/all_reduce_utils.py); capplan keeps the kernel's own rule.
        const engine_allreduce vllm_kernel{
            "vLLM custom all-reduce (one-shot / two-shot through CUDA IPC buffers)", {2, 4, 6, 8},
            {{2, 8 * MiB}, {4, 512 * KiB}, {8, 256 * KiB}}, 8 * MiB,
            "csrc/custom_all_reduce.cuh @036bb685: one-shot on 2 GPUs, on up to 4 below 512 KiB, on up to 8 below "
            "256 KiB, else two-shot; vllm/distributed/device_communicators/custom_all_reduce.py: world sizes 2, 4, 6, "
            "8, all GPUs NVLink-connected beyond 2, messages below max_size 8,192 KiB (larger: NCCL)"};
        v[0].allreduce = vllm_kernel;
        v[1].allreduce = vllm_kernel;
        v[1].allreduce.source = "sgl-kernel's copy of vLLM's kernel (@0bb5d5e9), same rule: " + vllm_kernel.source;
        v[2].allreduce = {"TensorRT-LLM custom all-reduce (AllReduceStrategy AUTO: one-shot / two-shot, then NCCL)",
                          {2, 4, 8}, {{2, 8 * MiB}, {4, 1 * MiB}, {8, 512 * KiB}}, 8 * MiB,
                          "cpp/tensorrt_llm/common/customAllReduceUtils.h @005b299b, AUTO's table for SM90 without "
                          "fusion: on 8 GPUs one-shot up to 256 KiB, two-shot from 512 KiB to 4 MiB, NCCL from 8 MiB "
                          "(the table's entries are powers of two: capplan takes one-shot below 512 KiB, how AUTO "
                          "rounds between 256 and 512 KiB is not documented); 2 GPUs one-shot up to 8 MiB; 4 GPUs "
                          "one-shot below 1 MiB (the earlier heuristic)"};
        // TensorRT engines share the LLM API's arguments; the engine runs the whole step as one graph.
        engine_profile trt = v.back();
        trt.name = "trtllm-tensorrt";
        trt.engine = "TensorRT-LLM TensorRT engines (1.x LLM API)";
        trt.prefill_dispatch = "graph";
        trt.source = "the LLM API's shared arguments (tensorrt_llm/llmapi/llm_args.py): max_num_tokens 8,192, "
                     "max_batch_size 2,048, free_gpu_memory_fraction 0.9, tokens_per_block 32, chunked prefill off, "
                     "GUARANTEED_NO_EVICT; the TensorRT engine runs the whole step as one graph";
        v.push_back(trt);
        return v;
    }();
    return profiles;
}

// The profile named `name`; config_error at `field` listing the profiles otherwise. By value (string_view): a
// reference parameter bound to a temporary string makes GCC 13 warn that the returned reference may dangle
// (-Wdangling-reference), though it refers to engine_profiles()' static table.
inline const engine_profile& find_engine_profile(std::string_view name, std::string_view field) {
    std::string names;
    for (const auto& p : engine_profiles()) {
        if (p.name == name) return p;
        names += (names.empty() ? "" : ", ") + p.name;
    }
    throw config_error(std::string(field), "'" + std::string(name) + "'", "not a serving-engine profile", names);
}

}  // namespace capplan
