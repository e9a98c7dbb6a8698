// analysis/cost.hpp: owning and renting, per hour and per unit of work, by hand (docs/formulas.md §19).
#include <doctest/doctest.h>

#include <algorithm>

#include "test_support.hpp"

#include "capplan/estimate.hpp"
#include "capplan/spec/scenario_io.hpp"

using namespace capplan;
using namespace capplan::units;

namespace {
const catalog& cat() { return test::shipped_catalog(); }
estimate_result run(const std::string& text) { return estimate(read_scenario(text, cat()), cat()); }

// Llama-3.1-8B on one DGX-H100, a static batch, with every cost input given in the scenario.
std::string serving(const std::string& cost, const std::string& system = R"({"preset": "DGX-H100", "count": 8})") {
    return R"({"model": "Llama-3.1-8B", "system": )" + system +
           R"(, "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 64}, "cost": )" + cost + "}";
}
const std::string given = R"({"system_price": [280000, 320000], "system_power": "10 kW", "pue": 1.25,
    "usd_per_kwh": 0.10, "hosting_usd_per_kw_month": 150, "depreciation_years": 4, "cost_of_capital": 0,
    "support_per_year": 0.05, "carbon_kg_per_kwh": 0.4, "price_per_device_hour": 3})";
}  // namespace

TEST_CASE("owning: the purchase over its life, energy at the PUE, hosting per provisioned kW, support") {
    const auto r = run(serving(given));
    REQUIRE(r.cost.has_value());
    REQUIRE(r.cost->own.has_value());
    const ownership_cost& o = *r.cost->own;
    CHECK(o.units == 1);
    CHECK(o.capex.usd == 300000.0);
    CHECK(o.capex.low == 280000.0);
    CHECK(o.capex.high == 320000.0);
    // 300,000 / 4 years / 8,766 h = 8.5558 $/h; support 300,000 x 0.05 / 8,766 = 1.7112 $/h
    CHECK(o.capital_per_hour == doctest::Approx(300000.0 / 4 / 8766));
    CHECK(o.support_per_hour == doctest::Approx(300000.0 * 0.05 / 8766));
    // The scenario's power replaces the catalog's maximum and measured draw: 10 kW x 1.25 x $0.10 = $1.25 an hour.
    CHECK(o.it_power.in(kW) == 10.0);
    CHECK(o.energy_per_hour == doctest::Approx(1.25));
    // 10 kW x $150 / kW-month x 12 months / 8,766 h = $2.0534 an hour
    CHECK(o.hosting_per_hour == doctest::Approx(10.0 * 150 * 12 / 8766));
    const double mid = 300000.0 * (0.25 + 0.05) / 8766 + 1.25 + 10.0 * 150 * 12 / 8766;  // 13.5702 $/h
    CHECK(o.per_hour.usd == doctest::Approx(mid));
    CHECK(o.per_hour.low == doctest::Approx(280000.0 * 0.30 / 8766 + 1.25 + 18000.0 / 8766));
    CHECK(r.cost->facility_power.in(kW) == doctest::Approx(12.5));
}

TEST_CASE("other equipment's power is drawn and provisioned with the systems") {
    // The same node and 2 kW of network gear: energy (10 + 2) kW x 1.25 x $0.10 = $1.50 an hour; hosting on
    // 12 kW x $150 x 12 / 8,766 h = $2.4641; the facility draws 12 kW x 1.25 = 15 kW.
    std::string with_network = given;
    with_network.insert(with_network.size() - 1, R"(, "other_power": "2 kW")");
    const auto r = run(serving(with_network));
    REQUIRE(r.cost->own.has_value());
    CHECK(r.cost->own->it_power.in(kW) == doctest::Approx(12.0));
    CHECK(r.cost->own->provisioned_power.in(kW) == doctest::Approx(12.0));
    CHECK(r.cost->own->energy_per_hour == doctest::Approx(1.5));
    CHECK(r.cost->own->hosting_per_hour == doctest::Approx(12.0 * 150 * 12 / 8766));
    CHECK(r.cost->facility_power.in(kW) == doctest::Approx(15.0));
    for (const char* bad : {R"("-1 kW")", R"("200 MW")", R"("5 GB")"}) {
        std::string text = given;
        text.insert(text.size() - 1, std::string(R"(, "other_power": )") + bad);
        CHECK_THROWS_WITH_AS(run(serving(text)), doctest::Contains("/cost/other_power"), config_error);
    }
}

