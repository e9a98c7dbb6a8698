"""What a plan costs to own or rent (issue #22; docs/formulas.md §19): ``capplan.cost(scenario, **cost)`` and the
cost lines of an estimate's table."""
from __future__ import annotations

import html
import json
from typing import Any, Dict, List, Tuple

from . import _args, _core
from .api import ScenarioLike, _jsonable, scenario_text
from .result import aligned
from .sizing import _text_table
from .units import HOURS_A_YEAR, POWER, Quantity

Row = Tuple[str, str, str]


def bom_line_note(line: Dict[str, Any]) -> str:
    """What a bill-of-materials line's figures are, beside it in tables and spreadsheets."""
    if line["in_systems"]:
        return "inside the systems' power and price"
    return "price as quoted (part_prices), not the catalog's" if line.get("quoted") else ""


def usd(x: float) -> str:
    """$303,600 from $1,000; cents from $1 ($10.37); below, three significant digits ($0.328)."""
    if x >= 1000:
        return f"${x:,.0f}"
    return f"${x:.2f}" if x >= 1 else f"${x:.3g}"


def _with_range(value: float, span) -> str:
    low, high = span
    return usd(value) if low == high else f"{usd(value)} ({usd(low)}-{usd(high)})"


def _work(label: str, w: Dict[str, Any]) -> Row:
    parts = [f"{who} {_with_range(w[key], w[key + '_range'])}" for who, key in (("own", "own_usd"), ("rent", "rent_usd"))
             if key in w]
    detail = f"{w['energy_kwh']:.3g} kWh at the facility"
    if "emissions_kg_co2e" in w:
        detail += f", {w['emissions_kg_co2e']:.3g} kg CO2e"
    return label, ", ".join(parts) or "-", detail


def cost_rows(c: Dict[str, Any]) -> List[Row]:
    """The table lines of a result's ``cost`` section: owning, renting, then each unit of work."""
    rows: List[Row] = []
    own = c.get("own")
    if own:
        rows.append(("own: per hour", _with_range(own["usd_per_hour"], own["usd_per_hour_range"]),
                     f"capex {_with_range(own['capex_usd'], own['capex_usd_range'])} for {own['units']} x "
                     f"{c['preset'] or 'node'}; an hour: capital {usd(own['capital_usd_per_hour'])}, energy "
                     f"{usd(own['energy_usd_per_hour'])}, hosting {usd(own['hosting_usd_per_hour'])}, support "
                     f"{usd(own['support_usd_per_hour'])}"))
    rent = c.get("rent")
    if rent:
        offers = rent["offers"]
        rows.append(("rent: per hour", _with_range(rent["usd_per_hour"], rent["usd_per_hour_range"]),
                     f"{usd(rent['usd_per_device_hour'])} per accelerator-hour; " +
                     (f"middle of {len(offers)} offers: " + "; ".join(offers) if offers else "the price given")))
    if c.get("facility_power_w"):
        share = c.get("used_share", 1.0)
        rows.append(("power at the facility", str(Quantity.from_si(c["facility_power_w"], POWER)),
                     f"the units bought, site {c['site']} (PUE included)"
                     + (f"; this work's {c['devices']} accelerators take {share:.3g} of it" if share < 1 else "")))
    for key, label in (("per_million_output_tokens", "per million output tokens"), ("per_run", "per training run"),
                       ("per_billion_tokens", "per billion training tokens")):
        if key in c:
            rows.append(_work(label, c[key]))
    return rows


class CostResult(dict):
    """A result's ``cost`` section as a dict (``own``, ``rent``, ``per_million_output_tokens``, ``per_run``,
    ``per_billion_tokens``, ``notes``; money in US dollars, each with a ``_range``) that shows as a table."""

    def rows(self) -> List[Row]:
        return cost_rows(self)

    def __repr__(self) -> str:
        rows = self.rows() or [("cost", "-", "no price or power for this system: give cost.system_price or "
                                               "cost.price_per_device_hour")]
        return "capplan cost (USD)\n" + "\n".join(aligned(rows)) + "".join(f"\nnote: {n}" for n in self.get("notes", []))

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(a)}</th><td>{html.escape(b)}</td>"
                       f"<td style='text-align:left'>{html.escape(c)}</td></tr>" for a, b, c in self.rows())
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.get("notes", []))
        return f"<div class='capplan-cost'><table>{body}</table><ul>{notes}</ul></div>"


