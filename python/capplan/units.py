"""Typed quantities for Python: sizes, rates, times and powers that remember their dimension.

A :class:`Quantity` stores its value in SI base units (bytes, FLOP, seconds, watts), prints with
an auto-scaled unit, and converts with ``.to("GiB")``. Parsing and formatting are done by the C++
core, so Python and C++ agree on every unit: GB is 1e9 bytes, GiB is 2**30 bytes, Gb/s is bits.

>>> q = Quantity("80 GB")
>>> str(q.to("GiB"))
'74.51 GiB'
"""
from __future__ import annotations

import numbers
from typing import Optional, Tuple, Union

from . import _core

Dims = Tuple[int, int, int, int]  # exponents of (bytes, FLOP, seconds, watts)

SIZE: Dims = (1, 0, 0, 0)
FLOPS: Dims = (0, 1, 0, 0)
TIME: Dims = (0, 0, 1, 0)
POWER: Dims = (0, 0, 0, 1)
BYTE_RATE: Dims = (1, 0, -1, 0)
FLOP_RATE: Dims = (0, 1, -1, 0)
FREQUENCY: Dims = (0, 0, -1, 0)  # clock rates (Hz)
DIMENSIONLESS: Dims = (0, 0, 0, 0)

# How a quantity is written with base units, exactly (repr of the float keeps every digit).
_BASE_UNIT = {SIZE: "B", FLOPS: "FLOP", TIME: "s", POWER: "W", BYTE_RATE: "B/s", FLOP_RATE: "FLOP/s", FREQUENCY: "Hz"}


class Quantity:
    """A value with a physical dimension. ``Quantity("3.35 TB/s")`` or ``Quantity(3.35, "TB/s")``."""

    __slots__ = ("_si", "_dims", "_unit")

    def __init__(self, value: Union[str, numbers.Real, "Quantity"], unit: Optional[str] = None):
        if isinstance(value, Quantity):
            self._si, self._dims, self._unit = value._si, value._dims, unit or value._unit
            if unit:
                self._check_unit(unit)
            return
        if isinstance(value, str):
            if unit is not None:
                raise TypeError("give either Quantity('80 GB') or Quantity(80, 'GB'), not both")
            si, dims = _core.parse_quantity(value)
            self._si, self._dims, self._unit = si, tuple(dims), None
            return
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"Quantity needs a string such as '80 GB' or a number and a unit, got {value!r}")
        if unit is None:
            raise _core.UnitError(f"/: a bare number {value!r} has no unit; write e.g. Quantity({value!r}, 'GB')")
        si, dims = _core.parse_quantity(f"{float(value)!r} {unit}")
        self._si, self._dims, self._unit = si, tuple(dims), unit

    @classmethod
    def from_si(cls, si: float, dims: Dims, unit: Optional[str] = None) -> "Quantity":
        q = cls.__new__(cls)
        q._si, q._dims, q._unit = float(si), tuple(dims), unit
        return q

    # --- reading -------------------------------------------------------------------------------
    @property
    def si(self) -> float:
        """The value in SI base units (bytes, FLOP, seconds, watts and their ratios)."""
        return self._si

    @property
    def dims(self) -> Dims:
        return self._dims

    @property
    def dimension(self) -> str:
        """What it measures: 'size', 'data rate', 'FLOP rate', 'time', ..."""
        return _core.dimension_name(self._dims)

    def _check_unit(self, unit: str) -> float:
        return _core.unit_si(unit, self._dims)

    def to(self, unit: str) -> "Quantity":
        """The same quantity, shown in ``unit`` (checked: converting a size to 'GB/s' is an error)."""
        self._check_unit(unit)
        return Quantity.from_si(self._si, self._dims, unit)

    def in_(self, unit: str) -> float:
        """The number of ``unit`` in this quantity: ``Quantity('80 GB').in_('GiB') == 74.505...``."""
        return self._si / self._check_unit(unit)

    @property
    def unit(self) -> str:
        """The unit it prints in: the one chosen with .to(), else an auto-scaled one."""
        return self._unit or str(self).split(" ", 1)[1]

    @property
    def magnitude(self) -> float:
        """The number printed in front of :attr:`unit`."""
        return self.in_(self.unit)

    def __float__(self) -> float:
        return self._si

    def __str__(self) -> str:
        if self._unit:
            v = self._si / self._check_unit(self._unit)
            return f"{v:.4g} {self._unit}"
        return _core.format_quantity(self._si, self._dims, False)

    def __repr__(self) -> str:
        return f"Quantity('{self}')"

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        return f"{format(self.magnitude, spec)} {self.unit}"

    def to_json_text(self) -> str:
        """Exact text for scenario JSON: the SI value with its base unit, e.g. '80000000000.0 B'."""
        base = _BASE_UNIT.get(self._dims)
        if base is None:
            raise _core.UnitError(f"/: a {self.dimension} cannot be written into a scenario")
        return f"{self._si!r} {base}"

    # --- arithmetic ------------------------------------------------------------------------------
    def _same(self, other: "Quantity", op: str) -> None:
        if not isinstance(other, Quantity) or other._dims != self._dims:
            what = other.dimension if isinstance(other, Quantity) else type(other).__name__
            raise _core.UnitError(f"/: cannot {op} a {self.dimension} and a {what}")

    def __add__(self, other):
        self._same(other, "add")
        return Quantity.from_si(self._si + other._si, self._dims, self._unit)

    def __sub__(self, other):
        self._same(other, "subtract")
        return Quantity.from_si(self._si - other._si, self._dims, self._unit)

    def __neg__(self):
        return Quantity.from_si(-self._si, self._dims, self._unit)

    def __mul__(self, other):
        if isinstance(other, Quantity):
            dims = tuple(a + b for a, b in zip(self._dims, other._dims))
            v = self._si * other._si
            return v if dims == DIMENSIONLESS else Quantity.from_si(v, dims)
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            return Quantity.from_si(self._si * float(other), self._dims, self._unit)
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, Quantity):
            dims = tuple(a - b for a, b in zip(self._dims, other._dims))
            v = self._si / other._si
            return v if dims == DIMENSIONLESS else Quantity.from_si(v, dims)
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            return Quantity.from_si(self._si / float(other), self._dims, self._unit)
        return NotImplemented

    def __rtruediv__(self, other):
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            return Quantity.from_si(float(other) / self._si, tuple(-d for d in self._dims))
        return NotImplemented

    def _cmp(self, other, op):
        self._same(other, "compare")
        return op(self._si, other._si)

    def __eq__(self, other):
        return isinstance(other, Quantity) and other._dims == self._dims and other._si == self._si

    def __hash__(self):
        return hash((self._si, self._dims))

    def __lt__(self, other):
        return self._cmp(other, float.__lt__)

    def __le__(self, other):
        return self._cmp(other, float.__le__)

    def __gt__(self, other):
        return self._cmp(other, float.__gt__)

    def __ge__(self, other):
        return self._cmp(other, float.__ge__)


