// Parallel-layout search for training: enumerate TP x PP x CP x EP x sequence parallelism x
// micro-batch x virtual stages x recompute x ZeRO stage (with the distributed optimizer at stage 0
// and HSDP shard groups at stages 1-3) for a model, cluster and global batch; keep the layouts that
// fit memory; rank by step time; return the top k with their breakdowns. Evaluated inside the core
// on several threads: the speed setup and weight sharding once per shape, the forward once per
// micro-batch size, and only the step's numbers per candidate (the text of a breakdown is built for
// the top k alone).
#pragma once

#include <cstdint>
#include <vector>

#include "capplan/analysis/training_perf.hpp"
#include "capplan/progress.hpp"
#include "capplan/spec/scenario.hpp"

namespace capplan {

struct layout_candidate {
    parallelism_spec parallelism;
    std::int64_t micro_batch = 1;
    recompute_kind recompute = recompute_kind::none;
    int zero = 0;
    bool distributed_optimizer = false;
    int shard_group = 0;  // ZeRO/FSDP shard group (= dp unless HSDP)
    training_performance performance;
    data_size memory_per_device;
};

struct layout_search_result {
    std::vector<layout_candidate> best;  // top k by step time, fastest first
    std::int64_t evaluated = 0;          // candidates whose step time was computed
    std::int64_t enumerated = 0;         // layouts considered (including those that do not fit)
    std::int64_t fit = 0;                // that fit memory
    std::int64_t shapes = 0;             // tp x pp x cp x ep shapes to search
    std::int64_t shapes_searched = 0;    // of those, searched (all, unless stopped)
    bool stopped = false;                // asked to stop (progress::request_stop): the best of the shapes searched
};

// `base` holds the model, system, precision and training (seq_len, global_batch, optimizer...);
// its parallelism and micro_batch / recompute / zero are what the search varies. `watch`, when given,
// counts the shapes searched and can stop the search early (progress.hpp).
layout_search_result search_training_layouts(const scenario& base, int top_k = 10, int threads = 0,
                                             progress* watch = nullptr);

}  // namespace capplan
