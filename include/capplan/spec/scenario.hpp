// The scenario: a model, a system, number formats, a parallel layout and a workload.
// Parsed from the public scenario JSON (docs/scenario.md) by scenario_io.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "capplan/dtype.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/spec/model_spec.hpp"

namespace capplan {

struct precision_spec {
    number_format weights = find_format("bf16");
    number_format activations = find_format("bf16");
    number_format kv_cache = find_format("bf16");
    number_format compute = find_format("bf16");
};

struct parallelism_spec {
    int tp = 1;   // tensor parallel
    int pp = 1;   // pipeline parallel
    int dp = 1;   // data parallel (inference: replicas)
    int cp = 1;   // context parallel
    int ep = 1;   // expert parallel (within tp x dp)
    int vpp = 1;  // virtual pipeline stages per rank (interleaved schedule)
    bool sequence_parallel = false;

    int model_parallel() const { return tp * pp * cp; }
};

enum class recompute_kind { none, selective, full };

struct training_spec {
    std::int64_t seq_len = 0;
    std::int64_t global_batch = 0;  // sequences per optimizer step
    std::int64_t micro_batch = 1;
    recompute_kind recompute = recompute_kind::none;
    int zero = 0;
    std::string optimizer = "adamw";
};

struct inference_spec {
    std::int64_t input_tokens = 0;
    std::int64_t output_tokens = 0;
    std::optional<std::int64_t> batch;        // requests decoded together
    bool batch_max = false;                   // batch "max": the largest that fits
    std::optional<std::int64_t> concurrency;  // users with a request in flight
};

struct scenario {
    model_spec model;
    system_spec system;
    precision_spec precision;
    parallelism_spec parallelism;
    std::optional<training_spec> training;
    std::optional<inference_spec> inference;
};

}  // namespace capplan
