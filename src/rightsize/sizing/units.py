"""Byte sizes as written in params and flags, and the width of each storage dtype.

:func:`parse_size` turns ``"2TB"`` / ``"500GiB"`` / ``"2e12"`` into bytes (decimal units are
powers of 1000, ``i`` units powers of 1024); :data:`DTYPE_BYTES` is the width of each
supported storage dtype. Rendering bytes and times back is :mod:`rightsize.fmt`'s.
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

