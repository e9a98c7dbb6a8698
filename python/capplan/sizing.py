"""Sizing to a latency target: the cheapest hardware and layout that serves N users."""
from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any, Dict, Iterable, List, Optional, Union

from . import _args, _core
from ._progress import run_watched, stop_if_stopped, warn_stopped
from .catalog import Model
from .catalog import model as _catalog_model
from .units import MEGA, SIZE, TIME, Quantity, quantity


def _table_html(headers, rows) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _text_table(headers, rows) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    return "\n".join("  ".join(f"{str(c):<{w}}" for c, w in zip(r, widths)).rstrip() for r in [headers, *rows])


class SizingResult(dict):
    """``size_inference``'s answer: a dict {"options", "rejected"} that shows itself as a table and,
    in Jupyter, a chart of each option's cost (or device count) with the cheapest outlined."""

    _HEAD = ("accelerator", "count", "tp", "pp", "replicas", "weights", "kv cache", "p99 TTFT", "p99 TPOT", "tokens/s",
             "cost/hour")

    _COST_HEAD = ("own USD/h", "rent USD/h", "USD/1M tokens own", "USD/1M tokens rent")
    _COST_KEYS = ("own_usd_per_hour", "rent_usd_per_hour", "own_usd_per_million_output_tokens",
                  "rent_usd_per_million_output_tokens")

    def _costed(self) -> bool:
        return any(k in o for o in self["options"] for k in self._COST_KEYS)

    def _head(self):
        return self._HEAD + (self._COST_HEAD if self._costed() else ())

    def _rows(self):
        from .costing import usd
        t = lambda v: str(Quantity.from_si(v, TIME))  # noqa: E731
        costed = self._costed()
        return [(o["accelerator"], o["count"], o["tp"], o["pp"], o["replicas"], o["weights"], o["kv_cache"], t(o["ttft_p99_s"]),
                 t(o["tpot_p99_s"]), f"{o['output_tokens_per_s']:.0f}",
                 f"{o['cost_per_hour']:g}" if "cost_per_hour" in o else "")
                + (tuple(usd(o[k]) if k in o else "-" for k in self._COST_KEYS) if costed else ())
                for o in self["options"]]

    def preamble(self) -> str:
        """Lines above the table: the recommendation (when priced), the targets applied and the ranking rule."""
        from .costing import usd
        best = self["options"][0] if self["options"] and self._costed() else None
        lines = []
        if self.get("stopped"):
            lines.append(f"stopped (Ctrl-C) after {self['accelerators_searched']} of {self['accelerators']} accelerators: "
                         "the options are theirs")
        if best is not None and "own_usd_per_million_output_tokens" in best:
            lines.append(f"recommendation: buy {best['own_units']} x {best['system'] or best['accelerator']} "
                         f"({usd(best['capex_usd'])}) and run {best['count']} x {best['accelerator']} ({best['weights']} "
                         f"weights): {usd(best['own_usd_per_million_output_tokens'])} per million output tokens at "
                         "these targets" + (f"; renting: {usd(best['rent_usd_per_million_output_tokens'])}"
                                            if "rent_usd_per_million_output_tokens" in best else ""))
        elif best is not None and "rent_usd_per_million_output_tokens" in best:
            lines.append(f"recommendation: rent {best['count']} x {best['accelerator']} ({best['weights']} weights): "
                         f"{usd(best['rent_usd_per_million_output_tokens'])} per million output tokens at these targets")
        if best is not None and (best["weights"] not in ("bf16", "fp16") or best["kv_cache"] != "bf16"):
            lossy = [f"{best['weights']} weights" if best["weights"] not in ("bf16", "fp16") else "",
                     f"an {best['kv_cache']} KV cache" if best["kv_cache"] != "bf16" else ""]
            lines.append(f"quality: the recommendation uses {' and '.join(x for x in lossy if x)}, which change the "
                         "model's numbers: check its accuracy on your task, or size with --weights bf16")
        t = self.get("targets")
        if t:
            lines.append(f"targets: p99 TTFT {Quantity.from_si(t['ttft_p99_s'], TIME)}, p99 TPOT "
                         f"{Quantity.from_si(t['tpot_p99_s'], TIME)}"
                         + (" (tightened by the validated error, --confidence high)" if t["confidence"] == "high" else ""))
        if "ranked_by" in self:
            lines.append(self["ranked_by"])
        if self.get("engine_config"):
            lines.append(f"engine: {self['engine_config']}")
        return "".join(line + "\n" for line in lines)

    def why_not_fewer(self) -> List[str]:
        """One line per option that says why fewer of its devices would not do."""
        return [f"why not fewer {o['accelerator']}: {o['why_not_fewer']}" for o in self["options"] if o.get("why_not_fewer")]

    def __repr__(self) -> str:
        rule = self.get("ranked_by", "cheapest first")
        text = f"capplan sizing ({rule})\n" + _text_table(self._head(), self._rows())
        text += "".join(f"\n{line}" for line in self.preamble().splitlines() if line != rule)  # advice and targets
        text += "".join(f"\n{line}" for line in self.why_not_fewer())
        return text + "".join(f"\nrejected {r['accelerator']}: {r['reason']}" for r in self["rejected"])

    def _option_bars(self):
        """(label, cost per hour or device count) per option, and whether every option has a price."""
        opts = self["options"]
        priced = bool(opts) and all("cost_per_hour" in o for o in opts)
        return [(f"{o['count']}x {o['accelerator']} tp={o['tp']}", o["cost_per_hour"] if priced else o["count"])
                for o in opts], priced

    def charts_svg(self, lang: str = "en"):
        from .charts import bar_chart
        zh = lang == "zh"
        items, priced = self._option_bars()
        if not items:
            return []
        bars = [(label, v, f"{v:g} /h" if priced else f"{v} devices") for label, v in items]
        title = ("每小时成本（最便宜者加框）" if zh else "cost per hour (the cheapest outlined)") if priced else \
                ("设备数" if zh else "devices (the first option outlined)")
        return [bar_chart(title, bars, items[0][0])]

    def _repr_html_(self, lang: str = "en") -> str:
        rejected = "".join(f"<li>{html.escape(line)}</li>" for line in self.why_not_fewer()) + "".join(
            f"<li>{html.escape(r['accelerator'])}: {html.escape(r['reason'])}</li>" for r in self["rejected"])
        charts = "".join(f"<div>{svg}</div>" for svg in self.charts_svg(lang))
        return (f"<div class='capplan-sizing'>{_table_html(self._head(), self._rows())}{charts}"
                + (f"<ul>{rejected}</ul>" if rejected else "") + "</div>")

    def html(self, lang: str = "en") -> str:
        return self._repr_html_(lang)

    def plot(self):
        """Each option's cost per hour (or device count) with matplotlib, the first (cheapest) outlined."""
        from .charts import plot_bars
        items, priced = self._option_bars()
        return plot_bars("options that meet the targets", items, "cost per hour" if priced else "devices",
                         items[0][0] if items else None)


