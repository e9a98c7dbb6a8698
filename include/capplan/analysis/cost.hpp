// What a plan costs (issue #22 item 2; docs/formulas.md §19): owning the hardware (the purchase written off over its
// life, energy at the facility's PUE, hosting per provisioned kW, support) or renting it by the hour, and what that
// makes a million output tokens or a training run. Every money figure comes with the range its inputs span.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "capplan/spec/cost_spec.hpp"

namespace capplan {

inline constexpr duration julian_year = 365.25 * units::day;  // 8,766 h, leap days included: what a year of hours costs
// The units of work a cost is quoted per (token counts, not physical units).
inline constexpr double million_tokens = units::mega, billion_tokens = units::giga;

// A money figure and the range its inputs span (purchase prices, the cloud's offers).
struct usd_estimate {
    double usd = 0.0, low = 0.0, high = 0.0;
};

struct ownership_cost {
    int units = 0;           // preset units bought: ceil(devices / devices per unit)
    double used_share = 1.0; // devices / the units' devices: the share a unit of work pays (the rest serve other work)
    usd_estimate capex;      // units x unit price + other capex
    usd_estimate per_hour;   // capital + energy + hosting + support
    double capital_per_hour = 0.0, energy_per_hour = 0.0, hosting_per_hour = 0.0, support_per_hour = 0.0;
    power it_power;          // the draw the energy bill uses (measured or maximum)
    power provisioned_power; // the maximum: what hosting is charged on
};

struct rental_cost {
    usd_estimate per_hour;        // devices x price per device-hour
    double usd_per_device_hour = 0.0;
    std::vector<std::string> offers;  // "AWS p5.48xlarge on_demand 2025-06" ... ; empty: the user's price
};

// What one unit of work costs: a million output tokens, or a training run.
struct work_cost {
    std::optional<usd_estimate> own, rent;
    energy facility_energy;                   // at the facility (IT x PUE)
    std::optional<double> emissions_kg;       // x the site's grid intensity, when it has one
};

// What a cost was computed from, as resolved (the site with the scenario's overrides, the preset unit's price and
// power): the inputs sheet of a spreadsheet that recomputes it with live formulas (issue #22 item 6).
struct cost_inputs {
    site_spec site;
    int unit_devices = 1;                   // accelerators per unit of the preset
    std::optional<usd_range> unit_price;
    std::optional<power> unit_power;        // the draw the energy bill uses, per unit
    bool unit_power_measured = false;       // measured under an AI load (else the maximum)
    std::optional<power> unit_provisioned;  // the maximum, per unit: what hosting is charged on
    double other_capex_usd = 0.0;
    power other_power;                      // bought with the systems (the network): drawn and provisioned as it is
    double utilization = 1.0;
    std::string commitment;
};

struct cost_result {
    cost_inputs inputs;
    std::string site;
    std::string preset;        // whose prices and power were used
    int devices = 0;
    power facility_power;      // IT draw x PUE of the units bought
    double used_share = 1.0;   // devices / the units' devices: the share of cost and energy a unit of work takes
    std::optional<ownership_cost> own;   // absent without a purchase price and power
    std::optional<rental_cost> rent;     // absent without an offer or a user's price
    std::optional<work_cost> per_million_output_tokens;  // inference
    std::optional<work_cost> per_run;                    // training with training.tokens
    std::optional<work_cost> per_billion_tokens;         // training
    std::vector<std::string> notes;      // what was assumed, what is missing
};

// The cost of running `devices` accelerators for an hour, owned and rented.
cost_result hourly_cost(const cost_spec& c, int devices);

// A unit of work that takes `work` of the whole system at the cost's utilization: owned and rented cost, energy and
// emissions.
work_cost cost_of_work(const cost_result& hourly, const cost_spec& c, duration work);

}  // namespace capplan
