"""The `capplan` command line. Bad input prints one line and exits with code 2, never a traceback."""
from __future__ import annotations

import argparse
import csv
import io
import json
import shlex
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from . import _args, _core
from ._progress import StoppedWarning, stop_if_stopped, warn_stopped
from .api import default_scenario, estimate
from .catalog import Model, accelerator, entry, model, system
from .errors import Error
from .result import flatten
from .units import GIGA, SECONDS_AN_HOUR, Quantity, format_count

KINDS = {"models": "models", "accelerators": "accelerators", "systems": "systems", "storage": "storage",
         "links": "links", "sites": "sites"}


# The largest values the core takes: counts and degrees up to 2^20 (docs/scenario.md), other
# integers within a C++ int.
_MAX_COUNT, _MAX_INT = 1 << 20, (1 << 31) - 1


def _integer(lo: int, hi: int):
    """An argparse type: an integer in [lo, hi]. Anything else is the usual one-line usage error
    naming the option, never a value the core would refuse with a traceback."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"{n} is out of range; allowed: an integer in [{lo}, {hi}]")
        return n
    return parse


def _share(text: str) -> float:
    """An argparse type: a number in [0, 1] (NaN and infinities refused here, not as malformed JSON)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not 0.0 <= x <= 1.0:  # also false for NaN
        raise argparse.ArgumentTypeError(f"{text} is out of range; allowed: a number in [0, 1]")
    return x


def _number(lo: float):
    """An argparse type: a finite number >= lo (the core checks the upper bounds and names the cost key)."""
    def parse(text: str) -> float:
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
        if not (x >= lo and x < float("inf")):  # also false for NaN
            raise argparse.ArgumentTypeError(f"{text} is out of range; allowed: a number >= {lo:g}")
        return x
    return parse


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would exit with 2 and usage; keep it to one line
        raise _UsageError(f"{self.prog}: {message} (see --help)")


def _table(header: Sequence[str], rows: List[Sequence[Any]]) -> str:
    cells = [[str(c) for c in header]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _q(value, dims) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, str):
        return value
    return str(Quantity.from_si(value, dims))


def _list_rows(kind: str):
    names = _core.catalog_names(kind)
    if kind == "models":
        header = ["name", "type", "parameters", "active", "layers", "hidden", "heads/kv", "context"]
        rows = []
        for n in names:
            m = model(n)
            rows.append([n, m.model_type, format_count(m.parameters), format_count(m.active_parameters),
                         m.num_hidden_layers, m.hidden_size, f"{m.num_attention_heads}/{m.num_key_value_heads}",
                         m.max_position_embeddings or "unknown"])
        return header, rows
    if kind == "accelerators":
        header = ["name", "vendor", "memory", "memory bw", "bf16 dense", "fp8 dense", "tdp"]
        rows = []
        for n in names:
            a = accelerator(n)
            rows.append([n, a.vendor, _q(a.memory_bytes, (1, 0, 0, 0)), _q(a.memory_bandwidth_bytes_per_s, (1, 0, -1, 0)),
                         _q(a.peak_dense_flops_per_s.get("bf16"), (0, 1, -1, 0)),
                         _q(a.peak_dense_flops_per_s.get("fp8"), (0, 1, -1, 0)), _q(a.tdp_w, (0, 0, 0, 1))])
        return header, rows
    if kind == "systems":
        header = ["name", "accelerator", "count", "per node", "scale-up", "scale-out", "storage", "price (USD)", "max power"]
        rows = []
        for n in names:
            s = system(n).to_dict()
            out = s["scale_out"]
            e = entry(n)
            rows.append([n, s["accelerator"]["name"], s["count"], s["per_node"],
                         f"{s['scale_up']['name']} ({s['scale_up_topology']}, {s['scale_up_domain']})",
                         f"{out['nics_per_node']}x {out['link']['name']}" if out else "none",
                         s["storage"]["name"] if s["storage"] else "none", _price(e.get("price")),
                         (e.get("power") or {}).get("max", {}).get("value", "unknown")])
        return header, rows
    if kind == "sites":
        header = ["name", "PUE", "USD/kWh", "hosting USD/kW-month", "depreciation", "kg CO2e/kWh"]
        rows = []
        for n in names:
            e = entry(n)
            carbon = e.get("carbon_kg_per_kwh")
            rows.append([n, e["pue"]["value"], e["usd_per_kwh"]["value"], e["hosting_usd_per_kw_month"]["value"],
                         f"{e['depreciation_years']['value']:g} years", carbon["value"] if carbon else "unknown"])
        return header, rows
    header = ["name", "kind", "scope", "bandwidth" if kind == "links" else "read", "source"]
    rows = []
    for n in names:
        e = entry(n)
        bw = e.get("bandwidth_per_direction" if kind == "links" else "read_bandwidth")
        bw = bw.get("value") if isinstance(bw, dict) else bw
        src = e["source"]
        rows.append([n, e["kind"], e["scope"], bw or "unknown", src if len(src) < 60 else src[:57] + "..."])
    return header, rows


def _price(price) -> str:
    """A catalog price as "$515,000" or "$276,000-331,200 (2023-08)"."""
    if not price:
        return "unknown"
    from .costing import usd
    low, high = price["usd"] if isinstance(price["usd"], list) else [price["usd"]] * 2
    return (usd(low) if low == high else f"{usd(low)}-{usd(high)}") + f" ({price['date']})"


def _cmd_list(args) -> str:
    if args.kind == "engines":  # not catalog files: the serving-engine profiles (inference.engine)
        profiles = json.loads(_core.engine_profiles_json())
        if args.format == "json":
            return json.dumps(profiles, indent=2)
        rows = [[p["name"], p["engine"], p["prefill_dispatch"], p["kv_admission"], "yes" if p["chunked_prefill"] else "no",
                 p["kv_block_tokens"], p["memory_utilization"],
                 ", ".join(f"{t['step_tokens']}/{t['max_num_seqs']}" + (f" from {t['min_memory_gib']:g} GiB" if t["min_memory_gib"] else "")
                           + (" (not A100)" if t["excludes_a100"] else "")
                           for t in p["limits"])] for p in profiles]
        return _table(["name", "engine", "prefill", "kv admission", "chunked", "block", "memory", "step tokens/seqs"], rows)
    kind = KINDS[args.kind]
    if args.format == "json":
        return json.dumps(_core.catalog_names(kind), indent=2)
    header, rows = _list_rows(kind)
    return _table(header, rows)