class TrainingSearchResult(dict):
    """``search_training``'s answer: a dict {"best", "enumerated", "fit", "evaluated", "shapes", "shapes_searched",
    "stopped"} that shows the fastest layouts as a table and, in Jupyter, the best layout's step time by term."""

    _HEAD = ("tp", "pp", "dp", "cp", "ep", "vpp", "sp", "micro-batch", "recompute", "zero", "step", "tokens/s", "MFU",
             "memory/device")

    @staticmethod
    def zero_label(b) -> str:
        """ZeRO stage with its variant: "0", "0 + dist-opt" (Megatron's distributed optimizer), "3",
        "3 / 8" (HSDP: sharded over groups of 8 of the data-parallel ranks)."""
        if b["zero"] == 0:
            return "0 + dist-opt" if b.get("distributed_optimizer") else "0"
        shard = b.get("shard_group", b["dp"])
        return f"{b['zero']} / {shard}" if shard < b["dp"] else str(b["zero"])

    @staticmethod
    def schedule_label(b) -> str:
        """The pipeline schedule in the vpp column: the interleaving depth, or "dualpipe"."""
        return "dualpipe" if b.get("pipeline_schedule") == "dualpipe" else str(b["vpp"])

    def _rows(self):
        return [(b["tp"], b["pp"], b["dp"], b["cp"], b["ep"], self.schedule_label(b), "yes" if b["sequence_parallel"] else "no",
                 b["micro_batch"], b["recompute"], self.zero_label(b),
                 str(Quantity.from_si(b["step_time_s"], TIME)), f"{b['tokens_per_s']:.0f}", f"{100 * b['mfu']:.1f}%",
                 str(Quantity.from_si(b["memory_per_device_bytes"], SIZE))) for b in self["best"]]

    def _stopped_note(self) -> str:
        return (f"; stopped (Ctrl-C) after {self['shapes_searched']} of {self['shapes']} layout shapes"
                if self.get("stopped") else "")

    def __repr__(self) -> str:
        return (f"capplan training layouts: {self['enumerated']} enumerated, {self['fit']} fit memory; fastest first"
                f"{self._stopped_note()}\n" + _text_table(self._HEAD, self._rows()))

    def charts_svg(self, lang: str = "en"):
        from .charts import stacked_bar
        if not self["best"]:
            return []
        terms = [(t["term"], t["exposed_s"], str(Quantity.from_si(t["exposed_s"], TIME)))
                 for t in self["best"][0]["breakdown"] if t["exposed_s"] > 0]
        worst = max(terms, key=lambda t: t[1])[0] if terms else None
        return [stacked_bar("最快布局的一步（不可隐藏的时间）" if lang == "zh" else "the fastest layout's step (exposed time)",
                            terms, highlight=worst)]

    def _repr_html_(self, lang: str = "en") -> str:
        charts = "".join(f"<div>{svg}</div>" for svg in self.charts_svg(lang))
        return (f"<div class='capplan-layouts'><p>{self['enumerated']} layouts enumerated, {self['fit']} fit memory"
                f"{html.escape(self._stopped_note())}</p>{_table_html(self._HEAD, self._rows())}{charts}</div>")

    def html(self, lang: str = "en") -> str:
        return self._repr_html_(lang)

    def plot(self):
        """Step time of each of the fastest layouts with matplotlib, the fastest outlined."""
        from .charts import plot_bars
        items = [(f"tp{b['tp']} pp{b['pp']} dp{b['dp']} cp{b['cp']} mb{b['micro_batch']} {b['recompute']} z{b['zero']}",
                  b["step_time_s"]) for b in self["best"]]
        return plot_bars("the fastest training layouts", items, "step time, s", items[0][0] if items else None)


