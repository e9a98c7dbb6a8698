// A grid of static-batch inference estimates evaluated on typed scenarios, without JSON per point:
// for each combination of the axes, whether the batch fits memory, memory per device, TTFT, TPOT
// and output tokens/s, exactly as estimate() computes them for a static batch (inference.batch),
// without the serving simulation, cold start or notes. Spreadsheet-sized grids of millions of
// points run in seconds (bench/bench_search.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "capplan/spec/scenario.hpp"

namespace capplan {

// Keys a grid may vary: inference.input_tokens, inference.output_tokens, inference.batch and
// parallelism.tp (dp follows as system.count / (tp x pp x cp), as a scenario without dp gets it).
const std::vector<std::string>& inference_grid_keys();

struct grid_axis {
    std::string key;
    std::vector<std::int64_t> values;
};

struct inference_grid {
    std::vector<std::string> keys;                  // the axes, in order
    std::vector<std::vector<std::int64_t>> inputs;  // inputs[axis][point]
    std::vector<std::uint8_t> fits;                 // per point (1 = the batch fits memory)
    std::vector<double> per_device_bytes, ttft_s, tpot_s, output_tokens_per_s;
    std::vector<std::string> errors;  // per point: empty, or why the point has no numbers
    std::size_t size() const { return fits.size(); }
};

// `base` must carry an inference workload (its batch is the default batch). Throws config_error
// naming the axis for an unknown key or a value below 1; a point whose layout cannot run gets its
// reason in `errors` and NaN numbers.
inference_grid sweep_inference_grid(const scenario& base, const std::vector<grid_axis>& axes, int threads = 0);

}  // namespace capplan