def _cmd_show(args) -> str:
    data = entry(args.name)
    kind = _core.catalog_kind(args.name)
    if args.format == "json":
        return json.dumps(data, indent=2)
    derived: Dict[str, Any] = {}
    if kind == "model":
        derived = model(args.name).to_dict()
    elif kind == "system":
        derived = system(args.name).to_dict()
    lines = [f"{kind} {data['name']}"] + [_show_line(k, v) for k, v in data.items() if k != "$schema"]
    if derived:
        lines.append("derived by capplan:")
        lines += [_show_line(k, v) for k, v in derived.items()]
    return "\n".join(lines)


# A catalog cloud offer's commitment (models/schema/common.schema.json cloud_offer; the core's reader checks the same).
_COMMITMENTS = ("on_demand", "reserved", "1y", "3y")


def _show_line(key: str, value: Any, indent: int = 2) -> str:
    """One field of `capplan show`, wrapped at 100 columns: quantities auto-scaled ("56000 MB/s" reads 56 GB/s),
    a missing figure as "not given", an object as its fields one a line below its key (a price's source and date
    each on its own line), a list of objects (cloud offers) an item a line."""
    import textwrap

    def wrap(text: str, first: str, rest: str) -> str:  # whole words: a URL longer than a line stays whole
        return textwrap.fill(text, width=100, initial_indent=first, subsequent_indent=rest, break_long_words=False,
                             break_on_hyphens=False)
    pad = " " * indent
    if isinstance(value, dict) and value:
        return "\n".join([f"{pad}{key}:"] + [_show_line(k, v, indent + 2) for k, v in value.items()])
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        items = ("; ".join(f"{k}: {_show_text(v)}" for k, v in item.items()) for item in value)
        return "\n".join([f"{pad}{key}:"] + [wrap(t, f"{pad}  - ", f"{pad}      ") for t in items])
    return wrap(_show_text(value), f"{pad}{key}: ", f"{pad}    ")


def _show_text(value: Any) -> str:
    """A scalar as `capplan show` prints it (a quantity auto-scaled; nested objects inside a list item as JSON)."""
    if value is None:
        return "not given"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        try:
            q = Quantity(value)
            if any(q.dims):  # a quantity with a unit, not a bare number or a date
                return str(q)
        except Error:
            pass
        return value
    return str(value)


def _cmd_estimate(args) -> str:
    if args.scenario is None:
        sc: Any = default_scenario()
    elif args.scenario == "-":
        sc = sys.stdin.read()
    else:
        sc = args.scenario
    result = estimate(sc, calibration=args.calibration)
    if args.format == "json":
        return json.dumps(result.to_dict(), indent=2)
    if args.format == "csv":
        flat = flatten(result.to_dict())
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(flat.keys())
        writer.writerow(flat.values())
        return buf.getvalue().rstrip("\n")
    head = "built-in default scenario: " + default_scenario()["description"] + "\n" if args.scenario is None else ""
    return head + repr(result)


def _cmd_cost(args) -> str:
    from .costing import cost
    sc: Any = sys.stdin.read() if args.scenario == "-" else args.scenario
    overrides = {k: v for k, v in (("site", args.site), ("price_per_device_hour", args.price_per_device_hour),
                                   ("system_price", args.system_price), ("usd_per_kwh", args.usd_per_kwh),
                                   ("pue", args.pue), ("depreciation_years", args.depreciation_years),
                                   ("utilization", args.utilization), ("commitment", args.commitment))
                 if v is not None}
    result = cost(sc, **overrides)
    if args.format == "json":
        return json.dumps(dict(result), indent=2)
    return repr(result)


def _part_price_args(given) -> Optional[Dict[str, float]]:
    """--part-price ITEM=USD, repeated, as bom's part_prices (the core checks each item and price)."""
    if not given:
        return None
    prices: Dict[str, float] = {}
    for text in given:
        item, sep, usd = text.rpartition("=")
        if not sep or not item.strip():
            raise _args.config_error("--part-price", text, "not ITEM=USD", "e.g. 'spine switches=40000'")
        try:
            value = float(usd)
        except ValueError:
            raise _args.config_error("--part-price", text, "the price is not a number of US dollars",
                                     "e.g. 'spine switches=40000'") from None
        if item.strip() in prices:
            raise _args.config_error("--part-price", text, "the item is quoted twice", "one quote an item")
        prices[item.strip()] = value
    return prices


def _cmd_bom(args) -> str:
    from .batch import write_table
    from .costing import bom
    from .workbook import bom_workbook
    result = bom(args.system, args.count, rack_power=args.rack_power, site=args.site,
                 oversubscription=args.oversubscription, pod_nodes=args.pod_nodes, storage=args.storage,
                 storage_level=args.storage_level, storage_read=args.storage_read, storage_write=args.storage_write,
                 storage_capacity=args.storage_capacity, part_prices=_part_price_args(args.part_price))
    if args.output:
        write_table(result.rows(), args.output, workbook=lambda: bom_workbook(result), document=dict(result))
        return f"capplan bom: {len(result.rows())} lines -> {args.output}"
    if args.format == "json":
        return json.dumps(dict(result), indent=2)
    if args.format == "csv":
        rows = result.rows()
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue().rstrip("\n")
    return repr(result)


def _cmd_collective(args) -> str:
    from .collectives import collective, collective_sweep
    system: Any = args.system
    if args.nodes_of is not None:  # a preset scaled out to more accelerators
        system = {"preset": args.system, "count": args.nodes_of}
    common = dict(system=system, gpus=args.gpus, per_node=args.per_node, algorithm=args.algorithm,
                  nvls=not args.no_nvls, imbalance=args.imbalance, calibration=args.calibration, engine=args.engine)
    if args.sweep:
        rows = collective_sweep(args.op, args.sweep, **common)
        rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
        if args.format == "json":
            return json.dumps(rows, indent=2)
        header = ["size", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "algorithm", "protocol"]
        body = [[f"{r['size_bytes']:.0f}", f"{r['time_us']:.2f}", f"{r['algbw_GBps']:.2f}", f"{r['busbw_GBps']:.2f}",
                 r["algorithm"], r["protocol"]] for r in rows]
        if args.format == "csv":
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows([header] + body)
            return buf.getvalue().rstrip("\n")
        return _table(header, body)
    if args.size is None:
        raise _UsageError("capplan collective: give --size (e.g. 1GiB) or --sweep FROM:TO (e.g. 8B:8GiB)")
    r = collective(args.op, args.size, **common)
    if args.format == "json":
        return json.dumps(r.to_dict(), indent=2)
    if args.format == "csv":
        flat = flatten({k: v for k, v in r.to_dict().items() if k != "tiers"})
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(flat.keys())
        writer.writerow(flat.values())
        return buf.getvalue().rstrip("\n")
    return r.table()


