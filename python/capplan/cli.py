"""The `capplan` command line. Bad input prints one line and exits with code 2, never a traceback."""
from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from typing import Any, Dict, List, Optional, Sequence

from . import _core
from .api import default_scenario, estimate
from .catalog import accelerator, entry, model, system
from .errors import Error
from .result import flatten
from .units import Quantity, format_count

KINDS = {"models": "models", "accelerators": "accelerators", "systems": "systems", "storage": "storage",
         "links": "links"}


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
        header = ["name", "accelerator", "count", "per node", "scale-up", "scale-out", "storage"]
        rows = []
        for n in names:
            s = system(n).to_dict()
            out = s["scale_out"]
            rows.append([n, s["accelerator"]["name"], s["count"], s["per_node"],
                         f"{s['scale_up']['name']} ({s['scale_up_topology']}, {s['scale_up_domain']})",
                         f"{out['nics_per_node']}x {out['link']['name']}" if out else "none",
                         s["storage"]["name"] if s["storage"] else "none"])
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


def _cmd_list(args) -> str:
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
    lines = [f"{kind} {data['name']}"] + [f"  {k}: {json.dumps(v) if isinstance(v, (dict, list)) else v}"
                                          for k, v in data.items() if k != "$schema"]
    if derived:
        lines.append("derived by capplan:")
        lines += [f"  {k}: {json.dumps(v) if isinstance(v, (dict, list)) else v}" for k, v in derived.items()]
    return "\n".join(lines)


def _cmd_estimate(args) -> str:
    if args.scenario is None:
        sc: Any = default_scenario()
    elif args.scenario == "-":
        sc = sys.stdin.read()
    else:
        sc = args.scenario
    result = estimate(sc)
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


def _cmd_default(args) -> str:
    return _core.default_scenario_json()


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="capplan", description="Plan AI compute capacity: what fits, how fast, what it costs.")
    p.add_argument("--version", action="version", version=f"capplan {_core.__version__} (catalog {_core.catalog_version()})")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    e = sub.add_parser("estimate", help="estimate a scenario file (no file: the built-in default scenario)")
    e.add_argument("scenario", nargs="?", help="scenario JSON file, or - for standard input")
    e.add_argument("--format", choices=["table", "json", "csv"], default="table")
    e.set_defaults(run=_cmd_estimate)

    ls = sub.add_parser("list", help="list catalog names")
    ls.add_argument("kind", choices=sorted(KINDS))
    ls.add_argument("--format", choices=["table", "json"], default="table")
    ls.set_defaults(run=_cmd_list)

    sh = sub.add_parser("show", help="show one catalog entry with its sources")
    sh.add_argument("name")
    sh.add_argument("--format", choices=["table", "json"], default="table")
    sh.set_defaults(run=_cmd_show)

    d = sub.add_parser("default-scenario", help="print the built-in default scenario (a starting point to edit)")
    d.set_defaults(run=_cmd_default)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        print(args.run(args))
        return 0
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
