// A storage tier's rate for one node of a job, by the scope its catalog figures are measured over
// (one drive, one node, one client mount, one connection, one socket, or the whole service), and no more
// than the node's share of the deployment's aggregate limit when the tier has one (a parallel file system's
// servers, an object-store bucket: the slower of the two binds).
// Shared by cold start (reads), checkpoints (writes and reads), data loading and KV offload (reads).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "capplan/detail/note_sink.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/units_parse.hpp"

namespace capplan {

struct storage_scope {
    int drives = 1;       // per_drive tiers: drives a node reads or writes in parallel
    int connections = 16; // per_connection tiers (object stores): parallel connections per node
    int sockets = 1;      // per_socket tiers (host DRAM)
    int nodes = 1;        // nodes of the job using the tier at once: they share its aggregate limit
    bool drives_assumed = false, sockets_assumed = false;  // for the notes: defaults, not given
};

struct storage_rate {
    byte_rate rate;          // per node, or the whole tier's when aggregate
    bool aggregate = false;  // a service shared by every node of the job
    bool aggregate_bound = false;  // the node's share of the tier's aggregate limit, below its own rate
};

// The deployment's aggregate limit in one direction: given, or rate per TiB x capacity (empty: unknown).
inline std::optional<byte_rate> storage_aggregate_limit(const storage_spec& st, bool write) {
    const std::optional<byte_rate>& given = write ? st.aggregate_write_bandwidth : st.aggregate_read_bandwidth;
    if (given) return given;
    if (!st.aggregate_bandwidth_per_tib || !st.capacity) return std::nullopt;
    return st.capacity->in(units::TiB) * *st.aggregate_bandwidth_per_tib;
}

// How that limit comes about, for a note.
inline std::string storage_aggregate_text(const storage_spec& st, bool write) {
    const std::optional<byte_rate>& given = write ? st.aggregate_write_bandwidth : st.aggregate_read_bandwidth;
    if (given) return "the deployment's aggregate " + format(*given);
    const double tib = st.capacity ? st.capacity->in(units::TiB) : 0.0;
    return "the deployment's aggregate " + format(*st.aggregate_bandwidth_per_tib) + " per TiB x " + format_number(tib) +
           " TiB = " + format(*storage_aggregate_limit(st, write));
}

// The node's rate by the tier's scope; empty when the tier's figure is unknown (null in the catalog).
inline std::optional<storage_rate> storage_scope_rate(const storage_spec& st, bool write, const storage_scope& sc,
                                                      const detail::note_sink& note) {
    const char* dir = write ? "write" : "read";
    const std::optional<byte_rate>& bw = write ? st.write_bandwidth : st.read_bandwidth;
    if (!bw || !(bw->si() > 0)) return std::nullopt;
    storage_rate r{*bw, false};
    auto head = [&] { return "storage " + st.name + " (" + dir + "): "; };
    if (st.scope == "per_drive") {
        r.rate = static_cast<double>(sc.drives) * *bw;
        note([&] {
            return head() + std::to_string(sc.drives) + " drives x " + format(*bw) + " per node" +
                   (sc.drives_assumed ? " (one drive per device assumed)" : "");
        });
    } else if (st.scope == "per_connection") {
        r.rate = static_cast<double>(sc.connections) * *bw;
        note([&] { return head() + std::to_string(sc.connections) + " connections x " + format(*bw) + " per node"; });
    } else if (st.scope == "per_socket") {
        r.rate = static_cast<double>(sc.sockets) * *bw;
        note([&] {
            return head() + std::to_string(sc.sockets) + " socket(s) x " + format(*bw) +
                   (sc.sockets_assumed ? " (one socket assumed)" : "");
        });
    } else if (st.scope == "aggregate") {
        r.aggregate = true;
        note([&] { return head() + "aggregate " + format(*bw) + " shared by the whole job (other jobs' traffic not modelled)"; });
    } else {
        note([&] { return head() + format(*bw) + " per node (" + st.scope + ": one mount per node)"; });
    }
    return r;
}

// Empty (with a note) when neither the tier's own figure nor an aggregate limit is known.
inline std::optional<storage_rate> storage_node_rate(const storage_spec& st, bool write, const storage_scope& sc,
                                                     const detail::note_sink& note) {
    const std::string dir = write ? "write" : "read";
    auto head = [&] { return "storage " + st.name + " (" + dir + "): "; };
    std::optional<storage_rate> r = storage_scope_rate(st, write, sc, note);
    if (r && r->aggregate) return r;
    const std::optional<byte_rate> limit = storage_aggregate_limit(st, write);
    const int nodes = std::max(1, sc.nodes);
    if (!limit) {
        if (!r && st.aggregate_bandwidth_per_tib) {
            note([&] {
                return "storage " + st.name + ": " + dir + " bandwidth unknown: the tier's aggregate is " +
                       format(*st.aggregate_bandwidth_per_tib) + " per TiB; give the deployment's capacity "
                       "({\"preset\": \"" + st.name + "\", \"capacity\": ...}), left out";
            });
        } else if (!r) {
            note([&] { return "storage " + st.name + ": " + dir + " bandwidth unknown (null in the catalog), left out"; });
        } else if (nodes > 1 && (st.kind == "parallel_fs" || st.kind == "nfs" || st.kind == "object_store")) {
            note([&] {
                return head() + "no aggregate limit known: " + std::to_string(nodes) + " nodes x " + format(r->rate) +
                       " assumed available at once (optimistic for a shared service; give the deployment's "
                       "aggregate_" + dir + "_bandwidth, or its capacity where the tier has a rate per TiB)";
            });
        }
        return r;
    }
    const byte_rate share = *limit / static_cast<double>(nodes);
    if (!r) {
        note([&] {
            return head() + "per-client rate unknown (null in the catalog): " + storage_aggregate_text(st, write) +
                   " shared by " + std::to_string(nodes) + " node(s) = " + format(share) + " each";
        });
        return storage_rate{share, false, true};
    }
    if (share < r->rate) {
        r->rate = share;
        r->aggregate_bound = true;
        note([&] {
            return head() + storage_aggregate_text(st, write) + " shared by " + std::to_string(nodes) +
                   " node(s) = " + format(share) + " each, below the per-node rate: the aggregate limit binds";
        });
    } else {
        note([&] { return head() + storage_aggregate_text(st, write) + " / " + std::to_string(nodes) + " node(s) does not bind"; });
    }
    return r;
}

namespace detail {

inline bool is_remote_storage(const std::string& kind) {
    return kind == "nfs" || kind == "parallel_fs" || kind == "object_store";
}

// The node's network to remote storage: the rate the caller gives, else the node's own storage links (a storage fabric
// apart from the compute NICs, system_spec::storage_network), else its scale-out NICs; none known: not capped.
inline std::optional<byte_rate> node_storage_network(const system_spec& sys, std::optional<byte_rate> given,
                                                    const note_sink& note) {
    if (given) return given;
    if (sys.storage_network) {
        note([&] {
            return "remote storage over the node's own storage links (" + format(*sys.storage_network) +
                   "), apart from its compute NICs";
        });
        return sys.storage_network;
    }
    if (sys.scale_out && sys.scale_out->nics_per_node > 0 && sys.scale_out->link.bandwidth_per_direction &&
        sys.scale_out->link.bandwidth_per_direction->si() > 0) {
        const byte_rate net = static_cast<double>(sys.scale_out->nics_per_node) * *sys.scale_out->link.bandwidth_per_direction;
        note([&] {
            return "remote storage assumed to share the node's " + std::to_string(sys.scale_out->nics_per_node) +
                   " scale-out NICs (" + format(net) + "); set storage_network for a separate front-end NIC";
        });
        return net;
    }
    note("the node's network to storage is unknown: remote storage not capped by it");
    return std::nullopt;
}

}  // namespace detail

}  // namespace capplan
