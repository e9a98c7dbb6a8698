// Cold start: the time from process start to the first token, as the chain of links the weights
// cross on their way into GPU memory, plus the engine's own initialisation. One node, all of its
// devices loading their shards at once (every node of a multi-node system does the same).
//
//   storage      the node's bytes B = weights_per_device x devices_per_node read from the storage tier,
//                at its read rate times its scope: per_drive x drives (default one drive per device),
//                per_node, per_client (one mount per node), per_connection x connections, per_socket x
//                sockets, aggregate / nodes loading at once; remote tiers (nfs, parallel_fs,
//                object_store) capped by the node's network; + the tier's first-byte latency, if known
//   host_memory  host DRAM, per socket x sockets (a combined read+write peak): the one CPU copy of every
//                byte (page cache -> pinned buffer, or -> the CUDA driver's staging buffer when the source
//                is pageable) reads and writes it: k = 2 bytes of DRAM traffic per weight byte; when the
//                stages overlap, the GPUs' DMA reads (+1) and the storage DMA writes (+1) share DRAM too
//   host_link    host -> GPU DMA, every device over its own link at once: the link's measured rate (or
//                its raw rate x the measured PCIe efficiency), at most the pageable-copy rate when the
//                source is pageable; the node's sum capped by DRAM (the DMA reads host memory)
//   engine_init  process start, torch.compile, memory profiling, CUDA-graph capture: a measured,
//                overridable default
//
// Sequential (the default: vLLM's safetensors loader reads one tensor from the mmap'd file, then
// copies it to the GPU, then the next):   total = latency + storage + host_memory + host_link + engine_init
// Overlapped (streaming loaders that read while they copy: Run:ai Model Streamer, fastsafetensors):
//                                          total = latency + max(storage, host_memory, host_link) + engine_init
// GPUDirect Storage: storage DMAs into GPU memory, so there is no host_memory stage and storage and
// host_link are one transfer (their max) in either mode.
// utilization = stage time / total: the share of the cold start the link spends busy at its full rate
// (equally: mean bandwidth used / bandwidth available). The bottleneck is the longest stage.
// Formulas, defaults and citations: docs/formulas.md §13. Header-only.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "capplan/analysis/host_link.hpp"
#include "capplan/catalog.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/units.hpp"
#include "capplan/units_parse.hpp"
#include "capplan/analysis/storage_io.hpp"

