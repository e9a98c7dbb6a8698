// Owning and renting cost (docs/formulas.md §19).
#include "capplan/analysis/cost.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "capplan/detail/ceil_div.hpp"

#include "capplan/units_parse.hpp"

namespace capplan {

namespace {

using namespace units;

// "$276,000", "$184.06", "$0.0862": whole dollars with thousands separators from $1,000, cents from $1, below that
// three significant digits.
std::string usd(double x) {
    if (x >= 1000.0) {
        const std::string digits = std::to_string(static_cast<long long>(std::llround(x)));
        std::string out = "$";
        for (std::size_t i = 0; i < digits.size(); ++i) {
            if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
            out.push_back(digits[i]);
        }
        return out;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, x >= 1.0 ? "$%.2f" : "$%.3g", x);
    return buf;
}

// The share of a purchase charged each year: straight-line 1/n, or with a cost of capital r the annuity that repays
// it with interest over n years, r / (1 - (1 + r)^-n) (the capital recovery factor).
double capital_recovery_factor(double rate, double years) {
    if (rate <= 0.0) return 1.0 / years;
    return rate / (1.0 - std::pow(1.0 + rate, -years));
}

// The power a unit is provisioned (hosted) for: its maximum, or its measured draw where no maximum is published.
power provisioned_unit_power(const system_economics& e) { return (e.max_power ? *e.max_power : *e.measured_power).value; }

// The unit's draw the energy bill uses: its measured draw under load unless "max" is asked or none is published.
const sourced_power* billed_draw(const system_economics& e, const std::string& basis) {
    if (basis != "max" && e.measured_power) return &*e.measured_power;
    if (e.max_power) return &*e.max_power;
    return e.measured_power ? &*e.measured_power : nullptr;
}

std::optional<ownership_cost> ownership(const cost_spec& c, int devices, int units, double used_share,
                                        std::vector<std::string>& notes) {
    const system_economics& e = c.economics;
    if (!e.price) {
        notes.push_back("owning: no purchase price for " + (e.preset.empty() ? std::string("this system") : e.preset) +
                        "; give cost.system_price");
        return std::nullopt;
    }
    if (!e.max_power && !e.measured_power) {
        notes.push_back("owning: no power figure for " + e.preset + "; give cost.system_power");
        return std::nullopt;
    }
    ownership_cost o;
    o.units = units;
    o.used_share = used_share;
    if (o.used_share < 1.0)
        notes.push_back("owning: " + std::to_string(devices) + " of the " + std::to_string(o.units * e.devices) +
                        " accelerators bought do this work: a unit of work pays their share, " +
                        format_number(o.used_share) + " of the hourly cost (the others serve other work)");
    const double capex_low = o.units * e.price->usd.low + c.other_capex_usd;
    const double capex_high = o.units * e.price->usd.high + c.other_capex_usd;
    o.capex = {0.5 * (capex_low + capex_high), capex_low, capex_high};

    const sourced_power* draw = billed_draw(e, c.power_basis);
    const bool measured = e.measured_power && draw == &*e.measured_power;
    // The other equipment (the network) draws what it is rated at: no measured share of it is known.
    o.provisioned_power = o.units * provisioned_unit_power(e) + c.other_power;
    o.it_power = o.units * draw->value + c.other_power;

    const site_spec& s = c.site;
    const double year_h = julian_year.in(hour);
    o.energy_per_hour = o.it_power.in(kW) * s.pue.value * s.usd_per_kwh.value;
    constexpr double months_a_year = 12.0;
    o.hosting_per_hour = o.provisioned_power.in(kW) * s.hosting_usd_per_kw_month.value * months_a_year / year_h;
    const double crf = capital_recovery_factor(s.cost_of_capital.value, s.depreciation_years.value);
    const auto hourly = [&](double capex) {
        return capex * (crf + s.support_per_year.value) / year_h + o.energy_per_hour + o.hosting_per_hour;
    };
    o.capital_per_hour = o.capex.usd * crf / year_h;
    o.support_per_hour = o.capex.usd * s.support_per_year.value / year_h;
    o.per_hour = {hourly(o.capex.usd), hourly(capex_low), hourly(capex_high)};
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict, bug 105651) on "literal" + std::string temporaries.
    std::string price = usd(e.price->usd.low);
    if (e.price->usd.high != e.price->usd.low) price += std::string("-") + usd(e.price->usd.high);
    notes.push_back("owning: " + std::to_string(o.units) + " x " + (e.preset.empty() ? "node" : e.preset) + " at " +
                    price + " (" + e.price->kind + ", " + e.price->from.date + "), written off over " +
                    format_number(s.depreciation_years.value) + " years" +
                    (s.cost_of_capital.value > 0 ? " at " + format_number(100 * s.cost_of_capital.value) + "% a year"
                                                 : std::string(" straight-line")) +
                    "; energy at " + (measured ? "the measured draw " : "the maximum power ") +
                    format(o.it_power) + " x PUE " + format_number(s.pue.value) + " x " + usd(s.usd_per_kwh.value) +
                    "/kWh; hosting on " + format(o.provisioned_power) + " x " + usd(s.hosting_usd_per_kw_month.value) +
                    "/kW-month" + (c.other_capex_usd > 0 ? "; other capex " + usd(c.other_capex_usd) : std::string()) +
                    (c.other_power.si() > 0 ? "; other equipment's power " + format(c.other_power) : std::string()));
    return o;
}

// The providers with offers of a commitment, in the catalog's order, each once.
std::vector<std::string> providers_of(const std::vector<cloud_offer>& cloud, const std::string& commitment) {
    std::vector<std::string> names;
    for (const cloud_offer& o : cloud)
        if (o.commitment == commitment && std::find(names.begin(), names.end(), o.provider) == names.end())
            names.push_back(o.provider);
    return names;
}

// "AWS, Azure, Google Cloud"
std::string listed(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

// Whether two lists of providers name the same ones, in whatever order the catalog lists their offers.
bool same_providers(std::vector<std::string> a, std::vector<std::string> b) {
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    return a == b;
}

std::optional<rental_cost> rental(const cost_spec& c, int devices, std::vector<std::string>& notes) {
    rental_cost r;
    if (c.usd_per_device_hour) {
        r.usd_per_device_hour = *c.usd_per_device_hour;
        const double h = devices * r.usd_per_device_hour;
        r.per_hour = {h, h, h};
        return r;
    }
    std::vector<double> per_device;
    for (const cloud_offer& o : c.economics.cloud) {
        if (o.commitment != c.commitment) continue;
        per_device.push_back(o.usd_per_device_hour());
        r.offers.push_back(o.provider + " " + o.instance + " " + o.commitment + " " + usd(o.usd_per_hour) + "/h (" +
                           o.from.date + ")");
    }
    if (per_device.empty()) {
        notes.push_back("renting: no " + c.commitment + " cloud offer for " +
                        (c.economics.preset.empty() ? std::string("this system") : c.economics.preset) +
                        " in the catalog; give cost.price_per_device_hour");
        return std::nullopt;
    }
    // Per accelerator-hour, the middle offer stands for the market and the cheapest and dearest bound it (an offer's
    // instance size is left aside: a smaller instance of the same provider is assumed at the same rate).
    std::sort(per_device.begin(), per_device.end());
    const std::size_t n = per_device.size();
    r.usd_per_device_hour = n % 2 ? per_device[n / 2] : 0.5 * (per_device[n / 2 - 1] + per_device[n / 2]);
    r.per_hour = {devices * r.usd_per_device_hour, devices * per_device.front(), devices * per_device.back()};
    // Committed prices are published by fewer providers than on-demand ones: their medians are over different sellers.
    if (c.commitment == "on_demand") return r;
    const std::vector<std::string> committed = providers_of(c.economics.cloud, c.commitment),
                                   on_demand = providers_of(c.economics.cloud, "on_demand");
    if (!on_demand.empty() && !same_providers(committed, on_demand))
        notes.push_back("renting: the " + c.commitment + " offers come from " + listed(committed) +
                        " and the on-demand ones from " + listed(on_demand) +
                        ": medians over different sellers, so compare a provider's own prices (the offers), "
                        "not the two medians");
    return r;
}

cost_inputs resolved_inputs(const cost_spec& c) {
    const system_economics& e = c.economics;
    cost_inputs in;
    in.site = c.site;
    in.unit_devices = e.devices;
    if (e.price) in.unit_price = e.price->usd;
    if (const sourced_power* draw = billed_draw(e, c.power_basis)) {
        in.unit_power = draw->value;
        in.unit_power_measured = e.measured_power && draw == &*e.measured_power;
        in.unit_provisioned = provisioned_unit_power(e);
    }
    in.other_capex_usd = c.other_capex_usd;
    in.other_power = c.other_power;
    in.utilization = c.utilization;
    in.commitment = c.commitment;
    return in;
}

usd_estimate scaled(const usd_estimate& e, double k) { return {e.usd * k, e.low * k, e.high * k}; }

}  // namespace

cost_result hourly_cost(const cost_spec& c, int devices) {
    cost_result r;
    r.site = c.site.name;
    r.preset = c.economics.preset;
    r.devices = devices;
    // Hardware is bought in whole units of the preset as listed; a unit of work takes the share it uses.
    const auto units = static_cast<int>(detail::ceil_div(devices, c.economics.devices));
    r.used_share = static_cast<double>(devices) / (static_cast<double>(units) * c.economics.devices);
    r.inputs = resolved_inputs(c);
    r.own = ownership(c, devices, units, r.used_share, r.notes);
    r.rent = rental(c, devices, r.notes);
    if (const sourced_power* draw = billed_draw(c.economics, c.power_basis))
        r.facility_power = c.site.pue.value * (static_cast<double>(units) * draw->value + c.other_power);
    else
        r.notes.push_back("energy: no power figure for this system; give cost.system_power");
    return r;
}

work_cost cost_of_work(const cost_result& hourly, const cost_spec& c, duration work) {
    const double hours = work.in(units::hour);
    work_cost w;
    // Hours paid for: owned (and committed rental) hardware is paid every hour, so the work's hours are stretched by
    // the share of hours it is busy; on-demand rental is paid only while it works.
    const double paid = hours / c.utilization;
    if (hourly.own) w.own = scaled(hourly.own->per_hour, paid * hourly.own->used_share);
    if (hourly.rent) w.rent = scaled(hourly.rent->per_hour, c.commitment == "on_demand" ? hours : paid);
    w.facility_energy = hourly.used_share * hourly.facility_power * work;  // the work's share of the units' draw
    if (c.site.carbon_kg_per_kwh) w.emissions_kg = w.facility_energy.in(units::kWh) * c.site.carbon_kg_per_kwh->value;
    return w;
}

}  // namespace capplan
