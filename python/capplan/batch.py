"""Sweeps and batches: many scenarios evaluated inside the core, as tables for notebooks and
spreadsheets. Columns use dotted scenario keys for inputs (``system.accelerator``) and dotted
result keys for outputs (``memory.per_device_bytes``); the unit is the key's suffix (_bytes, _s,
_bytes_per_s, _per_s)."""
from __future__ import annotations

import copy
import csv
import io
import itertools
import os
import json
import math
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _args, _core
from ._progress import bar as progress_bar, warn_stopped
from .api import _jsonable

Row = Dict[str, Any]


def _parse_cell(value: Any) -> Any:
    """Spreadsheet text to a JSON value: numbers, true/false, JSON objects/lists; else the text."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text == "":
        return None
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        pass
    if text[:1] in "{[":
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def set_dotted(target: Dict[str, Any], key: str, value: Any) -> None:
    """set_dotted(s, "system.accelerator", "H100") sets s["system"]["accelerator"]."""
    parts = key.split(".")
    node = target
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {} if part not in node or node[part] is None else node[part]
            if not isinstance(node[part], dict):  # e.g. "system": "HGX-H200" refined by "system.count"
                node[part] = {"preset": node[part]}
        node = node[part]
    node[parts[-1]] = value


def scenario_from_row(row: Mapping[str, Any], base: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    scenario = copy.deepcopy(dict(base or {}))
    for key, value in row.items():
        if key is None or key == "" or key.startswith("#"):
            continue
        parsed = _parse_cell(value)
        if parsed is not None:
            set_dotted(scenario, key, parsed)
    return scenario


# Per-operator lists are for charts, not spreadsheet cells (the estimate JSON keeps them).
_NOT_TABULATED = {"roofline.ops"}
# The latency and throughput of a plan that does not fit describe a run that cannot happen: an
# infeasible row leaves them out (so sorting by throughput cannot pick it) unless asked for.
_SPEED_PREFIXES = ("inference.ttft", "inference.tpot", "inference.itl", "inference.e2e", "inference.throughput",
                   "inference.tokens_per_s", "training.step_time", "training.tokens_per_s", "training.mfu",
                   "training.hfu", "training.model_tflops", "training.time_to_train", "training.gpu_hours",
                   "training.cost")


def _result_columns(flat: Row, infeasible_speed: bool) -> Row:
    """A result flattened by the core for a table (capplan.result.flatten's keys; lists written as JSON text here):
    ``feasible`` (True unless the core found a reason it is not) and ``reasons`` first, then the rest."""
    flat = {k: json.dumps(v) if isinstance(v, list) else v for k, v in flat.items()}
    ordered: Row = {"feasible": flat.pop("feasible", True), "reasons": flat.pop("reasons", "")}
    if ordered.get("feasible") is False and not infeasible_speed:
        flat = {k: v for k, v in flat.items() if not k.startswith(_SPEED_PREFIXES)}
    ordered.update(flat)
    return ordered


def _versions() -> Dict[str, str]:
    return {"capplan_version": _core.__version__, "catalog_version": _core.catalog_version()}


def run_rows(rows: Sequence[Mapping[str, Any]], base: Optional[Mapping[str, Any]] = None,
             base_dir: Union[str, Path, None] = None, progress: bool = False,
             infeasible_speed: bool = False, threads: int = 0) -> List[Row]:
    """Each input row (dotted keys) echoed with the flattened result (``feasible`` and ``reasons``
    first; an infeasible plan's latency and throughput only with ``infeasible_speed``), or with an
    ``error`` column. ``threads``: the core's threads (0: one per core)."""
    scenarios = [scenario_from_row(r, base) for r in rows]
    texts: List[str] = []
    unreadable: Dict[int, str] = {}  # rows with a value no scenario can hold (a NaN cell): their own error
    for i, s in enumerate(scenarios):
        try:
            texts.append(json.dumps(_jsonable(s)))
        except _core.ConfigError as e:
            unreadable[i] = str(e)
            texts.append("")  # the core's answer for it is replaced by the error above
    chunk = 256  # the core's calls: Ctrl-C lands between them
    results: List[Any] = []
    bar = progress_bar(len(texts), "scenario") if progress else None
    try:
        for start in range(0, len(texts), chunk):
            results.extend(_core.estimate_many_flat(texts[start:start + chunk], str(base_dir or Path.cwd()), threads,
                                                    sorted(_NOT_TABULATED)))
            if bar is not None:
                bar.update(min(chunk, len(texts) - start))
    except KeyboardInterrupt:  # interruptible: keep what was computed
        if len(results) < len(texts):
            warn_stopped("capplan", f"{len(results)} of {len(texts)} scenarios computed; the rows returned are those")
    finally:
        if bar is not None:
            bar.close()
    out: List[Row] = []
    versions = _versions()
    for i, (row, result) in enumerate(zip(rows, results)):
        ok, value = (False, unreadable[i]) if i in unreadable else result
        line: Row = {k: v for k, v in row.items() if k}
        if ok:
            # Inputs are echoed as given; a result key that repeats an input name goes under "result.".
            for key, column in _result_columns(value, infeasible_speed).items():
                line["result." + key if key in line else key] = column
        else:
            line["error"] = value
        line.update(versions)
        out.append(line)
    return out


def sweep(scenario: Mapping[str, Any], grid: Mapping[str, Iterable[Any]], progress: bool = True,
          infeasible_speed: bool = False, workers: Optional[int] = None, client: Any = None,
          partitions: Optional[int] = None, columns: Union[str, Iterable[str], None] = None):
    """Every combination of ``grid`` (dotted keys -> values) applied to ``scenario``, evaluated inside
    the core: a pandas DataFrame (one row per point, inputs then results; units in the column names)
    when pandas is installed, else a list of dicts. A point with bad input gets an ``error`` column; a
    point that does not fit has ``feasible`` False and no latency or throughput unless
    ``infeasible_speed``.

    ``workers``: the local cores to use (default: all). ``client``: a ``dask.distributed.Client``: the grid is cut
    into ``partitions`` (default: four per worker thread) evaluated on the cluster's workers (capplan installed on
    each, ``pip install "capplan[dask]"``), the same rows in the same order as a local run; a partition lost with a
    worker is computed again. ``progress`` shows a bar (tqdm) on a terminal; Ctrl-C stops the sweep and returns
    the points already done, with a warning.

    ``columns``: the result figures to tabulate, by dotted key (``["inference.ttft_s", "memory.fits"]``), or
    ``"all"`` (every figure some point has; ``capplan._core.result_column_keys()`` lists them). Given, the sweep is
    columnar (issue #23 item 1): the scenario is parsed once, each point's values are written into a parsed copy in the
    core, and the figures come back as columns, with no JSON per point; the rows hold the inputs, ``feasible``,
    ``reasons``, those figures, ``error`` where a point has one, and the versions. Without it, every row is the whole
    flattened result (notes, breakdowns, ranges and names too), at several times the cost per point."""
    values = _grid(grid)
    if columns is not None:
        return _sweep_columns(scenario, values, columns, progress, infeasible_speed, workers, client, partitions)
    keys = list(values)
    points = [dict(zip(keys, combo)) for combo in itertools.product(*values.values())]
    base = _jsonable(_base_dict(scenario))
    show = _args.boolean(progress, "/progress")
    late = _args.boolean(infeasible_speed, "/infeasible_speed")
    threads = 0 if workers is None else _args.integer(workers, "/workers", 1, 1024)
    if client is None:
        if partitions is not None:
            raise _error("/partitions: cuts a sweep for a Dask cluster; give client= too")
        rows = run_rows(points, base=base, progress=show and len(points) > 1000, infeasible_speed=late, threads=threads)
    else:
        from ._dask import sweep_on_cluster
        rows = sweep_on_cluster(client, base, points, show, late, partitions)
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.DataFrame(rows)


def _base_dict(scenario: Any) -> Dict[str, Any]:
    """A sweep's base: a scenario dict, or a capplan.Scenario's."""
    from .api import Scenario
    if isinstance(scenario, Scenario):
        return scenario.to_dict()
    return dict(_args.mapping(scenario, "/", "a scenario dict or a capplan.Scenario"))


# The columnar sweep (capplan.sweep(..., columns=...)): the grid's product evaluated by the core's sweep_scenario.
def _sweep_columns(scenario: Mapping[str, Any], values: Dict[str, List[Any]], columns: Any, progress: Any,
                   infeasible_speed: Any, workers: Any, client: Any, partitions: Any):
    from ._progress import run_watched
    base = json.dumps(_jsonable(_base_dict(scenario)))
    wanted = _column_keys(columns)
    show = _args.boolean(progress, "/progress")
    late = _args.boolean(infeasible_speed, "/infeasible_speed")
    threads = 0 if workers is None else _args.integer(workers, "/workers", 1, 1024)
    axes = [(k, [_cell_json(v, f"/grid/{k}") for v in vals]) for k, vals in values.items()]
    points = math.prod(len(v) for v in values.values())
    if client is not None:
        from ._dask import sweep_columns_on_cluster
        parts = sweep_columns_on_cluster(client, base, axes, wanted, show, partitions)
    else:
        if partitions is not None:
            raise _error("/partitions: cuts a sweep for a Dask cluster; give client= too")
        out, _ = run_watched(lambda watch: _core.sweep_scenario(base, str(Path.cwd()), axes, wanted, threads, watch),
                             "point", "sweep", show and points > 1000)
        parts = [out]
    table = _join_parts(parts, wanted)
    if table["points"] < points:
        warn_stopped("capplan.sweep", f"{table['points']} of {points} points done; the rows returned are those")
    return _column_frame(values, table, late)


def sweep_columns_partition(base: str, axes: List[Tuple[str, List[str]]], wanted: List[str]) -> Dict[str, Any]:
    """A part of a columnar sweep as a Dask worker runs it (its first axis cut to the part's values), on one thread."""
    return _core.sweep_scenario(base, str(Path.cwd()), axes, wanted, 1, None)


def _column_keys(columns: Any) -> List[str]:
    """``"all"`` (an empty list: the core keeps what some point has) or the keys asked for, each known and once, with
    ``feasible`` (which decides the speed columns' blanks) added when not asked for."""
    known = [k for k, _ in _core.result_column_keys()]
    allowed = "'all' or a list of result keys: " + ", ".join(known)
    if isinstance(columns, str):
        if columns != "all":
            raise _error(f"/columns: not a list of result keys (got {columns!r}); allowed: {allowed}")
        return []
    keys = [_args.text(c, f"/columns/{i}", "a result key")
            for i, c in enumerate(_args.items(columns, "/columns", allowed))]
    if not keys:
        raise _error(f"/columns: an empty list (got []); allowed: {allowed}")
    for i, key in enumerate(keys):
        if key not in known:
            raise _error(f"/columns/{i}: not a column of a result (got {key!r}); allowed: {allowed}")
        if key in keys[:i]:
            raise _error(f"/columns/{i}: asked for twice (got {key!r}); allowed: each column once")
    return keys if "feasible" in keys else keys + ["feasible"]


def _join_parts(parts: List[Dict[str, Any]], wanted: List[str]) -> Dict[str, Any]:
    """The core's tables of consecutive parts of one grid as one table of Python values (columns in the order asked
    for, or the result's)."""
    kinds = dict(_core.result_column_keys())
    present = {key for part in parts for key, _, _ in part["columns"]}
    keys = wanted or [k for k in kinds if k in present]
    pieces: Dict[str, List[Any]] = {k: [] for k in keys}
    errors: Dict[int, str] = {}
    reasons: Dict[int, List[str]] = {}
    offset = 0
    for part in parts:
        have = {key: data for key, _, data in part["columns"]}
        n = part["points"]
        for key in keys:
            pieces[key].append(_column_values(kinds[key], have.get(key), n))
        errors.update({offset + i: e for i, e in part["errors"].items()})
        reasons.update({offset + i: r for i, r in part["reasons"].items()})
        offset += n
    return {"columns": [(k, kinds[k], _concatenate(pieces[k])) for k in keys], "errors": errors, "reasons": reasons,
            "points": offset}


def _concatenate(pieces: List[Any]) -> Any:
    """The parts' values of one column end to end (numpy arrays or lists, as _column_values made them)."""
    if len(pieces) == 1:
        return pieces[0]
    if all(isinstance(p, list) for p in pieces):
        return [x for p in pieces for x in p]
    import numpy
    return numpy.concatenate(pieces)  # numpy promotes: a count with a gap in one part is float in all


def _column_values(kind: str, data: Any, n: int) -> Any:
    """One column of the core's table: absent (NaN) is None, except in a float column (NaN). A numpy array when numpy
    is installed (a count or a yes/no with a gap: float or object, as pandas makes of rows with None), else a list."""
    try:
        import numpy
    except ImportError:
        numpy = None
    if data is None:
        values = [math.nan if kind == "number" else None] * n
        return numpy.array(values, dtype=float if kind == "number" else object) if numpy else values
    if kind == "text":
        return numpy.array(data, dtype=object) if numpy else list(data)
    if numpy is not None:
        numbers = numpy.frombuffer(data, dtype=numpy.float64)
        if kind == "number":
            return numbers.copy()
        gaps = numpy.isnan(numbers)
        if kind == "integer":
            return numbers.copy() if gaps.any() else numbers.astype(numpy.int64)
        if not gaps.any():
            return numbers != 0
        out = numpy.array([None] * n, dtype=object)
        out[~gaps] = numbers[~gaps] != 0
        return out
    from array import array
    numbers = array("d")
    numbers.frombytes(data)
    if kind == "number":
        return list(numbers)
    convert = bool if kind == "boolean" else int
    return [None if x != x else convert(x) for x in numbers]


def _blanked(data: Any, rows: List[int]) -> Any:
    """A speed column without the figures of the rows given (plans that cannot run): NaN for numbers, else None."""
    if isinstance(data, list):
        data = list(data)
        for i in rows:
            data[i] = math.nan if isinstance(data[i], float) else None
        return data
    data = data.astype(float) if data.dtype.kind in "iu" else data.astype(object) if data.dtype.kind == "b" else data.copy()
    data[rows] = math.nan if data.dtype.kind == "f" else None
    return data


def _column_frame(values: Dict[str, List[Any]], table: Dict[str, Any], infeasible_speed: bool):
    """The columnar sweep's rows: the inputs as given, feasible, reasons, the figures, error, versions; a DataFrame
    when pandas is installed, else a dict of lists. Built from numpy arrays unless a point has an error or a gap in
    ``feasible`` (then row by row, as lists)."""
    try:
        import numpy
        import pandas
    except ImportError:
        pandas = None
    n = table["points"]
    columns = {key: data for key, _, data in table["columns"]}
    feasible = columns.pop("feasible", None)
    errors, reasons = table["errors"], table["reasons"]
    if pandas is not None and not errors and isinstance(feasible, numpy.ndarray) and feasible.dtype == object:
        feasible = feasible != False  # noqa: E712 (elementwise): unset (None) has nothing against it, as in full rows
    arrays = pandas is not None and not errors and isinstance(feasible, numpy.ndarray) and feasible.dtype == bool
    out = _input_columns(values, n, arrays)
    # As the full sweep's rows: feasible True unless the core found a reason, reasons "" or their JSON list.
    if arrays:
        out["feasible"] = feasible
        out["reasons"] = numpy.full(n, "", dtype=object)
        texts: Dict[Tuple[str, ...], str] = {}  # many points share their reasons: each list written once
        for i, why in reasons.items():
            key = tuple(why)
            text = texts.get(key)
            out["reasons"][i] = text if text is not None else texts.setdefault(key, json.dumps(why))
        blank = [] if infeasible_speed else numpy.flatnonzero(~feasible).tolist()
    else:
        feasible = [None] * n if feasible is None else feasible.tolist() if hasattr(feasible, "tolist") else feasible
        out["feasible"] = [None if i in errors else (True if f is None else f) for i, f in enumerate(feasible)]
        out["reasons"] = [None if i in errors else json.dumps(reasons[i]) if i in reasons else "" for i in range(n)]
        blank = [] if infeasible_speed else [i for i, f in enumerate(out["feasible"]) if f is False]
    for key, data in columns.items():
        if blank and key.startswith(_SPEED_PREFIXES):
            data = _blanked(data, blank)
        out["result." + key if key in out else key] = data
    if errors:
        out["error"] = [errors.get(i) for i in range(n)]
    for key, version in _versions().items():
        out[key] = numpy.full(n, version, dtype=object) if arrays else [version] * n
    return out if pandas is None else pandas.DataFrame(out)


def _input_columns(values: Dict[str, List[Any]], n: int, arrays: bool) -> Dict[str, Any]:
    """Each grid key's value per point, in itertools.product's order (the last key varies fastest): numpy arrays of
    the dtype pandas gives the values (``arrays``), else lists."""
    out: Dict[str, Any] = {}
    repeat = math.prod(len(v) for v in values.values())
    if arrays:
        import numpy
        import pandas
        at = numpy.arange(n)
    for key, vals in values.items():
        repeat //= len(vals)
        if not arrays:
            out[key] = [vals[(i // repeat) % len(vals)] for i in range(n)]
            continue
        typed = pandas.Series(list(vals)).to_numpy()
        if typed.dtype == object:  # dicts, lists, None: each value one element, never broadcast into the array
            typed = numpy.empty(len(vals), dtype=object)
            for j, v in enumerate(vals):
                typed[j] = v
        out[key] = typed[(at // repeat) % len(vals)]
    return out


def _cell_json(value: Any, field: str) -> str:
    """A grid value's JSON text, as the core's sweep patches it in; an int's without the encoder."""
    if type(value) is int:
        return str(value)
    return json.dumps(_jsonable(_parse_cell(value), field))


def sweep_partition(base: Mapping[str, Any], points: Sequence[Mapping[str, Any]], infeasible_speed: bool) -> List[Row]:
    """One partition of a sweep, as a Dask worker runs it: its points' rows, on one of the worker's threads."""
    return run_rows(points, base=base, infeasible_speed=infeasible_speed, threads=1)


def _grid(grid) -> Dict[str, List[Any]]:
    """A sweep's grid, dotted key -> a non-empty list of values (numpy arrays too), each value one a scenario can
    hold (a non-finite number cannot): a ConfigError names /grid or /grid/<key>."""
    allowed = "a dict of dotted keys -> lists of values"
    out: Dict[str, List[Any]] = {}
    for k, v in _args.mapping(grid, "/grid", allowed).items():
        key = _args.text(k, "/grid", allowed)
        if not key or "" in key.split("."):
            raise _error(f"/grid: a key with an empty part (got {key!r}); allowed: dotted scenario keys such as "
                         "'system.count'")
        values = _args.items(v, f"/grid/{key}", "a list of values")
        if not values:
            raise _error(f"/grid/{key}: no values (got []); allowed: a list of values")
        field = f"/grid/{key}"
        for value in values:
            if type(value) is not int:  # an int is JSON as it is (the common grid: counts, batches, degrees)
                _jsonable(_parse_cell(value), field)
        out[key] = values
    return out


def sweep_inference(scenario, grid: Mapping[str, Iterable[Any]], threads: int = 0, infeasible_speed: bool = False):
    """A fast grid of static-batch inference estimates (millions of points in seconds), with the
    numbers ``capplan.estimate`` gives for a static batch: columns ``fits``, ``per_device_bytes``,
    ``ttft_s``, ``tpot_s``, ``output_tokens_per_s`` and ``error`` (why a layout cannot run), after
    the grid's own columns. A point that does not fit has NaN latency and throughput (sorting by
    throughput cannot pick it) unless ``infeasible_speed``. ``inference.input_tokens``, ``inference.output_tokens`` and
    ``inference.batch`` vary per point inside the core; every other dotted key (``parallelism.tp``,
    ``system.count``, ``precision.kv_cache``, ``model``...) makes one scenario per combination,
    parsed once. A pandas DataFrame when pandas is installed, else a dict of lists. For the serving
    simulation under concurrency, cold start or training: ``capplan.sweep``."""
    from .api import scenario_text
    text, base = scenario_text(scenario)
    base_dict = json.loads(text)
    grid = _grid(grid)
    workload = set(_core.inference_grid_keys())
    axes = [(k, [_args.integer(v, f"/grid/{k}", 1, (1 << 63) - 1) for v in values]) for k, values in grid.items() if k in workload]
    layout_keys = [k for k in grid if k not in workload]
    combos = [dict(zip(layout_keys, c)) for c in itertools.product(*(grid[k] for k in layout_keys))]
    texts = [json.dumps(_jsonable(scenario_from_row(c, base_dict))) for c in combos]
    columns = _core.inference_grid(texts, str(base), axes, _args.integer(threads, "/threads", 0, 1024))
    if not _args.boolean(infeasible_speed, "/infeasible_speed"):
        _blank_infeasible_speed(columns)
    index = columns.pop("layout")
    out = {k: [combos[i][k] for i in index] for k in layout_keys}
    out.update(columns)
    try:
        import pandas
    except ImportError:
        return out
    return pandas.DataFrame(out)


_GRID_SPEED_COLUMNS = ("ttft_s", "tpot_s", "output_tokens_per_s")


def _blank_infeasible_speed(columns: Dict[str, Any]) -> None:
    """NaN latency and throughput where the point does not fit (the core's columns are lists)."""
    fits = columns["fits"]
    for name in _GRID_SPEED_COLUMNS:
        columns[name] = [v if ok else math.nan for v, ok in zip(columns[name], fits)]


OUTPUT_FORMATS = (".csv", ".xlsx", ".xlsm", ".json")


def _error(message: str) -> Exception:
    return _core.ConfigError(message)


def _read_xlsx(path: Path) -> List[List[Any]]:
    try:
        import openpyxl
    except ImportError:
        raise _error(f"/: reading {path.name} needs openpyxl: pip install \"capplan[excel]\"") from None
    import zipfile
    try:
        sheet = openpyxl.load_workbook(path, read_only=True, data_only=True).active
        return [list(r) for r in sheet.iter_rows(values_only=True)]
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as e:
        raise _error(f"/: {path.name} is not an XLSX workbook ({e.__class__.__name__}); "
                     "allowed: a workbook saved by a spreadsheet, or a CSV file") from None


def _read_csv(path: Path) -> Tuple[List[List[Any]], str]:
    """The rows of a CSV file and how it was read: UTF-8 with or without a byte-order mark (a
    spreadsheet's "CSV UTF-8"), separated by ',', ';' or a tab (the header line decides)."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _error(f"/: {path.name} is not UTF-8 text (byte {e.start}); allowed: a CSV saved as \"CSV UTF-8\", "
                     "or an XLSX workbook") from None
    header = text.split("\n", 1)[0]
    separator = max((",", ";", "\t"), key=header.count)
    rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=separator)]
    how = ("with a byte-order mark, " if raw.startswith(b"\xef\xbb\xbf") else "") + \
          {",": "',' separators", ";": "';' separators", "\t": "tab separators"}[separator]
    return rows, how


def read_table_with_format(path: Union[str, Path]) -> Tuple[List[Row], str]:
    """Rows of a CSV or XLSX file (first row: dotted column names) and how the file was read. An empty
    file or one with a header and no rows is an error: there is nothing to estimate."""
    path = Path(path)
    if path.suffix.lower() in (".xlsx", ".xlsm"):
        values, how = _read_xlsx(path), "XLSX"
    else:
        values, how = _read_csv(path)
        how = "CSV " + how
    if not values or not any(c not in (None, "") for c in values[0]):
        raise _error(f"/: {path.name} is empty; allowed: a header row of dotted names (model, system.accelerator, ...) "
                     "and one scenario per row")
    header = [str(h).strip() if h is not None else "" for h in values[0]]
    rows = [{h: v for h, v in zip(header, r) if h} for r in values[1:] if any(c not in (None, "") for c in r)]
    if not rows:
        raise _error(f"/: {path.name} has a header but no scenario rows")
    return rows, how


def read_table(path: Union[str, Path]) -> List[Row]:
    """Rows of a CSV or XLSX file (first row: dotted column names)."""
    return read_table_with_format(path)[0]


def check_output_path(path: Union[str, Path]) -> Path:
    """The output's format comes from its extension: .csv, .xlsx or .json; anything else is an error
    (a CSV written into a file named .pdf helps nobody)."""
    path = Path(path)
    if path.suffix.lower() not in OUTPUT_FORMATS:
        raise _error(f"/output: '{path.name}' has no result format by its extension; allowed: "
                     + ", ".join(OUTPUT_FORMATS))
    return path


def _need_openpyxl(path: Path) -> None:
    try:
        import openpyxl  # noqa: F401
    except ImportError:
        raise _error(f"/: writing {path.name} needs openpyxl: pip install \"capplan[excel]\"") from None


def write_table(rows: Sequence[Row], path: Union[str, Path], workbook: Optional[Callable[[], Any]] = None,
                document: Any = None) -> None:
    """CSV, XLSX (header row frozen and filtered, numbers as numbers, units in the column names; cost columns as
    live formulas over an inputs sheet, capplan.workbook; or the workbook ``workbook()`` makes) or JSON (the rows, or
    ``document`` when given: a result whose totals and notes a list of rows would lose), by the file's extension.
    Written to a temporary file beside it, then renamed: an interrupted write leaves the old file (or none), never
    half of one."""
    path = check_output_path(path)
    columns: List[str] = []
    for r in rows:
        for k in r:
            if k not in columns:
                columns.append(k)
    suffix = path.suffix.lower()
    tmp = path.with_name(f".{path.name}.capplan-tmp")
    try:
        if suffix == ".json":
            tmp.write_text(json.dumps(list(rows) if document is None else document, indent=2))
        elif suffix in (".xlsx", ".xlsm"):
            from .workbook import results_workbook
            _need_openpyxl(path)
            (workbook() if workbook else results_workbook(columns, rows)).save(tmp)
        else:
            buf = io.StringIO()
            writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
            tmp.write_text(buf.getvalue())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
