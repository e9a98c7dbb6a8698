// A storage tier's rate for one node of a job, by the scope its catalog figures are measured over
// (one drive, one node, one client mount, one connection, one socket, or the whole service).
// Shared by cold start (reads), checkpoints (writes and reads) and data loading (reads).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "capplan/spec/hardware_spec.hpp"
#include "capplan/units_parse.hpp"

namespace capplan {

struct storage_scope {
    int drives = 1;       // per_drive tiers: drives a node reads or writes in parallel
    int connections = 16; // per_connection tiers (object stores): parallel connections per node
    int sockets = 1;      // per_socket tiers (host DRAM)
    bool drives_assumed = false, sockets_assumed = false;  // for the notes: defaults, not given
};

struct storage_rate {
    byte_rate rate;          // per node, or the whole tier's when aggregate
    bool aggregate = false;  // a service shared by every node of the job
};

// Empty (with a note) when the tier's figure is unknown (null in the catalog).
inline std::optional<storage_rate> storage_node_rate(const storage_spec& st, bool write, const storage_scope& sc,
                                                     std::vector<std::string>& notes) {
    const char* dir = write ? "write" : "read";
    const std::optional<byte_rate>& bw = write ? st.write_bandwidth : st.read_bandwidth;
    if (!bw || !(bw->si() > 0)) {
        notes.push_back("storage " + st.name + ": " + dir + " bandwidth unknown (null in the catalog), left out");
        return std::nullopt;
    }
    storage_rate r{*bw, false};
    const std::string rate = format(*bw);
    const std::string head = "storage " + st.name + " (" + dir + "): ";
    if (st.scope == "per_drive") {
        r.rate = static_cast<double>(sc.drives) * *bw;
        notes.push_back(head + std::to_string(sc.drives) + " drives x " + rate + " per node" +
                        (sc.drives_assumed ? " (one drive per device assumed)" : ""));
    } else if (st.scope == "per_connection") {
        r.rate = static_cast<double>(sc.connections) * *bw;
        notes.push_back(head + std::to_string(sc.connections) + " connections x " + rate + " per node");
    } else if (st.scope == "per_socket") {
        r.rate = static_cast<double>(sc.sockets) * *bw;
        notes.push_back(head + std::to_string(sc.sockets) + " socket(s) x " + rate +
                        (sc.sockets_assumed ? " (one socket assumed)" : ""));
    } else if (st.scope == "aggregate") {
        r.aggregate = true;
        notes.push_back(head + "aggregate " + rate + " shared by the whole job (other jobs' traffic not modelled)");
    } else {
        notes.push_back(head + rate + " per node (" + st.scope + ": one mount per node)");
    }
    return r;
}

}  // namespace capplan
