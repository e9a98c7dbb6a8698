// The result of an estimate, nested as the public result JSON (docs/scenario.md): sizes in
// bytes, times in seconds. A field that is not computed stays empty and is absent from the
// JSON, never zero.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "capplan/analysis/cost.hpp"
#include "capplan/analysis/parameters.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/units.hpp"

namespace capplan {

struct model_result {
    std::string name;
    std::string model_type;
    std::string source;
    std::int64_t parameters = 0;
    std::int64_t active_parameters = 0;
    parameter_breakdown breakdown;
};

struct memory_result {
    std::optional<data_size> per_device;
    std::optional<data_size> capacity;  // per device, from the accelerator catalog (as marketed)
    std::optional<data_size> visible;   // what programs can allocate (driver-reported), when the catalog knows it
    std::optional<bool> fits;
    std::optional<data_size> weights;   // per device
    std::optional<data_size> weights_total;  // whole model, all devices' shards together
    std::optional<data_size> kv_cache;
    std::optional<data_size> kv_cache_per_token;
    std::optional<data_size> kv_offloaded;  // of kv_cache, on the offload tier (inference.kv_offload)
    std::optional<data_size> activations;
    std::optional<data_size> logits;
    std::optional<data_size> gradients;
    std::optional<data_size> optimizer;
    std::optional<data_size> master_weights;
    std::optional<data_size> host_offload;  // host memory per device (optimizer offload)
    std::optional<data_size> overhead;      // runtime reservation (context, workspaces, buffers)
    std::optional<data_size> usable;        // capacity x memory utilization
    std::optional<int> stage;               // the pipeline stage these per-device figures are for
};

struct inference_result {
    std::optional<double> ttft_s, tpot_s, e2e_latency_s, throughput_tokens_per_s;
    std::optional<double> throughput_tokens_per_s_per_device;  // output tokens / s / accelerator
    std::optional<double> tokens_per_s_per_user;               // streaming rate one user sees: 1 / TPOT
    std::optional<std::int64_t> batch;               // requests resident at once (the memory model's batch)
    std::optional<std::int64_t> context_tokens;      // per request: input + output
    std::optional<std::int64_t> max_batch;           // most requests of context_tokens that fit
    std::optional<std::int64_t> max_context_tokens;  // longest context at `batch` requests
    std::optional<int> smallest_tp;                  // smallest tp (within a node) that fits
    // Under concurrency, from the serving simulation (percentiles over requests).
    std::optional<double> ttft_p90_s, ttft_p99_s, tpot_p90_s, tpot_p99_s, e2e_p99_s;
    std::optional<double> ttft_mean_s, tpot_mean_s, e2e_mean_s;  // means, as benchmark clients also report
    std::optional<double> itl_s, itl_mean_s, itl_p90_s, itl_p99_s;  // inter-token latency: every token gap, pooled
    std::optional<double> busy_fraction, kv_occupancy_mean;
    std::optional<std::int64_t> preemptions, simulated_requests;
    std::string method;                              // "roofline" (static batch) or "simulation"
    std::string engine;                              // the engine profile the scenario ran with
    std::optional<std::int64_t> prefill_steps;       // roofline: forward steps the static batch's prompts take
    // Speculative decoding: tokens a request gains per target step, decode speed-up at the batch over
    // the same engine without it, and the smallest batch where it no longer pays (none: pays up to max_num_seqs).
    std::optional<double> speculative_tokens_per_step, speculative_speedup;
    std::optional<std::int64_t> speculative_breakeven_batch;
    // Prefix caching: prompt tokens per request served from the cache, and computed.
    std::optional<std::int64_t> prefix_cached_tokens, prefix_computed_tokens;
    // Disaggregated serving: each pool's replicas, one request's KV transfer, each pool's busy share.
    std::optional<int> prefill_replicas, decode_replicas;
    std::optional<double> kv_transfer_s, prefill_utilization, decode_utilization;
    // KV offload: the rate one device gets offloaded blocks back at; the reload a decode step waits for.
    std::optional<double> kv_reload_bytes_per_s, kv_reload_per_step_s;
};

struct training_result {
    double step_time_s = 0.0, tokens_per_s = 0.0, mfu = 0.0, hfu = 0.0, model_tflops_per_device = 0.0;
    std::int64_t micro_batches = 0;
    double trainable_parameters = 0.0;  // the model's, or its LoRA adapters' (all ranks together)
    std::vector<std::tuple<std::string, double, double>> breakdown;  // (term, time_s, exposed_s) per step
    std::optional<double> time_to_train_s, gpu_hours, cost;
    // Data loading (data_pipeline.hpp): what the job reads and what its storage supplies.
    std::optional<double> data_read_bytes_per_s, data_supply_bytes_per_s, data_wait_fraction;
    std::string data_bottleneck;
};

struct flops_result {
    std::optional<flop_count> prefill;        // forward of one prompt (LM head on its last token)
    std::optional<flop_count> decode_token;   // forward of one generated token mid-answer
    std::optional<flop_count> model_step;     // training step, global batch: forward + backward (MFU numerator)
    std::optional<flop_count> hardware_step;  // ... plus recomputation (HFU numerator)
};

struct chain_stage {
    std::string stage;
    duration time;
    double utilization = 0.0;
};

// Where one operator of an engine step sits on the roofline (Williams et al. 2009, CACM 52(4)):
// arithmetic intensity = flops / bytes; attained rate = flops / time (launches included).
struct roofline_op {
    std::string phase;  // "prefill" (one prompt) or "decode" (one step at the batch)
    std::string op;     // summed over the layers on one device
    double flops = 0.0, bytes = 0.0, time_s = 0.0;
    bool compute_bound = false;
};

struct roofline_summary {
    double peak_flops_per_s = 0.0;       // dense peak of the compute format (catalog)
    double memory_bytes_per_s = 0.0;     // peak memory bandwidth (catalog)
    double gemm_efficiency = 0.0, memory_efficiency = 0.0;  // the roofs the model attains
    std::vector<roofline_op> ops;
};

struct checkpoint_summary {
    bool io = true;  // false: no storage tier, so only the size and the failure rate (the I/O fields are null)
    double size_bytes = 0.0, save_s = 0.0, restore_s = 0.0, stall_s = 0.0;
    std::string bottleneck;
    double interval_s = 0.0;        // Young/Daly optimal compute time between checkpoints
    double mtbf_s = 0.0;            // the job's mean time between failures
    double goodput = 0.0;           // useful / wall time with checkpoints and failures
    double failures_per_day = 0.0;
};

struct cold_start_summary {
    duration total;                 // start to first token: load + engine initialisation
    duration load;                  // weights from storage into GPU memory
    std::vector<chain_stage> chain; // storage, host memory, host link, engine init
    std::string bottleneck;
};

struct system_summary {
    std::string preset;
    std::string accelerator;
    int count = 0;
    int per_node = 0;
    int nodes = 0;
    std::string weights_format;
    std::string kv_cache_format;
    int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
    bool attention_dp = false;
    // What a node reaches remote storage over (checkpoints, cold starts, data, KV reloads): its own storage links, else
    // its compute NICs; "" and empty when neither is known (storage_io.hpp's node_storage_network).
    std::optional<byte_rate> storage_network;
    std::string storage_network_over;  // "storage links" or "compute NICs"
};

struct estimate_result {
    model_result model;
    system_summary system;
    memory_result memory;
    std::optional<inference_result> inference;
    std::optional<flops_result> flops;
    std::optional<training_result> training;
    std::optional<cold_start_summary> cold_start;
    std::optional<checkpoint_summary> checkpoint;
    std::optional<roofline_summary> roofline;  // inference: the main operators of prefill and decode
    std::vector<chain_stage> chain;
    std::optional<std::string> bottleneck;
    std::optional<bool> feasible;
    std::optional<cost_result> cost;  // asked for with a `cost` object
    // "section.key" -> [low, high]: where the measured value lies for 8 rows in 10, by the validated quantity's error
    // band (spec/uncertainty.hpp); the JSON writes it as "<key>_range" in the key's section.
    std::map<std::string, std::pair<double, double>> ranges;
    std::vector<std::string> reasons;
    std::vector<std::string> warnings;  // input that is allowed but suspicious (context beyond the model's)
    std::vector<std::string> notes;     // assumptions the numbers rest on
    std::string efficiency_table;       // speed: "catalog" (per-accelerator defaults) or a calibration's name
    std::string catalog_version;
};

// The result as JSON text (see docs/scenario.md for the layout).
std::string to_json(const estimate_result& r, int indent = 2);
// A cost section alone, as in the result's "cost".
std::string to_json(const cost_result& c, int indent = -1);
// Typed specs as JSON (SI numbers, null for unknown), for bindings and printers.
std::string to_json(const model_spec& m, int indent = -1);
std::string to_json(const system_spec& s, int indent = -1);
std::string to_json(const accelerator_spec& a, int indent = -1);

}  // namespace capplan