def _cmd_calibrate_collectives(args) -> str:
    from .calibration import calibrate_collectives
    entry = calibrate_collectives(args.file, system=args.system, op=args.op, ranks=args.ranks,
                                  in_place=args.in_place)
    text = json.dumps(entry, indent=2)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text + "\n")
        return f"wrote {args.output}: latency {entry['latency']}, bus bandwidth {entry['bus_bandwidth']}"
    return text


def _cmd_calibrate(args) -> str:
    from .calibration import calibrate_cpu, calibrate_cuda, cpu_peak_line, measure_cpu
    if args.backend not in ("cpu", "cuda"):
        raise _UsageError(f"--backend: '{args.backend}' is not a calibration backend; allowed: cpu, cuda")
    cuda = args.backend == "cuda"
    text_tokens = args.tokens or ("1,16,128,512,2048" if cuda else "1,16,128")
    try:
        tokens = tuple(int(t) for t in text_tokens.split(","))
    except ValueError:
        raise _UsageError(f"--tokens: '{args.tokens}' is not a list of token counts; allowed: e.g. 1,16,128")
    layer_tokens = args.layer_tokens or (2048 if cuda else 128)
    from .units import BYTE_RATE, FLOP_RATE, TIME
    if cuda and args.model is None:
        raise _UsageError("--backend cuda: give --model (the GEMM shapes come from a model's layer)")
    if cuda and args.threads is not None:
        raise _UsageError("--threads: the CPU backend's option; allowed with --backend cpu")
    if args.model is None:  # raw measurements of square GEMMs and STREAM
        run = measure_cpu(formats=args.format or ["fp32"], array=args.array, max_time=args.max_time, tokens=tokens,
                          threads=args.threads)
    else:
        model = _model_arg(args.model)
        command = "capplan calibrate " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 2 else ""
        if cuda:
            run = calibrate_cuda(model, accelerator=args.accelerator, layer_tokens=layer_tokens, gemm_tokens=tokens,
                                 formats=args.format or (), max_time=args.max_time, device=args.device,
                                 output=args.output, command=command or "capplan calibrate --backend cuda")
        else:
            run = calibrate_cpu(model, layer_tokens=layer_tokens, gemm_tokens=tokens, formats=args.format or ["fp32"],
                                rounds=args.rounds, max_time=args.max_time, command=command or "capplan calibrate",
                                threads=args.threads)
    text = json.dumps(run, indent=2)
    lines = [f"{m['probe']:<40} {Quantity.from_si(m['time_s'], TIME).in_('ms'):10.3f} ms  " +
             (f"{Quantity.from_si(m['achieved_flops_per_s'], FLOP_RATE).in_('GFLOP/s'):8.1f} GFLOP/s"
              if m["flops"] > 0 else
              f"{Quantity.from_si(m['achieved_bytes_per_s'], BYTE_RATE).in_('GB/s'):8.1f} GB/s") +
             f"  spread {100 * m['spread']:.1f}% over {m['runs']} runs" + ("" if m["converged"] else " (not converged)")
             for m in run["measurements"]]
    peak = cpu_peak_line(run)
    lines += [peak] if peak else []
    head = f"{run['provenance']['device']} ({run['provenance']['runtime']})"
    if "report" in run:
        rep = run["report"]
        lines += ["", f"one layer of {rep['model']} at a {rep['layer_tokens']}-token prompt: predicted vs measured",
                  f"{'operator':<24} {'measured':>11} {'before':>11} {'error':>7} {'after':>11} {'error':>7}"]
        lines += [f"{o['op']:<24} {1e3 * o['measured_s']:8.3f} ms {1e3 * o['predicted_before_s']:8.3f} ms "
                  f"{100 * o['error_before']:+6.1f}% {1e3 * o['predicted_after_s']:8.3f} ms {100 * o['error_after']:+6.1f}%"
                  for o in rep["ops"]]
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(text + "\n")
        return "\n".join([head, *lines, f"wrote {args.output}"])
    return text if args.model is None else "\n".join([head, *lines, "", text])


def _model_arg(text: str) -> Any:
    """--model: a catalog name, or a Hugging Face config.json (or the folder holding one) read as it is."""
    if Path(text).is_file() or Path(text, "config.json").is_file():
        return Model.from_hf_config(text)
    return text


def _training_scenario(args) -> Dict[str, Any]:
    """`size training`'s scenario: the system, the workload, and a LoRA / QLoRA fine-tune when asked."""
    for flag, given in (("--rank-by", args.rank_by), ("--site", args.site), ("--commitment", args.commitment),
                        ("--confidence", args.confidence != "typical"),
                        ("--prefill-chunk", args.prefill_chunk), ("--max-num-seqs", args.max_num_seqs)):
        if given:
            raise _UsageError(f"{flag}: an option of `size inference`; `size training` does not use it yet")
    if args.weights and "," in args.weights:
        raise _UsageError("--weights: training takes one format, the base's (e.g. nf4 for QLoRA)")
    if args.compute is not None and not args.compute.strip():
        raise _UsageError("--compute: empty; give a number format such as fp8 or bf16")
    if args.lora_targets is not None and args.lora_rank is None:
        raise _UsageError("--lora-targets: give --lora-rank too")
    if args.lora_targets is not None and not args.lora_targets.strip():
        raise _UsageError("--lora-targets: empty; give all_linear or projections such as q_proj,v_proj")
    system: Any = {"preset": args.system, "count": args.count} if args.count is not None else args.system
    training: Dict[str, Any] = {"seq_len": args.seq_len or _TRAINING_DEFAULTS["--seq-len"],
                                "global_batch": args.global_batch or _TRAINING_DEFAULTS["--global-batch"],
                                "kernels": args.kernels}
    if args.autocast:
        training["autocast"] = True
    if args.attention_kernel != "fused":
        training["attention_kernel"] = args.attention_kernel
    if args.packed_sample_tokens is not None:
        training["packed_sample_tokens"] = args.packed_sample_tokens
    if args.lora_rank is not None:
        targets = args.lora_targets or "all_linear"
        training["lora"] = {"rank": args.lora_rank, "targets": targets if targets == "all_linear" else targets.split(",")}
    scenario: Dict[str, Any] = {"model": _model_arg(args.model), "system": system, "training": training}
    if args.weights or args.compute is not None:
        scenario["precision"] = {"weights": args.weights or "bf16",
                                 **({"compute": args.compute} if args.compute is not None else {})}
    return scenario