def cost(scenario: ScenarioLike, **overrides: Any) -> CostResult:
    """What ``scenario`` costs to own or rent: per hour, per million output tokens (inference), per training run and
    per billion training tokens, with the facility's energy and, where the site knows its grid, emissions.

    Keyword arguments are keys of the scenario's ``cost`` object (docs/scenario.md): ``site``, ``system_price``,
    ``price_per_device_hour``, ``usd_per_kwh``, ``pue``, ``depreciation_years``, ``utilization``... Unset keys come
    from the catalog: the system preset's purchase price, power and cloud offers, and the site's terms."""
    text, base = scenario_text(scenario)
    data = json.loads(text)
    if not isinstance(data, dict):
        raise _args.config_error("/", data, "not a scenario object", "a scenario dict, JSON object or file")
    given = data.get("cost", {})
    data["cost"] = {**_args.mapping(given, "/cost", "the cost object of docs/scenario.md"), **overrides}
    result = _core.estimate_object(json.dumps(_jsonable(data)), str(base))  # paths relative to the file
    return CostResult(result["cost"])



class BomResult(dict):
    """A cluster's bill of materials as a dict (``lines``, ``fabric``, ``racks``, ``known_power_w``, ``known_usd``,
    ``notes``) that shows as a table; ``rows()`` gives one dict per line for a spreadsheet."""

    def rows(self) -> List[Dict[str, Any]]:
        out = []
        for line in self["lines"]:
            count, w, price = line["count"], line["power_w"], line["usd"]
            out.append({"item": line["item"], "model": line["model"], "count": count,
                        "power_each_w": w, "power_total_w": None if w is None or line["in_systems"] else w * count,
                        "usd_each": price, "usd_total": None if price is None or line["in_systems"] else price * count,
                        "note": bom_line_note(line)})
        return out

    def __repr__(self) -> str:
        head = ["item", "count", "model", "power each", "USD each"]
        body = [[r["item"], str(r["count"]), r["model"], "-" if r["power_each_w"] is None else str(Quantity.from_si(r["power_each_w"], POWER)),
                 "-" if r["usd_each"] is None else usd(r["usd_each"])] for r in self.rows()]
        lines = _text_table(head, body).split("\n")
        total = f"known power {Quantity.from_si(self['known_power_w'], POWER)}"
        if "known_usd" in self:
            total += f", known price {_with_range(self['known_usd'], self['known_usd_range'])}"
        racks = f"; {self['racks']} racks" if self.get("racks") is not None else ""
        title = f"capplan bom: {self['devices']} accelerators as {self['units']} x {self['preset']}{racks}"
        own = self.get("cost", {}).get("own")
        owning = [] if not own else [
            f"owning: {_with_range(own['usd_per_hour'], own['usd_per_hour_range'])} an hour "
            f"({usd(own['usd_per_hour'] * HOURS_A_YEAR)} a year) at {self['cost']['site']}: capital "
            f"{usd(own['capital_usd_per_hour'])}, energy {usd(own['energy_usd_per_hour'])}, hosting "
            f"{usd(own['hosting_usd_per_hour'])}, support {usd(own['support_usd_per_hour'])} an hour"]
        return "\n".join([title, *lines, total, *owning] + [f"note: {n}" for n in self["notes"]])


def _storage_request(storage: Any, level: Any, read: Any, write: Any, capacity: Any) -> Dict[str, Any]:
    """bom's storage arguments as the core's: the rates and capacity in SI units, each checked and named."""
    from .units import BYTE_RATE, SIZE, quantity
    given = {"/storage_level": level, "/storage_read": read, "/storage_write": write, "/storage_capacity": capacity}
    if storage is None:
        extra = [(field, value) for field, value in given.items() if value is not None]
        if extra:
            raise _args.config_error(extra[0][0], extra[0][1], "given without a storage system",
                                     "a storage system named too (storage=, --storage), e.g. NetApp-BeeGFS-BB")
        return {}
    out: Dict[str, Any] = {"storage": _args.text(storage, "/storage", "a catalog storage system (capplan list storage)")}
    if level is not None:
        out["storage_level"] = _args.text(level, "/storage_level", "good, better or best")
    for key, value, dims, field in (("storage_read_bps", read, BYTE_RATE, "/storage_read"),
                                    ("storage_write_bps", write, BYTE_RATE, "/storage_write"),
                                    ("storage_capacity_bytes", capacity, SIZE, "/storage_capacity")):
        if value is not None:
            out[key] = quantity(value, dims, field).si  # the core refuses 0, below 0 and not finite, naming field
    return out


