"""Collective communication cost: capplan.collective() and capplan.collective_sweep().

Times and bandwidths follow nccl-tests' definitions (algbw = size / time; busbw = algbw x 2(n-1)/n
for all_reduce, (n-1)/n for all_gather / reduce_scatter / all_to_all, 1 otherwise), so results
compare directly with an nccl-tests table.
"""
from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _args, _core
from .catalog import _Record
from .units import BYTE_RATE, SIZE, TIME, Quantity, quantity

SystemArg = Union[str, Dict[str, Any]]
_US = _core.unit_si("us", TIME)            # nccl-tests prints times in microseconds
_GBPS = _core.unit_si("GB/s", BYTE_RATE)   # and bandwidths in GB/s (decimal)


class CollectiveResult(_Record):
    """One collective's cost. ``time_s``, ``algbw_bytes_per_s`` and ``busbw_bytes_per_s`` are SI
    numbers; ``time``, ``algbw`` and ``busbw`` the same as Quantities."""

    @property
    def time(self) -> Quantity:
        return Quantity.from_si(self._data["time_s"], TIME)

    @property
    def algbw(self) -> Quantity:
        return Quantity.from_si(self._data["algbw_bytes_per_s"], BYTE_RATE)

    @property
    def busbw(self) -> Quantity:
        return Quantity.from_si(self._data["busbw_bytes_per_s"], BYTE_RATE)

    @property
    def size(self) -> Quantity:
        return Quantity.from_si(self._data["size_bytes"], SIZE)

    def __repr__(self) -> str:
        d = self._data
        tiers = "; ".join(f"{t['tier']} {t['link']} {Quantity.from_si(t['bus_bandwidth_bytes_per_s'], BYTE_RATE)}"
                          for t in d["tiers"])
        return (f"CollectiveResult({d['op']} of {self.size} on {d['gpus']} GPUs ({d['nodes']} node(s)): "
                f"{self.time}, algbw {self.algbw}, busbw {self.busbw}, {d['algorithm']}/{d['protocol']}"
                + (", calibrated" if d["calibrated"] else "") + (f"; {tiers}" if tiers else "") + ")")

    def _tier_items(self, latency_label: str = "latency"):
        """(label, seconds) for the fixed latency and each tier (tiers are pipelined: the slowest sets
        the pace), and the slowest tier's label."""
        d = self._data
        items = [(latency_label, d["latency_s"])] + [(f"{t['tier']} {t['link']}", t["time_s"]) for t in d["tiers"]]
        slowest = max(items[1:], key=lambda i: i[1])[0] if len(items) > 1 else None
        return items, slowest

    def charts_svg(self, lang: str = "en") -> List[str]:
        """The fixed latency and each tier's transfer time, the slowest outlined."""
        from .charts import bar_chart
        zh = lang == "zh"
        items, slowest = self._tier_items("延迟" if zh else "latency")
        bars = [(label, t, str(Quantity.from_si(t, TIME))) for label, t in items]
        return [bar_chart(("各层传输时间（最慢者加框）" if zh else "time per tier (the slowest outlined)"), bars, slowest)]

    def rows(self, lang: str = "en") -> List[Tuple[str, str]]:
        """(label, value) lines: the operation, size, GPUs, time, algbw, busbw, algorithm, then each tier's link,
        bus bandwidth and transfer time."""
        zh = lang == "zh"
        d = self._data
        out = [("操作" if zh else "operation", d["op"]), ("大小" if zh else "size", str(self.size)),
               ("GPU 数" if zh else "GPUs", f"{d['gpus']} ({d['nodes']} node(s) of {d['per_node']})"),
               ("时间" if zh else "time", str(self.time)), ("algbw", str(self.algbw)), ("busbw", str(self.busbw)),
               ("算法" if zh else "algorithm", f"{d['algorithm']} / {d['protocol']}"
                + (" (calibrated)" if d["calibrated"] else ""))]
        out += [(t["tier"], f"{t['link']}: {Quantity.from_si(t['bus_bandwidth_bytes_per_s'], BYTE_RATE)} bus bandwidth, "
                 f"{Quantity.from_si(t['time_s'], TIME)}") for t in d["tiers"]]
        return out

    def table(self, lang: str = "en") -> str:
        """The rows as aligned text (what `capplan collective` prints)."""
        width = max(len(k) for k, _ in self.rows(lang))
        return "\n".join(f"{k:<{width}}  {v}" for k, v in self.rows(lang))

    def _repr_html_(self, lang: str = "en") -> str:
        rows = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                       for k, v in self.rows(lang))
        charts = "".join(f"<div>{svg}</div>" for svg in self.charts_svg(lang))
        return f"<div class='capplan-collective'><table>{rows}</table>{charts}</div>"

    def html(self, lang: str = "en") -> str:
        """The HTML view (as Jupyter shows it); lang="zh" labels it in Chinese."""
        return self._repr_html_(lang)

    def plot(self):
        """The tier chart with matplotlib (when installed): latency and each tier's time, in µs."""
        from .charts import plot_bars
        d = self._data
        items, slowest = self._tier_items()
        us = [(label, Quantity.from_si(t, TIME).in_("us")) for label, t in items]
        return plot_bars(f"{d['op']} of {self.size} on {d['gpus']} GPUs: time per tier", us, "µs", slowest)


def _system_json(system: SystemArg) -> str:
    if isinstance(system, str):
        return json.dumps(system)
    if isinstance(system, dict):
        from .api import _jsonable
        return json.dumps(_jsonable(system))
    raise _args.config_error("/system", system, f"a {type(system).__name__} is not a system",
                             "a catalog system name or a dict like a scenario's system")