def _limits_line(lim) -> str:
    w = lim["limits_with"]
    how = f"tp {w['tp']}, pp {w['pp']}, dp {w['dp']}, cp {w['cp']}, full recompute, ZeRO-{w['zero']}"
    if lim["sequence_limit"] != "memory":
        how += f"; stopped by {lim['sequence_limit']}"
    if not lim["fits"]:
        head = f"does not fit at {lim['seq_len']} tokens"
        return f"{head}; longest sequence that fits at micro-batch 1: {lim['longest_sequence']:,} tokens ({how})"
    return (f"fits at {lim['seq_len']} tokens: largest micro-batch {lim['largest_micro_batch']}; longest sequence at "
            f"micro-batch 1: {lim['longest_sequence']:,} tokens ({how})")


_TRAINING_DEFAULTS = {"--system": "DGX-H100", "--seq-len": 4096, "--global-batch": 1024}
_TRAINING_COLUMNS = ("columns: tp tensor-parallel ranks, pp pipeline stages, dp data-parallel replicas, cp context-parallel "
                     "ranks, ep expert-parallel ranks, vpp virtual stages per pipeline rank (or dualpipe), sp sequence "
                     "parallelism, mb micro-batch (sequences), zero ZeRO stage (/ its shard group), step time per step, "
                     "memory per device")


def _training_price(text: Optional[str], accelerator: str) -> Optional[float]:
    """--price for `size training`: USD per accelerator-hour, as 2.5 or NAME=2.5 (NAME the system's accelerator)."""
    if not text:
        return None
    name, _, value = text.rpartition("=")
    if name and name.strip().lower() not in accelerator.lower():
        raise _UsageError(f"--price: {name.strip()} is not this system's accelerator ({accelerator}); "
                          "give USD per accelerator-hour, e.g. 2.5 or " + accelerator + "=2.5")
    try:
        price = float(value)
    except ValueError:
        raise _UsageError(f"--price: expects USD per accelerator-hour, e.g. 2.5, got '{text}'") from None
    return _args.number(price, "--price", 0.0)  # as size inference's prices: not negative, finite


def _training_preamble(args, scenario, preset, system_given: bool) -> str:
    """What was sized, with the defaults it took: model, system and count, sequence, global batch."""
    t = scenario["training"]
    count = args.count or preset["count"]
    defaulted = [f"{flag} {value}" for flag, value, given in (
        ("--system", _TRAINING_DEFAULTS["--system"], system_given), ("--seq-len", t["seq_len"], args.seq_len),
        ("--global-batch", t["global_batch"], args.global_batch)) if not given]
    tokens = t["seq_len"] * t["global_batch"]
    return (f"{args.model}: training on {count} x {preset['accelerator']['name']} ({preset['preset']}), sequences of "
            f"{t['seq_len']:,} tokens, global batch {t['global_batch']:,} sequences ({tokens / 1e6:.3g} M tokens a step)"
            + (f"; defaults taken: {', '.join(defaulted)}" if defaulted else "") + "\n")


def _fits_from(args, scenario, preset) -> str:
    """When no layout fits: the fewest devices (the count doubled, in whole nodes) at which one does."""
    from .sizing import search_training
    count = args.count or preset["count"]
    per_node = preset["per_node"]
    while count < _MAX_COUNT:
        count = min(_MAX_COUNT, max(2 * count, per_node))
        count -= count % per_node
        trial = dict(scenario, system={"preset": args.system, "count": count})
        try:
            found = search_training(trial, top_k=1)
            stop_if_stopped(found)
            if found["fit"] > 0:
                return f"a layout fits from {count} x {preset['accelerator']['name']} ({count // per_node} nodes; counts doubled)"
        except Error as e:
            return f"no larger count tried fits either: {str(e).splitlines()[0]}"
    return f"no count up to {_MAX_COUNT} fits"


def _cmd_size_training(args) -> str:
    from .costing import usd
    from .sizing import search_training, training_limits
    system_given = args.system is not None
    args.system = args.system or _TRAINING_DEFAULTS["--system"]
    scenario = _training_scenario(args)
    preset = system(args.system)._data
    price = _training_price(args.price, preset["accelerator"]["name"])
    r = search_training(scenario, top_k=args.top)
    # Stopped (Ctrl-C): the best of the shapes searched, without the further searches of the limits; stopped in those,
    # the whole search's answer without them.
    lim = None
    if not r["stopped"]:
        try:
            lim = training_limits(scenario, search=r)
        except KeyboardInterrupt:
            warn_stopped("capplan size training", "the layouts above are the whole search's; the largest micro-batch "
                                                  "and longest sequence were not computed")
    if args.format == "json":
        return json.dumps({**r, "limits": lim}, indent=2)
    header = ["tp", "pp", "dp", "cp", "ep", "vpp", "sp", "mb", "recompute", "zero", "step", "tokens/s", "MFU", "memory"]
    if price is not None:
        header += ["$/h", "$/1B tokens"]
    rows = []
    for b in r["best"]:
        devices = b["tp"] * b["pp"] * b["dp"] * b["cp"]
        rows.append([b["tp"], b["pp"], b["dp"], b["cp"], b["ep"], r.schedule_label(b),
                     "yes" if b["sequence_parallel"] else "no", b["micro_batch"], b["recompute"], r.zero_label(b),
                     str(Quantity.from_si(b["step_time_s"], (0, 0, 1, 0))), f"{b['tokens_per_s']:.0f}",
                     f"{100 * b['mfu']:.1f}%", str(Quantity.from_si(b["memory_per_device_bytes"], (1, 0, 0, 0)))]
                    + ([usd(price * devices), usd(price * devices * GIGA / (b["tokens_per_s"] * SECONDS_AN_HOUR))]
                       if price is not None else []))
    text = _training_preamble(args, scenario, preset, system_given)
    summary = f"{r['enumerated']} layouts, {r['fit']} fit memory"
    if lim is None:
        stop = (f"; stopped after {r['shapes_searched']} of {r['shapes']} layout shapes (tp x pp x cp x ep)"
                if r["stopped"] else "; limits not computed (Ctrl-C)")
        return (text + (_table(header, rows) if rows else "no layout fits memory in the shapes searched") + "\n"
                + _TRAINING_COLUMNS + "\n" + summary + stop)
    if lim["layout"] is None:
        return text + "no layout fits memory\n" + summary + "\n" + lim["reason"] + "\n" + _fits_from(args, scenario, preset)
    return (text + (_table(header, rows) if rows else "no layout fits memory") + "\n" + _TRAINING_COLUMNS
            + (f"; $ at {usd(price)} per accelerator-hour" if price is not None else "") + "\n" + summary + "\n"
            + _limits_line(lim))


