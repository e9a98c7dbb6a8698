"""Workbooks with live cost formulas (issue #22 item 6): `capplan batch` and `capplan bom` write XLSX whose cost lines
are formulas over an inputs sheet. LibreOffice (headless) recalculates them; the totals must be capplan's own, before
and after an assumption is edited in the workbook (the edited totals are checked against capplan run with the same
assumption)."""
import os
import shutil
import subprocess

import pytest

import capplan
from capplan.batch import run_rows, write_table
from capplan.workbook import bom_workbook

openpyxl = pytest.importorskip("openpyxl")

INFERENCE = {"model": "Llama-3.1-8B", "system.preset": "DGX-H100", "system.count": 8, "inference.input_tokens": 1000,
             "inference.output_tokens": 200, "inference.concurrency": 32, "cost.site": "US-colocation"}
# Training on a 1y commitment at 80% utilization: the rent of a unit of work pays its idle hours too.
TRAINING = {"model": "Llama-3.1-8B", "system.preset": "DGX-H100", "system.count": 16, "training.seq_len": 4096,
            "training.global_batch": 256, "training.micro_batch": 1, "training.zero": 1, "training.tokens": 1e11,
            "cost.utilization": 0.8, "cost.price_per_device_hour": 2.5, "cost.commitment": "1y"}
# An H200 node has no measured draw in the catalog: its energy is billed at the maximum.
H200 = dict(INFERENCE, **{"system.preset": "HGX-H200", "model": "Llama-3.1-70B", "parallelism.tp": 8})

COST_KEYS = ("cost.facility_power_w", "cost.own.capex_usd", "cost.own.usd_per_hour", "cost.own.capital_usd_per_hour",
             "cost.own.energy_usd_per_hour", "cost.own.hosting_usd_per_hour", "cost.rent.usd_per_hour",
             "cost.per_million_output_tokens.own_usd", "cost.per_million_output_tokens.rent_usd",
             "cost.per_million_output_tokens.energy_kwh", "cost.per_million_output_tokens.emissions_kg_co2e",
             "cost.per_run.own_usd", "cost.per_run.rent_usd", "cost.per_billion_tokens.own_usd",
             "cost.per_billion_tokens.energy_kwh")


def _soffice():
    exe = shutil.which("soffice") or shutil.which("libreoffice")
    if exe is None:
        if os.environ.get("CAPPLAN_REQUIRE_LIBREOFFICE"):
            pytest.fail("CAPPLAN_REQUIRE_LIBREOFFICE is set but soffice is not on PATH (scripts/setup.sh installs "
                        "libreoffice-calc-nogui for the tests)")
        pytest.skip("LibreOffice (soffice) is not installed")
    return exe


def _recalculated(path, tmp_path):
    """The workbook's values after LibreOffice has computed every formula (openpyxl stores none)."""
    out = tmp_path / "recalculated"
    profile = tmp_path / "lo-profile"  # a profile of its own: tests may run beside a user's LibreOffice
    subprocess.run([_soffice(), f"-env:UserInstallation=file://{profile}", "--headless", "--calc", "--convert-to",
                    "xlsx", "--outdir", str(out), str(path)], check=True, capture_output=True, timeout=300)
    return openpyxl.load_workbook(out / path.name, data_only=True)


def _batch(tmp_path, rows):
    dst = tmp_path / "results.xlsx"
    expected = run_rows(rows)
    write_table(expected, dst)
    return dst, expected


def _column(ws):
    return {c.value: c.column for c in ws[1]}


