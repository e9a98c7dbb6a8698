// Private: readers for catalog entries, shared by the catalog loader and by inline objects in
// scenarios ("each a catalog name or an inline object in the catalog's own format").
#pragma once

#include <string>
#include <vector>

#include "capplan/catalog.hpp"
#include "json_reader.hpp"

namespace capplan::detail {

// Keys every entry may carry (models/schema/common.schema.json#/$defs/entry_header).
struct header {
    std::string name, source;
    std::vector<std::string> aliases;
};

// inline_entry: name, source and confidence become optional (a user's own object).
header read_header(object_reader& r, bool inline_entry);
accelerator_spec read_accelerator(object_reader& r, const header& h);
link_spec read_link(object_reader& r, const header& h);
storage_spec read_storage(object_reader& r, const header& h);
// A tier's aggregate_read_bandwidth / aggregate_write_bandwidth / aggregate_bandwidth_per_tib (catalog
// entries, inline objects, overrides).
void read_storage_aggregate(object_reader& r, storage_spec& s);
system_entry read_system(object_reader& r, const header& h);

// catalog_economics.cpp: a system's "price", "power" and "cloud" keys (its economics, for `devices` accelerators),
// a site entry, and dollars given as a number or [low, high].
// A site's figures and the range each may take: catalog sites and a scenario's cost overrides read the same bounds.
struct site_figure {
    const char* key;
    double low, high;
    sourced_number site_spec::*member;  // null for the optional carbon intensity
};
inline const site_figure site_figures[] = {
    {"pue", 1.0, 5.0, &site_spec::pue},
    {"usd_per_kwh", 0.0, 10.0, &site_spec::usd_per_kwh},
    {"hosting_usd_per_kw_month", 0.0, 10'000.0, &site_spec::hosting_usd_per_kw_month},
    {"depreciation_years", 0.5, 30.0, &site_spec::depreciation_years},
    {"cost_of_capital", 0.0, 1.0, &site_spec::cost_of_capital},
    {"support_per_year", 0.0, 1.0, &site_spec::support_per_year},
};
inline const site_figure carbon_figure{"carbon_kg_per_kwh", 0.0, 2.0, nullptr};

system_economics read_system_economics(object_reader& r, const std::string& preset, int per_node, int nodes);
site_spec read_site(object_reader& r, const header& h);
usd_range read_usd_range(object_reader& r, std::string_view key);
// Dollars at `key`, >= 0 and below a typo's size (max_usd); nullopt where absent.
std::optional<double> read_usd(object_reader& r, std::string_view key);
// A link's "fabric": {"switch": {"model", "ports", "power", "price"}, "nic", "switch_optic", "node_optic", "cable",
// "source", "date"}.
std::optional<fabric_parts> read_link_fabric(object_reader& r);
// A system's "support_networks" (models/schema/system.schema.json); none when absent.
std::optional<support_networks> read_support_networks(object_reader& r);

}  // namespace capplan::detail
