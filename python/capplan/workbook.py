"""Workbooks whose cost lines are live formulas over an inputs sheet (issue #22 item 6): a procurement team changes a
price, the PUE or the depreciation period in the workbook and every cost that depends on it follows, computed as
capplan computes it (docs/formulas.md §19-20). Used by ``capplan batch -o x.xlsx`` and ``capplan bom -o x.xlsx``."""
from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

Row = Dict[str, Any]

from .units import GIGA, HOURS_A_YEAR, MEGA, SECONDS_AN_HOUR, WATTS_A_KW

# The conversions the formulas spell out, as text: every template may name them.
CONVERSIONS = {"hours_a_year": f"{HOURS_A_YEAR:g}", "watts_a_kw": f"{WATTS_A_KW:g}",
               "seconds_an_hour": f"{SECONDS_AN_HOUR:g}", "million": f"{MEGA:.0f}", "billion": f"{GIGA:.0f}"}
MONTHS_A_YEAR = 12  # hosting is priced per kW-month

# The cost terms of a site and of the work, as a scenario's cost object and a result's cost.inputs name them:
# (key, label, unit). Kept on the inputs sheet once when every row shares the value.
SHARED_TERMS = (
    ("pue", "PUE (facility power / IT power)", ""),
    ("usd_per_kwh", "electricity", "USD/kWh"),
    ("hosting_usd_per_kw_month", "hosting per provisioned kW", "USD/kW-month"),
    ("depreciation_years", "depreciation period", "years"),
    ("cost_of_capital", "cost of capital (0: straight-line)", "a year"),
    ("support_per_year", "support, a share of the purchase", "a year"),
    ("carbon_kg_per_kwh", "grid carbon intensity", "kg CO2e/kWh"),
    ("utilization", "share of hours the hardware does this work", ""),
)
# A system preset's figures: kept once per preset when every row of that preset shares them.
UNIT_TERMS = (
    ("unit_devices", "accelerators per unit", ""),
    ("unit_price_low", "unit price, low", "USD"),
    ("unit_price_high", "unit price, high", "USD"),
    ("unit_power_w", "unit draw billed for energy", "W"),
    ("unit_provisioned_power_w", "unit maximum power (hosting)", "W"),
    ("commitment", "cloud commitment", ""),
    ("usd_per_device_hour", "rent per accelerator-hour", "USD"),
)
ROW_TERMS = (("devices", "accelerators", ""), ("other_capex_usd", "other capex", "USD"),
             ("other_power_w", "other equipment's power", "W"))


def _capital_recovery(rate: str, years: str) -> str:
    """The share of a purchase charged each year: 1/n straight-line, else r / (1 - (1 + r)^-n)."""
    return f"IF({rate}=0,1/{years},{rate}/(1-POWER(1+{rate},-{years})))"


