// Checkpoints and failures: what a training checkpoint holds, how long it takes to write and to read back,
// how often to write one, and what share of the wall time is useful work once failures, restarts and lost work
// are counted.
//
//   size        model states as the precision policy keeps them: 16-bit weights + fp32 master weights + the
//               optimizer's moments (mixed-precision Adam: 2 + 4 + 8 = 14 B/parameter); gradients are not saved
//               (DeepSpeed: mp_rank_*_model_states.pt holds the 16-bit module, zero_pp_rank_*_optim_states.pt
//               the fp32 master partition + exp_avg + exp_avg_sq, deepspeed/checkpoint/ds_to_universal.py;
//               Megatron's distributed optimizer saves {"param": fp32 main param, exp_avg, exp_avg_sq} per
//               parameter, megatron/core/optimizer/distrib_optimizer.py), + per-rank RNG states.
//               One copy of the model is written: data-parallel replicas hold the same states. With a fully
//               parallel save (Megatron's default: --no-ckpt-fully-parallel-save turns it off) each replicated
//               shard is written by one of its replicas, balanced, so every rank writes distinct/ranks; without
//               it the first replica writes everything it holds and the others only their ZeRO shards.
//   save        per node, the chain device -> host (PCIe, pinned, every GPU at once) -> node NICs (remote
//               tiers) -> storage (the tier's write rate by its scope; an `aggregate` tier shared by the job's
//               whole traffic). The stages stream: save = latency + max(stage times); the longest names the
//               bottleneck.
//   async       the training stalls only for the device -> host copy of each rank's shard (pinned buffers);
//               the write from host memory overlaps the next steps: durable after stall + max(network, storage).
//   restore     the same chain backwards at the read rate; every rank reads what it holds (replicas read the
//               same bytes) unless the load is fully parallel (read once, exchanged over the network, the
//               exchange not modelled).
//   failures    system MTBF = 1 / (gpus x failures per GPU-hour + nodes x failures per node-hour); default
//               rate from Llama 3 (419 unexpected interruptions in 54 days on 16,384 H100s, arXiv:2407.21783
//               §3.3.4).
//   interval    Young 1974 (CACM 17(9)): sqrt(2 C M); Daly 2006 (FGCS 22(3)) higher-order:
//               sqrt(2 C M)·[1 + (1/3)·sqrt(C/2M) + (1/9)·(C/2M)] − C for C < 2M, else M.
//   goodput     first order: τ/(τ + C) · (1 − (R + (τ + C)/2 + L)/M), with R the restart and L the async
//               persistence lag; Daly's complete model τ / (M·e^{R/M}·(e^{(τ+C)/M} − 1)) alongside.
// Formulas, defaults and citations: docs/formulas.md, "Checkpoints and failures". Header-only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "capplan/analysis/cold_start.hpp"
#include "capplan/analysis/parameters.hpp"
#include "capplan/analysis/sharding.hpp"
#include "capplan/analysis/storage_io.hpp"
#include "capplan/analysis/training_memory.hpp"
#include "capplan/catalog.hpp"
#include "capplan/detail/note_sink.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/spec/model_spec.hpp"
#include "capplan/spec/scenario.hpp"
#include "capplan/units.hpp"
#include "capplan/units_parse.hpp"

