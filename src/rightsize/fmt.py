"""Number formatting shared by the report, the verbs, the sizing and their text output (the
one formatter: one dash, one set of units), and the dotted-key reads of metrics files it
formats.

Two digit styles: :func:`number` keeps its significant digits (``8.00``: table cells); the
running text of an answer and its ranges use :func:`compact` (``8``, ``16.7``, ``1.2-3.4 h``).
"""

from __future__ import annotations

import math
from typing import Any

DASH = "—"
_BYTES = (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3))
_TIME = ((7200.0, 3600.0, "h"), (120.0, 60.0, "min"))     # (from, scale, unit); else s


def _finite(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def number(x: Any, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits and thousands separators; dash when absent.

    Integers print whole (``11,999``); floats keep their significant digits (``8.00``).
    """
    v = _finite(x)
    if v is None:
        return DASH if x is None or isinstance(x, int | float) else str(x)
    if v == 0:
        return "0"
    if isinstance(x, int) and abs(v) < 1e15:
        return f"{int(x):,}"
    mag = math.floor(math.log10(abs(v)))
    decimals = max(0, digits - 1 - mag)
    if abs(v) >= 1e6 or abs(v) < 1e-3:
        return f"{v:.{digits - 1}e}"
    return f"{v:,.{decimals}f}"


def compact(x: float) -> str:
    """``x`` for running text: whole with thousands separators from 100 (``1,234``), three
    significant digits from 1 (``16.7``, ``30``), two below (``0.57``, ``0.00017``)."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}" if abs(x) >= 1 else f"{x:.2g}"


def compact_range(low: Any, high: Any = None, scale: float = 1.0) -> str:
    """``low`` (and ``high``) divided by ``scale`` in :func:`compact` digits: ``2.4``, or
    ``1.2-3.4`` when the ends differ as printed; dash when absent."""
    if _finite(low) is None:
        return DASH
    lo, hi = compact(low / scale), compact((low if high is None else high) / scale)
    return lo if lo == hi else f"{lo}-{hi}"


def _time_unit(top: float) -> tuple[float, str]:
    return next(((scale, unit) for at, scale, unit in _TIME if abs(top) >= at), (1.0, "s"))


def duration_range(low: Any, high: Any = None) -> str:
    """Seconds for running text: ``42 s``, ``4.2 min``, ``3.1 h``, a range ``1.2-3.4 h`` (the
    unit chosen by the larger end: seconds under 2 minutes, minutes under 2 hours); dash when
    absent."""
    if _finite(low) is None:
        return DASH
    scale, unit = _time_unit(max(abs(low), abs(low if high is None else high)))
    return f"{compact_range(low, high, scale)} {unit}"


def integer(x: Any) -> str:
    """Whole number with thousands separators (rounded); dash when absent."""
    v = _finite(x)
    return DASH if v is None else f"{round(v):,}"


def seconds(x: Any) -> str:
    """Duration: ``42.1 s`` below two minutes, else ``12.3 min (738 s)`` or hours."""
    v = _finite(x)
    if v is None:
        return DASH
    if 0 < abs(v) < 1e-3:
        return f"{number(v * 1000)} ms"
    if v < 120:
        return f"{number(v)} s"
    if v < 7200:
        return f"{v / 60:.1f} min ({v:,.0f} s)"
    return f"{v / 3600:.2f} h ({v:,.0f} s)"


def duration(x: Any) -> str:
    """Seconds in the unit that fits, never an exponent: ``0.586 ms``, ``4.28 s``, ``12.3 min``,
    ``3.27 h``; dash when absent."""
    v = _finite(x)
    if v is None:
        return DASH
    if 0 < abs(v) < 0.1:
        return f"{number(v * 1000)} ms"
    scale, unit = _time_unit(v)
    return f"{number(v / scale)} {unit}"


def hours(x: Any) -> str:
    """Hours with three significant digits: ``12.4 h``; below 3.6 s (where hours would need
    an exponent) the duration in s or ms instead."""
    v = _finite(x)
    if v is not None and 0 < abs(v) < 1e-3:
        return duration(v * 3600)
    return DASH if v is None else f"{number(v)} h"


def _in_bytes(x: Any, digits: Any, small: Any) -> str:
    """``x`` bytes in the largest decimal unit it reaches, ``digits`` formatting the number
    (``small`` below 1 kB); dash when absent."""
    v = _finite(x)
    if v is None:
        return DASH
    for unit, scale in _BYTES:
        if abs(v) >= scale:
            return f"{digits(v / scale)} {unit}"
    return small(v)


def nbytes(x: Any) -> str:
    """Decimal byte size for tables: ``3.07 TB``, ``512 kB``, ``17 B``; dash when absent."""
    return _in_bytes(x, number, lambda v: f"{int(v)} B")


def compact_bytes(x: Any) -> str:
    """Decimal byte size for running text, in :func:`compact` digits: ``3.07 TB``, ``66 GB``,
    ``18 B``; dash when absent."""
    return _in_bytes(x, compact, lambda v: f"{v:.0f} B")


def megabytes(x: Any) -> str:
    """Memory in MB as measured (peak RSS): ``512 MB``."""
    v = _finite(x)
    return DASH if v is None else f"{number(v)} MB"


def ci(value: Any, lo: Any, hi: Any, digits: int = 3) -> str:
    """``0.812 [0.776, 0.845]``; the bracket is left out when the bounds are absent."""
    if _finite(value) is None:
        return DASH
    if _finite(lo) is None or _finite(hi) is None:
        return number(value, digits)
    return f"{number(value, digits)} [{number(lo, digits)}, {number(hi, digits)}]"


def yes_no(x: Any) -> str:
    """``yes`` / ``NO`` for booleans, dash otherwise."""
    if isinstance(x, bool):
        return "yes" if x else "NO"
    return DASH


def count_word(n: int) -> str:
    """``four`` for small counts, digits otherwise."""
    words = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
    return words[n] if 0 <= n < len(words) else str(n)


# The values it formats: numbers read from metrics files by dotted key

def get(data: Any, key: str, default: Any = None) -> Any:
    """Value at dotted ``key`` (``"test.mae"``) of nested dicts, or ``default`` when absent."""
    node = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def as_float(value: Any) -> float | None:
    """``value`` if it is a finite number, else ``None`` (booleans and strings are not).

    An ``int`` stays an ``int`` so that counts (epochs, steps) print whole.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, int):
        return value
    return value if math.isfinite(value) else None


def num(data: Any, key: str) -> float | None:
    """Finite number at dotted ``key``, else ``None``."""
    return as_float(get(data, key))