def _is_moe(model: Any) -> bool:
    """Whether a model (a catalog name or a capplan.Model) is a mixture of experts: which family's uncertainty band
    applies (an unknown name is reported by the search itself)."""
    try:
        spec = model if isinstance(model, Model) else _catalog_model(model)
    except _core.UnknownNameError:
        return False
    return bool(spec.to_dict().get("moe"))


def size_inference(model: Union[str, Model], concurrency: int, input_tokens: int, output_tokens: int,
                   ttft_p99="2 s", tpot_p99="50 ms", accelerators: Optional[Iterable[str]] = None,
                   prices: Optional[Dict[str, float]] = None, weights: Optional[Iterable[str]] = None,
                   calibrations: Optional[Iterable[Union[str, Dict[str, Any]]]] = None,
                   prefill_dispatch: Optional[str] = None, kv_admission: Optional[str] = None,
                   speculative: Optional[Dict[str, Any]] = None,
                   prefix_cache: Optional[Dict[str, Any]] = None, disaggregated: bool = False,
                   engine: str = "vllm-v1", rank_by: Optional[str] = None,
                   cost: Optional[Mapping[str, Any]] = None, confidence: str = "typical",
                   prefill_chunk_tokens: Optional[int] = None, max_num_seqs: Optional[int] = None,
                   progress: bool = True) -> Dict[str, Any]:
    """For each accelerator (default: every one with a system preset), the smallest count and layout
    (tp, replicas, weight and KV formats) whose simulated p99 TTFT and TPOT meet the targets for
    ``concurrency`` users sending ``input_tokens``-token prompts for ``output_tokens``-token answers.
    Returns {"options": [...ranked, by cost per hour when ``prices`` (per accelerator-hour) are given],
    "rejected": [{"accelerator", "reason"}]}. ``weights`` lists the weight formats to try (bf16, fp16,
    fp8, int8, int4, nvfp4, mxfp4; integer formats are weight-only, computing in bf16; fp8 and the FP4 formats
    compute in their own format, tried only where the accelerator has matrix units for it, FP4 with an fp8 KV
    cache); default bf16, plus fp8 where the accelerator computes it. ``calibrations``: files written by ``capplan calibrate`` (or their
    dicts), each used for the accelerator it measured in the formats it has; every option names its
    ``efficiency_table``. ``prefill_dispatch`` ("graph" or "eager": PyTorch engines' prefill, each
    kernel dispatched from Python) and ``kv_admission`` ("on_demand" as vLLM/SGLang, or "reserve" as
    TensorRT-LLM) describe the serving engine, as in a scenario's ``inference``; ``engine`` names the
    engine profile (``capplan list engines``) whose defaults apply, these two included unless given. ``prefix_cache``
    ({"hit_rate", "shared_prefix_tokens"}) applies to every layout; ``speculative`` ({"method", "tokens",
    "acceptance", "draft_model"}) is tried with and without, and each option's ``speculative`` says
    whether it won (fewer devices, or the same count with a lower p99 TPOT). ``disaggregated``: also try
    prefill and decode pools of the accelerator (tp the smallest that holds the model; prefill:decode
    replica counts by total); one with fewer devices than the accelerator's best aggregated layout is
    listed beside it, its ``disaggregation`` giving the replicas of each pool.

    Every candidate runs under one engine configuration, stated in the result's ``engine_config``: the step token
    budget ``prefill_chunk_tokens`` and the sequence limit ``max_num_seqs`` given, else the engine profile's, for
    the largest GPUs when its defaults differ by GPU (vLLM gives an A100 2,048 tokens a step and an H100 8,192: a
    comparison of defaults, not of hardware). Each option's ``why_not_fewer`` says why fewer devices would not do:
    the closest miss at the next smaller count tried (which p99, by how much over its target), or that fewer do not
    hold the weights and caches.

    ``rank_by`` ("tco": owning per hour, "capex": the purchase, "cloud": renting per hour) prices every option from
    the catalog (its system preset's dated price, power and cloud offers; a site's terms; ``cost`` overrides any of
    them as a scenario's ``cost`` object does, docs/scenario.md#cost) and ranks by that figure; each option then has
    ``capex_usd`` (the whole units bought, ``own_units``), ``own_usd_per_hour`` (owning, the share of those units
    the option uses: a 2-GPU option of an 8-GPU node pays a quarter), ``rent_usd_per_hour`` and the cost of a
    million output tokens at the load that meets the targets (``own_usd_per_million_output_tokens``, ``rent_...``). Options the catalog cannot price
    go last. Giving ``cost`` alone prices the options without reordering them.

    ``confidence="high"`` asks for plans that meet the targets at the pessimistic end of capplan's validated error
    (docs/validation.md, models/uncertainty.json): the targets are tightened by the 10th-percentile error of the
    held-out TTFT and TPOT rows of the model's family (dense or mixture-of-experts) where it has a band, else of all
    rows, ``target x min(1, 1 + p10)`` (never loosened), so that the measured latency ``v / (1 + p10)`` still meets
    them; the result's ``targets`` says which were applied.

    ``progress`` shows a bar by accelerator (tqdm) on a terminal. Ctrl-C stops the search: the accelerators searched
    to the end are ranked as usual, the result's ``stopped`` is True and a warning says how many were searched."""
    from pathlib import Path
    calibrations = [_args.path_or_dict(c, f"/calibrations/{i}", "a file from capplan calibrate, or its dict")
                    for i, c in enumerate(_args.items(calibrations or [], "/calibrations", "a list of calibration files"))]
    texts = [Path(c).read_text() if isinstance(c, (str, Path)) else json.dumps(dict(c)) for c in calibrations]
    if not isinstance(model, (str, Model)):
        model = _args.text(model, "/model", "a catalog model name or a capplan.Model")
    if isinstance(model, Model):
        ref, is_config = model._ref()
    else:
        ref, is_config = model, False
    ttft = quantity(ttft_p99, TIME, "/ttft_p99").si
    tpot = quantity(tpot_p99, TIME, "/tpot_p99").si
    if not isinstance(confidence, str) or confidence not in ("typical", "high"):
        raise _args.config_error("/confidence", confidence, "not a confidence", "typical or high")
    applied = {"ttft_p99_s": ttft, "tpot_p99_s": tpot, "confidence": confidence}
    if confidence == "high":
        moe = _is_moe(model)  # the model family's band where there is one (the core's rule, as estimates take it)
        for key, quantity_name in (("ttft_p99_s", "ttft"), ("tpot_p99_s", "tpot")):
            band = _core.uncertainty_band(quantity_name, moe)
            if band:  # a model that reads fast (p10 < 0) must read faster still
                applied[key] *= min(1.0, 1.0 + band[0])
        ttft, tpot = applied["ttft_p99_s"], applied["tpot_p99_s"]
    tokens = (1 << 31) - 1  # what a C++ int holds
    names = [_args.text(a, f"/accelerators/{i}", "an accelerator's name")
             for i, a in enumerate(_args.items(accelerators or [], "/accelerators", "a list of accelerator names"))]
    formats = [_args.text(w, f"/weights/{i}", "a weight format")
               for i, w in enumerate(_args.items(weights or [], "/weights", "a list of weight formats"))]
    price = {_args.text(k, "/prices", "accelerator names"): _args.number(v, f"/prices/{k}", 0.0)
             for k, v in _args.mapping(prices or {}, "/prices", "a dict of accelerator name -> price per hour").items()}
    if rank_by is not None and (not isinstance(rank_by, str) or rank_by not in _RANK_KEYS):
        raise _args.config_error("/rank_by", rank_by, "not a ranking", ", ".join(_RANK_KEYS))
    costs = None if cost is None and rank_by is None else _args.mapping(cost or {}, "/cost", "a scenario's cost object")
    arguments = (
        ref, is_config, _args.integer(concurrency, "/concurrency", 1, tokens),
        _args.integer(input_tokens, "/input_tokens", 1, tokens), _args.integer(output_tokens, "/output_tokens", 1, tokens),
        ttft, tpot, names, price, formats, texts, _args.optional_text(prefill_dispatch, "/prefill_dispatch", "graph or eager"),
        _args.optional_text(kv_admission, "/kv_admission", "on_demand or reserve"), _json_object(speculative, "/speculative"),
        _json_object(prefix_cache, "/prefix_cache"), _args.boolean(disaggregated, "/disaggregated"),
        _args.text(engine, "/engine", "an engine profile's name"),
        0 if prefill_chunk_tokens is None else _args.integer(prefill_chunk_tokens, "/prefill_chunk_tokens", 1, tokens),
        0 if max_num_seqs is None else _args.integer(max_num_seqs, "/max_num_seqs", 1, tokens))
    text, _ = run_watched(lambda watch: _core.size_inference_json(*arguments, watch=watch), "accelerator",
                          "sizing", _args.boolean(progress, "/progress"))
    result = SizingResult(json.loads(text))
    if result["stopped"]:
        warn_stopped("capplan.size_inference", f"{result['accelerators_searched']} of {result['accelerators']} "
                                                "accelerators searched; the options are theirs")
    result["targets"] = applied
    if costs is not None:
        _price_options(result, rank_by, costs)
    return result