def _cmd_size(args) -> str:
    if args.workload == "training":
        return _cmd_size_training(args)
    for flag, given in (("--lora-rank", args.lora_rank is not None), ("--lora-targets", args.lora_targets is not None),
                        ("--kernels", args.kernels != "fused"), ("--autocast", args.autocast),
                        ("--attention-kernel", args.attention_kernel != "fused"), ("--compute", args.compute is not None),
                        ("--packed-sample-tokens", args.packed_sample_tokens is not None)):
        if given:
            raise _UsageError(f"{flag}: an option of `size training`; `size inference` does not use it")
    from .sizing import size_inference
    prices = {}
    for item in (args.price or "").split(","):
        if item.strip():
            name, _, value = item.partition("=")
            try:
                prices[name.strip()] = float(value)
            except ValueError:
                raise _UsageError(f"capplan size: --price expects NAME=DOLLARS_PER_HOUR, got '{item}'") from None
    if args.concurrency is None or args.input is None or args.output is None:
        raise _UsageError("capplan size inference: give --concurrency, --input and --output")
    accels = [a.strip() for a in (args.accelerators or "").split(",") if a.strip()]
    r = size_inference(_model_arg(args.model), args.concurrency, args.input, args.output, ttft_p99=args.ttft_p99,
                       tpot_p99=args.tpot_p99, accelerators=accels, prices=prices,
                       weights=[w.strip() for w in (args.weights or "").split(",") if w.strip()],
                       calibrations=args.calibration or [], prefill_dispatch=args.prefill_dispatch,
                       kv_admission=args.kv_admission, speculative=_speculative_flag(args.speculative, args.draft_model),
                       prefix_cache=_prefix_cache_flags(args.prefix_hit_rate, args.shared_prefix),
                       disaggregated=args.disaggregated, engine=args.engine, rank_by=args.rank_by,
                       cost={k: v for k, v in (("site", args.site), ("commitment", args.commitment)) if v} or None,
                       confidence=args.confidence,
                       prefill_chunk_tokens=args.prefill_chunk, max_num_seqs=args.max_num_seqs)
    if args.format == "json":
        return json.dumps(r, indent=2)
    from .costing import usd
    header = ["accelerator", "count", "tp", "pp", "ep", "replicas", "weights", "kv", "p99 ttft", "p99 tpot", "tokens/s", "$/h"]
    cost_keys = r._COST_KEYS
    costed = r._costed()
    if costed:
        header += ["own $/h", "rent $/h", "own $/1M tok", "rent $/1M tok"]
    rows = [[o["accelerator"], o["count"], f"{o['tp']} (attention dp)" if o.get("attention_dp") else o["tp"], o["pp"],
             o["ep"], o["replicas"], o["weights"], o["kv_cache"],
             str(Quantity.from_si(o["ttft_p99_s"], (0, 0, 1, 0))), str(Quantity.from_si(o["tpot_p99_s"], (0, 0, 1, 0))),
             f"{o['output_tokens_per_s']:.0f}", f"{o['cost_per_hour']:.2f}" if "cost_per_hour" in o else ""]
            + ([usd(o[k]) if k in o else "-" for k in cost_keys] if costed else [])
            for o in r["options"]]
    empty = "no accelerator was searched to the end" if r["stopped"] else "no accelerator meets the targets"
    text = r.preamble() + (_table(header, rows) if rows else empty)
    for o in r["options"]:
        if o.get("efficiency_table", "catalog") != "catalog":
            text += f"\n{o['accelerator']}: efficiency table {o['efficiency_table']} (calibration)"
        if "disaggregation" in o:
            d = o["disaggregation"]
            if "prefill_accelerator" in d:
                text += (f"\n{d['prefill_accelerator']} + {o['accelerator']} ({o['count']} devices): disaggregated, "
                         f"{d['prefill_replicas']} {d['prefill_accelerator']} prefill replicas of tp {d['prefill_tp']} and "
                         f"{d['decode_replicas']} {o['accelerator']} decode replicas of tp {d['tp']}")
            else:
                text += (f"\n{o['accelerator']} ({o['count']} devices): disaggregated, {d['prefill_replicas']} prefill and "
                         f"{d['decode_replicas']} decode replicas of tp {d['tp']}")
        if args.speculative:
            text += (f"\n{o['accelerator']}: " + ("with speculative decoding (fewer devices, or a lower p99 TPOT at "
                     "the same count)" if o.get("speculative") else "without speculative decoding (it did not pay here)"))
    text += "".join(f"\n{line}" for line in r.why_not_fewer())
    for rej in r["rejected"]:
        text += f"\nrejected {rej['accelerator']}: {rej['reason']}"
    return text


