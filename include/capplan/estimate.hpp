// The main entry point: a scenario in, a result out.
#pragma once

#include "capplan/catalog.hpp"
#include "capplan/report/result.hpp"
#include "capplan/spec/scenario.hpp"

namespace capplan {

// Everything the current models compute for `s`. Infeasibility is reported in the result.
estimate_result estimate(const scenario& s, const catalog& cat = default_catalog());

// The parts of an estimate a caller reads (a sweep's columns): a part left out is not computed and its section stays
// empty; every figure computed is the same either way, and feasibility with its reasons is always computed.
struct estimate_parts {
    bool memory_limits = true;  // inference.max_batch, max_context_tokens, smallest_tp (computed anyway for a plan
                                // that does not fit: its reason names them)
    bool cold_start = true;
    bool checkpoint = true;     // its restart time includes the cold start's engine initialisation
    bool flops = true;
    bool ranges = true;         // the <key>_range bands
    bool cost = true;           // when the scenario asks for one
    bool notes = true;          // the explanations beside the figures (result.notes); reasons and warnings always
    bool data_pipeline = true;  // a training job's data reading from the system's storage (training.data.*)
    bool roofline_ops = true;   // where each operator of a step sits on the roofline (roofline.ops: a table, no column)

    // Only what every estimate computes: feasibility and its reasons, memory, latency, throughput, step time, MFU.
    static constexpr estimate_parts headline() {
        return {.memory_limits = false, .cold_start = false, .checkpoint = false, .flops = false, .ranges = false,
                .cost = false, .notes = false, .data_pipeline = false, .roofline_ops = false};
    }
};
estimate_result estimate(const scenario& s, const catalog& cat, const estimate_parts& parts);

}  // namespace capplan
