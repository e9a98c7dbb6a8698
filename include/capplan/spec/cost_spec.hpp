// What hardware costs to buy, rent, power and house (issue #22), as the catalog records it: every figure with its
// source and the date it held, and a low-high range where sources disagree. Money is in US dollars, in fields whose
// names say so (`usd`, `usd_per_hour`): the catalog's prices are US list, street and cloud prices.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "capplan/units.hpp"

namespace capplan {

// The most power one unit (a node, a rack) or a rack's limit may be given: 100 MW, a whole data hall; more is a typo.
inline constexpr power max_unit_power = 100.0 * units::MW;

// A dollar figure known to lie between `low` and `high` (equal when one source gives one number).
struct usd_range {
    double low = 0.0, high = 0.0;
    double mid() const { return 0.5 * (low + high); }
};

// Where a catalog figure comes from and when it held ("2025-06"), as the entry states it.
struct dated_source {
    std::string source, date;
};

// What one unit of a system preset (the preset as listed: one node, or one rack of NVL72) costs to buy.
struct purchase_price {
    usd_range usd;
    std::string kind;  // list (vendor's list price), street (reported selling prices), estimate (an analyst's)
    dated_source from;
};

// A cloud instance that is one node of the preset, rented by the hour.
struct cloud_offer {
    std::string provider, instance, region;
    std::string commitment;  // on_demand, reserved (booked ahead for days or weeks: AWS Capacity Blocks), 1y, 3y
    int devices = 1;         // accelerators in the instance
    double usd_per_hour = 0.0;
    dated_source from;
    double usd_per_device_hour() const { return usd_per_hour / devices; }
};

struct sourced_power {
    power value;
    dated_source from;
};

// A preset's money and power, per unit of `devices` accelerators (the preset's per_node x nodes).
struct system_economics {
    std::string preset;  // the catalog system the figures belong to
    int devices = 1;
    std::optional<purchase_price> price;
    std::optional<sourced_power> max_power;       // the unit's maximum (datasheet): what the site must provision
    std::optional<sourced_power> measured_power;  // the unit's draw measured under an AI load, where published
    std::vector<cloud_offer> cloud;
};

// Dollars beyond this are a typo, not a price (the largest AI clusters cost tens of billions: a peta-dollar leaves
// 10^4 room).
inline constexpr double max_usd = units::peta;  // US dollars

// The most ports a catalog switch may have: keeps a fat tree's ports^2 x ports-down counts far inside int64.
inline constexpr int max_switch_ports = 4096;

// The parts a scale-out fabric of this link is built of (a catalog link's "fabric"), for a cluster's bill of materials:
// the switch and its port count at the link's rate, and the modules at each end of a link.
struct fabric_part {
    std::string model;
    int ports = 1;                       // switch: ports at the link's rate; optic: links it carries
    std::optional<sourced_power> power;  // each, where published
    std::optional<purchase_price> price; // each, where published
};
struct fabric_parts {
    fabric_part switch_, nic, switch_optic, node_optic;
    std::optional<fabric_part> cable;  // one per link, where the catalog names one
    dated_source from;
};

// A preset's networks besides the compute fabric (storage fabric, in-band and out-of-band management) and the servers
// that run them, as a published reference architecture counts them: per scalable unit of `unit_nodes` nodes (whole
// units, the last one part full) or per node.
struct support_part {
    std::string item;            // "storage fabric switches", "in-band cables (nodes)"...
    std::int64_t per_unit = 0;   // per scalable unit, or
    std::int64_t per_node = 0;   // per node
    fabric_part part;            // its model, power and price where published, or
    std::string switch_of;       // the switch of this catalog link's fabric (its model, power and price)
};
// A reference architecture's storage performance guideline for one scalable unit (aggregate read and write).
struct storage_level {
    byte_rate read, write;
};
struct support_networks {
    std::string reference;  // the reference architecture, short: "NVIDIA's DGX SuperPOD H100 RA (RA-11333-001 V11)"
    int unit_nodes = 0;
    std::vector<support_part> parts;
    std::map<std::string, storage_level> storage_levels;  // "good", "better", "best"; empty: none published
    std::string storage_levels_source;
    dated_source from;
};

// A number with its source and date (a site's PUE, an electricity price...).
struct sourced_number {
    double value = 0.0;
    dated_source from;
};

// Where and on what terms the hardware runs (a catalog "site"): the facility's overhead on power, what energy and
// space cost, how fast the purchase is written off, and the grid's emissions.
struct site_spec {
    std::string name;
    std::string source;
    sourced_number pue;                       // facility power / IT power
    sourced_number usd_per_kwh;               // electricity
    sourced_number hosting_usd_per_kw_month;  // colocation: space, cooling and power delivery per provisioned kW
    sourced_number depreciation_years;        // straight-line (or annuity, with cost_of_capital) write-off
    sourced_number cost_of_capital;           // per year, 0..1; 0: straight-line
    sourced_number support_per_year;          // hardware support and maintenance, a share of the purchase per year
    std::optional<sourced_number> carbon_kg_per_kwh;  // grid emissions (kg CO2e per kWh)
};

// A scenario's `cost` object, resolved: the site with the scenario's overrides, the economics of the preset the
// system is built of (the scenario may override its price), the cloud terms, and how busy the hardware is.
struct cost_spec {
    site_spec site;
    system_economics economics;
    std::string commitment = "on_demand";       // which cloud offers price the rental
    std::optional<double> usd_per_device_hour;  // a rental price given by the user: replaces the offers
    std::string power_basis;                    // "measured" or "max": which draw the energy bill uses
    double utilization = 1.0;                   // share of the hours the hardware does this work
    double other_capex_usd = 0.0;               // network, storage, installation: given by the user
    power other_power;                          // their power (the network's switches and optics): billed with the systems
};

}  // namespace capplan