def _calibration(calibration, op: str, gpus: int):
    if calibration is None:
        return 0.0, 0.0
    calibration = _args.path_or_dict(calibration, "/calibration", "a file from capplan calibrate-collectives, or its dict")
    data = json.loads(Path(calibration).read_text()) if isinstance(calibration, (str, Path)) else dict(calibration)
    _args.mapping(data, "/calibration", "a calibration object")
    if data.get("op") != op or data.get("ranks") != gpus:
        raise _core.ConfigError(
            f"/calibration: the calibration is for {data.get('op')} on {data.get('ranks')} ranks, not {op} on "
            f"{gpus}; allowed: a calibration fitted for this operation and group size")
    lat = quantity(data["latency"], TIME, "/calibration/latency").si
    bw = quantity(data["bus_bandwidth"], BYTE_RATE, "/calibration/bus_bandwidth").si
    return lat, bw


def _system_count(system: SystemArg) -> int:
    return json.loads(_core.system_object_json(_system_json(system)))["count"]


def _run(op: str, sizes: List[float], system: SystemArg, gpus: Optional[int], per_node: Optional[int],
         algorithm: Optional[str], nvls: bool, imbalance: float, calibration,
         engine: Optional[str] = None) -> List[Dict[str, Any]]:
    op = _core.collective_op_name(_args.text(op, "/op", "a collective's name"))  # an unknown one: a ConfigError here
    gpus = _args.optional_integer(gpus, "/gpus", 1, _args.MAX_COUNT)
    per_node = _args.optional_integer(per_node or None, "/per_node", 1, _args.MAX_COUNT)  # 0: as many as fit, as None
    if gpus is None:
        gpus = _system_count(system)
    lat, bw = _calibration(calibration, op, gpus)
    return json.loads(_core.collective_json(op, sizes, _system_json(system), gpus, per_node or 0,
                                            _args.optional_text(algorithm, "/algorithm", "an algorithm's name"),
                                            _args.boolean(nvls, "/nvls"), _args.number(imbalance, "/imbalance"), lat, bw,
                                            _args.optional_text(engine, "/engine", "an engine profile's name")))


def collective(op: str, size, system: SystemArg = "DGX-H100", gpus: Optional[int] = None,
               per_node: Optional[int] = None, algorithm: Optional[str] = None, nvls: bool = True,
               imbalance: float = 1.0, calibration=None, engine: Optional[str] = None) -> CollectiveResult:
    """Cost of one collective: ``capplan.collective("all_reduce", "1 GiB", system="DGX-H100", gpus=8)``.

    ``system`` is a catalog system name or an object like a scenario's ``system``
    ({"preset": "DGX-H100", "count": 64}); ``gpus`` defaults to the whole system and ``per_node`` to as
    many as fit a node. ``algorithm`` forces one (ring, tree, nvls, nvls_tree, collnet, direct);
    ``nvls=False`` is NCCL_NVLS_ENABLE=0; ``imbalance`` scales the busiest rank of an all-to-all;
    ``calibration`` is a file or dict from ``capplan calibrate-collectives``. ``engine`` (an engine
    profile: vllm-v1, sglang, trtllm-pytorch, trtllm-tensorrt) costs an all_reduce with that serving
    engine's own kernel instead of NCCL's, one_shot or two_shot as the engine picks (or ``algorithm``).
    """
    size_si = quantity(size, SIZE, "/size").si
    return CollectiveResult(_run(op, [size_si], system, gpus, per_node, algorithm, nvls, imbalance, calibration,
                                 engine)[0])


def parse_size_range(text: str) -> List[float]:
    """'8B:8GiB' -> sizes doubling from 8 B to 8 GiB (nccl-tests -b 8 -e 8G -f 2)."""
    try:
        lo_text, hi_text = text.split(":")
    except ValueError:
        raise _core.ConfigError(f"/sweep: not a size range (got '{text}'); allowed: FROM:TO such as 8B:8GiB") from None
    lo = quantity(lo_text, SIZE, "/sweep").si
    hi = quantity(hi_text, SIZE, "/sweep").si
    if lo <= 0 or hi < lo:
        raise _core.ConfigError(f"/sweep: the range must start above 0 and end at or above its start (got '{text}')")
    sizes = []
    s = lo
    while s <= hi * (1 + 1e-12):
        sizes.append(s)
        s *= 2
    return sizes


def collective_sweep(op: str, sizes: Union[str, List[Any]] = "8B:8GiB", system: SystemArg = "DGX-H100",
                     gpus: Optional[int] = None, per_node: Optional[int] = None, algorithm: Optional[str] = None,
                     nvls: bool = True, imbalance: float = 1.0, calibration=None, engine: Optional[str] = None):
    """The collective over many sizes (a 'FROM:TO' range doubling, or a list): a pandas DataFrame with
    the nccl-tests columns when pandas is installed, else a list of dicts."""
    si = (parse_size_range(sizes) if isinstance(sizes, str)
          else [quantity(x, SIZE, "/sizes").si for x in _args.items(sizes, "/sizes", "a 'FROM:TO' range or a list of sizes")])
    rows = _run(op, si, system, gpus, per_node, algorithm, nvls, imbalance, calibration, engine)
    table = [{"size_bytes": r["size_bytes"], "time_us": r["time_s"] / _US,
              "algbw_GBps": r["algbw_bytes_per_s"] / _GBPS, "busbw_GBps": r["busbw_bytes_per_s"] / _GBPS,
              "algorithm": r["algorithm"], "protocol": r["protocol"]} for r in rows]
    try:
        import pandas
    except ImportError:
        return table
    return pandas.DataFrame(table)