# Owning and renting an hour (docs/formulas.md §19), in dependency order: (output, formula over {names}).
HOURLY = (
    ("units", "ROUNDUP({devices}/{unit_devices},0)"),
    ("used_share", "{devices}/({units}*{unit_devices})"),
    ("own_used_share", "{used_share}"),
    ("capex_usd", "{units}*({unit_price_low}+{unit_price_high})/2+{other_capex_usd}"),
    ("capital_usd_per_hour", "{capex_usd}*" + _capital_recovery("{cost_of_capital}", "{depreciation_years}")
     + "/{hours_a_year}"),
    ("support_usd_per_hour", "{capex_usd}*{support_per_year}/{hours_a_year}"),
    ("energy_usd_per_hour", "({units}*{unit_power_w}+{other_power_w})/{watts_a_kw}*{pue}*{usd_per_kwh}"),
    ("hosting_usd_per_hour", "({units}*{unit_provisioned_power_w}+{other_power_w})/{watts_a_kw}"
     f"*{{hosting_usd_per_kw_month}}*{MONTHS_A_YEAR}/{{hours_a_year}}"),
    ("own_usd_per_hour", "{capital_usd_per_hour}+{support_usd_per_hour}+{energy_usd_per_hour}+{hosting_usd_per_hour}"),
    ("it_power_w", "{units}*{unit_power_w}+{other_power_w}"),
    ("provisioned_power_w", "{units}*{unit_provisioned_power_w}+{other_power_w}"),
    ("facility_power_w", "({units}*{unit_power_w}+{other_power_w})*{pue}"),
    ("rent_usd_per_hour", "{devices}*{usd_per_device_hour}"),
)
# A unit of work of H hours of the whole system (docs/formulas.md §19): owned and committed hardware is paid every
# hour (H / utilization), on-demand rental only while it works.
WORK = (
    ("own_usd", "{own_usd_per_hour}*({H})/{utilization}*{used_share}"),
    ("rent_usd", '{rent_usd_per_hour}*IF({commitment}="on_demand",({H}),({H})/{utilization})'),
    ("energy_kwh", "{used_share}*{facility_power_w}/{watts_a_kw}*({H})"),
    ("emissions_kg_co2e", "{energy_kwh}*{carbon_kg_per_kwh}"),
)
# Which unit of work, and the hours it takes from a result's column ({speed}).
WORKS = (
    ("per_million_output_tokens", "{million}/({speed}*{seconds_an_hour})", "inference.throughput_tokens_per_s"),
    ("per_billion_tokens", "{billion}/({speed}*{seconds_an_hour})", "training.tokens_per_s"),
    ("per_run", "{speed}/{seconds_an_hour}", "training.time_to_train_s"),
)
# Where each hourly output sits in a flattened result.
RESULT_COLUMN = {
    "units": "cost.own.units", "used_share": "cost.used_share", "own_used_share": "cost.own.used_share", "capex_usd": "cost.own.capex_usd",
    "capital_usd_per_hour": "cost.own.capital_usd_per_hour", "support_usd_per_hour": "cost.own.support_usd_per_hour",
    "energy_usd_per_hour": "cost.own.energy_usd_per_hour", "hosting_usd_per_hour": "cost.own.hosting_usd_per_hour",
    "own_usd_per_hour": "cost.own.usd_per_hour", "it_power_w": "cost.own.it_power_w",
    "provisioned_power_w": "cost.own.provisioned_power_w", "facility_power_w": "cost.facility_power_w",
    "rent_usd_per_hour": "cost.rent.usd_per_hour", "usd_per_device_hour": "cost.rent.usd_per_device_hour",
}
RANGE_NOTE = ("Columns ending in _range are capplan's at the values capplan used (the catalog's price ranges and "
              "cloud offers); they do not follow edits here.")


def _absolute(sheet: str, column: int, row: int) -> str:
    from openpyxl.utils import get_column_letter
    return f"{sheet}!${get_column_letter(column)}${row}"


def _local(column: int, row: int) -> str:
    from openpyxl.utils import get_column_letter
    return f"{get_column_letter(column)}{row}"


def _formula(template: str, cells: Mapping[str, str]) -> Optional[str]:
    """``template`` with each {name} replaced by its cell; None when a name has no cell (the figure is unknown)."""
    try:
        return "=" + template.format_map({**CONVERSIONS, **cells})
    except KeyError:
        return None


def _inputs_of(row: Row) -> Optional[Dict[str, Any]]:
    """A flattened result's cost inputs under the names the formulas use; None without a cost section."""
    def get(key: str) -> Any:
        return row.get("result." + key, row.get(key))
    if get("cost.inputs.pue") is None:
        return None
    values: Dict[str, Any] = {k: get("cost.inputs." + k) for k, _, _ in SHARED_TERMS}
    values.update({k: get("cost.inputs." + k) for k in ("unit_devices", "unit_power_w", "unit_provisioned_power_w",
                                                        "commitment", "other_capex_usd", "other_power_w")})
    price = get("cost.inputs.unit_price_usd_range")
    if isinstance(price, str):
        price = json.loads(price)
    if price:
        values["unit_price_low"], values["unit_price_high"] = price
    values["usd_per_device_hour"] = get("cost.rent.usd_per_device_hour")
    values["devices"] = get("cost.devices")
    values["preset"] = get("cost.preset") or "(by accelerator)"
    return {k: v for k, v in values.items() if v is not None}


