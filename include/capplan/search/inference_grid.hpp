// A grid of static-batch inference estimates evaluated on typed scenarios, without JSON per point:
// for each layout (a scenario, parsed once) and each combination of the workload axes, whether the
// batch fits memory, memory per device, TTFT, TPOT and output tokens/s, exactly as estimate()
// computes them for a static batch (inference.batch), without the serving simulation, cold start
// or notes. Millions of points run in seconds (bench/bench_search.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capplan/spec/scenario.hpp"

namespace capplan {

// The workload axes a grid varies per point: inference.input_tokens, inference.output_tokens,
// inference.batch. Anything else (model, system, formats, parallelism) differs between layouts.
const std::vector<std::string>& inference_grid_keys();

struct grid_axis {
    std::string key;
    std::vector<std::int64_t> values;
};

struct inference_grid {
    std::vector<std::string> keys;                  // the workload axes, in order
    std::vector<std::uint32_t> layout;              // per point: index of its layout
    std::vector<std::vector<std::int64_t>> inputs;  // inputs[axis][point]
    std::vector<std::uint8_t> fits;                 // per point (1 = the batch fits memory)
    std::vector<double> per_device_bytes, ttft_s, tpot_s, output_tokens_per_s;
    std::vector<std::string> errors;                // per point: empty, or why its layout cannot run
    std::size_t size() const { return fits.size(); }
};

// Points: layouts x the axes' combinations (the last axis varies fastest). Every layout must carry
// an inference workload (its values are the defaults of the axes it does not vary). Throws
// config_error naming the axis for an unknown key or a value below 1; a layout that cannot run
// (`layout_errors[i]` non-empty, or a speed set-up that fails) gives its reason on its points.
inference_grid sweep_inference_grid(const std::vector<scenario>& layouts, const std::vector<std::string>& layout_errors,
                                    const std::vector<grid_axis>& axes, int threads = 0);

}  // namespace capplan