namespace capplan {

// ---------------------------------------------------------------------------------------------------------------
// Size
// ---------------------------------------------------------------------------------------------------------------

// RNG state of one rank, as Megatron-LM saves it (megatron/training/checkpointing.py get_rng_state): Python
// random.getstate() (625 32-bit words), numpy MT19937 (624 x 4 B = 2,496 B), torch.get_rng_state()
// (sizeof(CPUGeneratorImplState) = 5,056 B), torch.cuda.get_rng_state() (Philox seed + offset, 16 B) and the
// tensor-parallel tracker's CUDA states (16 B each): about 10.1 kB raw. Rounded up to 16 KiB for pickling and
// the rank's share of the metadata (iteration, arguments, scheduler, the storage layer's index).
inline data_size default_rng_state_per_rank() { return 16.0 * units::KiB; }

struct checkpoint_options {
    bool fully_parallel_save = true;   // replicated shards written once, spread over their replicas (Megatron default)
    bool fully_parallel_load = false;  // read once and exchanged among replicas (Megatron --ckpt-fully-parallel-load)
    std::optional<data_size> rng_per_rank;  // default: default_rng_state_per_rank()
    bool explain = true;                     // write the notes (an estimate that shows none skips their text)
};

struct checkpoint_size {
    data_size weights, optimizer, master_weights, rng_and_metadata, total;  // one copy of the model
    data_size per_rank_max;          // the most one rank writes
    data_size restore_per_rank_max;  // the most one rank reads back on restore
    data_size restore_total;         // what all ranks read together on restore
    int writers = 0;                 // ranks that write part of the checkpoint
    int ranks = 0;                   // tp x pp x dp x cp
    double bytes_per_parameter = 0;  // saved per parameter, before sharding
    std::vector<std::string> notes;
};

namespace detail {

inline std::string ck_num(double v) { return format_number(v); }

inline void ck_positive_int(int v, const char* field) {
    if (v < 1) throw config_error(field, std::to_string(v), "must be >= 1");
}

inline void ck_finite_nonneg(duration d, const char* field) {
    if (!(std::isfinite(d.si()) && d.si() >= 0))
        throw config_error(field, ck_num(d.in(units::s)) + " s", "must be a finite time >= 0");
}

inline void ck_finite_positive(duration d, const char* field) {
    if (!(std::isfinite(d.si()) && d.si() > 0))
        throw config_error(field, ck_num(d.in(units::s)) + " s", "must be a finite time > 0");
}

// LoRA: the adapters with their optimizer states and master weights; the frozen base is not saved (it is read from
// the base model's files, as PEFT's save_pretrained writes adapter_model.safetensors alone). Spread evenly over
// the ranks on save; on restore every model-parallel rank reads its tp x pp share, replicas the same bytes.
inline checkpoint_size lora_checkpoint(const model_spec& m, const lora_spec& l, const state_bytes& b,
                                       const parallelism_spec& p, data_size rng, checkpoint_size& out, const note_sink& note) {
    using namespace units;
    const double adapters = lora_model_parameters(m, l).total(), saved = b.weights + b.optimizer + b.master;
    out.weights = adapters * b.weights * B;
    out.optimizer = adapters * b.optimizer * B;
    out.master_weights = adapters * b.master * B;
    out.total = out.weights + out.optimizer + out.master_weights + out.rng_and_metadata;
    out.per_rank_max = adapters * saved / out.ranks * B + rng;
    out.restore_per_rank_max = adapters * saved / (static_cast<double>(p.tp) * p.pp) * B + rng;
    out.restore_total = static_cast<double>(out.ranks) * out.restore_per_rank_max;
    out.writers = out.ranks;
    note([&] {
        return "LoRA: " + ck_num(adapters) + " adapter parameters and their optimizer states; the frozen base is not "
               "saved (read again from the base model's files); every rank writes an even share and reads its tp x pp "
               "share back (ckpt_fully_parallel_save/load do not change so small a save)";
    });
    return out;
}

}  // namespace detail

// One checkpoint of a training run: sizes of the saved states, and how they spread over the ranks.
// Throws config_error naming the field for bad input (and for an unknown optimizer, via bytes_per_parameter).
inline checkpoint_size checkpoint_bytes(const model_spec& m, const parameter_breakdown& params,
                                        const precision_spec& prec, const training_spec& t,
                                        const parallelism_spec& p, const checkpoint_options& o = {}) {
    using namespace units;
    detail::ck_positive_int(p.tp, "/parallelism/tp");
    detail::ck_positive_int(p.pp, "/parallelism/pp");
    detail::ck_positive_int(p.dp, "/parallelism/dp");
    detail::ck_positive_int(p.cp, "/parallelism/cp");
    detail::ck_positive_int(p.ep, "/parallelism/ep");
    detail::ck_positive_int(p.etp, "/parallelism/etp");
    if (params.total() <= 0)
        throw config_error("parameters", std::to_string(params.total()), "the model must have parameters");
    const data_size rng = o.rng_per_rank.value_or(default_rng_state_per_rank());
    if (!(std::isfinite(rng.si()) && rng.si() >= 0))
        throw config_error("/checkpoint/rng_per_rank", detail::ck_num(rng.in(B)) + " B", "must be a finite size >= 0");

    checkpoint_size out;
    const detail::note_sink note(out.notes, o.explain);
    const state_bytes b = bytes_per_parameter(prec, t);
    const double saved = b.weights + b.optimizer + b.master;
    out.bytes_per_parameter = saved;
    const double P = static_cast<double>(params.total());
    const int world = p.tp * p.pp * p.dp * p.cp;
    out.ranks = world;
    out.weights = P * b.weights * B;
    out.optimizer = P * b.optimizer * B;
    out.master_weights = P * b.master * B;
    out.rng_and_metadata = static_cast<double>(world) * rng;
    out.total = out.weights + out.optimizer + out.master_weights + out.rng_and_metadata;
    note([&] {
        return "saved per parameter: weights " + detail::ck_num(b.weights) + " B + optimizer " +
               detail::ck_num(b.optimizer) + " B + master " + detail::ck_num(b.master) + " B = " + detail::ck_num(saved) +
               " B; gradients are not saved (DeepSpeed model_states + optim_states files; Megatron distributed "
               "optimizer: fp32 param, exp_avg, exp_avg_sq)";
    });
    note([&] { return "RNG states and metadata: " + format(rng, true) + " per rank x " + std::to_string(world) + " ranks"; });

    if (t.lora) return detail::lora_checkpoint(m, *t.lora, b, p, rng, out, note);

    // Per rank, stage by stage. (A layout's problems are shard_weights' to report: an estimate gives them as reasons.)
    const weight_sharding w = shard_weights(m, p);
    const double stage_ranks = static_cast<double>(p.tp) * p.dp * p.cp;
    training_memory_options states;  // what a rank holds and saves: its model states, no activations, no notes
    states.states_only = true;
    states.explain = false;
    for (std::size_t s = 0; s < w.stages.size(); ++s) {
        const device_parameters& d = w.stages[s].params;
        const double routed = d.routed_experts, dense = d.total() - routed;
        // The stage's parameters once: dense split over tp, routed experts over ep x etp.
        const double distinct = dense * p.tp + routed * static_cast<double>(p.ep) * p.etp;
        const data_size spread = distinct * saved / stage_ranks * B + rng;
        const training_memory tm = estimate_training_memory_stage(m, w, prec, p, t, static_cast<int>(s), states);
        const data_size held = tm.weights + tm.optimizer_states + tm.master_weights + tm.host_offload + rng;
        const data_size write = o.fully_parallel_save ? spread : held;
        const data_size read = o.fully_parallel_load ? spread : held;
        out.per_rank_max = std::max(out.per_rank_max, write);
        out.restore_per_rank_max = std::max(out.restore_per_rank_max, read);
        out.restore_total += stage_ranks * read;
    }

    // Writers.
    if (o.fully_parallel_save) {
        out.writers = world;
        note([&] {
            return "fully parallel save: each replicated shard written once, balanced over its " +
                   std::to_string(p.dp * p.cp) + " data-parallel replicas (Megatron default)";
        });
    } else {
        const bool sharded = t.zero >= 1 || t.distributed_optimizer;
        const int group = (t.shard_group > 0 && !t.distributed_optimizer ? t.shard_group : p.dp) * p.cp;
        const int replicas = sharded ? std::max(1, p.dp * p.cp / std::max(1, group)) : p.dp * p.cp;
        int writers = world / replicas;
        if (m.is_moe() && !sharded) writers = std::max(writers, p.pp * p.ep * p.etp);
        out.writers = std::clamp(writers, 1, world);
        note(sharded ? "save not fully parallel: the first data-parallel replica writes all it holds, every rank its "
                       "optimizer shard"
                     : "save not fully parallel: the first data-parallel replica writes all it holds");
    }
    if (o.fully_parallel_load)
        note("fully parallel load: each rank reads its share once; the exchange among replicas is not modelled");
    else
        note("restore: every rank reads the states it holds (replicas read the same bytes)");
    return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Save and restore time
// ---------------------------------------------------------------------------------------------------------------

struct checkpoint_io_options {
    int connections = 16;                      // object store: parallel connections per node
    std::optional<int> drives;                 // per_drive storage: drives per node (default: one per writing rank)
    std::optional<int> sockets;                // per_socket storage (host DRAM): sockets per node (default 1)
    std::optional<byte_rate> storage_network;  // the node's network to remote storage (default: the system's storage
                                               // links, else its scale-out NICs)
    std::optional<byte_rate> host_link_rate;   // one device's pinned copy rate to/from the host (default: catalog)
    bool explain = true;                       // write the notes (an estimate that shows none skips their text)
};

struct checkpoint_stage {
    std::string stage;    // host_link, network, storage
    data_size bytes;      // per node (storage with an aggregate scope: the whole job)
    byte_rate bandwidth;  // per node (aggregate: the tier's)
    duration time;
};

struct checkpoint_io {
    duration save;     // until the checkpoint is durable
    duration restore;  // until every rank holds its states again
    duration stall;    // training blocked per checkpoint: save (sync) or the device -> host copy (async)
    bool async = false;
    std::string bottleneck;          // longest save stage
    std::string restore_bottleneck;  // longest restore stage
    byte_rate write_rate, read_rate;  // the job's bytes over the transfer time
    std::vector<checkpoint_stage> save_stages, restore_stages;
    int nodes = 0;           // nodes of the job
    int writing_nodes = 0;   // nodes with a writer
    std::vector<std::string> notes;
};

namespace detail {

// One device's copy rate to or from the host: the option, else the link's measured rate, else its raw rate x the
// measured PCIe-Gen5 efficiency (as cold_start_time does), else unknown.
inline std::optional<byte_rate> ck_host_link_rate(const system_spec& sys, const checkpoint_io_options& o,
                                                  const catalog* cat_in, const note_sink& note) {
    if (o.host_link_rate) {
        note([&] { return "host link: " + format(*o.host_link_rate) + " per device (given)"; });
        return o.host_link_rate;
    }
    if (sys.preset.empty() && sys.accelerator.host_link.empty()) {
        note("host link unknown: device <-> host copy left out");
        return std::nullopt;
    }
    const catalog& cat = cat_in ? *cat_in : default_catalog();
    const cold_start_host_entries h = cold_start_host_in(sys, cat);
    if (!h.host_link) {
        note("host link unknown: device <-> host copy left out");
        return std::nullopt;
    }
    const link_spec& l = *h.host_link;
    if (l.measured_bandwidth_per_direction && l.measured_bandwidth_per_direction->si() > 0) {
        note([&] { return "host link " + l.name + ": measured " + format(*l.measured_bandwidth_per_direction) + " per device, pinned"; });
        return l.measured_bandwidth_per_direction;
    }
    if (!l.bandwidth_per_direction || !(l.bandwidth_per_direction->si() > 0)) {
        note([&] { return "host link " + l.name + ": bandwidth unknown, device <-> host copy left out"; });
        return std::nullopt;
    }
    byte_rate r = *l.bandwidth_per_direction;
    if (l.kind == "pcie") {
        try {
            const link_spec& g5 = cat.link("PCIe-Gen5");
            if (g5.measured_bandwidth_per_direction && g5.bandwidth_per_direction) {
                const double eff = *g5.measured_bandwidth_per_direction / *g5.bandwidth_per_direction;
                r = eff * r;
                note([&] {
                    return "host link " + l.name + ": raw " + format(*l.bandwidth_per_direction) + " x " + ck_num(eff) +
                           " (PCIe-Gen5 measured / raw) = " + format(r) + " per device";
                });
                return r;
            }
        } catch (const unknown_name_error&) {
        }
    }
    note([&] { return "host link " + l.name + ": raw " + format(r) + " per device (optimistic)"; });
    return r;
}

// The storage tier's write (or read) rate for the job, by its scope (storage_io.hpp).
inline std::optional<storage_rate> ck_storage(const system_spec& sys, bool write, int ranks_per_node, int nodes,
                                              const checkpoint_io_options& o, const note_sink& note) {
    if (!sys.storage) {
        note(write ? "no storage tier: storage left out of the write chain" : "no storage tier: storage left out of the read chain");
        return std::nullopt;
    }
    storage_scope sc;
    sc.drives = o.drives.value_or(ranks_per_node);
    sc.drives_assumed = !o.drives;
    sc.connections = o.connections;
    sc.sockets = o.sockets.value_or(1);
    sc.sockets_assumed = !o.sockets;
    sc.nodes = nodes;
    return storage_node_rate(*sys.storage, write, sc, note);
}

inline std::optional<byte_rate> ck_network(const system_spec& sys, const checkpoint_io_options& o, const note_sink& note) {
    if (!sys.storage || !is_remote_storage(sys.storage->kind)) return std::nullopt;
    return node_storage_network(sys, o.storage_network, note);
}

inline std::string ck_longest(const std::vector<checkpoint_stage>& v) {
    if (v.empty()) return "none";
    std::size_t worst = 0;
    for (std::size_t i = 1; i < v.size(); ++i)
        if (v[i].time > v[worst].time) worst = i;
    return v[worst].stage;
}

inline checkpoint_io checkpoint_time(const checkpoint_size& size, const system_spec& sys, bool async,
                                     const checkpoint_io_options& o, const catalog* cat) {
    using namespace units;
    if (size.ranks < 1) throw config_error("checkpoint_size.ranks", std::to_string(size.ranks), "must be >= 1");
    if (size.writers < 1 || size.writers > size.ranks)
        throw config_error("checkpoint_size.writers", std::to_string(size.writers),
                           "must be between 1 and the " + std::to_string(size.ranks) + " ranks");
    for (const data_size d : {size.total, size.per_rank_max, size.restore_per_rank_max, size.restore_total})
        if (!(std::isfinite(d.si()) && d.si() >= 0))
            throw config_error("checkpoint_size", ck_num(d.in(B)) + " B", "sizes must be finite and >= 0");
    if (sys.per_node < 1) throw config_error("/system/per_node", std::to_string(sys.per_node), "must be >= 1");
    if (o.connections < 1) throw config_error("/checkpoint/connections", std::to_string(o.connections), "must be >= 1");
    if (o.drives && *o.drives < 1) throw config_error("/checkpoint/drives", std::to_string(*o.drives), "must be >= 1");
    if (o.sockets && *o.sockets < 1)
        throw config_error("/checkpoint/sockets", std::to_string(*o.sockets), "must be >= 1");
    auto positive_rate = [](const std::optional<byte_rate>& r, const char* field) {
        if (r && !(std::isfinite(r->si()) && r->si() > 0))
            throw config_error(field, ck_num(r->in(GB / s)) + " GB/s", "must be a finite rate > 0");
    };
    positive_rate(o.storage_network, "/checkpoint/storage_network");
    positive_rate(o.host_link_rate, "/checkpoint/host_link_rate");

    checkpoint_io r;
    r.async = async;
    const note_sink note(r.notes, o.explain);
    const int per_node = sys.per_node;
    const int write_rpn = std::min(per_node, size.writers);
    const int read_rpn = std::min(per_node, size.ranks);
    r.nodes = (size.ranks + per_node - 1) / per_node;
    r.writing_nodes = (size.writers + write_rpn - 1) / write_rpn;
    const data_size node_write = static_cast<double>(write_rpn) * size.per_rank_max;
    const data_size node_read = static_cast<double>(read_rpn) * size.restore_per_rank_max;

    const std::optional<byte_rate> link = ck_host_link_rate(sys, o, cat, note);
    const std::optional<storage_rate> wst = ck_storage(sys, true, write_rpn, r.writing_nodes, o, note);
    const std::optional<storage_rate> rst = ck_storage(sys, false, read_rpn, r.nodes, o, note);
    const std::optional<byte_rate> net = ck_network(sys, o, note);
    const duration latency = sys.storage && sys.storage->latency ? *sys.storage->latency : duration{};
    if (sys.storage && is_remote_storage(sys.storage->kind) && !sys.storage->latency)
        note([&] { return "storage " + sys.storage->name + ": first-byte latency unknown (null in the catalog), not added"; });
    if (sys.storage && sys.storage->kind == "local_nvme")
        note("local NVMe: a checkpoint on the node's own drives is lost with the node; copy it to "
             "shared storage (or replicate) to survive node failures");
    if (sys.storage && sys.storage->kind == "host_dram") note("host-memory checkpoint: lost with the node unless replicated to peers");

    auto stage = [](std::string name, data_size bytes, byte_rate bw) {
        return checkpoint_stage{std::move(name), bytes, bw, bytes.si() > 0 ? bytes / bw : duration{}};
    };
    auto build = [&](data_size node_bytes, data_size job_bytes, int rpn, const std::optional<storage_rate>& st) {
        std::vector<checkpoint_stage> v;
        if (link) v.push_back(stage("host_link", node_bytes, static_cast<double>(rpn) * *link));
        if (net) v.push_back(stage("network", node_bytes, *net));
        if (st) v.push_back(st->aggregate ? stage("storage", job_bytes, st->rate) : stage("storage", node_bytes, st->rate));
        return v;
    };
    r.save_stages = build(node_write, size.total, write_rpn, wst);
    r.restore_stages = build(node_read, size.restore_total, read_rpn, rst);

    auto max_time = [](const std::vector<checkpoint_stage>& v, bool skip_link) {
        duration t{};
        for (const auto& x : v)
            if (!(skip_link && x.stage == "host_link")) t = std::max(t, x.time);
        return t;
    };
    auto link_time = [](const std::vector<checkpoint_stage>& v) {
        for (const auto& x : v)
            if (x.stage == "host_link") return x.time;
        return duration{};
    };
    if (async) {
        r.stall = link_time(r.save_stages);
        r.save = latency + r.stall + max_time(r.save_stages, true);
        note([&] {
            return "async: training stalls for the device -> host copy into pinned host memory (" + ck_num(r.stall.in(s)) +
                   " s); the write overlaps the next steps";
        });
        if (!link) note("async without a known host link: the stall is counted as 0");
    } else {
        r.save = latency + max_time(r.save_stages, false);
        r.stall = r.save;
    }
    r.restore = latency + max_time(r.restore_stages, false);
    r.bottleneck = ck_longest(r.save_stages);
    r.restore_bottleneck = ck_longest(r.restore_stages);
    const duration wt = r.save - latency, rt = r.restore - latency;
    if (wt.si() > 0) r.write_rate = size.total / wt;
    if (rt.si() > 0) r.read_rate = size.restore_total / rt;
    note("stages stream (the longest bounds the transfer); host DRAM bandwidth, PCIe switches shared "
         "with NICs and file-system metadata are not modelled");
    return r;
}

}  // namespace detail

// Save and restore time of `size` on `system` (see the top of this file). The host link comes from `cat`
// (the system's preset) unless options.host_link_rate gives it. Throws config_error naming the field.
inline checkpoint_io checkpoint_time(const checkpoint_size& size, const system_spec& system, bool async,
                                     const checkpoint_io_options& o, const catalog& cat) {
    return detail::checkpoint_time(size, system, async, o, &cat);
}

// The same with the process-wide catalog, read only when the host link is not given in options.
inline checkpoint_io checkpoint_time(const checkpoint_size& size, const system_spec& system, bool async,
                                     const checkpoint_io_options& o = {}) {
    return detail::checkpoint_time(size, system, async, o, nullptr);
}

// ---------------------------------------------------------------------------------------------------------------
// Failures
// ---------------------------------------------------------------------------------------------------------------

struct failure_model {
    double per_gpu_hour = 0.0;   // failures per GPU-hour that stop the job
    double per_node_hour = 0.0;  // failures per node-hour not already counted per GPU (hosts, NICs, ...)
    std::string source;
};

// Llama 3 405B pre-training (Llama Team 2024, "The Llama 3 Herd of Models", arXiv:2407.21783 §3.3.4 and
// Table 5): 466 job interruptions in a 54-day snapshot on 16,384 H100 GPUs, 47 planned and 419 unexpected,
// about 78% of the unexpected ones attributed to confirmed or suspected hardware issues. The 419 unexpected
// interruptions, all attributed to the GPUs: 419 / (54 x 24 h x 16,384) = 1.973e-5 per GPU-hour
// (a GPU MTBF of 50,700 h, 5.8 years; system MTBF 3.09 h at 16,384 GPUs).
inline failure_model llama3_failure_model() {
    const duration snapshot = 54.0 * 24.0 * units::hour;
    failure_model f;
    f.per_gpu_hour = 419.0 / (snapshot.in(units::hour) * 16384.0);
    f.source = "Llama 3 (arXiv:2407.21783 §3.3.4): 419 unexpected interruptions in 54 days on 16,384 H100s";
    return f;
}

inline failure_model default_failure_model() { return llama3_failure_model(); }

// Failures in series: any GPU or node failing stops a synchronous job.
// MTBF = 1 / (gpus x per_gpu_hour + nodes x per_node_hour), nodes = ceil(gpus / gpus_per_node).
inline duration system_mtbf(const failure_model& f, int gpus, int gpus_per_node = 8) {
    if (!(std::isfinite(f.per_gpu_hour) && f.per_gpu_hour >= 0))
        throw config_error("/failures/per_gpu_hour", detail::ck_num(f.per_gpu_hour), "must be a finite rate >= 0");
    if (!(std::isfinite(f.per_node_hour) && f.per_node_hour >= 0))
        throw config_error("/failures/per_node_hour", detail::ck_num(f.per_node_hour), "must be a finite rate >= 0");
    detail::ck_positive_int(gpus, "gpus");
    detail::ck_positive_int(gpus_per_node, "gpus_per_node");
    const double nodes = static_cast<double>((gpus + gpus_per_node - 1) / gpus_per_node);
    const double rate = static_cast<double>(gpus) * f.per_gpu_hour + nodes * f.per_node_hour;
    if (!(rate > 0))
        throw config_error("/failures/per_gpu_hour", "0", "no failures at all: give per_gpu_hour or per_node_hour > 0");
    return (1.0 / rate) * units::hour;
}

// ---------------------------------------------------------------------------------------------------------------
// Checkpoint interval
// ---------------------------------------------------------------------------------------------------------------

// Young 1974, "A first order approximation to the optimum checkpoint interval", CACM 17(9):530-531:
// compute time between checkpoints τ = sqrt(2 C M), C the checkpoint cost, M the system MTBF.
inline duration young_interval(duration save_cost, duration mtbf) {
    detail::ck_finite_nonneg(save_cost, "save_cost");
    detail::ck_finite_positive(mtbf, "mtbf");
    return std::sqrt(2.0 * save_cost.in(units::s) * mtbf.in(units::s)) * units::s;
}

// Daly 2006, "A higher order estimate of the optimum checkpoint interval for restart dumps", FGCS 22(3):303-312:
// τ = sqrt(2 C M)·[1 + (1/3)·sqrt(C/(2M)) + (1/9)·(C/(2M))] − C for C < 2M, else τ = M.
inline duration daly_interval(duration save_cost, duration mtbf) {
    detail::ck_finite_nonneg(save_cost, "save_cost");
    detail::ck_finite_positive(mtbf, "mtbf");
    const double c = save_cost.in(units::s), m = mtbf.in(units::s);
    if (c >= 2.0 * m) return mtbf;
    const double x = c / (2.0 * m);
    return (std::sqrt(2.0 * c * m) * (1.0 + std::sqrt(x) / 3.0 + x / 9.0) - c) * units::s;
}

// The optimum compute time between checkpoints: Daly's higher-order estimate (Young's to first order).
inline duration young_daly_interval(duration save_cost, duration mtbf) { return daly_interval(save_cost, mtbf); }

// ---------------------------------------------------------------------------------------------------------------
// Goodput
// ---------------------------------------------------------------------------------------------------------------

struct goodput_inputs {
    duration interval;     // τ: compute time between checkpoints
    duration stall;        // C: training blocked per checkpoint (sync: the save; async: the host copy)
    duration persist_lag;  // L: async, from the end of the stall until the checkpoint is durable; 0 when sync
    duration restart;      // R: per failure, detection + rescheduling + restore + initialisation
    duration mtbf;         // M: the system's
    std::optional<duration> step_time;  // checkpoints fall on step boundaries: τ rounded to whole steps
};

struct goodput {
    double fraction = 0.0;              // useful time / wall time, first order
    double fraction_exponential = 0.0;  // Daly's complete model (Poisson failures, lag not included)
    duration interval;                  // τ used (rounded to whole steps when a step time is given)
    std::optional<std::int64_t> interval_steps;
    duration period;                     // τ + C (+ waiting for the previous async write)
    duration expected_lost_per_failure;  // rework: period / 2 + L
    duration time_per_failure;           // R + rework
    double checkpoint_overhead = 0.0;    // C / period
    double failure_overhead = 0.0;       // (R + rework) / M
    double failures_per_day = 0.0;
    std::vector<std::string> notes;
};

// Expected goodput (see the top of this file). Throws config_error naming the field.
inline goodput expected_goodput(const goodput_inputs& in) {
    using namespace units;
    detail::ck_finite_positive(in.interval, "interval");
    detail::ck_finite_nonneg(in.stall, "stall");
    detail::ck_finite_nonneg(in.persist_lag, "persist_lag");
    detail::ck_finite_nonneg(in.restart, "restart");
    detail::ck_finite_positive(in.mtbf, "mtbf");
    if (in.step_time) detail::ck_finite_positive(*in.step_time, "step_time");

    goodput g;
    g.interval = in.interval;
    if (in.step_time) {
        const double steps = std::max(1.0, std::round(in.interval / *in.step_time));
        g.interval_steps = static_cast<std::int64_t>(steps);
        g.interval = steps * *in.step_time;
        g.notes.push_back("checkpoint every " + std::to_string(*g.interval_steps) + " steps of " +
                          detail::ck_num(in.step_time->in(s)) + " s");
    }
    duration blocking = in.stall;
    if (in.persist_lag > g.interval) {
        blocking += in.persist_lag - g.interval;
        g.notes.push_back("the async write (" + detail::ck_num(in.persist_lag.in(s)) +
                          " s) outlasts the interval: the next checkpoint waits for it");
    }
    g.period = g.interval + blocking;
    g.expected_lost_per_failure = 0.5 * g.period + in.persist_lag;
    g.time_per_failure = in.restart + g.expected_lost_per_failure;
    g.checkpoint_overhead = blocking / g.period;
    g.failure_overhead = g.time_per_failure / in.mtbf;
    g.failures_per_day = (24.0 * hour) / in.mtbf;
    g.fraction = (g.interval / g.period) * std::max(0.0, 1.0 - g.failure_overhead);
    if (g.failure_overhead >= 1.0)
        g.notes.push_back("failures come faster than the job recovers and redoes its work: no progress");
    const double m = in.mtbf.in(s);
    g.fraction_exponential =
        g.interval.in(s) / (m * std::exp(in.restart.in(s) / m) * std::expm1(g.period.in(s) / m));
    if (in.persist_lag.si() > 0)
        g.notes.push_back("fraction_exponential counts the blocking stall only, not the async persistence lag");
    return g;
}

// Goodput of a checkpoint setup: the stall and persistence lag from `io`, restart = io.restore +
// `restart_overhead` (detection, rescheduling, process and communicator start), the interval Daly's optimum
// for the blocking cost unless given.
inline goodput expected_goodput(const checkpoint_io& io, duration restart_overhead, duration mtbf,
                                std::optional<duration> interval = std::nullopt,
                                std::optional<duration> step_time = std::nullopt) {
    detail::ck_finite_nonneg(restart_overhead, "restart_overhead");
    goodput_inputs in;
    in.stall = io.async ? io.stall : io.save;
    in.persist_lag = io.async ? io.save - io.stall : duration{};
    in.restart = io.restore + restart_overhead;
    in.mtbf = mtbf;
    in.step_time = step_time;
    if (interval) {
        in.interval = *interval;
    } else {
        if (!(in.stall.si() > 0))
            throw config_error("interval", "0 s", "the checkpoint blocks for no time, so Young/Daly gives no interval: give one");
        in.interval = young_daly_interval(in.stall, mtbf);
    }
    goodput g = expected_goodput(in);
    if (!interval)
        g.notes.insert(g.notes.begin(), "interval: Daly 2006 optimum for a blocking cost of " +
                                            detail::ck_num(in.stall.in(units::s)) + " s and an MTBF of " +
                                            detail::ck_num(mtbf.in(units::hour)) + " h");
    return g;
}

}  // namespace capplan