def test_batch_cost_columns_are_formulas_over_one_shared_inputs_sheet(tmp_path):
    dst, expected = _batch(tmp_path, [INFERENCE, TRAINING, H200])
    wb = openpyxl.load_workbook(dst)
    ws, inputs = wb["capplan"], wb["inputs"]
    col = _column(ws)
    for i, row in enumerate(expected, start=2):
        for key in COST_KEYS:
            if row.get(key) is not None:
                formula = ws.cell(i, col[key]).value
                assert isinstance(formula, str) and formula.startswith("="), (key, formula)
    assert ws.cell(2, col["model.parameters"]).value == 8030261248  # not costs: values as before
    labels = {inputs.cell(r, 1).value: r for r in range(1, inputs.max_row + 1)}
    # The three rows share the site's PUE: one cell, with its source, that every row's line refers to.
    pue = labels["PUE (facility power / IT power)"]
    assert inputs.cell(pue, 2).value == 1.3 and "Uptime" in inputs.cell(pue, 4).value
    header = labels["by results row"]
    pue_column = [inputs.cell(header, c).value for c in range(1, inputs.max_column + 1)].index("pue") + 1
    assert {inputs.cell(header + k, pue_column).value for k in (1, 2, 3)} == {f"=inputs!$B${pue}"}
    # The training row alone rents on a 1y commitment at 0.8 utilization: those stay per row.
    assert "share of hours the hardware does this work" not in labels


def test_libreoffice_recalculates_capplans_own_figures(tmp_path):
    dst, expected = _batch(tmp_path, [INFERENCE, TRAINING, H200])
    ws = _recalculated(dst, tmp_path)["capplan"]
    col = _column(ws)
    checked = 0
    for i, row in enumerate(expected, start=2):
        for key in COST_KEYS:
            if row.get(key) is not None:
                assert ws.cell(i, col[key]).value == pytest.approx(row[key], rel=1e-9), (i, key)
                checked += 1
    assert checked >= 30


def test_an_assumption_edited_in_the_workbook_moves_the_costs_as_capplan_would(tmp_path):
    dst, _ = _batch(tmp_path, [INFERENCE, H200])
    wb = openpyxl.load_workbook(dst)
    inputs = wb["inputs"]
    labels = {inputs.cell(r, 1).value: r for r in range(1, inputs.max_row + 1)}
    inputs.cell(labels["PUE (facility power / IT power)"], 2).value = 1.5
    inputs.cell(labels["depreciation period"], 2).value = 4
    inputs.cell(labels["cost of capital (0: straight-line)"], 2).value = 0.08
    inputs.cell(labels["DGX-H100"], 3).value = 250000  # the node's price, low
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    ws = _recalculated(edited, tmp_path)["capplan"]
    col = _column(ws)
    terms = {"pue": 1.5, "depreciation_years": 4, "cost_of_capital": 0.08}
    for i, row, price in ((2, INFERENCE, [250000, 331200]), (3, H200, None)):
        scenario = capplan.batch.scenario_from_row(row)
        want = capplan.cost(scenario, **terms, **({"system_price": price} if price else {}))
        assert ws.cell(i, col["cost.own.usd_per_hour"]).value == pytest.approx(want["own"]["usd_per_hour"], rel=1e-9)
        assert ws.cell(i, col["cost.per_million_output_tokens.own_usd"]).value == pytest.approx(
            want["per_million_output_tokens"]["own_usd"], rel=1e-9)
        assert ws.cell(i, col["cost.facility_power_w"]).value == pytest.approx(want["facility_power_w"], rel=1e-9)


