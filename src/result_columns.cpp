#include "capplan/report/result_columns.hpp"

#include "capplan/error.hpp"

namespace capplan {

namespace {

using num = std::optional<double>;
using text = std::optional<std::string>;

template <class T>
num opt(const std::optional<T>& v) {
    return v ? num(static_cast<double>(*v)) : std::nullopt;
}
template <class Q>
num si(const std::optional<Q>& q) {
    return q ? num(q->si()) : std::nullopt;
}
text words(const std::string& s) { return s.empty() ? std::nullopt : text(s); }

// The sections' readers: the figure, or nothing when the section is absent.
template <class F>
num inf(const estimate_result& r, F f) {
    return r.inference ? f(*r.inference) : std::nullopt;
}
template <class F>
num trn(const estimate_result& r, F f) {
    return r.training ? num(f(*r.training)) : std::nullopt;
}
template <class F>
num flp(const estimate_result& r, F f) {
    return r.flops ? f(*r.flops) : std::nullopt;
}
// A checkpoint's I/O figures are null without a storage tier (result_json.cpp writes them so).
template <class F>
num ckpt_io(const estimate_result& r, F f) {
    return r.checkpoint && r.checkpoint->io ? num(f(*r.checkpoint)) : std::nullopt;
}
template <class F>
num ckpt(const estimate_result& r, F f) {
    return r.checkpoint ? num(f(*r.checkpoint)) : std::nullopt;
}
template <class F>
num roof(const estimate_result& r, F f) {
    return r.roofline ? num(f(*r.roofline)) : std::nullopt;
}
num usd(const std::optional<usd_estimate>& e) { return e ? num(e->usd) : std::nullopt; }
constexpr column_kind N = column_kind::number, I = column_kind::integer, B = column_kind::boolean, T = column_kind::text;

}  // namespace

const std::vector<result_column>& result_columns() {
    using R = const estimate_result&;
    static const std::vector<result_column> columns{
        {"model.parameters", I, [](R r) { return num(static_cast<double>(r.model.parameters)); }, nullptr},
        {"model.active_parameters", I, [](R r) { return num(static_cast<double>(r.model.active_parameters)); }, nullptr},
        {"system.count", I, [](R r) { return num(r.system.count); }, nullptr},
        {"system.nodes", I, [](R r) { return num(r.system.nodes); }, nullptr},
        {"system.parallelism.tp", I, [](R r) { return num(r.system.tp); }, nullptr},
        {"system.parallelism.pp", I, [](R r) { return num(r.system.pp); }, nullptr},
        {"system.parallelism.dp", I, [](R r) { return num(r.system.dp); }, nullptr},
        {"system.parallelism.cp", I, [](R r) { return num(r.system.cp); }, nullptr},
        {"system.parallelism.ep", I, [](R r) { return num(r.system.ep); }, nullptr},
        {"system.storage_network_bytes_per_s", N, [](R r) { return si(r.system.storage_network); }, nullptr},
        {"memory.per_device_bytes", N, [](R r) { return si(r.memory.per_device); }, nullptr},
        {"memory.capacity_bytes", N, [](R r) { return si(r.memory.capacity); }, nullptr},
        {"memory.visible_bytes", N, [](R r) { return si(r.memory.visible); }, nullptr},
        {"memory.fits", B, [](R r) { return opt(r.memory.fits); }, nullptr},
        {"memory.weights_bytes", N, [](R r) { return si(r.memory.weights); }, nullptr},
        {"memory.weights_total_bytes", N, [](R r) { return si(r.memory.weights_total); }, nullptr},
        {"memory.kv_cache_bytes", N, [](R r) { return si(r.memory.kv_cache); }, nullptr},
        {"memory.kv_cache_bytes_per_token", N, [](R r) { return si(r.memory.kv_cache_per_token); }, nullptr},
        {"memory.kv_offloaded_bytes", N, [](R r) { return si(r.memory.kv_offloaded); }, nullptr},
        {"memory.activations_bytes", N, [](R r) { return si(r.memory.activations); }, nullptr},
        {"memory.logits_bytes", N, [](R r) { return si(r.memory.logits); }, nullptr},
        {"memory.gradients_bytes", N, [](R r) { return si(r.memory.gradients); }, nullptr},
        {"memory.optimizer_bytes", N, [](R r) { return si(r.memory.optimizer); }, nullptr},
        {"memory.master_weights_bytes", N, [](R r) { return si(r.memory.master_weights); }, nullptr},
        {"memory.host_offload_bytes", N, [](R r) { return si(r.memory.host_offload); }, nullptr},
        {"memory.overhead_bytes", N, [](R r) { return si(r.memory.overhead); }, nullptr},
        {"memory.usable_bytes", N, [](R r) { return si(r.memory.usable); }, nullptr},
        {"memory.pipeline_stage", I, [](R r) { return opt(r.memory.stage); }, nullptr},
        {"inference.ttft_s", N, [](R r) { return inf(r, [](auto& i) { return i.ttft_s; }); }, nullptr},
        {"inference.tpot_s", N, [](R r) { return inf(r, [](auto& i) { return i.tpot_s; }); }, nullptr},
        {"inference.e2e_latency_s", N, [](R r) { return inf(r, [](auto& i) { return i.e2e_latency_s; }); }, nullptr},
        {"inference.throughput_tokens_per_s", N, [](R r) { return inf(r, [](auto& i) { return i.throughput_tokens_per_s; }); }, nullptr},
        {"inference.throughput_tokens_per_s_per_device", N,
         [](R r) { return inf(r, [](auto& i) { return i.throughput_tokens_per_s_per_device; }); }, nullptr},
        {"inference.tokens_per_s_per_user", N, [](R r) { return inf(r, [](auto& i) { return i.tokens_per_s_per_user; }); }, nullptr},
        {"inference.batch", I, [](R r) { return inf(r, [](auto& i) { return opt(i.batch); }); }, nullptr},
        {"inference.context_tokens", I, [](R r) { return inf(r, [](auto& i) { return opt(i.context_tokens); }); }, nullptr},
        {"inference.max_batch", I, [](R r) { return inf(r, [](auto& i) { return opt(i.max_batch); }); }, nullptr},
        {"inference.max_context_tokens", I, [](R r) { return inf(r, [](auto& i) { return opt(i.max_context_tokens); }); }, nullptr},
        {"inference.smallest_tp", I, [](R r) { return inf(r, [](auto& i) { return opt(i.smallest_tp); }); }, nullptr},
        {"inference.ttft_p90_s", N, [](R r) { return inf(r, [](auto& i) { return i.ttft_p90_s; }); }, nullptr},
        {"inference.ttft_p99_s", N, [](R r) { return inf(r, [](auto& i) { return i.ttft_p99_s; }); }, nullptr},
        {"inference.tpot_p90_s", N, [](R r) { return inf(r, [](auto& i) { return i.tpot_p90_s; }); }, nullptr},
        {"inference.tpot_p99_s", N, [](R r) { return inf(r, [](auto& i) { return i.tpot_p99_s; }); }, nullptr},
        {"inference.e2e_p99_s", N, [](R r) { return inf(r, [](auto& i) { return i.e2e_p99_s; }); }, nullptr},
        {"inference.ttft_mean_s", N, [](R r) { return inf(r, [](auto& i) { return i.ttft_mean_s; }); }, nullptr},
        {"inference.tpot_mean_s", N, [](R r) { return inf(r, [](auto& i) { return i.tpot_mean_s; }); }, nullptr},
        {"inference.e2e_mean_s", N, [](R r) { return inf(r, [](auto& i) { return i.e2e_mean_s; }); }, nullptr},
        {"inference.itl_s", N, [](R r) { return inf(r, [](auto& i) { return i.itl_s; }); }, nullptr},
        {"inference.itl_mean_s", N, [](R r) { return inf(r, [](auto& i) { return i.itl_mean_s; }); }, nullptr},
        {"inference.itl_p90_s", N, [](R r) { return inf(r, [](auto& i) { return i.itl_p90_s; }); }, nullptr},
        {"inference.itl_p99_s", N, [](R r) { return inf(r, [](auto& i) { return i.itl_p99_s; }); }, nullptr},
        {"inference.busy_fraction", N, [](R r) { return inf(r, [](auto& i) { return i.busy_fraction; }); }, nullptr},
        {"inference.kv_occupancy_mean", N, [](R r) { return inf(r, [](auto& i) { return i.kv_occupancy_mean; }); }, nullptr},
        {"inference.preemptions", I, [](R r) { return inf(r, [](auto& i) { return opt(i.preemptions); }); }, nullptr},
        {"inference.simulated_requests", I, [](R r) { return inf(r, [](auto& i) { return opt(i.simulated_requests); }); }, nullptr},
        {"inference.method", T, nullptr, [](R r) { return r.inference ? words(r.inference->method) : std::nullopt; }},
        {"inference.engine", T, nullptr, [](R r) { return r.inference ? words(r.inference->engine) : std::nullopt; }},
        {"inference.prefill_steps", I, [](R r) { return inf(r, [](auto& i) { return opt(i.prefill_steps); }); }, nullptr},
        {"inference.speculative.tokens_per_step", N,
         [](R r) { return inf(r, [](auto& i) { return i.speculative_tokens_per_step; }); }, nullptr},
        {"inference.speculative.speedup", N, [](R r) { return inf(r, [](auto& i) { return i.speculative_speedup; }); }, nullptr},
        {"inference.speculative.breakeven_batch", I,
         [](R r) { return inf(r, [](auto& i) { return opt(i.speculative_breakeven_batch); }); }, nullptr},
        {"inference.disaggregation.prefill_replicas", I,
         [](R r) { return inf(r, [](auto& i) { return opt(i.prefill_replicas); }); }, nullptr},
        {"inference.disaggregation.decode_replicas", I,
         [](R r) { return inf(r, [](auto& i) { return opt(i.decode_replicas); }); }, nullptr},
        {"inference.disaggregation.kv_transfer_s", N, [](R r) { return inf(r, [](auto& i) { return i.kv_transfer_s; }); }, nullptr},
        {"inference.disaggregation.prefill_utilization", N,
         [](R r) { return inf(r, [](auto& i) { return i.prefill_utilization; }); }, nullptr},
        {"inference.disaggregation.decode_utilization", N,
         [](R r) { return inf(r, [](auto& i) { return i.decode_utilization; }); }, nullptr},
        {"inference.kv_offload.reload_bytes_per_s", N,
         [](R r) { return inf(r, [](auto& i) { return i.kv_reload_bytes_per_s; }); }, nullptr},
        {"inference.kv_offload.reload_per_step_s", N,
         [](R r) { return inf(r, [](auto& i) { return i.kv_reload_per_step_s; }); }, nullptr},
        {"inference.prefix_cache.cached_tokens", I,
         [](R r) { return inf(r, [](auto& i) { return opt(i.prefix_cached_tokens); }); }, nullptr},
        {"inference.prefix_cache.computed_tokens", I,
         [](R r) { return inf(r, [](auto& i) { return opt(i.prefix_computed_tokens); }); }, nullptr},
        {"training.step_time_s", N, [](R r) { return trn(r, [](auto& t) { return t.step_time_s; }); }, nullptr},
        {"training.tokens_per_s", N, [](R r) { return trn(r, [](auto& t) { return t.tokens_per_s; }); }, nullptr},
        {"training.mfu", N, [](R r) { return trn(r, [](auto& t) { return t.mfu; }); }, nullptr},
        {"training.hfu", N, [](R r) { return trn(r, [](auto& t) { return t.hfu; }); }, nullptr},
        {"training.model_tflops_per_device", N, [](R r) { return trn(r, [](auto& t) { return t.model_tflops_per_device; }); }, nullptr},
        {"training.micro_batches", I,
         [](R r) { return trn(r, [](auto& t) { return static_cast<double>(t.micro_batches); }); }, nullptr},
        {"training.trainable_parameters", N, [](R r) { return trn(r, [](auto& t) { return t.trainable_parameters; }); }, nullptr},
        {"training.time_to_train_s", N, [](R r) { return r.training ? r.training->time_to_train_s : std::nullopt; }, nullptr},
        {"training.gpu_hours", N, [](R r) { return r.training ? r.training->gpu_hours : std::nullopt; }, nullptr},
        {"training.cost", N, [](R r) { return r.training ? r.training->cost : std::nullopt; }, nullptr},
        {"training.data.read_bytes_per_s", N,
         [](R r) { return r.training ? r.training->data_read_bytes_per_s : std::nullopt; }, nullptr},
        {"training.data.bottleneck", T, nullptr, [](R r) {
             return r.training && r.training->data_read_bytes_per_s ? text(r.training->data_bottleneck) : std::nullopt;
         }},
        {"training.data.supply_bytes_per_s", N,
         [](R r) { return r.training ? r.training->data_supply_bytes_per_s : std::nullopt; }, nullptr},
        {"training.data.wait_fraction", N, [](R r) { return r.training ? r.training->data_wait_fraction : std::nullopt; }, nullptr},
        {"flops.prefill_flops", N, [](R r) { return flp(r, [](auto& f) { return si(f.prefill); }); }, nullptr},
        {"flops.decode_token_flops", N, [](R r) { return flp(r, [](auto& f) { return si(f.decode_token); }); }, nullptr},
        {"flops.model_step_flops", N, [](R r) { return flp(r, [](auto& f) { return si(f.model_step); }); }, nullptr},
        {"flops.hardware_step_flops", N, [](R r) { return flp(r, [](auto& f) { return si(f.hardware_step); }); }, nullptr},
        {"checkpoint.size_bytes", N, [](R r) { return ckpt(r, [](auto& c) { return c.size_bytes; }); }, nullptr},
        {"checkpoint.save_s", N, [](R r) { return ckpt_io(r, [](auto& c) { return c.save_s; }); }, nullptr},
        {"checkpoint.restore_s", N, [](R r) { return ckpt_io(r, [](auto& c) { return c.restore_s; }); }, nullptr},
        {"checkpoint.stall_s", N, [](R r) { return ckpt_io(r, [](auto& c) { return c.stall_s; }); }, nullptr},
        {"checkpoint.bottleneck", T, nullptr,
         [](R r) { return r.checkpoint && r.checkpoint->io ? text(r.checkpoint->bottleneck) : std::nullopt; }},
        {"checkpoint.interval_s", N, [](R r) { return ckpt_io(r, [](auto& c) { return c.interval_s; }); }, nullptr},
        {"checkpoint.mtbf_s", N, [](R r) { return ckpt(r, [](auto& c) { return c.mtbf_s; }); }, nullptr},
        {"checkpoint.goodput", N, [](R r) { return ckpt_io(r, [](auto& c) { return c.goodput; }); }, nullptr},
        {"checkpoint.failures_per_day", N, [](R r) { return ckpt(r, [](auto& c) { return c.failures_per_day; }); }, nullptr},
        {"roofline.peak_flops_per_s", N, [](R r) { return roof(r, [](auto& f) { return f.peak_flops_per_s; }); }, nullptr},
        {"roofline.memory_bytes_per_s", N, [](R r) { return roof(r, [](auto& f) { return f.memory_bytes_per_s; }); }, nullptr},
        {"roofline.gemm_efficiency", N, [](R r) { return roof(r, [](auto& f) { return f.gemm_efficiency; }); }, nullptr},
        {"roofline.memory_efficiency", N, [](R r) { return roof(r, [](auto& f) { return f.memory_efficiency; }); }, nullptr},
        {"cold_start.total_s", N, [](R r) { return r.cold_start ? num(r.cold_start->total.si()) : std::nullopt; }, nullptr},
        {"cold_start.load_s", N, [](R r) { return r.cold_start ? num(r.cold_start->load.si()) : std::nullopt; }, nullptr},
        {"cold_start.bottleneck", T, nullptr, [](R r) { return r.cold_start ? text(r.cold_start->bottleneck) : std::nullopt; }},
        {"cost.own.usd_per_hour", N, [](R r) { return r.cost && r.cost->own ? num(r.cost->own->per_hour.usd) : std::nullopt; }, nullptr},
        {"cost.rent.usd_per_hour", N, [](R r) { return r.cost && r.cost->rent ? num(r.cost->rent->per_hour.usd) : std::nullopt; }, nullptr},
        {"cost.per_million_output_tokens.own_usd", N, [](R r) {
             return r.cost && r.cost->per_million_output_tokens ? usd(r.cost->per_million_output_tokens->own) : std::nullopt;
         }, nullptr},
        {"cost.per_million_output_tokens.rent_usd", N, [](R r) {
             return r.cost && r.cost->per_million_output_tokens ? usd(r.cost->per_million_output_tokens->rent) : std::nullopt;
         }, nullptr},
        {"cost.per_billion_tokens.own_usd", N, [](R r) {
             return r.cost && r.cost->per_billion_tokens ? usd(r.cost->per_billion_tokens->own) : std::nullopt;
         }, nullptr},
        {"cost.per_billion_tokens.rent_usd", N, [](R r) {
             return r.cost && r.cost->per_billion_tokens ? usd(r.cost->per_billion_tokens->rent) : std::nullopt;
         }, nullptr},
        {"cost.per_run.own_usd", N,
         [](R r) { return r.cost && r.cost->per_run ? usd(r.cost->per_run->own) : std::nullopt; }, nullptr},
        {"cost.per_run.rent_usd", N,
         [](R r) { return r.cost && r.cost->per_run ? usd(r.cost->per_run->rent) : std::nullopt; }, nullptr},
        {"bottleneck", T, nullptr, [](R r) { return r.bottleneck; }},
        {"feasible", B, [](R r) { return opt(r.feasible); }, nullptr},
    };
    return columns;
}

const result_column& result_column_named(std::string_view key, const std::string& field) {
    for (const result_column& c : result_columns())
        if (key == c.key) return c;
    std::string keys;
    for (const result_column& c : result_columns()) {
        if (!keys.empty()) keys += ", ";
        keys += c.key;
    }
    throw config_error(field, "'" + std::string(key) + "'", "not a column of a result", keys);
}

namespace {

enum class part { always, memory_limits, cold_start, checkpoint, flops, cost, data_pipeline };

part part_of(std::string_view key) {
    auto starts = [&](std::string_view prefix) { return key.rfind(prefix, 0) == 0; };
    if (key == "inference.max_batch" || key == "inference.max_context_tokens" || key == "inference.smallest_tp")
        return part::memory_limits;
    if (starts("cold_start.")) return part::cold_start;
    if (starts("checkpoint.")) return part::checkpoint;
    if (starts("flops.")) return part::flops;
    if (starts("cost.")) return part::cost;
    if (starts("training.data.")) return part::data_pipeline;
    return part::always;
}

}  // namespace

estimate_parts parts_for(const std::vector<const result_column*>& columns) {
    estimate_parts parts = estimate_parts::headline();  // columns hold no notes
    for (const result_column* c : columns) {
        switch (part_of(c->key)) {
            case part::memory_limits: parts.memory_limits = true; break;
            case part::cold_start: parts.cold_start = true; break;
            case part::checkpoint: parts.checkpoint = true; break;
            case part::flops: parts.flops = true; break;
            case part::cost: parts.cost = true; break;
            case part::data_pipeline: parts.data_pipeline = true; break;
            case part::always: break;
        }
    }
    return parts;
}

bool computed_in(const estimate_parts& parts, const result_column& c) {
    switch (part_of(c.key)) {
        case part::memory_limits: return parts.memory_limits;
        case part::cold_start: return parts.cold_start;
        case part::checkpoint: return parts.checkpoint;
        case part::flops: return parts.flops;
        case part::cost: return parts.cost;
        case part::data_pipeline: return parts.data_pipeline;
        case part::always: return true;
    }
    return true;
}

}  // namespace capplan