def _part_prices(prices: Any) -> Dict[str, Tuple[float, float]]:
    """bom's part_prices as the core's {item: (low, high)}: each a price in US dollars or [low, high]."""
    if prices is None:
        return {}
    if not isinstance(prices, dict):
        raise _args.config_error("/part_prices", prices, f"a {type(prices).__name__} is not a mapping",
                                 '{item: USD or [low, high]}, e.g. {"spine switches": 40000}')
    out: Dict[str, Tuple[float, float]] = {}
    for item, usd in prices.items():
        field = f"/part_prices/{item}"
        name = _args.text(item, "/part_prices", "a line's item, such as 'spine switches'")
        pair = list(usd) if isinstance(usd, (list, tuple)) else [usd, usd]
        if len(pair) != 2:
            raise _args.config_error(field, usd, "not a price", "US dollars, or [low, high]")
        low, high = (_args.number(x, field, 0.0) for x in pair)  # the core refuses 0 and low > high, naming field
        out[name] = (low, high)
    return out


def bom(system: str, count: int, rack_power: Any = None, site: Any = None,
        oversubscription: Any = None, pod_nodes: Any = None, storage: Any = None, storage_level: Any = None,
        storage_read: Any = None, storage_write: Any = None, storage_capacity: Any = None,
        part_prices: Any = None) -> BomResult:
    """The bill of materials of ``count`` accelerators of the catalog system preset ``system``: the units bought, the
    racks their maximum power fills (with ``rack_power``, e.g. "40 kW"), and the scale-out fabric (a rail-optimised
    fat tree of the link's switches, its cables and optics: non-blocking, or with ``oversubscription`` o:1 at the
    leaves' uplinks, default the preset's; with ``pod_nodes``, pods of that many nodes with full bisection inside and
    the o:1 at their spines' uplinks to a core tier, default the preset's pods, 0 none), the storage and management
    networks where the preset's reference architecture counts them, and with ``storage`` (a catalog storage system:
    one appliance or building block) as many of it as ``storage_level`` ("good", "better", "best": the preset's
    reference guideline per scalable unit) or ``storage_read`` / ``storage_write`` (e.g. "200 GB/s") and
    ``storage_capacity`` (e.g. "2 PB") need, with power and price per line where the catalog has them (and
    ``part_prices``, {item: USD or [low, high]}, e.g. {"spine switches": 40000}, a quote over the catalog's)
    (docs/formulas.md §20); and, where the preset has a price and power, ``cost``: what the cluster costs an hour to
    own at ``site`` (a catalog site; default US-colocation), the priced network lines included in its capex
    (docs/formulas.md §19)."""
    from .units import quantity
    name = _args.text(system, "/system", "a catalog system preset (capplan list systems)")
    n = _args.integer(count, "/count", 1, _args.MAX_COUNT)
    watts = None if rack_power is None else quantity(rack_power, POWER, "/rack_power").si
    over = None if oversubscription is None else _args.number(oversubscription, "/oversubscription", 1.0)
    pods = None if pod_nodes is None else _args.integer(pod_nodes, "/pod_nodes", 0, _args.MAX_COUNT)
    store = _storage_request(storage, storage_level, storage_read, storage_write, storage_capacity)
    prices = _part_prices(part_prices)
    result = BomResult(json.loads(_core.bom_json(name, n, watts, over, pods, **store, part_prices=prices)))
    terms: Dict[str, Any] = {} if site is None else {"site": _args.text(site, "/site", "a catalog site (capplan list sites)")}
    if "systems" in prices:  # a quote for the systems is their price in the owning cost too
        terms["system_price"] = list(prices["systems"])
    systems = result["lines"][0]
    network = result.get("known_usd", 0.0) - (systems["usd"] or 0.0) * systems["count"]
    if network > 0:
        terms["other_capex"] = network
    # The other lines' known power (optics, switches where the catalog has them; the NICs are in the systems').
    other_w = result["known_power_w"] - (systems["power_w"] or 0.0) * systems["count"]
    if other_w > 0:
        terms["other_power"] = f"{other_w!r} W"
    result["cost"] = json.loads(_core.hourly_cost_json(json.dumps(name), n, json.dumps(terms)))
    return result