TEST_CASE("a cost of capital charges the annuity that repays the purchase with interest") {
    const auto r = run(serving(R"({"system_price": 300000, "system_power": "10 kW", "cost_of_capital": 0.08,
                                   "depreciation_years": 5})"));
    // Capital recovery factor 0.08 / (1 - 1.08^-5) = 0.250456 a year (a 5-year loan at 8%).
    CHECK(r.cost->own->capital_per_hour == doctest::Approx(300000.0 * 0.250456 / 8766).epsilon(1e-5));
}

TEST_CASE("renting: the user's price, or the middle of the catalog's offers per accelerator-hour") {
    const auto given_price = run(serving(given));
    REQUIRE(given_price.cost->rent.has_value());
    CHECK(given_price.cost->rent->per_hour.usd == 8 * 3.0);
    // 12 H100s at the catalog's on-demand offers per accelerator-hour (instance price / its GPUs).
    const system_economics& e = cat().system_preset("DGX-H100").economics;
    std::vector<double> per_device;
    for (const cloud_offer& o : e.cloud)
        if (o.commitment == "on_demand") per_device.push_back(o.usd_per_hour / o.devices);
    // Twelve: Gcore $2.50, RunPod $2.69, Jarvislabs $2.69, Lambda $23.92 / 8 = $2.99, Civo $2.99, Verda $3.555,
    // DigitalOcean $4.41, CoreWeave $49.24 / 8 = $6.155, AWS $55.04 / 8 = $6.88, Oracle $10.00, Google $88.49 / 8 =
    // $11.06, Azure $98.32 / 8 = $12.29: the middle of twelve is ($3.555 + $4.41) / 2 = $3.9825.
    REQUIRE(per_device.size() == 12);
    std::sort(per_device.begin(), per_device.end());
    CHECK(per_device[5] == doctest::Approx(3.555));
    CHECK(per_device[6] == doctest::Approx(4.41));
    const auto r = run(serving("{}", R"({"accelerator": "H100-SXM", "count": 12, "per_node": 4})"));
    REQUIRE(r.cost->rent.has_value());
    CHECK(r.cost->rent->per_hour.usd == doctest::Approx(12 * 3.9825));
    CHECK(r.cost->rent->per_hour.low == doctest::Approx(12 * 2.50));
    CHECK(r.cost->rent->per_hour.high == doctest::Approx(12 * 12.29));
    CHECK(r.cost->rent->offers.size() == 12);
    CHECK(r.cost->preset == "DGX-H100");  // a system given by accelerator is priced as its preset
    // 12 GPUs: two whole 8-GPU nodes bought, 12 of their 16 GPUs used; a token pays that share of the hour.
    CHECK(r.cost->own->units == 2);
    CHECK(r.cost->own->used_share == doctest::Approx(0.75));
    const double hours = 1e6 / (*r.inference->throughput_tokens_per_s * 3600);
    CHECK(r.cost->per_million_output_tokens->own->usd == doctest::Approx(r.cost->own->per_hour.usd * 0.75 * hours));
    CHECK(r.cost->per_million_output_tokens->facility_energy.in(kWh) ==
          doctest::Approx(r.cost->facility_power.in(kW) * 0.75 * hours));
}

TEST_CASE("renting takes the middle offer per accelerator-hour, not the mean") {
    // HGX-B200's on-demand offers (catalog, 2025-26): Lambda $39.92 / 8 = $4.99, RunPod $5.98, Spheron $6.03, Verda
    // $6.85, CoreWeave $68.80 / 8 = $8.60, AWS $113.9328 / 8 = $14.2416, Oracle $128 / 8 = $16.00 per B200-hour:
    // seven, so the median is Verda's $6.85 (the mean would be $8.96); 8 B200s: $54.80 an hour, $39.92-128.
    const auto r = run(serving("{}", R"({"preset": "HGX-B200", "count": 8})"));
    REQUIRE(r.cost->rent.has_value());
    CHECK(r.cost->rent->usd_per_device_hour == doctest::Approx(6.85));
    CHECK(r.cost->rent->per_hour.usd == doctest::Approx(54.80));
    CHECK(r.cost->rent->per_hour.low == doctest::Approx(39.92));
    CHECK(r.cost->rent->per_hour.high == doctest::Approx(128.0));
}