def quantity(value: Union[str, Quantity], expected: Optional[Dims] = None, field: str = "") -> Quantity:
    """Accepts '80 GB' or a Quantity; checks the dimension when ``expected`` is given."""
    if isinstance(value, Quantity):
        q = value
    elif isinstance(value, str):
        si, dims = _core.parse_quantity(value, field)
        q = Quantity.from_si(si, tuple(dims))
    else:
        allowed = _core.allowed_units(expected) if expected else "a string such as '80 GB'"
        raise _core.UnitError(f"{field or '/'}: expected a quantity with a unit, got {value!r}; allowed: {allowed}")
    if expected is not None and q.dims != tuple(expected):
        raise _core.UnitError(
            f"{field or '/'}: a {q.dimension} where a {_core.dimension_name(expected)} is expected (got '{value}'); "
            f"allowed: {_core.allowed_units(expected)}")
    return q


def format_count(n: float) -> str:
    """A plain count in words, so a parameter count never reads like a size: '70.55 billion'."""
    for step, word in ((1_000_000_000_000, "trillion"), (1_000_000_000, "billion"), (1_000_000, "million")):
        if abs(n) >= step:
            return f"{n / step:.4g} {word}"
    return f"{n:,.0f}"


# SI prefixes as plain factors, for counts that are not physical quantities (tokens, US dollars), as the core's
# units::mega and units::giga.
MEGA, GIGA = 1e6, 1e9
# Conversions the cost tables and spreadsheet formulas spell out, from the units themselves: a Julian year of hours
# (365.25 days, as the core's cost model), an hour of seconds, a kW of watts.
HOURS_A_YEAR = Quantity(365.25, "d").in_("h")
SECONDS_AN_HOUR = Quantity(1, "h").in_("s")
WATTS_A_KW = Quantity(1, "kW").in_("W")
