"""capplan.cost and `capplan cost` (issue #22 items 1-2): owning and renting per hour, per million output tokens and per
training run; the catalog's prices, power and sites carry a source and a date."""
import copy
import json
from pathlib import Path

import pytest
from schema_support import validator

import capplan

ROOT = Path(__file__).resolve().parents[2]
SERVING = {"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
           "inference": {"input_tokens": 1000, "output_tokens": 200, "batch": 64}}
GIVEN = {"system_price": 300000, "system_power": "10 kW", "pue": 1.25, "usd_per_kwh": 0.10,
         "hosting_usd_per_kw_month": 150, "depreciation_years": 4, "support_per_year": 0.05, "price_per_device_hour": 3}


def test_cost_by_hand_per_hour_and_per_million_output_tokens():
    c = capplan.cost(SERVING, **GIVEN)
    # 300,000 x (1/4 + 0.05) / 8,766 h + 10 kW x 1.25 x $0.10 + 10 kW x $150 x 12 / 8,766 h = $13.57 an hour
    per_hour = 300000 * 0.30 / 8766 + 1.25 + 10 * 150 * 12 / 8766
    assert c["own"]["usd_per_hour"] == pytest.approx(per_hour)
    assert c["rent"]["usd_per_hour"] == 24.0 and c["rent"]["offers"] == []
    tps = capplan.estimate(SERVING).to_dict()["inference"]["throughput_tokens_per_s"]
    hours = 1e6 / (tps * 3600)
    assert c["per_million_output_tokens"]["own_usd"] == pytest.approx(per_hour * hours)
    assert c["per_million_output_tokens"]["rent_usd"] == pytest.approx(24 * hours)
    assert c["per_million_output_tokens"]["energy_kwh"] == pytest.approx(12.5 * hours)
    assert "own: per hour" in repr(c) and "$13.57" in repr(c)
    # What it was computed from, named as the cost object names it: the given terms, the catalog's where none given.
    inputs = c["inputs"]
    assert (inputs["pue"], inputs["usd_per_kwh"], inputs["depreciation_years"], inputs["support_per_year"]) == \
        (1.25, 0.10, 4, 0.05)
    assert inputs["unit_price_usd_range"] == [300000, 300000] and inputs["unit_power_w"] == 10000
    assert inputs["unit_power_basis"] == "max" and inputs["unit_devices"] == 8
    assert inputs["sources"]["pue"] == "the scenario" and "EIA" in inputs["sources"]["carbon_kg_per_kwh"]


def test_a_scenario_file_keeps_its_cost_object_and_the_arguments_override_it(tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps({**SERVING, "cost": {"price_per_device_hour": 2, "site": "US-colocation"}}))
    assert capplan.cost(str(f))["rent"]["usd_per_hour"] == 16.0
    assert capplan.cost(str(f), price_per_device_hour=4)["rent"]["usd_per_hour"] == 32.0


def test_the_estimate_table_shows_the_cost_and_its_notes():
    r = capplan.estimate({**SERVING, "cost": {}})
    text = repr(r)
    assert "own: per hour" in text and "rent: per hour" in text and "per million output tokens" in text
    assert "note: owning: 1 x DGX-H100" in text
    assert r.to_dict()["cost"]["currency"] == "USD"


def test_training_costs_a_run_and_a_billion_tokens():
    c = capplan.cost({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                      "training": {"seq_len": 4096, "global_batch": 64, "zero": 3, "tokens": 1e9}},
                     price_per_device_hour=3)
    assert c["per_run"]["rent_usd"] == pytest.approx(c["per_billion_tokens"]["rent_usd"])
    assert c["per_run"]["energy_kwh"] > 0


@pytest.mark.parametrize("overrides,field", [
    ({"utilization": 1.5}, "/cost/utilization"), ({"pue": 0.5}, "/cost/pue"), ({"site": "Moon"}, "/cost/site"),
    ({"system_price": "cheap"}, "/cost/system_price"), ({"colour": "red"}, "/cost/colour"),
])
def test_bad_cost_input_names_the_field(overrides, field):
    with pytest.raises(capplan.Error, match=field):
        capplan.cost(SERVING, **overrides)


