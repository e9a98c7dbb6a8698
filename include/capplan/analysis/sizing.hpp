// Sizing to an SLO: for each candidate accelerator, the smallest count and layout (TP, PP across
// nodes for models larger than a node, replicas, weight and KV formats) whose simulated p99 TTFT and
// TPOT meet the targets for N concurrent users, ranked by cost per hour when prices are given; the
// reasons other candidates were rejected.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "capplan/catalog.hpp"
#include "capplan/progress.hpp"
#include "capplan/spec/efficiency_table.hpp"
#include "capplan/spec/model_spec.hpp"
#include "capplan/spec/serving_features.hpp"
#include "capplan/units.hpp"

namespace capplan {

struct sizing_request {
    model_spec model;
    std::int64_t concurrency = 1;
    std::int64_t input_tokens = 0, output_tokens = 0;
    duration ttft_p99, tpot_p99;
    std::vector<std::string> accelerators;           // empty: every accelerator with a system preset
    std::map<std::string, double> price_per_hour;     // per accelerator-hour, by accelerator name
    // Weight formats to try (bf16, fp16, fp8, int8, int4, nvfp4, mxfp4; integer formats are weight-only and
    // compute in bf16; nvfp4 and mxfp4 compute in FP4 with an fp8 KV cache where the catalog has an FP4 matrix
    // efficiency, nvfp4 on NVIDIA parts). Empty: bf16, plus fp8 (with bf16 and fp8 KV caches) where the accelerator
    // has an fp8 peak.
    std::vector<std::string> weights;
    int max_replicas = 64;
    // Efficiency tables measured on some of the accelerators (capplan calibrate): each is used for
    // its accelerator in the compute formats it measured; the others keep the catalog's.
    std::vector<efficiency_table> calibrations;
    // The serving engine's behaviour (inference_spec): how a prompt's kernels are dispatched ("graph"
    // or "eager") and how requests are admitted to the KV cache ("on_demand" or "reserve").
    // Empty: the engine profile's (spec/engine_profile.hpp), whose other defaults (chunking, block size,
    // memory share, step budget and sequence limit) apply too.
    std::string engine = "vllm-v1";
    std::string prefill_dispatch;
    std::string kv_admission;
    // Serving features (inference.speculative, inference.prefix_cache): the prefix cache applies to every
    // layout; speculative decoding is tried with and without, and the option says which won.
    std::optional<speculative_spec> speculative;
    std::optional<prefix_cache_spec> prefix_cache;
    // Also try disaggregated prefill and decode pools: of one accelerator (an option with fewer devices
    // than its best aggregated layout is added beside it), and, given prices, prefill on one accelerator
    // and decode on another (added when cheaper than both accelerators' own options).
    bool disaggregated = false;
    // The engine's step token budget and sequence limit, the same on every candidate (0: the profile's, when all
    // candidates share it, else the profile's for the largest GPUs): engines' defaults differ by GPU, and a
    // comparison of hardware should not be one of defaults.
    std::int64_t prefill_chunk_tokens = 0, max_num_seqs = 0;
};

struct sizing_option {
    std::string accelerator, system;
    int count = 0, tp = 0, pp = 1, replicas = 0;
    std::string weights, kv_cache;
    duration ttft_p99, tpot_p99;
    double output_tokens_per_s = 0.0;
    std::optional<double> cost_per_hour;
    std::string efficiency_table = "catalog";  // or the calibration's name
    int ep = 1;                                // MoE: the routed experts spread over ep = tp ranks
    bool attention_dp = false;                 // MoE: attention data parallel, experts over ep = tp
    bool speculative = false;                  // with the request's speculative decoding (it needed fewer devices or met the targets sooner)
    // Disaggregated: the prefill pool's replicas and the decode pool's (tp each); 0: aggregated. With
    // pools of two accelerators, the prefill pool's accelerator and tp (`accelerator` and `tp`: the decode pool's).
    int prefill_replicas = 0, decode_replicas = 0;
    std::string prefill_accelerator = {};
    int prefill_tp = 0;
    // Why fewer devices of this accelerator would not do: the closest miss (which p99 over its target, by how much)
    // at the next smaller count tried, or that fewer do not hold the weights and caches. Empty: none fewer tried.
    std::string why_not_fewer = {};
};

struct sizing_result {
    std::vector<sizing_option> options;                          // the best per accelerator, ranked
    std::vector<std::pair<std::string, std::string>> rejected;   // (accelerator, why)
    std::string engine_config;  // the engine configuration every candidate ran with, in words
    int accelerators = 0;           // to search
    int accelerators_searched = 0;  // of those, searched to the end (all, unless stopped)
    bool stopped = false;           // asked to stop (progress::request_stop) before the end: the options of those
                                    // searched (with disaggregated pools of two accelerators, perhaps not every pair)
};

// `watch`, when given, counts the accelerators searched and can stop the search early (progress.hpp).
sizing_result size_inference(const sizing_request& request, const catalog& cat, progress* watch = nullptr);

}  // namespace capplan
