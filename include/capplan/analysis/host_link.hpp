// One device's rate over its link to the host (PCIe, NVLink-C2C): the link's measured rate, else its
// raw rate times the measured efficiency of PCIe (the catalog's PCIe-Gen5 entry, measured over raw),
// else the raw rate (optimistic). Cold start copies weights over it; KV-cache offload reloads blocks.
#pragma once

#include <optional>
#include <string>

#include "capplan/catalog.hpp"
#include "capplan/error.hpp"
#include "capplan/spec/hardware_spec.hpp"
#include "capplan/units_parse.hpp"

namespace capplan {

// `how`, when given, says which of the three it was.
inline std::optional<byte_rate> host_link_rate(const link_spec& l, const catalog& cat, std::string* how = nullptr) {
    auto say = [&](auto make) {  // the text built only when asked for
        if (how) *how = make();
    };
    if (l.measured_bandwidth_per_direction) {
        say([&] { return "host link " + l.name + ": measured " + format(*l.measured_bandwidth_per_direction) + " per device"; });
        return *l.measured_bandwidth_per_direction;
    }
    if (!l.bandwidth_per_direction) return std::nullopt;
    std::optional<double> eff;
    if (l.kind == "pcie") {
        try {
            const link_spec& g5 = cat.link("PCIe-Gen5");
            if (g5.measured_bandwidth_per_direction && g5.bandwidth_per_direction)
                eff = *g5.measured_bandwidth_per_direction / *g5.bandwidth_per_direction;
        } catch (const unknown_name_error&) {
        }
    }
    if (!eff) {
        say([&] {
            return "host link " + l.name + ": no measured rate; raw " + format(*l.bandwidth_per_direction) +
                   " per device (optimistic)";
        });
        return *l.bandwidth_per_direction;
    }
    const byte_rate per = *eff * *l.bandwidth_per_direction;
    say([&] {
        return "host link " + l.name + ": no measured rate; raw " + format(*l.bandwidth_per_direction) + " x " +
               format_number(*eff) + " (PCIe-Gen5 measured / raw) = " + format(per) + " per device";
    });
    return per;
}

}  // namespace capplan
