// Serving engines' own all-reduce kernels for tensor-parallel messages of decode size. vLLM, SGLang and
// TensorRT-LLM do not call NCCL for these: each rank copies its partial sums into a buffer its peers
// can address (CUDA IPC), and a single kernel sums them:
//
//   one-shot  t = L1 + (n - 1) S / B          every rank reads each peer's whole buffer and sums it
//   two-shot  t = L2 + 2 (n - 1) / n S / B     reduce-scatter, then all-gather, through the peers' buffers
//
// B is what one GPU drives over its scale-up link: the link's rate per direction times the collective
// efficiency NCCL's rings reach on it (collective_efficiency, 0.80 on NVSwitch: 360 GB/s on H100/H200,
// the "~370 GB/s effective" an NCCL maintainer gives, NVIDIA/nccl-tests #212). The fixed costs are
// fitted, one row each, to vLLM's benchmark of its kernels on 4 H100s (vllm-project/vllm PR #24111, a
// 0.5 MiB message: one-shot 10 us, two-shot 17 us):
//   L1 = 10 us - 3 x 0.5 MiB / 360 GB/s = 5.6 us,   L2 = 17 us - 1.5 x 0.5 MiB / 360 GB/s = 14.8 us.
// The other rows of that benchmark (1 to 4 MiB, 4 and 6 GPUs) are held out: tests/data/published_engine_allreduce.json.
// The engine picks one-shot or two-shot by size and GPU count, and hands larger messages to NCCL
// (spec/engine_profile.hpp gives each engine's thresholds and their sources).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capplan/analysis/collectives.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/units.hpp"

namespace capplan {

namespace engine_allreduce_latency {
inline constexpr double one_shot_us = 5.6;
inline constexpr double two_shot_us = 14.8;
}  // namespace engine_allreduce_latency

// An engine's all-reduce kernel: which group sizes it runs on, where it switches from one-shot to
// two-shot, and the message size from which the engine calls NCCL instead.
struct engine_allreduce {
    std::string kernel;                                  // empty: NCCL for every message
    std::vector<int> group_sizes;                        // GPU counts the kernel supports
    std::vector<std::pair<int, data_size>> one_shot_below;  // up to `first` GPUs: one-shot below `second`
    data_size max_size;                                  // messages of this size and larger go to NCCL
    std::string source;

    bool supports(int gpus) const {
        for (int n : group_sizes)
            if (n == gpus) return true;
        return false;
    }
    bool one_shot(data_size bytes, int gpus) const {
        for (const auto& [n, below] : one_shot_below)
            if (gpus <= n) return bytes < below;
        return false;
    }
};

// What one GPU drives to its peers for the kernel, or nothing where the engine does not run it: the
// group must sit in one node and reach every peer directly (NVSwitch or a full mesh), except that two
// GPUs may pair over any peer link (vLLM: custom all-reduce on PCIe only for two GPUs).
std::optional<byte_rate> engine_allreduce_bandwidth(const system_spec& system, int gpus);

enum class allreduce_algorithm { one_shot, two_shot };

inline duration engine_allreduce_time(allreduce_algorithm a, data_size bytes, int gpus, byte_rate bandwidth) {
    using namespace units;
    const double n = gpus;
    if (a == allreduce_algorithm::one_shot) return engine_allreduce_latency::one_shot_us * us + bytes * (n - 1.0) / bandwidth;
    return engine_allreduce_latency::two_shot_us * us + bytes * (2.0 * (n - 1.0) / n) / bandwidth;
}

// The engine's time for one all-reduce of `bytes` over `gpus`, or nothing when it would call NCCL.
inline std::optional<duration> engine_allreduce_time(const engine_allreduce& k, data_size bytes, int gpus,
                                                     std::optional<byte_rate> bandwidth) {
    if (k.kernel.empty() || !bandwidth || !k.supports(gpus) || bytes >= k.max_size) return std::nullopt;
    const auto a = k.one_shot(bytes, gpus) ? allreduce_algorithm::one_shot : allreduce_algorithm::two_shot;
    return engine_allreduce_time(a, bytes, gpus, *bandwidth);
}

// One all-reduce through the engine's kernel as a collective result (capplan collective --engine): the
// engine's own choice of one-shot or two-shot, or `forced`; config_error at /engine or /algorithm where
// the engine would not run it (an unsupported group or system, a message at or beyond its limit).
collective_result engine_allreduce_result(const engine_allreduce& k, const std::string& engine, data_size bytes,
                                          const system_spec& system, int gpus,
                                          std::optional<allreduce_algorithm> forced = std::nullopt);

}  // namespace capplan