_MILLION_TOKENS = MEGA  # the unit of work sizing quotes a cost per (a count of tokens)

# What each ranking sorts by, and how the result states it.
_RANK_KEYS = {"tco": ("own_usd_per_hour", "ranked by the cost of owning per hour (the share of the units bought it uses)"),
              "capex": ("capex_usd", "ranked by the purchase"),
              "cloud": ("rent_usd_per_hour", "ranked by the cost of renting per hour")}


def _price_options(result: Dict[str, Any], rank_by: Optional[str], cost: Dict[str, Any]) -> None:
    """Each option's cost to own and to rent (the catalog's figures for its system, the cost object's overrides) and
    per million output tokens at the load that meets the targets; then the ranking, options without the figure last."""
    from .api import _jsonable
    text = json.dumps(_jsonable(cost))
    for o in result["options"]:
        system = o.get("system") or {"accelerator": o["accelerator"]}
        rate = o["output_tokens_per_s"]
        seconds = _MILLION_TOKENS / rate if rate > 0 else None  # a million output tokens at the load that meets the targets
        c = json.loads(_core.hourly_cost_json(json.dumps(system), o["count"], text, seconds))
        work = c.get("per_million_output_tokens", {})  # the core's cost of work: shares, utilization, commitments
        if "own" in c:  # whole units bought (capex); the option's hours pay the share of them it uses
            o["capex_usd"] = c["own"]["capex_usd"]
            o["own_units"] = c["own"]["units"]
            o["own_usd_per_hour"] = c["own"]["usd_per_hour"] * c["own"]["used_share"]
            if "own_usd" in work:
                o["own_usd_per_million_output_tokens"] = work["own_usd"]
        if "rent" in c:  # at the offers' middle price per accelerator-hour
            o["rent_usd_per_hour"] = c["rent"]["usd_per_hour"]
            if "rent_usd" in work:
                o["rent_usd_per_million_output_tokens"] = work["rent_usd"]
        prefill = o.get("disaggregation", {}).get("prefill_accelerator")
        if prefill and prefill != o["accelerator"]:
            c["notes"].append(f"the prefill pool of {prefill} is priced as {o['accelerator']}")
        o["cost_notes"] = c["notes"]
    if rank_by is None:
        return
    key, rule = _RANK_KEYS[rank_by]
    result["options"].sort(key=lambda o: (key not in o, o.get(key, 0.0)))
    result["ranked_by"] = rule