class _Sheet:
    """Appends labelled blocks to a worksheet, tracking the next free row."""

    def __init__(self, ws):
        self.ws, self.row = ws, 1

    def line(self, *values: Any, bold: bool = False) -> int:
        from openpyxl.styles import Font
        for column, v in enumerate(values, start=1):
            cell = self.ws.cell(self.row, column, v)
            if bold:
                cell.font = Font(bold=True)
        self.row += 1
        return self.row - 1


def _shared_cells(sheet: _Sheet, rows: List[Dict[str, Any]], sources: Mapping[str, str]) -> Dict[str, str]:
    """The site terms every costed row shares, one cell each with its source; a term that differs stays per row."""
    cells: Dict[str, str] = {}
    sheet.line("shared assumptions", "value", "unit", "source", bold=True)
    for key, label, unit in SHARED_TERMS:
        values = {r.get(key) for r in rows}
        if len(values) == 1 and None not in values:
            at = sheet.line(label, values.pop(), unit, sources.get(key, ""))
            cells[key] = _absolute("inputs", 2, at)
    sheet.line()
    return cells


def _unit_cells(sheet: _Sheet, rows: List[Dict[str, Any]]) -> Dict[str, Dict[str, str]]:
    """Per system preset, the unit's price, power and rent every row of that preset shares."""
    presets = list(dict.fromkeys(r["preset"] for r in rows))
    sheet.line("by system", *[label + (f" ({unit})" if unit else "") for _, label, unit in UNIT_TERMS], bold=True)
    cells: Dict[str, Dict[str, str]] = {}
    for preset in presets:
        mine = [r for r in rows if r["preset"] == preset]
        shared = {k: mine[0].get(k) for k, _, _ in UNIT_TERMS if len({r.get(k) for r in mine}) == 1}
        at = sheet.line(preset, *[shared.get(k) for k, _, _ in UNIT_TERMS])
        cells[preset] = {k: _absolute("inputs", i, at) for i, (k, _, _) in enumerate(UNIT_TERMS, start=2)
                         if shared.get(k) is not None}
    sheet.line()
    return cells


def add_cost_formulas(wb, ws, columns: Sequence[str], rows: Sequence[Row], sources: Mapping[str, str]) -> int:
    """Turns the cost columns of ``ws`` (a results sheet: header in row 1, ``rows`` below) into formulas over a new
    ``inputs`` sheet: shared site terms, per-preset prices and power, then one line per costed row whose cells refer
    to the shared ones. Returns the number of rows given formulas."""
    costed = [(i, v) for i, r in enumerate(rows) if (v := _inputs_of(r)) is not None]
    if not costed:
        return 0
    sheet = _Sheet(wb.create_sheet("inputs"))
    sheet.line("capplan cost inputs: change a value here and the cost columns of the results follow "
               "(docs/formulas.md §19).", bold=True)
    sheet.line(RANGE_NOTE)
    sheet.line()
    values = [v for _, v in costed]
    shared = _shared_cells(sheet, values, sources)
    units = _unit_cells(sheet, values)
    per_row = ROW_TERMS + tuple((k, l, u) for k, l, u in SHARED_TERMS + UNIT_TERMS)
    sheet.line("by results row", *[k for k, _, _ in per_row], bold=True)
    position = {name: c for c, name in enumerate(columns, start=1)}
    for i, v in costed:
        at = sheet.line(f"row {i + 2}")
        cells: Dict[str, str] = {}
        for c, (key, _, _) in enumerate(per_row, start=2):
            ref = shared.get(key) or units[v["preset"]].get(key)
            if ref is None and v.get(key) is None:
                continue
            sheet.ws.cell(at, c, "=" + ref if ref else v[key])
            cells[key] = _absolute("inputs", c, at)
        _fill_result_row(ws, i + 2, rows[i], position, cells)
    return len(costed)


