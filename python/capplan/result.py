"""The estimate result: the public result JSON with attribute access, quantities and a readable repr."""
from __future__ import annotations

import html
import json
from typing import Any, Dict, Iterator, List, Tuple

from . import _core  # (at the top: an import inside a method costs microseconds a call, as much as an estimate)
from ._args import config_error, text
from .units import BYTE_RATE, FLOP_RATE, FLOPS, SIZE, TIME, Quantity, format_count

# Key suffix -> dimension of the number stored under it (the result JSON is in SI units).
_SUFFIX_DIMS = (("_bytes_per_s", BYTE_RATE), ("_flops_per_s", FLOP_RATE), ("_bytes_per_token", SIZE), ("_bytes", SIZE),
                ("_flops", FLOPS), ("_s", TIME))


def _as_quantity(key: str, value: Any) -> Any:
    if key.endswith("_per_s") and not key.endswith(("_bytes_per_s", "_flops_per_s")):
        return value  # a plain rate such as tokens per second
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
        if key.startswith("_"):  # not a figure: Python's own look-ups (copy, pickle) and this class's internals
            raise AttributeError(key)
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


def flatten(data: Dict[str, Any], prefix: str = "", skip=frozenset()) -> Dict[str, Any]:
    """{'memory': {'weights_bytes': 1}} -> {'memory.weights_bytes': 1}; lists become JSON text; keys
    in ``skip`` (dotted) are left out."""
    out: Dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if key in skip:
            continue
        if isinstance(v, dict):
            out.update(flatten(v, key + ".", skip))
        elif isinstance(v, list):
            out[key] = json.dumps(v)
        else:
            out[key] = v
    return out


# Row labels of the summary table in Chinese (html(lang="zh")); values and details stay as computed.
_ZH_LABELS = {
    "model": "模型", "system": "系统", "weights per device": "每卡权重", "gradients": "梯度",
    "optimizer states": "优化器状态", "master weights": "主权重", "KV cache": "KV 缓存", "activations": "激活",
    "logits / sampler": "logits / 采样", "runtime reservation": "运行时预留", "host memory": "主机内存",
    "total per device": "每卡合计", "device memory": "显存容量", "fits": "放得下", "requests at once": "同时请求数",
    "max requests": "最多请求数", "max context": "最长上下文", "smallest tp": "最小 TP",
    "time to first token": "首 token 时间", "time per output token": "每输出 token 时间", "inter-token latency": "token 间延迟",
    "end-to-end latency": "端到端延迟", "speculative decoding": "投机解码", "prefix cache": "前缀缓存", "efficiency table": "效率表", "throughput": "吞吐", "bottleneck": "瓶颈", "training step": "训练一步",
    "time to train": "训练总时间", "checkpoint": "检查点", "cold start": "冷启动", "prefill FLOPs": "预填充 FLOPs",
    "FLOPs per output token": "每输出 token FLOPs", "model FLOPs / step": "模型 FLOPs / 步",
    "hardware FLOPs / step": "硬件 FLOPs / 步", "feasible": "可行", "warning": "警告",
}


# The parts of device memory the charts stack, in order, with their labels (English, Chinese).
_MEMORY_PARTS = (("weights_bytes", "weights", "权重"), ("kv_cache_bytes", "KV cache", "KV 缓存"),
                 ("activations_bytes", "activations", "激活"), ("logits_bytes", "logits", "logits"),
                 ("gradients_bytes", "gradients", "梯度"), ("optimizer_bytes", "optimizer", "优化器"),
                 ("master_weights_bytes", "master weights", "主权重"), ("overhead_bytes", "runtime reserve", "运行时预留"))


def _memory_parts(mem: Dict[str, Any], zh: bool = False) -> List[Tuple[str, str]]:
    """(key, label) of the memory parts present in a result's memory section."""
    return [(k, zh_label if zh else label) for k, label, zh_label in _MEMORY_PARTS if mem.get(k)]


def aligned(rows: List[Tuple[str, str, str]]) -> List[str]:
    """(what, value, detail) rows as text lines, the first two columns padded to their widest entry."""
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    return [f"{a:<{w0}}  {b:<{w1}}  {c}".rstrip() for a, b, c in rows]