def _json_object(value, field):
    # A dict for the C++ reader, which checks its keys and names `field` in its errors; None: not given.
    if value is None:
        return ""
    if not isinstance(value, Mapping):
        raise _args.config_error(field, value, f"expected an object, got {type(value).__name__}", "an object")
    return json.dumps(dict(value))


def search_training(scenario, top_k: int = 10, threads: int = 0, progress: bool = True) -> Dict[str, Any]:
    """The fastest training layouts (tp, pp, dp, cp, ep, vpp, micro-batch, recompute, ZeRO stage) that
    fit memory for the scenario's model, system and training workload, with their step-time
    breakdowns: {"best": [...], "enumerated", "fit", "evaluated", "shapes", "shapes_searched", "stopped"}. The
    scenario's own parallelism is ignored; its training.seq_len and global_batch are kept. ``progress`` shows a bar
    by layout shape (tp x pp x cp x ep; tqdm) on a terminal; Ctrl-C stops the search and returns the best of the
    shapes searched, ``stopped`` True, with a warning."""
    from .api import scenario_text
    text, base = scenario_text(scenario)
    k, n = _args.integer(top_k, "/top_k", 1, 10_000), _args.integer(threads, "/threads", 0, 1024)
    found, _ = run_watched(lambda watch: _core.search_training_json(text, str(base), k, n, watch=watch), "shape",
                           "layout search", _args.boolean(progress, "/progress"))
    result = TrainingSearchResult(json.loads(found))
    if result["stopped"]:
        warn_stopped("capplan.search_training", f"{result['shapes_searched']} of {result['shapes']} layout shapes "
                                                 "searched; the best are theirs")
    return result