def _speculative_flag(text, draft_model):
    # --speculative METHOD,TOKENS,ACCEPTANCE (e.g. eagle,3,0.7); --draft-model for method draft.
    if text is None:
        if draft_model:
            raise _UsageError("capplan size: --draft-model needs --speculative draft,TOKENS,ACCEPTANCE")
        return None
    parts = [p.strip() for p in text.split(",")]
    try:
        method, tokens, acceptance = parts
        spec = {"method": method, "tokens": int(tokens), "acceptance": _share(acceptance)}
    except (ValueError, argparse.ArgumentTypeError):
        raise _UsageError(f"capplan size: --speculative expects METHOD,TOKENS,ACCEPTANCE (e.g. eagle,3,0.7), got '{text}'") from None
    if draft_model:
        spec["draft_model"] = draft_model
    return spec


def _prefix_cache_flags(hit_rate, shared):
    if hit_rate is None and shared is None:
        return None
    return {k: v for k, v in (("hit_rate", hit_rate), ("shared_prefix_tokens", shared)) if v is not None}


def _cmd_batch(args) -> str:
    from .batch import check_output_path, read_table_with_format, run_rows, write_table
    from pathlib import Path
    if args.output:
        check_output_path(args.output)  # before the work, not after
    rows, how = read_table_with_format(args.file)
    if how not in ("CSV ',' separators", "XLSX"):
        print(f"capplan: read {Path(args.file).name} as {how}", file=sys.stderr)
    out = run_rows(rows, base_dir=Path(args.file).resolve().parent, progress=len(rows) > 1000,
                   infeasible_speed=args.infeasible_speed)
    errors = sum(1 for r in out if "error" in r)
    if args.output:
        write_table(out, args.output)
        return f"wrote {args.output}: {len(out) - errors} results, {errors} errors"
    buf = io.StringIO()
    columns: list = []
    for r in out:
        columns += [k for k in r if k not in columns]
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(out)
    return buf.getvalue().rstrip("\n")