def test_cli_cost_table_json_and_bad_input(run_cli, tmp_path):
    f = tmp_path / "s.json"
    f.write_text(json.dumps(SERVING))
    code, out, err = run_cli("cost", str(f), "--price-per-device-hour", "3")
    assert code == 0, err
    assert out.startswith("capplan cost (USD)") and "$24.00" in out
    code, out, _ = run_cli("cost", str(f), "--format", "json", "--utilization", "0.5")
    assert code == 0 and json.loads(out)["currency"] == "USD"
    code, out, err = run_cli("cost", str(f), "--pue", "0.5")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--pue" in err
    code, out, err = run_cli("cost", str(f), "--utilization", "2")
    assert code == 2 and "/cost/utilization" in err and len(err.strip().splitlines()) == 1
    for args, field in ((["--price-per-device-hour", "1e300"], "/cost/price_per_device_hour"),
                        (["--site", "Moon"], "Moon"), (["--commitment", "forever"], "--commitment"),
                        (["--depreciation-years", "100"], "/cost/depreciation_years")):
        code, out, err = run_cli("cost", str(f), *args)
        assert code == 2 and field in err and len(err.strip().splitlines()) == 1, err
    code, out, err = run_cli("list", "sites")
    assert code == 0 and "US-colocation" in out


def test_every_catalog_price_power_and_offer_has_a_source_and_a_date():
    found = 0
    for path in sorted((ROOT / "models" / "systems").glob("*.json")) + sorted((ROOT / "models" / "sites").glob("*.json")):
        entry = json.loads(path.read_text())
        figures = [entry.get("price"), *(entry.get("power") or {}).values(), *entry.get("cloud", []),
                   *(v for k, v in entry.items() if isinstance(v, dict) and "value" in v and path.parent.name == "sites")]
        for fig in filter(None, figures):
            assert fig.get("source") and fig.get("date"), (path.name, fig)
            found += 1
    for path in sorted((ROOT / "models" / "links").glob("*.json")):
        fabric = json.loads(path.read_text()).get("fabric")
        if fabric:
            assert fabric.get("source") and fabric.get("date"), path.name
            for part in fabric.values():
                for figure in ("power", "price"):
                    if isinstance(part, dict) and figure in part:
                        assert part[figure].get("source") and part[figure].get("date"), (path.name, part)
                        found += 1
    assert found >= 30


def test_the_schemas_refuse_a_price_without_a_date_and_a_site_without_a_pue():
    entry = json.loads((ROOT / "models" / "systems" / "dgx-h100.json").read_text())
    undated = copy.deepcopy(entry)
    del undated["price"]["date"]
    assert list(validator("system.schema.json").iter_errors(undated))
    site = json.loads((ROOT / "models" / "sites" / "us-colocation.json").read_text())
    del site["pue"]
    assert list(validator("site.schema.json").iter_errors(site))