TEST_CASE("committed and on-demand medians are flagged only when different providers publish them") {
    // Two providers, each with an on-demand and a one-year offer; the catalog may list them in any order.
    auto offer = [](const char* provider, const char* commitment, double usd) {
        cloud_offer o;
        o.provider = provider;
        o.instance = "x";
        o.commitment = commitment;
        o.usd_per_hour = usd;
        return o;
    };
    cost_spec c;
    c.commitment = "1y";
    c.economics.cloud = {offer("A", "on_demand", 4), offer("B", "on_demand", 6), offer("B", "1y", 3), offer("A", "1y", 2)};
    auto flagged = [](const cost_result& r) {
        return std::any_of(r.notes.begin(), r.notes.end(),
                           [](const std::string& n) { return n.find("different sellers") != std::string::npos; });
    };
    const cost_result same = hourly_cost(c, 1);
    REQUIRE(same.rent.has_value());
    CHECK(same.rent->usd_per_device_hour == doctest::Approx(2.5));  // (2 + 3) / 2
    CHECK_FALSE(flagged(same));
    // Only B commits for a year: its one price is not comparable with A and B's on-demand median.
    c.economics.cloud.pop_back();
    const cost_result fewer = hourly_cost(c, 1);
    CHECK(fewer.rent->usd_per_device_hour == doctest::Approx(3.0));
    CHECK(flagged(fewer));
    const auto note = std::find_if(fewer.notes.begin(), fewer.notes.end(),
                                   [](const std::string& n) { return n.find("different sellers") != std::string::npos; });
    CHECK(note->find("the 1y offers come from B and the on-demand ones from A, B") != std::string::npos);
}

TEST_CASE("a million output tokens costs the hours they take, stretched by the hardware's utilization") {
    const auto r = run(serving(given));
    const double tps = *r.inference->throughput_tokens_per_s;
    const double hours = 1e6 / (tps * 3600);
    REQUIRE(r.cost->per_million_output_tokens.has_value());
    const work_cost& w = *r.cost->per_million_output_tokens;
    CHECK(w.own->usd == doctest::Approx(r.cost->own->per_hour.usd * hours));
    CHECK(w.rent->usd == doctest::Approx(24.0 * hours));
    CHECK(w.facility_energy.in(kWh) == doctest::Approx(12.5 * hours));
    CHECK(*w.emissions_kg == doctest::Approx(12.5 * hours * 0.4));
    const auto half = run(serving(given.substr(0, given.size() - 1) + R"(, "utilization": 0.5})"));
    CHECK(half.cost->per_million_output_tokens->own->usd == doctest::Approx(2 * w.own->usd));
    CHECK(half.cost->per_million_output_tokens->facility_energy.in(kWh) == doctest::Approx(w.facility_energy.in(kWh)));  // the work's own energy
    // On demand, renting is paid only while it works; a one-year commitment is paid every hour, busy or not.
    CHECK(half.cost->per_million_output_tokens->rent->usd == doctest::Approx(w.rent->usd));
    const auto committed = run(serving(given.substr(0, given.size() - 1) + R"(, "utilization": 0.5, "commitment": "1y"})"));
    CHECK(committed.cost->per_million_output_tokens->rent->usd == doctest::Approx(2 * w.rent->usd));
}

TEST_CASE("training: a run and a billion tokens") {
    const auto r = run(R"({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
        "training": {"seq_len": 4096, "global_batch": 64, "zero": 3, "tokens": 2e9}, "cost": )" + given + "}");
    REQUIRE(r.feasible != false);
    REQUIRE(r.training.has_value());
    REQUIRE(r.cost->per_run.has_value());
    const double run_hours = *r.training->time_to_train_s / 3600;
    CHECK(r.cost->per_run->own->usd == doctest::Approx(r.cost->own->per_hour.usd * run_hours));
    CHECK(r.cost->per_run->rent->usd == doctest::Approx(24.0 * run_hours));
    CHECK(r.cost->per_billion_tokens->own->usd == doctest::Approx(r.cost->per_run->own->usd / 2));
}