def _fill_result_row(ws, at: int, row: Row, position: Mapping[str, int], cells: Dict[str, str]) -> None:
    """Writes the hourly and per-work formulas into the result row's own cost columns (where it has a value)."""
    def column_of(key: str) -> Optional[int]:
        return position.get("result." + key) or position.get(key)

    def place(name: str, key: str, template: str) -> None:
        formula = _formula(template, cells)
        column = column_of(key)
        if column is not None and formula is not None and row.get(key, row.get("result." + key)) is not None:
            ws.cell(at, column, formula)
            cells[name] = _local(column, at)
        elif formula is not None:  # not a column of this row: keep the name for dependants
            cells[name] = f"({formula[1:]})"

    for name, template in HOURLY:
        place(name, RESULT_COLUMN[name], template)
    place("usd_per_device_hour", RESULT_COLUMN["usd_per_device_hour"], "{usd_per_device_hour}")
    for work, hours, speed in WORKS:
        if column_of(speed) is None:
            continue
        work_cells = dict(cells, H=hours.format_map(dict(CONVERSIONS, speed=_local(column_of(speed), at))))
        for name, template in WORK:
            formula = _formula(template, work_cells)
            column = column_of(f"cost.{work}.{name}")
            if column is not None and formula is not None and row.get(f"cost.{work}.{name}") is not None:
                ws.cell(at, column, formula)
                work_cells[name] = _local(column, at)


def results_workbook(columns: Sequence[str], rows: Sequence[Row]):
    """A results sheet (header frozen and filtered, numbers as numbers) with live cost formulas where rows have a
    cost section."""
    import openpyxl
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "capplan"
    ws.append(list(columns))
    for r in rows:
        ws.append([r.get(c) if not isinstance(r.get(c), (dict, list)) else json.dumps(r.get(c)) for c in columns])
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = ws.dimensions
    first = next((r for r in rows if _inputs_of(r) is not None), {})
    sources = {k: first.get("cost.inputs.sources." + k, first.get("result.cost.inputs.sources." + k, ""))
               for k, _, _ in SHARED_TERMS}
    add_cost_formulas(wb, ws, columns, rows, sources)
    return wb


BOM_COLUMNS = ("item", "model", "count", "power each (W)", "power total (W)", "USD each", "USD total", "note")


def _bom_notes(wb, bom: Mapping[str, Any]) -> None:
    """The bill's notes (what is missing, assumed or quoted) on a sheet of their own."""
    notes = _Sheet(wb.create_sheet("notes"))
    notes.line("notes", bold=True)
    for note in bom.get("notes", []):
        notes.line(note)