namespace capplan {

// The host side of a node, as far as loading weights needs it: cold_start_host_of() reads it
// from the system's catalog preset.
struct cold_start_host {
    std::optional<link_spec> host_link;             // one device's link to the host (an x16 slot)
    std::optional<storage_spec> memory_per_socket;  // host DRAM of one socket (storage kind host_dram)
    int sockets = 0;                                // 0: unknown (one is then assumed, and noted)
};

struct cold_start_options {
    bool page_cache_warm = false;              // weights already in the host page cache: no storage stage
    bool pinned = false;                       // pinned host buffers; false = vLLM's default loader, which copies
                                               // from pageable (mmap'd) tensors at the pageable-copy rate
    bool gpudirect_storage = false;            // GDS: storage -> GPU memory directly, no host copy
    bool overlapped = false;                   // a streaming loader overlaps storage, host copy and DMA
    int connections = 16;                      // object store: parallel connections per node
    std::optional<int> drives;                 // per_drive storage: drives per node (default: one per device)
    std::optional<byte_rate> storage_network;  // the node's network to remote storage (default: the system's
                                               // storage links, else its scale-out NICs, noted)
    std::optional<byte_rate> pageable_rate;    // per device (default: default_pageable_rate())
    std::optional<duration> engine_init;       // replaces default_engine_init()
    std::optional<cold_start_host> host;       // replaces what the catalog says, field by field
    bool explain = true;                       // write the notes (an estimate that shows none skips their text)
};

struct chain_stage_time {
    std::string stage;  // storage, host_memory, host_link, engine_init
    duration time;
    double utilization = 0.0;  // time / total
    data_size bytes;           // what crosses the link, per node (host_memory: DRAM traffic)
    byte_rate bandwidth;       // the link's rate for this transfer, per node (0 for engine_init)
};

struct cold_start_result {
    std::vector<chain_stage_time> chain;
    duration total;
    duration load;           // total without engine_init: first-byte latency + weight transfer
    std::string bottleneck;  // the stage with the longest time
    std::vector<std::string> notes;
};

// vLLM V1 0.10.1.1 starting Llama-2-7B with nothing cached (upb-cn/vllm-startup-profiler @9ef96f4,
// experiments/node5/examples/model_size/uncached/comparison_results.json): framework bootstrap
// (imports, config, worker start) 6.0 s + "init engine" 35.0 s (torch.compile from scratch 23.29 s,
// memory profiling 9.69 s, CUDA-graph capture 1.54 s). Weight loading is not in it.
inline duration default_engine_init() { return 6.0 * units::s + 35.0 * units::s; }

// One device's host-to-device copy from pageable memory: CUDA bandwidthTest on a DGX A100,
// 10.0 GB/s pageable against 25.7 GB/s pinned (gengwg/gpu @54e9b29 nvda_gpu_benchmark.md). The driver
// stages pageable memory through a pinned buffer with a CPU copy, so the rate is taken as a rate, not
// a fraction of the link: on an H100 NVL (PCIe 5.0) vLLM copies from the page cache at 8.25 GB/s
// (docs/formulas.md §13).
inline byte_rate default_pageable_rate() { return 10.0 * units::GB / units::s; }

namespace detail {

inline std::string cs_num(double v) { return format_number(v); }

}  // namespace detail

// The host of `s` from the catalog: the preset's host_link (else the accelerator's), its
// host.memory_per_socket and host.sockets. Missing facts stay empty.
// The same facts as the catalog's own entries (no copies: an estimate looks them up several times).
struct cold_start_host_entries {
    const link_spec* host_link = nullptr;
    const storage_spec* memory_per_socket = nullptr;
    int sockets = 0;
};
inline cold_start_host_entries cold_start_host_in(const system_spec& s, const catalog&& cat) = delete;  // it would dangle
inline cold_start_host_entries cold_start_host_in(const system_spec& s, const catalog& cat) {
    cold_start_host_entries h;
    if (!s.preset.empty()) {
        const system_entry& e = cat.system_preset(s.preset);
        if (!e.host_link.empty()) h.host_link = &cat.link(e.host_link);
        if (!e.host_memory.empty()) h.memory_per_socket = &cat.storage(e.host_memory);
        h.sockets = e.host_sockets;
    }
    if (!h.host_link && !s.accelerator.host_link.empty()) h.host_link = &cat.link(s.accelerator.host_link);
    return h;
}

inline cold_start_host cold_start_host_of(const system_spec& s, const catalog& cat) {
    const cold_start_host_entries e = cold_start_host_in(s, cat);
    cold_start_host h;
    if (e.host_link) h.host_link = *e.host_link;
    if (e.memory_per_socket) h.memory_per_socket = *e.memory_per_socket;
    h.sockets = e.sockets;
    return h;
}

namespace detail {

inline cold_start_result cold_start_time(data_size weights_per_device, int devices_per_node, const system_spec& sys,
                                         const cold_start_options& o, const catalog* cat_in) {
    using namespace units;
    const double wb = weights_per_device.in(B);
    if (!std::isfinite(wb) || wb < 0)
        throw config_error("weights_per_device", cs_num(wb) + " B", "must be a finite size >= 0");
    if (devices_per_node < 1) throw config_error("devices_per_node", std::to_string(devices_per_node), "must be >= 1");
    if (devices_per_node > std::max(1, sys.per_node))
        throw config_error("devices_per_node", std::to_string(devices_per_node),
                           "exceeds the node's " + std::to_string(sys.per_node) + " devices (system.per_node)");
    if (o.connections < 1) throw config_error("/cold_start/connections", std::to_string(o.connections), "must be >= 1");
    if (o.drives && *o.drives < 1) throw config_error("/cold_start/drives", std::to_string(*o.drives), "must be >= 1");
    auto positive_rate = [](const std::optional<byte_rate>& r, const char* field) {
        if (r && !(std::isfinite(r->si()) && r->si() > 0))
            throw config_error(field, cs_num(r->in(GB / s)) + " GB/s", "must be a finite rate > 0");
    };
    positive_rate(o.storage_network, "/cold_start/storage_network");
    positive_rate(o.pageable_rate, "/cold_start/pageable_rate");
    if (o.engine_init && !(std::isfinite(o.engine_init->si()) && o.engine_init->si() >= 0))
        throw config_error("/cold_start/engine_init", cs_num(o.engine_init->in(s)) + " s",
                           "must be a finite time >= 0");
    if (o.host && o.host->sockets < 0)
        throw config_error("/cold_start/host/sockets", std::to_string(o.host->sockets), "must be >= 0");

    cold_start_result r;
    const detail::note_sink note(r.notes, o.explain);
    auto cat = [&]() -> const catalog& { return cat_in ? *cat_in : default_catalog(); };

    // The host: options first, the catalog for what they leave out.
    cold_start_host_entries host;
    if (o.host) {
        if (o.host->host_link) host.host_link = &*o.host->host_link;
        if (o.host->memory_per_socket) host.memory_per_socket = &*o.host->memory_per_socket;
        host.sockets = o.host->sockets;
    }
    if ((!host.host_link || !host.memory_per_socket || host.sockets == 0) &&
        (!sys.preset.empty() || !sys.accelerator.host_link.empty())) {
        const cold_start_host_entries c = cold_start_host_in(sys, cat());
        if (!host.host_link) host.host_link = c.host_link;
        if (!host.memory_per_socket) host.memory_per_socket = c.memory_per_socket;
        if (host.sockets == 0) host.sockets = c.sockets;
    }

    const int d = devices_per_node;
    const int nodes = std::max(1, sys.nodes());
    const data_size node_bytes = static_cast<double>(d) * weights_per_device;
    const std::optional<storage_spec>& st = sys.storage;
    bool gds = o.gpudirect_storage;
    if (gds && st && st->kind == "object_store") {
        gds = false;
        note(
            "GPUDirect Storage reads files (NVMe, NFS over RDMA, parallel file systems); an object store "
            "answers HTTP into host memory: gpudirect_storage ignored");
    }
    note(o.overlapped ? "loader: overlapped (a streaming loader reads, copies and DMAs at once)"
                      : "loader: sequential (vLLM's safetensors loader: read, then copy, tensor by tensor)");
    const int sockets = std::max(1, host.sockets);
    if (host.sockets == 0 && host.memory_per_socket) note("host sockets unknown: one socket's DRAM assumed");

    struct stage {
        std::string name;
        data_size bytes;
        byte_rate bw;
    };
    std::vector<stage> stages;
    duration latency{};

    // Storage.
    const bool read_storage = gds || !o.page_cache_warm;
    if (o.page_cache_warm && gds)
        note("GPUDirect Storage bypasses the page cache (O_DIRECT): page_cache_warm has no effect");
    else if (o.page_cache_warm)
        note("page cache warm: the weights are read from host memory, no storage stage");
    if (read_storage) {
        std::optional<storage_rate> found;  // empty (and noted) when neither the tier's rate nor its aggregate is known
        if (st) {
            storage_scope sc;
            sc.drives = o.drives.value_or(d);
            sc.drives_assumed = !o.drives;
            sc.connections = o.connections;
            sc.sockets = sockets;
            sc.nodes = nodes;
            found = storage_node_rate(*st, false, sc, note);
        }
        if (!st) {
            note("the system has no storage tier: storage left out of the chain");
        } else if (found) {
            const storage_rate sr = *found;
            // An aggregate service is shared by the nodes loading at once.
            byte_rate bw = sr.aggregate ? sr.rate / static_cast<double>(nodes) : sr.rate;
            if (sr.aggregate)
                note([&] {
                    return "storage " + st->name + ": aggregate " + format(sr.rate) + " shared by the " +
                           std::to_string(nodes) + " nodes loading at once";
                });
            if (detail::is_remote_storage(st->kind)) {
                const std::optional<byte_rate> net = detail::node_storage_network(sys, o.storage_network, note);
                if (net && *net < bw) {
                    note([&] { return "storage capped by the node's network: " + format(*net) + " < " + format(bw); });
                    bw = *net;
                }
                if (!st->latency)
                    note([&] { return "storage " + st->name + ": first-byte latency unknown (null in the catalog), not added"; });
            }
            if (st->latency) latency = *st->latency;
            stages.push_back({"storage", node_bytes, bw});
        }
    }

    // Host DRAM.
    std::optional<byte_rate> dram;
    if (host.memory_per_socket && host.memory_per_socket->read_bandwidth &&
        host.memory_per_socket->read_bandwidth->si() > 0)
        dram = static_cast<double>(sockets) * *host.memory_per_socket->read_bandwidth;
    if (!gds) {
        if (!dram) {
            note("host memory bandwidth unknown (no host.memory_per_socket): host copy left out of the chain");
        } else {
            const bool storage_ran = !stages.empty();
            const double k = o.overlapped ? 2.0 + 1.0 + (storage_ran ? 1.0 : 0.0) : 2.0;
            stages.push_back({"host_memory", k * node_bytes, *dram});
            note([&] {
                return "host memory: " + std::to_string(sockets) + " x " + format(*host.memory_per_socket->read_bandwidth) +
                       " = " + format(*dram) + ", " + cs_num(k) + " B of DRAM traffic per weight byte";
            });
        }
    }

    // Host link: every device's DMA at once.
    if (!host.host_link) {
        note("host link unknown: host-to-device copy left out of the chain");
    } else {
        const link_spec& l = *host.host_link;
        std::string how;
        std::optional<byte_rate> per = host_link_rate(l, cat(), note ? &how : nullptr);
        if (!how.empty()) note([&] { return how; });
        if (!per || !(per->si() > 0)) {
            note([&] { return "host link " + l.name + ": bandwidth unknown, host-to-device copy left out of the chain"; });
        } else {
            if (!o.pinned && !gds) {
                const byte_rate pg = o.pageable_rate.value_or(default_pageable_rate());
                if (pg < *per) {
                    note([&] { return "pageable host memory: " + format(pg) + " per device instead of " + format(*per); });
                    per = pg;
                }
            }
            byte_rate node_rate = static_cast<double>(d) * *per;
            if (!gds && !o.overlapped && dram && *dram < node_rate) {
                note([&] {
                    return "host-to-device DMA of " + std::to_string(d) + " devices capped by host DRAM: " + format(*dram);
                });
                node_rate = *dram;
            }
            stages.push_back({"host_link", node_bytes, node_rate});
        }
    }
    if (gds) note("GPUDirect Storage: storage DMAs into GPU memory, storage and host link are one transfer");

    // Combine.
    std::vector<duration> t;
    for (const auto& x : stages) t.push_back(x.bytes.si() > 0 ? x.bytes / x.bw : duration{});
    duration transfer{};
    if (o.overlapped || gds) {
        // GDS: storage and host_link are one DMA; with no host stage, that is the max of all.
        for (const auto& x : t) transfer = std::max(transfer, x);
    } else {
        for (const auto& x : t) transfer += x;
    }
    const duration engine = o.engine_init.value_or(default_engine_init());
    if (!o.engine_init)
        note([&] {
            return "engine init " + cs_num(engine.in(s)) +
                   " s: vLLM 0.10.1.1 with nothing cached (process start, "
                   "torch.compile, memory profiling, CUDA graphs); override with engine_init";
        });
    r.load = latency + transfer;
    r.total = r.load + engine;

    const double total_s = r.total.in(s);
    auto util = [&](duration x) { return total_s > 0 ? x.in(s) / total_s : 0.0; };
    for (std::size_t i = 0; i < stages.size(); ++i)
        r.chain.push_back({stages[i].name, t[i], util(t[i]), stages[i].bytes, stages[i].bw});
    r.chain.push_back({"engine_init", engine, util(engine), data_size{}, byte_rate{}});
    std::size_t worst = 0;
    for (std::size_t i = 1; i < r.chain.size(); ++i)
        if (r.chain[i].time > r.chain[worst].time) worst = i;
    r.bottleneck = r.chain[worst].stage;
    return r;
}

}  // namespace detail

// Cold start of one node loading `devices_per_node` shards of `weights_per_device` each (see the top
// of this file). Facts about the host come from `cat` (the system's preset), unless options.host
// gives them. Throws config_error naming the field for bad input.
inline cold_start_result cold_start_time(data_size weights_per_device, int devices_per_node, const system_spec& system,
                                         const cold_start_options& o, const catalog& cat) {
    return detail::cold_start_time(weights_per_device, devices_per_node, system, o, &cat);
}

// The same with the process-wide catalog, read only when the host is not fully given in options.
inline cold_start_result cold_start_time(data_size weights_per_device, int devices_per_node, const system_spec& system,
                                         const cold_start_options& o = {}) {
    return detail::cold_start_time(weights_per_device, devices_per_node, system, o, nullptr);
}

}  // namespace capplan
