// Training data loading: the read bandwidth and IOPS a job needs against what its storage tier
// delivers, and the share of time the GPUs wait for data.
//
//   needed bytes/s = tokens/s x bytes per token   (tokenised, packed data: 2 B per token when the
//                    vocabulary fits 16 bits, else 4 B — the uint16/int32 token files Megatron and
//                    nanoGPT write), or samples/s x bytes per sample
//   needed IOPS    = samples/s x files per sample (small-file datasets), else bytes/s / read size
//   supplied       = the storage tier by its scope over the job's nodes (checkpoint.hpp's rule), a remote
//                    tier capped by the nodes' network to it (their own storage links, else their compute
//                    NICs: storage_io.hpp's node_storage_network); the host's decode rate a limit of its own
//   wait fraction  = max(0, 1 - supplied / needed), for bandwidth and IOPS alike: with prefetching,
//                    the GPUs idle only while the loader is behind.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "capplan/analysis/checkpoint.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/spec/model_spec.hpp"

namespace capplan {

struct data_pipeline_options {
    std::optional<data_size> bytes_per_token;   // default: 2 B if vocab <= 65,536 else 4 B
    std::optional<data_size> sample_size;       // non-token datasets: bytes per sample (replaces tokens)
    double files_per_sample = 0.0;              // > 0: one read per file (small-file datasets)
    data_size read_size = 1.0 * units::MiB;     // otherwise IOPS = bytes / read size
    std::optional<double> decode_samples_per_s_per_node;  // host decode/augment rate
};

struct data_pipeline_result {
    byte_rate needed, supplied;
    double needed_iops = 0.0;
    std::optional<double> supplied_iops;
    double wait_fraction = 0.0;
    std::string bottleneck;  // storage bandwidth, storage network, storage IOPS, host decode, or none
    std::vector<std::string> notes;
};

inline data_pipeline_result data_pipeline(const model_spec& m, const system_spec& sys, double tokens_per_s,
                                          std::int64_t seq_len, const data_pipeline_options& o = {}) {
    using namespace units;
    data_pipeline_result r;
    const double samples_per_s = tokens_per_s / static_cast<double>(seq_len);
    const data_size per_token = o.bytes_per_token.value_or((m.vocab <= 65536 ? 2.0 : 4.0) * B);
    r.needed = o.sample_size ? *o.sample_size * samples_per_s / s : per_token * tokens_per_s / s;
    r.needed_iops = o.files_per_sample > 0 ? samples_per_s * o.files_per_sample : (r.needed * (1.0 * s)) / o.read_size;
    const int nodes = sys.nodes();
    const detail::note_sink note(r.notes);
    const auto st = detail::ck_storage(sys, false, sys.per_node, nodes, {}, note);
    if (!st) {
        r.bottleneck = "unknown (no storage tier)";
        return r;
    }
    r.supplied = st->aggregate ? st->rate : st->rate * static_cast<double>(nodes);
    bool network_bound = false;
    if (detail::is_remote_storage(sys.storage->kind))
        if (const auto net = detail::node_storage_network(sys, std::nullopt, note); net && *net * nodes < r.supplied) {
            r.supplied = *net * static_cast<double>(nodes);
            network_bound = true;
            note([&] { return "storage reads capped by the nodes' network to it: " + std::to_string(nodes) + " x " + format(*net); });
        }
    if (sys.storage->read_iops)
        r.supplied_iops = *sys.storage->read_iops * (sys.storage->scope == "aggregate" ? 1.0 : static_cast<double>(nodes)) *
                          (sys.storage->scope == "per_drive" ? static_cast<double>(sys.per_node) : 1.0);
    double wait_bw = std::max(0.0, 1.0 - r.supplied / r.needed);
    double wait_iops = r.supplied_iops ? std::max(0.0, 1.0 - *r.supplied_iops / r.needed_iops) : 0.0;
    double wait_decode = 0.0;
    if (o.decode_samples_per_s_per_node)
        wait_decode = std::max(0.0, 1.0 - *o.decode_samples_per_s_per_node * nodes / samples_per_s);
    r.wait_fraction = std::max({wait_bw, wait_iops, wait_decode});
    r.bottleneck = r.wait_fraction <= 0.0 ? "none"
                   : r.wait_fraction == wait_bw ? (network_bound ? "storage network" : "storage bandwidth")
                   : r.wait_fraction == wait_iops ? "storage IOPS" : "host decode";
    return r;
}

}  // namespace capplan