def _at_length(training: Dict[str, Any], seq_len: int) -> Dict[str, Any]:
    """The training section at another sequence length: packed samples no longer than the sequence."""
    out = {**training, "seq_len": seq_len}
    m = out.get("packed_sample_tokens")
    if isinstance(m, int) and not isinstance(m, bool) and m > seq_len:  # anything else: the core's error names it
        out["packed_sample_tokens"] = seq_len
    return out


def _layout_scenario(base: Dict[str, Any], best: Dict[str, Any], seq_len: int, micro_batch: int) -> Dict[str, Any]:
    """The scenario with a searched layout at another sequence length and micro-batch (global batch: the
    scenario's when it still divides, else one micro-batch per data-parallel rank)."""
    training = _at_length(base["training"], seq_len)
    dp = best["dp"]
    gb = training["global_batch"] if training["global_batch"] % (dp * micro_batch) == 0 else dp * micro_batch
    # (the micro-batches are divisors of the replica's sequences, so the scenario's global batch is kept)
    training.update(seq_len=seq_len, micro_batch=micro_batch, global_batch=gb, recompute=best["recompute"],
                    zero=best["zero"], shard_group=best["shard_group"], distributed_optimizer=best["distributed_optimizer"])
    if best["recompute"] != "selective":
        training.pop("recompute_modules", None)  # they name what selective recompute reruns
    kept = {k: v for k, v in (base.get("parallelism") or {}).items() if k not in ("dp", "etp")}  # e.g. expert_imbalance
    parallelism = {**kept, **{k: best[k] for k in ("tp", "pp", "cp", "ep", "vpp", "pipeline_schedule")},
                   "sequence_parallel": best["sequence_parallel"]}
    return {**base, "parallelism": parallelism, "training": training}


def _largest_of(fits, values) -> int:
    """The largest of the ascending `values` with fits(v), given fits(values[0]) (fits is monotone): bisection."""
    lo, hi = 0, len(values)  # fits(values[lo]); not fits(values[hi]) (past the end)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(values[mid]) else (lo, mid)
    return values[lo]


