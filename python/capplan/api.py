"""capplan.estimate(): a scenario (dict, JSON text or file path) in, a Result out."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, Union

from . import _core
from ._args import config_error, mapping, text
from .catalog import Model  # (here, not in _jsonable: an import in a function costs microseconds a call)
from .result import Result
from .units import Quantity

ScenarioLike = Union[Dict[str, Any], str, Path, "Scenario"]


def _jsonable(value: Any, field: str = "") -> Any:
    """Quantities become exact unit strings, a Model its name or inline config, numpy scalars and arrays
    (anything with .item() / .tolist() and a dtype) numbers and lists; anything else that is not JSON is a
    ConfigError naming its field."""
    if isinstance(value, Quantity):
        return value.to_json_text()
    if isinstance(value, Model):
        ref, is_config = value._ref()
        return {**json.loads(ref), "name": value.name} if is_config else ref  # inline config fields (open)
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):  # json.dumps would write 1 as "1" and refuse a tuple with a TypeError
                raise config_error(field or "/", k, f"a {type(k).__name__} key is not text", "text keys")
        return {k: _jsonable(v, f"{field}/{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, f"{field}/{i}") for i, v in enumerate(value)]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "dtype") and hasattr(value, "tolist"):  # numpy (and alike) scalars and arrays
        return _jsonable(value.tolist(), field)
    if isinstance(value, float) and not math.isfinite(value):  # JSON has no NaN or infinity
        raise config_error(field or "/", value, "not a finite number", "a finite number")
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    raise config_error(field or "/", value, f"a {type(value).__name__} is not a scenario value",
                       "numbers, strings, booleans, null, lists and objects")


def _json_text(value: Any, field: str) -> str:
    """JSON text of one scenario value that is not plain JSON data (a Quantity, a Model, numpy), for the core's walk."""
    return json.dumps(_jsonable(value, "" if field == "/" else field))


def scenario_text(scenario: ScenarioLike) -> tuple:
    """(JSON text, folder that relative paths in it refer to)."""
    if isinstance(scenario, dict):
        return json.dumps(_jsonable(scenario)), Path.cwd()
    if isinstance(scenario, Scenario):
        return scenario._parsed.to_json(), Path(scenario._parsed.base_dir())
    if isinstance(scenario, Path) or (isinstance(scenario, str) and not scenario.lstrip().startswith(("{", "["))):
        path = Path(scenario)
        try:
            found = path.is_file()
        except OSError:  # a name too long for the file system, say
            found = False
        if not found:
            shown = str(scenario) if len(str(scenario)) <= 80 else str(scenario)[:77] + "..."
            raise _core.ConfigError(f"/: scenario file not found (got '{shown}'); "
                                    "allowed: a path to a scenario .json, JSON text, or a dict")
        try:
            return path.read_text(encoding="utf-8"), path.resolve().parent
        except UnicodeDecodeError as e:
            raise _core.ConfigError(f"/: scenario file '{scenario}' is not UTF-8 text (byte {e.start}); "
                                    "allowed: a JSON file in UTF-8") from None
    if not isinstance(scenario, str):
        raise _core.ConfigError(f"/: a scenario is a dict, JSON text or the path of a scenario file, "
                                f"got {type(scenario).__name__}")
    return scenario, Path.cwd()


class Scenario:
    """A scenario read into the core's typed form once (issue #23 item 0): ``capplan.estimate(s)`` then costs the
    estimate alone, with no JSON text written or parsed, and ``s.replace({"inference.batch": 64})`` gives a variant
    for the cost of reading the changed keys. Made from what ``capplan.estimate`` takes (a dict, JSON text or the path
    of a scenario file); bad input raises the same ConfigError, naming the field."""

    __slots__ = ("_parsed",)

    def __init__(self, scenario: ScenarioLike):
        if isinstance(scenario, Scenario):
            self._parsed = scenario._parsed
        elif isinstance(scenario, dict):  # walked by the core, no JSON text: the values _jsonable takes alike
            self._parsed = _core.parse_scenario_object(scenario, str(Path.cwd()), _json_text)
        else:
            text, base = scenario_text(scenario)
            self._parsed = _core.parse_scenario(text, str(base))

    def replace(self, changes: Dict[str, Any]) -> "Scenario":
        """A new scenario with each dotted key (``"system.count"``, ``"inference.batch"``) set to its value; None keeps
        this one's. As ``capplan.sweep`` applies its grid: a preset name refined by ``"system.count"`` becomes
        ``{"preset": name, "count": ...}``."""
        items = changes if type(changes) is dict else mapping(changes, "/changes", "a dict of dotted keys -> values")
        if any(type(k) is not str for k in items):  # numpy text as str, anything else a ConfigError naming /changes
            items = {text(k, "/changes", "dotted scenario keys"): v for k, v in items.items()}
        out = Scenario.__new__(Scenario)
        out._parsed = self._parsed.replace(items, _json_text)  # the values read in the core
        return out

    def to_dict(self) -> Dict[str, Any]:
        """The scenario as a dict (as given, with any replaced keys)."""
        return json.loads(self._parsed.to_json())

    def __reduce__(self):  # pickled (to a Dask worker, a process pool) as its text, read again there
        return (_scenario_from_text, (self._parsed.to_json(), self._parsed.base_dir()))

    def __repr__(self) -> str:
        text = self._parsed.to_json()
        return f"Scenario({text if len(text) <= 200 else text[:197] + '...'})"


def _scenario_from_text(text: str, base_dir: str) -> Scenario:
    out = Scenario.__new__(Scenario)
    out._parsed = _core.parse_scenario(text, base_dir)
    return out


def estimate(scenario: ScenarioLike, calibration: Union[str, Path, Dict[str, Any], None] = None) -> Result:
    """Everything capplan computes for a scenario. See docs/scenario.md for its keys.

    ``scenario`` is a dict (values may be Quantity objects or unit strings), JSON text, the
    path of a scenario file, or a ``capplan.Scenario`` (read once: the call then costs the estimate alone).
    ``calibration``: a file written by ``capplan calibrate`` (or its dict),
    measured on the scenario's accelerator; its efficiency-by-size curves replace the catalog's
    (the scenario key ``calibration`` does the same; the result names the table in
    ``efficiency_table``). Bad input raises a capplan error naming the field; an infeasible plan
    is a result with ``feasible == False`` and ``reasons``. The result stays typed in the core until read: its dict
    is built on first use, and ``result.value("inference.ttft_s")`` reads one figure without it. For a
    ``capplan.Scenario`` a static batch or a training step is estimated in part first (latency, throughput, step
    time, MFU, memory), the rest (memory limits, cold start, checkpoint, FLOPs, ranges, cost) when first read.
    """
    if isinstance(scenario, Scenario) and calibration is None:  # read once to be estimated often: lazily
        return Result(_core.estimate_parsed(scenario._parsed))
    if calibration is None:  # a dict, text or file is mostly read whole: estimated whole at once
        return Result(_core.estimate_parsed(Scenario(scenario)._parsed, True))
    text, base = scenario_text(scenario)
    data = json.loads(text)
    data["calibration"] = calibration if isinstance(calibration, dict) else str(Path(calibration).resolve())
    return Result(_core.estimate_parsed(_core.parse_scenario(json.dumps(data), str(base)), True))


def default_scenario() -> Dict[str, Any]:
    """The built-in scenario: an internal assistant for ~50 colleagues on one 8-GPU server."""
    return json.loads(_core.default_scenario_json())
