"""Byte sizes and storage dtypes shared by the sizing library and the footprint verb.

:func:`parse_size` turns ``"2TB"`` / ``"500GiB"`` / ``"2e12"`` into bytes (decimal units are
powers of 1000, ``i`` units powers of 1024); :func:`format_bytes` renders bytes back for
tables; :func:`format_duration` and :func:`format_hours` render times; :data:`DTYPE_BYTES` is
the width of each supported storage dtype.
"""

from __future__ import annotations

import math
import re

from rightsize.errors import ParamsError

#: Bytes per element of each supported storage dtype.
DTYPE_BYTES: dict[str, int] = {"float16": 2, "bfloat16": 2, "float32": 4}

_UNITS: dict[str, int] = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "t": 1000**4, "tb": 1000**4, "p": 1000**5, "pb": 1000**5,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4, "pib": 1024**5,
}
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_size(text: str | int | float, key: str = "disk_bytes") -> int:
    """Parse a byte size: a number (``2e12``) or number+unit (``2TB``, ``500GiB``, ``1.5 T``).

    Decimal units (k, M, G, T, P with or without ``B``) are powers of 1000; binary units
    (KiB ... PiB) powers of 1024. Raises ``ParamsError`` naming ``key`` when unparseable.
    """
    if isinstance(text, bool):
        raise ParamsError(f"{key}: expected a size such as 2TB or 500GiB, got {text!r}")
    if isinstance(text, int | float):
        value, unit = float(text), ""
    else:
        match = _SIZE_RE.match(str(text))
        if not match or match.group(2).lower() not in _UNITS:
            raise ParamsError(f"{key}: expected a size such as 2TB or 500GiB, got {text!r}")
        value, unit = float(match.group(1)), match.group(2).lower()
    size = value * _UNITS[unit]
    if not math.isfinite(size) or size <= 0:
        raise ParamsError(f"{key}: size must be positive, got {text!r}")
    return int(round(size))


def format_bytes(n: float | None) -> str:
    """Render ``n`` bytes with a decimal unit (``3.07 TB``); ``-`` for None."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(value) < 1000 or unit == "PB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1000
    return f"{value:.3g} PB"  # pragma: no cover - loop always returns


def _num(x: float) -> str:
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}" if abs(x) >= 1 else f"{x:.2g}"


def format_duration(low: float | None, high: float | None = None) -> str:
    """Seconds as ``42 s`` / ``4.2 min`` / ``3.1 h``, a range as ``1.2-3.4 h``; ``-`` for None.

    The unit is chosen by the larger end: seconds under 2 minutes, minutes under 2 hours.
    """
    if low is None:
        return "-"
    high = low if high is None else high
    top = max(abs(low), abs(high))
    scale, unit = (1.0, "s") if top < 120 else (60.0, "min") if top < 7200 else (3600.0, "h")
    lo, hi = _num(low / scale), _num(high / scale)
    return f"{lo} {unit}" if lo == hi else f"{lo}-{hi} {unit}"


def format_hours(low: float | None, high: float | None = None) -> str:
    """GPU-hours as ``2.4`` or ``1.2-3.4`` (three significant digits); ``-`` for None."""
    if low is None:
        return "-"
    lo, hi = _num(low), _num(low if high is None else high)
    return lo if lo == hi else f"{lo}-{hi}"