def test_sizing_ranks_by_the_cost_of_owning_and_prices_a_million_tokens_at_the_targets():
    r = capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, accelerators=["H100-SXM", "B200", "MI300X", "MI355X"],
                               rank_by="tco")
    options = r["options"]
    assert r["ranked_by"].startswith("ranked by the cost of owning per hour")
    owned = [o for o in options if "own_usd_per_hour" in o]
    assert [o["own_usd_per_hour"] for o in owned] == sorted(o["own_usd_per_hour"] for o in owned)
    assert options.index(owned[-1]) < len(owned)  # the unpriced (no MI355X server power) come after
    assert {o["accelerator"] for o in options[len(owned):]} == {"MI355X"}
    for o in owned:  # by hand from the catalog: the option's share of the whole nodes bought
        entry = capplan.entry(o["system"])
        per_unit = entry["per_node"] * entry.get("nodes", 1)
        units = -(-o["count"] // per_unit)
        assert o["own_units"] == units
        assert o["capex_usd"] == pytest.approx(units * sum(entry["price"]["usd"]) / 2
                                               if isinstance(entry["price"]["usd"], list) else units * entry["price"]["usd"])
        hourly = capplan.cost({"model": "Llama-3.1-8B", "system": {"preset": o["system"], "count": per_unit}})
        assert o["own_usd_per_hour"] == pytest.approx(hourly["own"]["usd_per_hour"] * o["count"] / (units * per_unit))
        assert o["own_usd_per_million_output_tokens"] == pytest.approx(
            o["own_usd_per_hour"] * 1e6 / (o["output_tokens_per_s"] * 3600))
    # Every one but MI355X has cloud offers in the catalog.
    assert [o["accelerator"] for o in options if "rent_usd_per_hour" not in o] == ["MI355X"] * (len(options) - len(owned))
    with pytest.raises(capplan.ConfigError, match="/rank_by"):
        capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, accelerators=["B200"], rank_by="cheapest")
    with pytest.raises(capplan.ConfigError, match="/rank_by"):
        capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, accelerators=["B200"], rank_by=["tco"])
    # Half-busy owned hardware pays twice per token; on-demand rental does not.
    half = capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, accelerators=["H100-SXM"], rank_by="tco",
                                  cost={"utilization": 0.5})["options"][0]
    full = next(o for o in options if o["accelerator"] == "H100-SXM")
    assert half["own_usd_per_million_output_tokens"] == pytest.approx(2 * full["own_usd_per_million_output_tokens"])
    assert half["rent_usd_per_million_output_tokens"] == pytest.approx(full["rent_usd_per_million_output_tokens"])


def test_cli_sizing_rank_by(run_cli):
    code, out, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "8", "--input", "1000",
                             "--output", "100", "--accelerators", "H100,B200", "--rank-by", "cloud")
    assert code == 0, err
    assert "\nranked by the cost of renting per hour" in out and "rent $/1M tok" in out
    assert out.startswith("recommendation: ") and "per million output tokens at these targets" in out
    # On 3-year commitments the H100 rents at its 3-year median, AWS's $23.77728 a node-hour (the test below).
    code, out, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "8", "--input", "1000",
                             "--output", "100", "--accelerators", "H100", "--rank-by", "cloud", "--commitment", "3y",
                             "--format", "json")
    assert code == 0, err
    option = json.loads(out)["options"][0]
    assert option["count"] == 1 and option["rent_usd_per_hour"] == pytest.approx(23.77728 / 8)
    code, out, err = run_cli("size", "inference", "--model", "Llama-3.1-8B", "--concurrency", "8", "--input", "1000",
                             "--output", "100", "--accelerators", "H100", "--rank-by", "cloud", "--commitment", "5y")
    assert code == 2 and "--commitment" in err and len(err.strip().splitlines()) == 1, err
    code, out, err = run_cli("size", "training", "--model", "Llama-3.1-8B", "--system", "DGX-H100", "--count", "8",
                             "--commitment", "1y")
    assert code == 2 and "--commitment" in err and len(err.strip().splitlines()) == 1, err
    code, out, err = run_cli("size", "training", "--model", "Llama-3.1-8B", "--system", "DGX-H100", "--count", "8",
                             "--rank-by", "tco")
    assert code == 2 and "--rank-by" in err and len(err.strip().splitlines()) == 1


