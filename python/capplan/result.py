"""The estimate result: the public result JSON with attribute access, quantities and a readable repr."""
from __future__ import annotations

import html
import json
from typing import Any, Dict, Iterator, List, Tuple

from .units import BYTE_RATE, FLOP_RATE, SIZE, TIME, Quantity, format_count

# Key suffix -> dimension of the number stored under it (the result JSON is in SI units).
_SUFFIX_DIMS = (("_bytes_per_s", BYTE_RATE), ("_flops_per_s", FLOP_RATE), ("_bytes", SIZE), ("_s", TIME))


def _as_quantity(key: str, value: Any) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for suffix, dims in _SUFFIX_DIMS:
            if key.endswith(suffix):
                return Quantity.from_si(value, dims)
    return value


class Section:
    """A nested part of the result: ``r.memory.weights_bytes`` is a Quantity, ``r.memory['weights_bytes']`` too."""

    def __init__(self, data: Dict[str, Any]):
        self._data = data

    def __getattr__(self, key: str) -> Any:
        if key not in self._data:
            raise AttributeError(f"'{key}' is not in this result (not computed, or not a field); "
                                 f"present: {', '.join(self._data)}")
        return self[key]

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        return Section(value) if isinstance(value, dict) else _as_quantity(key, value)

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def to_dict(self) -> Dict[str, Any]:
        return json.loads(json.dumps(self._data))

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k}: {self[k]!s}" for k in self._data) + "}"


def flatten(data: Dict[str, Any], prefix: str = "") -> Dict[str, Any]:
    """{'memory': {'weights_bytes': 1}} -> {'memory.weights_bytes': 1}; lists become JSON text."""
    out: Dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        elif isinstance(v, list):
            out[key] = json.dumps(v)
        else:
            out[key] = v
    return out


class Result(Section):
    """What capplan computed for a scenario. ``to_dict()`` gives the public result JSON."""

    def rows(self) -> List[Tuple[str, str, str]]:
        """(what, value, detail) lines of the summary table."""
        d = self._data
        m, s, mem = d["model"], d["system"], d.get("memory", {})
        rows = []
        active = m["active_parameters"]
        rows.append(("model", f"{m['name']} ({m['model_type']})",
                     f"{format_count(m['parameters'])} parameters" +
                     (f", {format_count(active)} active per token" if active != m["parameters"] else "")))
        par = s["parallelism"]
        layout = " ".join(f"{k}={v}" for k, v in par.items() if v != 1) or "one replica per device"
        rows.append(("system", f"{s['count']}x {s['accelerator']}" + (f" ({s['preset']})" if s.get("preset") else ""),
                     f"{s['nodes']} node(s) of {s['per_node']}; {layout}"))
        if "weights_bytes" in mem:
            w = Quantity.from_si(mem["weights_bytes"], SIZE)
            detail = f"{s['weights_format']}; {Quantity.from_si(mem['weights_total_bytes'], SIZE)} for the whole model"
            if mem.get("capacity_bytes"):
                detail += f"; {100 * mem['weights_bytes'] / mem['capacity_bytes']:.0f}% of one device's memory"
            rows.append(("weights per device", str(w), detail))
        if mem.get("capacity_bytes"):
            rows.append(("memory per device", str(Quantity.from_si(mem["capacity_bytes"], SIZE)), s["accelerator"]))
        for key, label in (("kv_cache_bytes", "KV cache per device"), ("per_device_bytes", "total per device")):
            if key in mem:
                rows.append((label, str(Quantity.from_si(mem[key], SIZE)), ""))
        if "feasible" in d:
            rows.append(("feasible", "yes" if d["feasible"] else "NO", "; ".join(d.get("reasons", []))))
        return rows

    def __repr__(self) -> str:
        rows = self.rows()
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        lines = [f"{a:<{w0}}  {b:<{w1}}  {c}".rstrip() for a, b, c in rows]
        notes = self._data.get("notes", [])
        return "capplan estimate\n" + "\n".join(lines) + "".join(f"\nnote: {n}" for n in notes)

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(a)}</th><td>{html.escape(b)}</td>"
            f"<td>{html.escape(c)}</td></tr>" for a, b, c in self.rows())
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self._data.get("notes", []))
        return (f"<div class='capplan-result'><table>{body}</table>"
                + (f"<ul>{notes}</ul>" if notes else "") + "</div>")

    def to_flat_dict(self) -> Dict[str, Any]:
        return flatten(self._data)