def test_bom_totals_and_owning_cost_are_formulas_that_recalculate_to_capplans(tmp_path, run_cli):
    dst = tmp_path / "bom.xlsx"
    code, _, err = run_cli("bom", "--system", "DGX-H100", "--count", "256", "--rack-power", "40kW", "-o", str(dst))
    assert code == 0, err
    result = capplan.bom("DGX-H100", 256, rack_power="40kW")
    wb = openpyxl.load_workbook(dst)
    assert wb.active.title == "bom"
    labels = {wb["bom"].cell(r, 1).value: r for r in range(1, wb["bom"].max_row + 1)}
    assert wb["bom"].cell(labels["known totals"], 7).value.startswith("=SUM(")
    values = _recalculated(dst, tmp_path)["bom"]
    assert values.cell(labels["known totals"], 5).value == pytest.approx(result["known_power_w"], rel=1e-9)
    assert values.cell(labels["known totals"], 7).value == pytest.approx(result["known_usd"], rel=1e-9)
    own = result["cost"]["own"]
    for label, key in (("capex", "capex_usd"), ("owning, an hour", "usd_per_hour"), ("energy", "energy_usd_per_hour"),
                       ("hosting", "hosting_usd_per_hour"), ("capital", "capital_usd_per_hour")):
        assert values.cell(labels[label], 2).value == pytest.approx(own[key], rel=1e-9), label
    assert values.cell(labels["owning, a year"], 2).value == pytest.approx(own["usd_per_hour"] * 8766, rel=1e-9)
    # By hand: (32 nodes x 7.75 kW measured + 512 optics x 15 W + 12 QM9700 x 747 W + one scalable unit's storage and
    # management networks, 4 QM9700 x 747 W + 2 SN4600C x 466 W + 2 SN2201 x 98 W + a UFM appliance's 689 W) x PUE 1.3
    # x 8766 h = 269,449 W x 1.3 x 8766 h = 3,070,586.9142 kWh a year; x 0.367 kg CO2e/kWh.
    assert values.cell(labels["energy at the facility, a year"], 2).value == pytest.approx(3070586.9142)
    assert values.cell(labels["emissions, a year"], 2).value == pytest.approx(3070586.9142 * 0.367)


def test_bom_workbook_marks_quoted_prices_and_carries_the_notes():
    result = capplan.bom("HGX-B200", 256, part_prices={"spine switches": 40000})
    wb = bom_workbook(result)
    bom = wb["bom"]
    remarks = {bom.cell(r, 1).value: bom.cell(r, 8).value for r in range(2, bom.max_row + 1)}
    assert remarks["spine switches"] == "price as quoted (part_prices), not the catalog's"
    assert remarks["leaf switches"] in ("", None)
    notes = [wb["notes"].cell(r, 1).value for r in range(2, wb["notes"].max_row + 1)]
    assert notes == result["notes"] and any(n.startswith("price: as given for the spine switches") for n in notes)


def test_bom_counts_and_network_prices_typed_into_the_workbook_flow_into_capex(tmp_path):
    result = capplan.bom("DGX-H100", 64)
    wb = bom_workbook(result)
    bom, inputs = wb["bom"], wb["inputs"]
    rows = {bom.cell(r, 1).value: r for r in range(1, bom.max_row + 1)}
    parts = {inputs.cell(r, 1).value: r for r in range(1, inputs.max_row + 1)}
    # A buyer prices the leaf switches at $30,000 each and buys one node fewer.
    inputs.cell(parts["leaf switches"], 4).value = inputs.cell(parts["leaf switches"], 5).value = 30000
    bom.cell(rows["systems"], 3).value = 7
    dst = tmp_path / "edited.xlsx"
    wb.save(dst)
    values = _recalculated(dst, tmp_path)["bom"]
    leaves = result["fabric"]["leaf"]
    # The other priced network lines keep the catalog's prices (the optics: $879 each, models/links/ib-ndr.json; the
    # scalable unit's 4 storage fabric QM9700 the middle of $36,000-50,000, models/systems/dgx-h100.json).
    optics = sum(line["count"] for line in result["lines"] if line["item"].startswith("optics"))
    assert all(line["usd"] == 879 for line in result["lines"] if line["item"].startswith("optics"))
    other = optics * 879 + 4 * 43000
    capex = 7 * 303600 + leaves * 30000 + other
    assert values.cell(rows["known totals"], 7).value == pytest.approx(capex)
    network_w = result["known_power_w"] - 8 * 10200  # the network's known power: its optics and its switch
    want = capplan.cost({"model": "Llama-3.1-8B", "system": {"preset": "DGX-H100", "count": 56},
                         "inference": {"input_tokens": 1, "output_tokens": 1, "batch": 1}},
                        other_capex=leaves * 30000 + other, other_power=f"{network_w} W")["own"]
    assert values.cell(rows["capex"], 2).value == pytest.approx(want["capex_usd"])
    assert values.cell(rows["owning, an hour"], 2).value == pytest.approx(want["usd_per_hour"], rel=1e-9)