def _model_context(model) -> int:
    """The model's max_position_embeddings (0: unknown): a catalog name or a Hugging Face config."""
    try:
        if isinstance(model, str):
            from .catalog import model as catalog_model
            return int(catalog_model(model)._data.get("max_position_embeddings") or 0)
        if isinstance(model, dict):
            return int(model.get("max_position_embeddings") or model.get("n_positions") or 0)
    except (_core.Error, ValueError, TypeError):
        pass
    return 0


def _largest(fits, low: int, high: int) -> int:
    """The largest n in [low, high] with fits(n), given fits(low): doubling, then bisection."""
    n = low
    while n < high and fits(min(2 * n, high)):
        n = min(2 * n, high)
    if n == high:
        return n
    hi = min(2 * n, high)  # fits(n), not fits(hi)
    while hi - n > 1:
        mid = (n + hi) // 2
        n, hi = (mid, hi) if fits(mid) else (n, mid)
    return n


def training_limits(scenario, threads: int = 0, search: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Can this model be trained (or fine-tuned, with training.lora) on this system, and how far does it go?
    The fastest layout that fits at the scenario's sequence length (search_training), then on that layout the
    largest micro-batch that fits at that length and the longest sequence that fits at micro-batch 1, both with
    the memory-frugal settings of that layout's shape (full recompute, ZeRO-3 over its data-parallel ranks; the
    micro-batch a divisor of the sequences each replica runs per step), the sequence no longer than the model's
    context: {"fits", "layout", "limits_with", "largest_micro_batch", "longest_sequence", "sequence_limit",
    "seq_len", "reason"}; sequence_limit says whether memory or the model's context stopped it. When nothing fits
    at the scenario's length the search halves it (to 128 tokens) and reports the longest that fits. `search`:
    search_training's answer for the scenario when the caller has it."""
    from .api import estimate, scenario_text
    threads = _args.integer(threads, "/threads", 0, 1024)
    if search is not None:
        _args.mapping(search, "/search", "search_training's answer for this scenario")
        if search.get("stopped"):
            raise _args.config_error("/search", "a search stopped by Ctrl-C", "it did not search every layout",
                                     "a search that ran to the end, or none (this call searches)")
    text, _ = scenario_text(scenario)
    base = json.loads(text)
    seq = int(base["training"]["seq_len"])
    context = _model_context(base["model"])
    limit = min(1 << 20, context) if context > 0 else 1 << 20
    found, tried = None, seq
    while True:
        r = search if search is not None and tried == seq else \
            search_training({**base, "training": _at_length(base["training"], tried)}, top_k=1, threads=threads)
        stop_if_stopped(r)
        if r["best"]:
            found = r["best"][0]
            break
        if tried <= 128:
            break
        tried = max(128, tried // 2)
    if found is None:
        return {"fits": False, "layout": None, "largest_micro_batch": 0, "longest_sequence": 0, "sequence_limit": "",
                "seq_len": seq, "reason": f"no layout fits memory at {tried} tokens and micro-batch 1 "
                                          f"({r['enumerated']} layouts tried)"}

    # Full recompute, and 1F1B (DualPipe holds two stages' states and needs 2 x pp micro-batches per pipeline).
    frugal = dict(found, recompute="full", micro_batch=1, pipeline_schedule="1f1b")
    if found["dp"] > 1:
        frugal.update(zero=3, shard_group=found["dp"], distributed_optimizer=False)

    def fits(s: int, mb: int) -> bool:
        return bool(estimate(_layout_scenario(base, frugal, s, mb)).memory.fits)

    per_replica = max(1, int(base["training"]["global_batch"]) // found["dp"])
    divisors = [d for d in range(1, per_replica + 1) if per_replica % d == 0]
    frugal_fits = fits(tried, 1)  # the frugal settings need no more memory than the searched layout's
    largest_mb = _largest_of(lambda mb: fits(tried, mb), divisors) if tried == seq and frugal_fits else 0
    longest = _largest(lambda s: fits(s, 1), min(tried, limit), limit) if frugal_fits else 0
    stopped = f"the model's context ({context} tokens)" if longest == limit and limit == context else "memory"
    reason = "" if tried == seq else f"no layout fits at {seq} tokens; the longest that fits is {longest}"
    return {"fits": tried == seq, "layout": found, "largest_micro_batch": largest_mb, "longest_sequence": longest,
            "sequence_limit": stopped,
            "limits_with": {k: frugal[k] for k in ("tp", "pp", "dp", "cp", "ep", "recompute", "zero")},
            "seq_len": seq, "reason": reason}