def _cmd_default(args) -> str:
    return _core.default_scenario_json()


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="capplan", description="Plan AI compute capacity: what fits, how fast, what it costs.")
    p.add_argument("--version", action="version", version=f"capplan {_core.__version__} (catalog {_core.catalog_version()})")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    e = sub.add_parser("estimate", help="estimate a scenario file (no file: the built-in default scenario)")
    e.add_argument("scenario", nargs="?", help="scenario JSON file, or - for standard input")
    e.add_argument("--format", choices=["table", "json", "csv"], default="table")
    e.add_argument("--calibration", default=None, help="a calibration file from `capplan calibrate` (efficiency by kernel size)")
    e.set_defaults(run=_cmd_estimate)

    co = sub.add_parser("cost", help="what a scenario costs to own or rent: per hour, per million tokens, per run")
    co.add_argument("scenario", help="scenario JSON file, or - for standard input")
    co.add_argument("--site", default=None, help="a catalog site (capplan list sites); default US-colocation")
    co.add_argument("--price-per-device-hour", type=_number(0.0), default=None, help="rental price in USD per accelerator-hour")
    co.add_argument("--system-price", type=_number(0.0), default=None,
                    help="purchase price in USD of one unit of the system (a node, or a rack for NVL72 presets)")
    co.add_argument("--usd-per-kwh", type=_number(0.0), default=None, help="electricity price in USD per kWh")
    co.add_argument("--pue", type=_number(1.0), default=None, help="facility power / IT power")
    co.add_argument("--depreciation-years", type=_number(0.5), default=None, help="years the purchase is written off over")
    co.add_argument("--utilization", type=_number(0.0), default=None, help="share of hours the hardware does this work")
    co.add_argument("--commitment", choices=_COMMITMENTS, default=None,
                    help="which cloud offers price the rental")
    co.add_argument("--format", choices=["table", "json"], default="table")
    co.set_defaults(run=_cmd_cost)

    bo = sub.add_parser("bom", help="a cluster's bill of materials: systems, racks, fabric switches, cables, optics")
    bo.add_argument("--system", required=True, help="a catalog system preset (capplan list systems)")
    bo.add_argument("--count", type=_integer(1, _MAX_COUNT), required=True, help="accelerators in the cluster")
    bo.add_argument("--rack-power", default=None, help="a rack's power limit, e.g. 40kW: racks are counted")
    bo.add_argument("--site", default=None, help="a catalog site (capplan list sites) for the owning cost; "
                                                 "default US-colocation")
    bo.add_argument("--oversubscription", type=_number(1.0), default=None,
                    help="the leaves' down:up port ratio, e.g. 2 for 2:1 (default: the preset's, 1 = non-blocking); "
                         "with --pod-nodes, the pods' spines' ratio instead")
    bo.add_argument("--pod-nodes", type=_integer(0, _MAX_COUNT), default=None,
                    help="pods of this many nodes, full bisection inside, oversubscribed only above them "
                         "(default: the preset's; 0 = no pods)")
    bo.add_argument("--storage", default=None,
                    help="a catalog storage system (one appliance or building block, e.g. NetApp-BeeGFS-BB): as many "
                         "as --storage-level or --storage-read / --storage-write / --storage-capacity need")
    bo.add_argument("--storage-level", choices=["good", "better", "best"], default=None,
                    help="the preset's reference architecture's storage guideline per scalable unit")
    bo.add_argument("--storage-read", default=None, help="the cluster's aggregate read rate, e.g. 200GB/s")
    bo.add_argument("--storage-write", default=None, help="the cluster's aggregate write rate, e.g. 100GB/s")
    bo.add_argument("--storage-capacity", default=None, help="the capacity to hold, e.g. 2PB")
    bo.add_argument("--part-price", action="append", default=None, metavar="ITEM=USD",
                    help="a line's price each over the catalog's, e.g. 'spine switches=40000' (a quote); repeatable")
    bo.add_argument("--format", choices=["table", "json", "csv"], default="table")
    bo.add_argument("-o", "--output", default=None,
                    help="write the lines to .csv, .json or .xlsx (XLSX: totals and owning cost as live formulas "
                         "over an inputs sheet)")
    bo.set_defaults(run=_cmd_bom)

    ls = sub.add_parser("list", help="list catalog names (or the serving-engine profiles: capplan list engines)")
    ls.add_argument("kind", choices=sorted([*KINDS, "engines"]))
    ls.add_argument("--format", choices=["table", "json"], default="table")
    ls.set_defaults(run=_cmd_list)

    sh = sub.add_parser("show", help="show one catalog entry with its sources")
    sh.add_argument("name")
    sh.add_argument("--format", choices=["table", "json"], default="table")
    sh.set_defaults(run=_cmd_show)

    c = sub.add_parser("collective", help="cost of a collective (all_reduce, all_gather, ...) on a system")
    c.add_argument("op", help="all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv")
    c.add_argument("--system", default="DGX-H100", help="a catalog system preset (default DGX-H100)")
    c.add_argument("--nodes-of", type=_integer(1, _MAX_COUNT), default=None, metavar="COUNT",
                   help="scale the preset to COUNT accelerators (several nodes)")
    c.add_argument("--gpus", type=_integer(1, _MAX_COUNT), default=None, help="ranks in the group (default: the whole system)")
    c.add_argument("--per-node", type=_integer(1, _MAX_COUNT), default=None, help="ranks of the group on each node")
    c.add_argument("--size", default=None, help="message size, e.g. 1GiB")
    c.add_argument("--sweep", default=None, help="sizes FROM:TO doubling, e.g. 8B:8GiB (an nccl-tests-like table)")
    c.add_argument("--algorithm", default=None, help="force ring, tree, nvls, nvls_tree, collnet or direct "
                   "(with --engine: one_shot or two_shot)")
    c.add_argument("--engine", default=None, help="all_reduce through this serving engine's own kernel (vllm-v1, "
                   "sglang, trtllm-pytorch, trtllm-tensorrt; see capplan list engines) instead of NCCL")
    c.add_argument("--no-nvls", action="store_true", help="as NCCL_NVLS_ENABLE=0")
    c.add_argument("--imbalance", type=float, default=1.0, help="all_to_all: busiest rank / average (>= 1)")
    c.add_argument("--calibration", default=None, help="a calibration file from calibrate-collectives")
    c.add_argument("--format", choices=["table", "json", "csv"], default="table")
    c.set_defaults(run=_cmd_collective)

    k = sub.add_parser("calibrate-collectives", help="fit latency and bus bandwidth from an nccl-tests output")
    k.add_argument("file", help="nccl-tests output: its text table, or its -J JSON")
    k.add_argument("--system", required=True, help="the catalog system it was measured on")
    k.add_argument("--op", default=None, help="the operation (default: read from the output)")
    k.add_argument("--ranks", type=_integer(1, _MAX_COUNT), default=None, help="ranks (default: counted from the output)")
    k.add_argument("--in-place", action="store_true", help="fit the in-place columns")
    k.add_argument("-o", "--output", default=None, help="write the calibration entry here")
    k.set_defaults(run=_cmd_calibrate_collectives)

    cal = sub.add_parser("calibrate", help="measure this machine's kernels, fit efficiency by size, check a layer")
    cal.add_argument("--backend", default="cpu", help="cpu (Eigen, always built) or cuda (cuBLASLt, a GPU)")
    cal.add_argument("--model", default=None, help="fit a calibration on this model's layer shapes (a catalog name or "
                     "config.json) and check its layer; without it: raw square GEMMs and STREAM only")
    cal.add_argument("--tokens", default=None, help="token counts (GEMM m) for --model's shapes "
                     "(default cpu 1,16,128; cuda 1,16,128,512,2048)")
    cal.add_argument("--layer-tokens", type=_integer(1, _MAX_INT), default=None, help="prompt tokens of the layer check (cpu 128, cuda 2048)")
    cal.add_argument("--accelerator", default=None, help="cuda: the catalog accelerator the GPU is (default: by its name)")
    cal.add_argument("--device", type=_integer(0, 1023), default=0, help="cuda: the GPU index")
    cal.add_argument("--rounds", type=_integer(1, 1000), default=3, help="interleaved rounds (the fastest median counts)")
    cal.add_argument("--format", action="append", help="GEMM number format, repeatable (cpu: fp32, fp64; "
                     "cuda: bf16, fp16, fp8; default all the device runs)")
    cal.add_argument("--array", default="256 MiB", help="size of each STREAM array (0 to skip memory)")
    cal.add_argument("--max-time", default="0.5 s", help="timed budget per probe (and round)")
    cal.add_argument("--threads", type=_integer(1, 1024), default=None, help="cpu: threads every probe runs on, 1..1024 "
                     "(default: every hardware thread)")
    cal.add_argument("-o", "--output", default=None, help="write the calibration file (or the raw measurements) here")
    cal.set_defaults(run=_cmd_calibrate)

    z = sub.add_parser("size", help="the cheapest hardware and layout that meets a latency target")
    z.add_argument("workload", choices=["inference", "training"])
    z.add_argument("--model", required=True, help="a catalog name, or a Hugging Face config.json (or its folder)")
    z.add_argument("--concurrency", type=_integer(1, _MAX_INT), help="inference: users with a request in flight")
    z.add_argument("--input", type=_integer(1, _MAX_INT), help="inference: prompt tokens")
    z.add_argument("--output", type=_integer(1, _MAX_INT), help="inference: answer tokens")
    z.add_argument("--system", default=None, help="training: a catalog system preset (default DGX-H100)")
    z.add_argument("--count", type=_integer(1, _MAX_COUNT), default=None, help="training: accelerators (the preset scaled out)")
    z.add_argument("--seq-len", type=_integer(1, _MAX_INT), default=None, help="training: sequence length (default 4096)")
    z.add_argument("--global-batch", type=_integer(1, _MAX_INT), default=None,
                   help="training: sequences per step (default 1024)")
    z.add_argument("--packed-sample-tokens", type=_integer(1, _MAX_INT), default=None,
                   help="training: fine-tuning samples packed into each sequence, their mean length in tokens; each "
                        "attends only within itself (default: one sample a sequence)")
    z.add_argument("--top", type=_integer(1, 10_000), default=10, help="training: how many layouts to show")
    z.add_argument("--ttft-p99", default="2s", help="p99 time to first token, e.g. 2s")
    z.add_argument("--tpot-p99", default="50ms", help="p99 time per output token, e.g. 50ms")
    z.add_argument("--accelerators", default=None, help="comma-separated names (default: all with a system preset)")
    z.add_argument("--weights", default=None,
                   help="inference: weight formats to try, e.g. bf16,fp8,int4 or nvfp4 / mxfp4 on FP4 hardware (default: bf16, "
                        "and fp8 where supported); "
                        "training: the base's format, e.g. nf4 for QLoRA")
    z.add_argument("--compute", default=None,
                   help="training: the GEMMs' format, e.g. fp8 (Transformer Engine FP8 training; with --weights fp8 and "
                        "--lora-rank, an FP8 LoRA base as NeMo / MLPerf run it)")
    z.add_argument("--lora-rank", type=_integer(1, 65536), default=None,
                   help="training: fine-tune with LoRA adapters of this rank (the base frozen)")
    z.add_argument("--lora-targets", default=None,
                   help="training: all_linear (default) or projections, e.g. q_proj,v_proj (qkv_proj, gate_up_proj: "
                        "one adapter over a fused projection, as Megatron / NeMo)")
    z.add_argument("--kernels", choices=["fused", "eager"], default="fused",
                   help="training: fused (Megatron, Transformer Engine) or eager (Hugging Face, litgpt) kernels: activation "
                        "memory and element-wise passes")
    z.add_argument("--autocast", action="store_true",
                   help="training: torch.autocast over fp32 weights (Hugging Face Trainer bf16=True on an fp32 model); "
                        "with --kernels eager the residual stream is fp32")
    z.add_argument("--attention-kernel", default="fused",
                   choices=_core.training_attention_kernels(),
                   help="training: the attention kernel; fused (default) at the GEMMs' efficiency, a FlashAttention "
                        "version at its published rate on the accelerator (A100, H100), or cuDNN's with BF16 (cudnn) or "
                        "FP8 inputs (cudnn_fp8: Transformer Engine's fp8_dpa, FP8 compute only) at cuDNN's measured rate "
                        "(H100, H200, B200, B300, GB200, GB300, and GH200, H200-NVL and H800 through them)")
    z.add_argument("--price", default=None,
                   help="USD per accelerator-hour: inference NAME=PRICE,... to rank by cost; training PRICE (or "
                        "NAME=PRICE) for each layout's cost an hour and per billion tokens")
    z.add_argument("--rank-by", choices=["tco", "capex", "cloud"], default=None,
                   help="inference: price every option from the catalog (owning, purchase, renting) and rank by it")
    z.add_argument("--site", default=None, help="inference with --rank-by: a catalog site (capplan list sites)")
    z.add_argument("--commitment", choices=_COMMITMENTS, default=None,
                   help="inference with --rank-by cloud: which cloud offers price the rental (default on_demand)")
    z.add_argument("--confidence", choices=["typical", "high"], default="typical",
                   help="inference: high meets the targets at the pessimistic end of the validated error (docs/validation.md)")
    z.add_argument("--calibration", action="append", default=None,
                   help="inference: a calibration file from `capplan calibrate` for one of the accelerators (repeatable)")
    z.add_argument("--engine", choices=["vllm-v1", "sglang", "trtllm-pytorch", "trtllm-tensorrt"], default="vllm-v1",
                   help="inference: the serving-engine profile whose defaults apply (capplan list engines)")
    z.add_argument("--prefill-dispatch", choices=["graph", "eager"], default=None,
                   help="inference: how the engine launches a prompt's kernels: graph (TensorRT engine or CUDA graph) "
                        "or eager (PyTorch engines: TensorRT-LLM's PyTorch backend, SGLang, vLLM beyond its graph sizes)")
    z.add_argument("--prefill-chunk", type=_integer(1, _MAX_INT), default=None, metavar="TOKENS",
                   help="inference: the engine's tokens a step on every accelerator (default: the engine profile's, "
                        "for the largest GPUs when its defaults differ by GPU)")
    z.add_argument("--max-num-seqs", type=_integer(1, _MAX_INT), default=None,
                   help="inference: the engine's sequences a step on every accelerator (default: as --prefill-chunk)")
    z.add_argument("--kv-admission", choices=["on_demand", "reserve"], default=None,
                   help="inference: on_demand (vLLM, SGLang: KV blocks as tokens arrive) or reserve (TensorRT-LLM: "
                        "prompt and whole answer reserved at admission)")
    z.add_argument("--speculative", default=None, metavar="METHOD,TOKENS,ACCEPTANCE",
                   help="inference: also try speculative decoding, e.g. eagle,3,0.7 (methods draft, eagle, mtp, ngram)")
    z.add_argument("--draft-model", default=None, help="inference: the draft model for --speculative draft,...")
    z.add_argument("--prefix-hit-rate", type=_share, default=None,
                   help="inference: share of each prompt's tokens found in the prefix cache, 0..1")
    z.add_argument("--shared-prefix", type=_integer(0, _MAX_INT), default=None, metavar="TOKENS",
                   help="inference: a prefix every request shares (a system prompt), stored once")
    z.add_argument("--disaggregated", action="store_true",
                   help="inference: also try separate prefill and decode pools (listed when they need fewer devices)")
    z.add_argument("--format", choices=["table", "json"], default="table")
    z.set_defaults(run=_cmd_size)

    b = sub.add_parser("batch", help="one scenario per row of a CSV/XLSX (dotted column names) -> results table")
    b.add_argument("file", help="scenarios.csv or scenarios.xlsx; columns like model, system.accelerator, inference.concurrency")
    b.add_argument("-o", "--output", default=None, help="results.csv, results.xlsx or results.json (default: CSV on stdout)")
    b.add_argument("--infeasible-speed", action="store_true",
                   help="keep latency and throughput in rows whose plan does not fit (left out by default)")
    b.set_defaults(run=_cmd_batch)

    d = sub.add_parser("default-scenario", help="print the built-in default scenario (a starting point to edit)")
    d.set_defaults(run=_cmd_default)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", StoppedWarning)
            out = args.run(args)
        print(out)
        stopped = [w for w in said if issubclass(w.category, StoppedWarning)]
        for w in said:  # Ctrl-C's: the answer above is partial, and how much of it there is
            print(f"capplan: {'' if w in stopped else 'warning: '}{w.message}", file=sys.stderr)
        return 130 if stopped else 0
    except KeyboardInterrupt:
        print("capplan: stopped (Ctrl-C)", file=sys.stderr)
        return 130
    except (Error, _UsageError) as exc:
        print(f"capplan: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:
        print(f"capplan: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