TEST_CASE("the catalog's figures price a preset, and a system without them says what to give") {
    const system_economics& e = cat().system_preset("DGX-H100").economics;
    REQUIRE(e.price.has_value());
    REQUIRE(e.measured_power.has_value());
    const auto r = run(serving("{}"));
    CHECK(r.cost->site == default_cost_site);
    CHECK(r.cost->own->capex.usd == doctest::Approx(e.price->usd.mid()));
    CHECK(r.cost->own->it_power.si() == e.measured_power->value.si());  // energy at the measured draw
    CHECK(r.cost->own->provisioned_power.si() == e.max_power->value.si());
    const auto at_max = run(serving(R"({"power": "max"})"));
    CHECK(at_max.cost->own->it_power.si() == e.max_power->value.si());
    // The MI355X platform has an estimated price but neither a published power nor a cloud offer in the catalog.
    const auto mi = run(R"({"model": "Llama-3.1-8B", "system": {"preset": "MI355X-platform", "count": 8},
        "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 8}, "cost": {}})");
    CHECK_FALSE(mi.cost->own.has_value());
    CHECK_FALSE(mi.cost->rent.has_value());
    CHECK(mi.cost->notes[0].find("give cost.system_power") != std::string::npos);
    CHECK(mi.cost->notes[1].find("give cost.price_per_device_hour") != std::string::npos);
    // Given a power, it is owned: 8 boards at 1.4 kW (AMD's TBP), energy at that rating.
    const auto given = run(R"({"model": "Llama-3.1-8B", "system": {"preset": "MI355X-platform", "count": 8},
        "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 8}, "cost": {"system_power": "11.2 kW"}})");
    REQUIRE(given.cost->own.has_value());
    CHECK(given.cost->own->it_power.si() == doctest::Approx(11200.0));
    CHECK(given.cost->own->capex.usd == doctest::Approx(0.5 * (253920.0 + 276000.0)));  // 8 x $23-25k x 1.38
}

TEST_CASE("a plan that cannot run has an hourly cost but none per token") {
    const auto r = run(R"({"model": "Llama-3.1-70B", "system": {"accelerator": "H100-SXM", "count": 1},
        "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 1}, "cost": {}})");
    REQUIRE(r.feasible == false);
    CHECK(r.cost->own.has_value());
    CHECK_FALSE(r.cost->per_million_output_tokens.has_value());
}

TEST_CASE("bad cost input names its field") {
    CHECK_THROWS_WITH_AS(run(serving(R"({"utilization": 0})")), doctest::Contains("/cost/utilization"), config_error);
    CHECK_THROWS_WITH_AS(run(serving(R"({"system_price": [5, 3]})")), doctest::Contains("/cost/system_price"),
                         config_error);
    CHECK_THROWS_WITH_AS(run(serving(R"({"pue": 0.9})")), doctest::Contains("/cost/pue"), config_error);
    CHECK_THROWS_WITH_AS(run(serving(R"({"site": "Mars"})")), doctest::Contains("/cost/site"), unknown_name_error);
    CHECK_THROWS_WITH_AS(run(serving(R"({"commitment": "forever"})")), doctest::Contains("/cost/commitment"),
                         config_error);
    CHECK_THROWS_WITH_AS(run(serving(R"({"usd_per_kwh": 11})")), doctest::Contains("/cost/usd_per_kwh"), config_error);
    CHECK_THROWS_WITH_AS(run(serving(R"({"typo": 1})")), doctest::Contains("/cost/typo"), config_error);
    // Beyond a typo's size: 1e300 dollars an hour would overflow to infinity times the devices.
    CHECK_THROWS_WITH_AS(run(serving(R"({"price_per_device_hour": 1e300})")),
                         doctest::Contains("/cost/price_per_device_hour"), config_error);
    CHECK_THROWS_WITH_AS(run(serving(R"({"other_capex": -1})")), doctest::Contains("/cost/other_capex"), config_error);
    CHECK_THROWS_WITH_AS(run(serving(R"({"other_capex": 1e300})")), doctest::Contains("/cost/other_capex"), config_error);
    CHECK_THROWS_WITH_AS(run(serving(R"({"system_power": "1e300 kW"})")), doctest::Contains("/cost/system_power"),
                         config_error);
    CHECK_THROWS_WITH_AS(run(serving(R"({"depreciation_years": 0.1})")), doctest::Contains("/cost/depreciation_years"),
                         config_error);
    CHECK_THROWS_WITH_AS(run(serving(R"({"power": "typical"})")), doctest::Contains("/cost/power"), config_error);
}