class Result(Section):
    """What capplan computed for a scenario. ``to_dict()`` gives the public result JSON.

    Made by ``capplan.estimate`` from the core's typed result, whose dict is built on first use (reading a section, a
    table, ``to_dict``); ``value(key)`` reads one figure without building it. Made from a dict, it is that dict."""

    def __init__(self, data: Any):
        if isinstance(data, dict):
            super().__init__(data)
        elif isinstance(data, _core.EstimateResult):
            self.__dict__["_typed"] = data
        else:
            raise config_error("/", data, f"a {type(data).__name__} is not a result",
                               "what capplan.estimate returns, or its to_dict()")

    @property
    def _data(self) -> Dict[str, Any]:
        d = self.__dict__.get("_dict")
        if d is None:
            d = self.__dict__["_dict"] = self.__dict__["_typed"].to_object()
        return d

    @_data.setter
    def _data(self, value: Dict[str, Any]) -> None:
        self.__dict__["_dict"] = value

    def value(self, key: str) -> Any:
        """One figure by its dotted key, as ``capplan.sweep(..., columns=...)`` names them (``"inference.ttft_s"``,
        ``"memory.fits"``, ``"training.mfu"``): a number (SI units), a bool or a str, or None when the result has
        none. An unknown key is a ConfigError listing the keys."""
        key = text(key, "/key", "a dotted result key")
        typed = self.__dict__.get("_typed")
        if typed is not None:
            return typed.value(key)
        kinds = dict(_core.result_column_keys())
        if key not in kinds:
            raise config_error("/key", key, "not a column of a result", ", ".join(kinds))
        node: Any = self._data
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def to_dict(self) -> Dict[str, Any]:
        """The public result JSON as a new dict (a copy: changing it leaves this result as it was)."""
        typed = self.__dict__.get("_typed")
        return typed.to_object() if typed is not None else super().to_dict()

    def __reduce__(self):  # pickled as its dict (the core's typed result does not pickle)
        return (Result, (self._data,))

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
        q = lambda key: str(Quantity.from_si(mem[key], SIZE))  # noqa: E731
        if "weights_bytes" in mem:
            detail = f"{s['weights_format']}; {q('weights_total_bytes')} for the whole model"
            rows.append(("weights per device", q("weights_bytes"), detail))
        for key, label in (("gradients_bytes", "gradients"), ("optimizer_bytes", "optimizer states"),
                           ("master_weights_bytes", "master weights"), ("kv_cache_bytes", "KV cache"),
                           ("activations_bytes", "activations"), ("logits_bytes", "logits / sampler"),
                           ("overhead_bytes", "runtime reservation")):
            if mem.get(key):
                extra = ""
                if key == "kv_cache_bytes":
                    extra = f"{q('kv_cache_bytes_per_token')} per token of context"
                rows.append((label, q(key), extra))
        if "host_offload_bytes" in mem:
            rows.append(("host memory", q("host_offload_bytes"), "offloaded optimizer states per device"))
        if "per_device_bytes" in mem:
            limit = mem.get("usable_bytes", mem.get("capacity_bytes"))
            share = f"{100 * mem['per_device_bytes'] / limit:.0f}% of " if limit else ""
            rows.append(("total per device", q("per_device_bytes"),
                         (share + f"{Quantity.from_si(limit, SIZE)} usable") if limit else ""))
        if mem.get("capacity_bytes"):
            visible = f"; {q('visible_bytes')} visible to programs" if mem.get("visible_bytes") else ""
            rows.append(("device memory", q("capacity_bytes"), s["accelerator"] + " (as marketed" + visible + ")"))
        if "fits" in mem:
            rows.append(("fits", "yes" if mem["fits"] else "no", ""))
        inf = d.get("inference", {})
        if "batch" in inf:
            rows.append(("requests at once", str(inf["batch"]), f"{inf['context_tokens']} tokens each (input + output)"))
        if "max_batch" in inf:
            rows.append(("max requests", str(inf["max_batch"]), f"of {inf['context_tokens']} tokens that fit"))
        if "max_context_tokens" in inf:
            rows.append(("max context", f"{inf['max_context_tokens']} tokens", "per request at this concurrency"))
        if "smallest_tp" in inf:
            rows.append(("smallest tp", str(inf["smallest_tp"]), "within a node, that fits this load"))
        t = lambda v: str(Quantity.from_si(v, TIME))  # noqa: E731

        def span(section: Dict[str, Any], key: str, show) -> str:
            """"; measured 8 in 10: A-B" from the key's validation band (docs/validation.md), or ""."""
            r = section.get(key + "_range")
            return f"; measured 8 in 10: {show(r[0])}-{show(r[1])}" if r else ""
        if "ttft_s" in inf:
            sim = inf.get("method") == "simulation"
            rows.append(("time to first token", t(inf["ttft_s"]),
                         (f"p50; mean {t(inf['ttft_mean_s'])}, p99 {t(inf['ttft_p99_s'])}" if sim
                          else f"the batch's prefill in {inf.get('prefill_steps', 1)} step(s), no queueing")
                         + span(inf, "ttft_s", t)))
            rows.append(("time per output token", t(inf["tpot_s"]),
                         (f"p50; mean {t(inf['tpot_mean_s'])}, p99 {t(inf['tpot_p99_s'])}" if sim
                          else f"at {inf.get('batch', 1)} requests") + span(inf, "tpot_s", t)))
            if "itl_s" in inf:
                rows.append(("inter-token latency", t(inf["itl_s"]),
                             ("p50 of every gap between streamed tokens" + (" (runs of tokens with speculation)" if "speculative" in inf else "")
                              + f"; mean {t(inf['itl_mean_s'])}, p99 {t(inf['itl_p99_s'])}")))
            rows.append(("end-to-end latency", t(inf["e2e_latency_s"]), "p50" if sim else ""))
            rows.append(("throughput", f"{inf['throughput_tokens_per_s']:.0f} tokens/s",
                         "output tokens, whole system" + (" (simulated)" if sim else "")
                         + span(inf, "throughput_tokens_per_s", lambda v: f"{v:.0f}")))
        sp = inf.get("speculative")
        if sp:
            rows.append(("speculative decoding", f"{sp['tokens_per_step']:.3g} tokens/step",
                         f"TPOT {sp['speedup']:.2f}x at the batch; " +
                         (f"slower than plain from batch {sp['breakeven_batch']}" if "breakeven_batch" in sp
                          else "pays up to the sequence limit")))
        pc = inf.get("prefix_cache")
        if pc:
            rows.append(("prefix cache", f"{pc['cached_tokens']} tokens cached",
                         f"per prompt; {pc['computed_tokens']} computed"))
        if d.get("efficiency_table", "catalog") != "catalog":
            rows.append(("efficiency table", d["efficiency_table"], "calibration: efficiency by kernel size"))
        if "bottleneck" in d:
            rows.append(("bottleneck", d["bottleneck"], "of one decode step: " + ", ".join(
                f"{c['stage']} {100 * c['utilization']:.0f}%" for c in d.get("chain", []))))
        tr = d.get("training")
        if tr:
            rows.append(("training step", t(tr["step_time_s"]),
                         f"{tr['tokens_per_s']:.0f} tokens/s, MFU {100 * tr['mfu']:.1f}%, HFU {100 * tr['hfu']:.1f}%, "
                         f"{tr['model_tflops_per_device']:.0f} TFLOP/s per device" + span(tr, "step_time_s", t)))
            if "time_to_train_s" in tr:
                rows.append(("time to train", t(tr["time_to_train_s"]), f"{tr['gpu_hours']:.0f} GPU-hours" +
                             (f", cost {tr['cost']:.0f}" if "cost" in tr else "")))
        ck = d.get("checkpoint")
        if ck and ck["save_s"] is None:  # no storage tier: the size and the failure rate only
            rows.append(("checkpoint", str(Quantity.from_si(ck["size_bytes"], SIZE)),
                         f"MTBF {t(ck['mtbf_s'])}; save time: name a storage tier (system.storage)"))
        elif ck:
            rows.append(("checkpoint", str(Quantity.from_si(ck["size_bytes"], SIZE)),
                         f"save {t(ck['save_s'])} (stall {t(ck['stall_s'])}), restore {t(ck['restore_s'])}, "
                         f"every {t(ck['interval_s'])}; MTBF {t(ck['mtbf_s'])}; goodput {100 * ck['goodput']:.1f}%"))
        cold = d.get("cold_start")
        if cold:
            rows.append(("cold start", t(cold["total_s"]), f"bottleneck {cold['bottleneck']}; " + ", ".join(
                f"{c['stage']} {t(c['time_s'])}" for c in cold["chain"])))
        if d.get("cost"):
            from .costing import cost_rows
            rows += cost_rows(d["cost"])
        flops = d.get("flops", {})
        for key, label in (("prefill_flops", "prefill FLOPs"), ("decode_token_flops", "FLOPs per output token"),
                           ("model_step_flops", "model FLOPs / step"), ("hardware_step_flops", "hardware FLOPs / step")):
            if key in flops:
                rows.append((label, str(Quantity.from_si(flops[key], FLOPS)), ""))
        if "feasible" in d:
            # A plan that cannot run says so first: nobody should read its speed before its reasons.
            verdict = ("feasible", "yes" if d["feasible"] else "NO", "; ".join(d.get("reasons", [])))
            if d["feasible"]:
                rows.append(verdict)
            else:
                rows.insert(0, verdict)
        for w in d.get("warnings", []):
            rows.append(("warning", "", w))
        return rows

    def __repr__(self) -> str:
        lines = aligned(self.rows())
        notes = self._data.get("notes", []) + self._data.get("cost", {}).get("notes", [])
        return "capplan estimate\n" + "\n".join(lines) + "".join(f"\nnote: {n}" for n in notes)

    def charts_svg(self, lang: str = "en") -> List[str]:
        """Inline SVG charts: memory per device against what is usable, and the chain with its bottleneck."""
        from .charts import stacked_bar
        zh = lang == "zh"
        d = self._data
        mem = d.get("memory", {})
        charts = []
        parts = [(label, mem[k], str(Quantity.from_si(mem[k], SIZE))) for k, label in _memory_parts(mem, zh)]
        if parts:
            limit = mem.get("usable_bytes", mem.get("capacity_bytes"))
            marker = (("可用 " if zh else "usable ") + str(Quantity.from_si(limit, SIZE)), limit) if limit else None
            charts.append(stacked_bar("每卡显存" if zh else "memory per device", parts, marker))
        chain = d.get("chain", [])
        if chain:
            parts = [(c["stage"], c["time_s"], str(Quantity.from_si(c["time_s"], TIME))) for c in chain]
            charts.append(stacked_bar("一步的链路（瓶颈加框）" if zh else "one step through the chain (bottleneck outlined)",
                                      parts, highlight=d.get("bottleneck")))
        cold = d.get("cold_start")
        if cold:
            parts = [(c["stage"], c["time_s"], str(Quantity.from_si(c["time_s"], TIME))) for c in cold["chain"]]
            charts.append(stacked_bar("冷启动" if zh else "cold start", parts, highlight=cold["bottleneck"]))
        roof = d.get("roofline")
        if roof:
            from .charts import roofline_chart
            phases = {"prefill": "预填充" if zh else "prefill", "decode": "解码" if zh else "decode"}
            points = [(phases[o["phase"]], o["op"], o["flops"] / o["bytes"], o["flops"] / o["time_s"])
                      for o in roof["ops"] if o["flops"] > 0 and o["bytes"] > 0 and o["time_s"] > 0]
            charts.append(roofline_chart(
                "主要算子的屋顶线（虚线：模型可达）" if zh else "roofline of the main operators (dashed: attainable)",
                roof["peak_flops_per_s"], roof["memory_bytes_per_s"], points,
                (roof["peak_flops_per_s"] * roof["gemm_efficiency"],
                 roof["memory_bytes_per_s"] * roof["memory_efficiency"]),
                labels=("FLOP/字节" if zh else "FLOP per byte", "FLOP/s")))
        return [c for c in charts if c]

    def plot(self, lang: str = "en"):
        """The same charts with matplotlib (when installed): memory per device, the decode chain,
        the cold start and the roofline. Returns the Figure."""
        from .charts import pyplot
        plt = pyplot()
        zh = lang == "zh"
        d = self._data
        panels = []
        mem = d.get("memory", {})
        keys = _memory_parts(mem, zh)
        if keys:
            panels.append("memory")
        if d.get("chain"):
            panels.append("chain")
        if d.get("cold_start"):
            panels.append("cold")
        if d.get("roofline"):
            panels.append("roofline")
        fig, axes = plt.subplots(len(panels) or 1, 1, figsize=(7, 2.6 * max(1, len(panels))), squeeze=False)
        gb = Quantity.from_si(1.0, SIZE).in_("GB")  # GB per byte: the unit the tables and the HTML view show

        def stacked(ax, title, items, unit, highlight=None, limit=None):
            left = 0.0
            for label, value in items:
                ax.barh(0, value, left=left, label=label, edgecolor="black" if label == highlight else None,
                        linewidth=3 if label == highlight else 0)
                left += value
            if limit:
                ax.axvline(limit, color="#d62728")
            ax.set_yticks([])
            ax.set_xlabel(unit)
            ax.set_title(title)
            ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.45))

        for ax, panel in zip(axes[:, 0], panels):
            if panel == "memory":
                limit = mem.get("usable_bytes", mem.get("capacity_bytes"))
                stacked(ax, "每卡显存" if zh else "memory per device",
                        [(label, mem[k] * gb) for k, label in keys], "GB", limit=(limit or 0) * gb)
            elif panel == "chain":
                stacked(ax, "一步的链路" if zh else "one decode or training step through the chain",
                        [(c["stage"], c["time_s"] * 1e3) for c in d["chain"]], "ms", highlight=d.get("bottleneck"))
            elif panel == "cold":
                cold = d["cold_start"]
                stacked(ax, "冷启动" if zh else "cold start", [(c["stage"], c["time_s"]) for c in cold["chain"]], "s",
                        highlight=cold["bottleneck"])
            else:
                roof = d["roofline"]
                peak, bw = roof["peak_flops_per_s"], roof["memory_bytes_per_s"]
                ops = [o for o in roof["ops"] if o["flops"] > 0 and o["bytes"] > 0]
                xs = [o["flops"] / o["bytes"] for o in ops]
                grid = sorted(set([min(xs + [peak / bw]) / 2, peak / bw, max(xs + [peak / bw]) * 2]))
                ax.loglog(grid, [min(peak, bw * x) for x in grid], color="black")
                for phase in ("prefill", "decode"):
                    sel = [o for o in ops if o["phase"] == phase]
                    ax.scatter([o["flops"] / o["bytes"] for o in sel], [o["flops"] / o["time_s"] for o in sel],
                               label=phase)
                    for o in sel:  # each point named by its operator, as in the HTML view
                        ax.annotate(o["op"], (o["flops"] / o["bytes"], o["flops"] / o["time_s"]), fontsize=6,
                                    xytext=(4, 2), textcoords="offset points")
                ax.set_xlabel("FLOP/字节" if zh else "FLOP per byte")
                ax.set_ylabel("FLOP/s")
                ax.set_title("屋顶线" if zh else "roofline of the main operators")
                ax.legend(fontsize=7)
        fig.tight_layout()
        return fig

    def _repr_html_(self, lang: str = "en") -> str:
        label = (lambda a: _ZH_LABELS.get(a, a)) if lang == "zh" else (lambda a: a)  # noqa: E731
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(label(a))}</th><td>{html.escape(b)}</td>"
            f"<td>{html.escape(c)}</td></tr>" for a, b, c in self.rows())
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self._data.get("notes", []))
        charts = "".join(f"<div>{svg}</div>" for svg in self.charts_svg(lang))
        return (f"<div class='capplan-result'><table>{body}</table>{charts}"
                + (f"<ul>{notes}</ul>" if notes else "") + "</div>")

    def html(self, lang: str = "en") -> str:
        """The HTML view (as Jupyter shows it); lang="zh" labels the charts in Chinese."""
        return self._repr_html_(lang)

    def to_flat_dict(self) -> Dict[str, Any]:
        return flatten(self._data)
