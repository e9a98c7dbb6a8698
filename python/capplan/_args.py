"""The arguments of the Python entry points, checked before they reach the core (issue #21 item 1): a value of the
wrong type or out of range is a ConfigError naming the argument (``/gpus``), never pybind's TypeError signature dump
or a ValueError from int(). numpy scalars count as the numbers and text they hold."""
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, List, Optional

from . import _core

MAX_COUNT = 1 << 20  # the core's limit on counts and parallel degrees (docs/scenario.md)


def config_error(field: str, value: Any, problem: str, allowed: str) -> Exception:
    shown = repr(value)[:80]
    error = _core.ConfigError(f"{field}: {problem} (got {shown}); allowed: {allowed}")
    error.field, error.value, error.problem, error.allowed = field, shown, problem, allowed
    return error


def _plain(value: Any) -> Any:
    """A numpy scalar (anything with .item() and a dtype) as the Python value it holds."""
    return value.item() if hasattr(value, "dtype") and hasattr(value, "item") and getattr(value, "ndim", 0) == 0 else value


def text(value: Any, field: str, allowed: str = "text") -> str:
    value = _plain(value)
    if not isinstance(value, str):
        raise config_error(field, value, f"a {type(value).__name__} is not text", allowed)
    return value


def optional_text(value: Any, field: str, allowed: str = "text") -> str:
    """Text, or "" for None (the core's 'not given')."""
    return "" if value is None else text(value, field, allowed)


def integer(value: Any, field: str, low: int, high: int) -> int:
    value = _plain(value)
    allowed = f"an integer from {low} to {high}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise config_error(field, value, f"a {type(value).__name__} is not an integer", allowed)
    if isinstance(value, float):
        if not value.is_integer():
            raise config_error(field, value, "not a whole number", allowed)
        value = int(value)
    if not low <= value <= high:
        raise config_error(field, value, "out of range", allowed)
    return value


def number(value: Any, field: str, low: float = -math.inf, high: float = math.inf) -> float:
    value = _plain(value)
    allowed = f"a number from {low:g} to {high:g}"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise config_error(field, value, f"a {type(value).__name__} is not a number", allowed)
    if not (math.isfinite(value) and low <= value <= high):
        raise config_error(field, value, "out of range", allowed)
    return float(value)


def boolean(value: Any, field: str) -> bool:
    value = _plain(value)
    if isinstance(value, int) and value in (0, 1):  # True, False, 1, 0
        return bool(value)
    raise config_error(field, value, f"a {type(value).__name__} is not true or false", "True or False (or 1, 0)")


def items(value: Any, field: str, allowed: str = "a list") -> List[Any]:
    """Any iterable of values (a list, tuple, set, generator, numpy array), but not text or a mapping, as a list."""
    if hasattr(value, "dtype") and hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise config_error(field, value, f"a {type(value).__name__} is not a list", allowed)
    return list(value)


def mapping(value: Any, field: str, allowed: str = "a dict") -> dict:
    if not isinstance(value, Mapping):
        raise config_error(field, value, f"a {type(value).__name__} is not a dict", allowed)
    return dict(value)


def path_or_dict(value: Any, field: str, allowed: str) -> Any:
    """A file (str or Path) or an already-read dict."""
    if isinstance(value, (str, Path, Mapping)):
        return value
    raise config_error(field, value, f"a {type(value).__name__} is neither a file nor a dict", allowed)


def optional_integer(value: Any, field: str, low: int, high: int) -> Optional[int]:
    return None if value is None else integer(value, field, low, high)