def bom_workbook(bom: Mapping[str, Any]):
    """A bill of materials whose totals and owning cost are formulas over its counts and an inputs sheet: each part's
    power and price (low and high), the systems' billed draw and the site's terms (docs/formulas.md §19-20). The
    systems line's count is the units bought."""
    import openpyxl
    from .costing import bom_line_note
    cost = bom.get("cost") or {}
    terms = cost.get("inputs", {})
    wb = openpyxl.Workbook()
    sheet = _Sheet(wb.active)
    sheet.ws.title = "inputs"
    sheet.line(f"capplan bom inputs: {bom['devices']} accelerators as {bom['units']} x {bom['preset']}; change a value "
               "here and the bom sheet follows (docs/formulas.md §19-20).", bold=True)
    sheet.line()
    site_terms = {k: v for k, v in terms.items() if k != "utilization"}  # a bill of materials is no unit of work
    shared = _shared_cells(sheet, [site_terms], terms.get("sources", {})) if terms else {}
    sheet.line("part", "model", "power each (W)", "USD each, low", "USD each, high", bold=True)
    parts = []
    for line in bom["lines"]:
        low, high = line.get("usd_range") or ([line["usd"]] * 2 if line.get("usd") is not None else [None, None])
        parts.append(sheet.line(line["item"], line["model"], line.get("power_w"), low, high))
    draw = None
    if terms.get("unit_power_w") is not None:
        sheet.line()
        draw = sheet.line(f"systems: draw billed for energy, per unit ({terms.get('unit_power_basis', '')})",
                          terms["unit_power_w"], "W")

    out = _Sheet(wb.create_sheet("bom", 0))  # the sheet a reader opens first
    wb.active = 0
    out.line(*BOM_COLUMNS, bold=True)
    first = out.row
    for line, at in zip(bom["lines"], parts):
        row = out.row
        power, low, high = (_absolute("inputs", c, at) for c in (3, 4, 5))
        out.line(line["item"], line["model"], line["count"], f'=IF(ISNUMBER({power}),{power},"")',
                 "" if line["in_systems"] else f'=IF(ISNUMBER(D{row}),C{row}*D{row},"")',
                 f'=IF(ISNUMBER({low}),({low}+{high})/2,"")', "" if line["in_systems"] else f'=IF(ISNUMBER(F{row}),C{row}*F{row},"")',
                 bom_line_note(line))
    last = out.row - 1
    totals = out.line("known totals", "", "", "", f"=SUM(E{first}:E{last})", "", f"=SUM(G{first}:G{last})",
                      "lines without a figure count as nothing", bold=True)
    _bom_notes(wb, bom)
    if not cost.get("own") or draw is None:
        return wb
    out.line()
    out.line("owning (docs/formulas.md §19)", "value", "unit", bold=True)
    systems = parts[0]  # the systems line comes first
    cells = dict(shared, units=f"C{first}", devices=str(bom["devices"]), unit_devices=str(terms["unit_devices"]),
                 unit_price_low=_absolute("inputs", 4, systems), unit_price_high=_absolute("inputs", 5, systems),
                 other_capex_usd=f"(G{totals}-G{first})", other_power_w=f"(E{totals}-E{first})",
                 unit_power_w=_absolute("inputs", 2, draw),
                 unit_provisioned_power_w=_absolute("inputs", 3, systems))
    labels = {"capex_usd": ("capex", "USD"),
              "capital_usd_per_hour": ("capital", "USD/h"), "support_usd_per_hour": ("support", "USD/h"),
              "energy_usd_per_hour": ("energy", "USD/h"), "hosting_usd_per_hour": ("hosting", "USD/h"),
              "own_usd_per_hour": ("owning, an hour", "USD/h"), "it_power_w": ("IT draw billed", "W"),
              "facility_power_w": ("facility power (x PUE)", "W")}
    for name, template in HOURLY:
        formula = _formula(template, cells)
        if formula is None or name == "units":  # the systems line's count is the units bought
            continue
        if name in labels:
            at = out.line(labels[name][0], formula, labels[name][1])
            cells[name] = f"B{at}"
        else:
            cells[name] = f"({formula[1:]})"
    out.line("owning, a year", f"={cells['own_usd_per_hour']}*{CONVERSIONS['hours_a_year']}", "USD/year")
    energy = out.line("energy at the facility, a year",
                      f"={cells['facility_power_w']}/{CONVERSIONS['watts_a_kw']}*{CONVERSIONS['hours_a_year']}", "kWh/year")
    if "carbon_kg_per_kwh" in cells:
        out.line("emissions, a year", f"=B{energy}*{cells['carbon_kg_per_kwh']}", "kg CO2e/year")
    out.line("energy and hosting: the systems' billed draw and the other lines' known power, at their rating "
             "(docs/formulas.md §19)")
    return wb