def test_estimates_carry_the_validated_error_as_ranges_and_sizing_can_meet_targets_at_the_pessimistic_end():
    bands = json.loads((ROOT / "models" / "uncertainty.json").read_text())["bands"]
    # Llama-3.1-8B is dense: the dense rows' band where models/uncertainty.json has one, else the quantity's.
    bands = {q: bands.get(f"{q}.dense", bands[q]) for q in ("ttft", "tpot")}
    r = capplan.estimate(SERVING).to_dict()
    ttft, b = r["inference"]["ttft_s"], bands["ttft"]
    assert r["inference"]["ttft_s_range"] == pytest.approx([ttft / (1 + b["p90"]), ttft / (1 + b["p10"])])
    assert "measured 8 in 10" in repr(capplan.estimate(SERVING))
    raw = json.loads((ROOT / "models" / "uncertainty.json").read_text())["bands"]
    # The rule sizing shares with estimates: the family's band; none where only the other family has one.
    from capplan import _core
    assert _core.uncertainty_band("ttft", True) == pytest.approx((raw["ttft.moe"]["p10"], raw["ttft.moe"]["p90"]))
    # MoE training has its own band since Megatron-Bridge 26.06's MoE rows (2026-12-05); LoRA steps have a dense one only.
    assert _core.uncertainty_band("training_step", True) == pytest.approx(
        (raw["training_step.moe"]["p10"], raw["training_step.moe"]["p90"]))
    assert "lora_time.moe" not in raw and _core.uncertainty_band("lora_time", True) is None
    typical = capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, ttft_p99="1 s", tpot_p99="20 ms",
                                     accelerators=["H100-SXM"])
    high = capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, ttft_p99="1 s", tpot_p99="20 ms",
                                  accelerators=["H100-SXM"], confidence="high")
    assert typical["targets"]["tpot_p99_s"] == pytest.approx(0.020)
    assert high["targets"]["tpot_p99_s"] == pytest.approx(0.020 * min(1, 1 + bands["tpot"]["p10"]))
    assert high["targets"]["ttft_p99_s"] == pytest.approx(1.0 * min(1, 1 + bands["ttft"]["p10"]))
    assert high["options"]
    for o in high["options"]:
        assert o["tpot_p99_s"] <= high["targets"]["tpot_p99_s"]
    with pytest.raises(capplan.ConfigError, match="/confidence"):
        capplan.size_inference("Llama-3.1-8B", 8, 1000, 100, accelerators=["H100-SXM"], confidence="certain")


def test_renting_on_a_commitment_takes_the_median_of_that_commitments_offers():
    # DGX-H100's offers per GPU-hour (models/systems/dgx-h100.json; the committed ones as published 2026-09-27).
    # 3 years: Gcore $1.93, Civo $2.49, AWS p5.48xlarge $23.77728 / 8 = $2.97216, Google a3-highgpu-8g $38.8644 / 8 =
    # $4.85805, Azure ND H100 v5 $1,134,310 / 26,280 h / 8 = $5.39531: the median is AWS's, $23.77728 a node-hour.
    # 1 year: Gcore $2.04, Jarvislabs $2.47, Civo $2.69, DigitalOcean $3.26, Verda $3.555 x 0.92 = $3.2706, AWS
    # $34.6752 / 8 = $4.3344, Google $61.3837 / 8 = $7.6730, Azure $551,221 / 8,760 / 8 = $7.8656: ($3.26 + $3.2706) / 2.
    # On demand (twelve offers, tests/cpp/test_cost.cpp): $3.9825. Each commitment below the one before.
    scenario = {"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 8},
                "inference": {"input_tokens": 1, "output_tokens": 1, "batch": 1}}
    three = capplan.cost(scenario, commitment="3y")["rent"]
    assert three["usd_per_hour"] == pytest.approx(23.77728)
    assert three["usd_per_device_hour"] == pytest.approx(23.77728 / 8)
    assert len(three["offers"]) == 5 and all(" 3y " in o for o in three["offers"])
    one = capplan.cost(scenario, commitment="1y")
    assert one["rent"]["usd_per_device_hour"] == pytest.approx((3.26 + 3.555 * 0.92) / 2)
    assert capplan.cost(scenario)["rent"]["usd_per_device_hour"] == pytest.approx(3.9825)
    # The committed offers come from fewer sellers than the on-demand ones, and the result says so.
    assert ("renting: the 1y offers come from AWS, Azure, Google Cloud, Civo, Gcore, Verda, Jarvislabs, DigitalOcean "
            "and the on-demand ones from Lambda, RunPod,") in " ".join(one["notes"])
    assert not any(n.startswith("renting:") for n in capplan.cost(scenario)["notes"])
