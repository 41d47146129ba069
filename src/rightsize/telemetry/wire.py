"""Protocol-buffer wire format, read by hand: varints, fields, tensors.

Just enough of the format to decode ``Event``/``Summary``/``TensorProto`` without generated
classes. Every reader takes ``(buf, start, stop)`` and raises :class:`Malformed` rather than
reading past ``stop``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import numpy as np

_U64 = (1 << 64) - 1
_F32 = struct.Struct("<f")
_F16 = np.dtype("<f2")
# TensorProto dtype -> (field holding its values, numpy dtype of tensor_content)
_DTYPES: dict[int, tuple[int, str]] = {
    1: (5, "<f4"), 2: (6, "<f8"), 3: (7, "<i4"), 4: (7, "u1"), 5: (7, "<i2"), 6: (7, "i1"),
    9: (10, "<i8"), 14: (13, "bf16"), 17: (7, "<u2"), 19: (13, "<f2"),
}


class Malformed(Exception):
    """The payload is not a well-formed protobuf (becomes an ``undecodable`` problem)."""


def varint(buf: bytes, i: int, end: int) -> tuple[int, int]:
    """Decode the varint at ``buf[i]``: ``(unsigned 64-bit value, offset after it)``."""
    result = 0
    shift = 0
    while True:
        if i >= end:
            raise Malformed("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _U64, i
        shift += 7
        if shift >= 70:
            raise Malformed("varint too long")


def signed(v: int) -> int:
    """Reinterpret an unsigned 64-bit varint value as int64 (two's complement)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def fields(buf: bytes, i: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """Yield ``(field, wire, varint_value, start, stop)`` for each field of a message."""
    while i < end:
        key, i = varint(buf, i, end)
        f, w = key >> 3, key & 7
        if f == 0:
            raise Malformed("field number 0")
        if w == 0:
            v, i = varint(buf, i, end)
            yield f, w, v, i, i
            continue
        if w == 2:
            n, i = varint(buf, i, end)
            stop = i + n
        elif w == 1:
            stop = i + 8
        elif w == 5:
            stop = i + 4
        else:
            raise Malformed(f"unsupported wire type {w}")
        if stop > end:
            raise Malformed("field runs past its message")
        yield f, w, 0, i, stop
        i = stop


def plugin_name(buf: bytes, a: int, b: int) -> str:
    """``SummaryMetadata.plugin_data.plugin_name`` ('' when absent)."""
    name = ""
    for f, w, _, s, t in fields(buf, a, b):
        if f == 1 and w == 2:
            for g, x, _, s2, t2 in fields(buf, s, t):
                if g == 1 and x == 2:
                    name = buf[s2:t2].decode("utf-8", "replace")
    return name


def tensor_scalar(buf: bytes, a: int, b: int) -> float | None:
    """The value of a numeric single-element ``TensorProto`` in ``buf[a:b]``, else None."""
    dtype = 0
    elements = 1
    content: bytes | None = None
    vals: dict[int, list[tuple[int, int, int, int]]] = {}
    for f, w, v, s, t in fields(buf, a, b):
        if f == 1 and w == 0:
            dtype = v
        elif f == 2 and w == 2:
            elements = 1
            for g, x, _, s2, t2 in fields(buf, s, t):
                if g == 2 and x == 2:
                    for h, y, size, _, _ in fields(buf, s2, t2):
                        if h == 1 and y == 0:
                            elements *= signed(size)
        elif f == 4 and w == 2:
            content = buf[s:t]
        elif f in (5, 6, 7, 10, 13):
            vals.setdefault(f, []).append((w, v, s, t))
    spec = _DTYPES.get(dtype)
    if spec is None or elements != 1:
        return None
    vfield, np_dtype = spec
    if content:
        return _from_content(content, np_dtype)
    items: list[float | int] = []
    for w, v, s, t in vals.get(vfield, ()):
        if vfield in (5, 6):
            width, fmt = (4, "<f") if vfield == 5 else (8, "<d")
            if w == 2:
                if (t - s) % width:
                    raise Malformed("packed floats of odd size")
                items.extend(x for (x,) in struct.iter_unpack(fmt, buf[s:t]))
            elif w == (5 if vfield == 5 else 1):
                items.append(struct.unpack_from(fmt, buf, s)[0])
        elif w == 2:
            i = s
            while i < t:
                x, i = varint(buf, i, t)
                items.append(x)
        elif w == 0:
            items.append(v)
    if len(items) != 1:
        return None
    x = items[0]
    if vfield == 13:
        bits = int(x) & 0xFFFF
        if np_dtype == "bf16":
            return _F32.unpack(struct.pack("<I", bits << 16))[0]
        return float(np.frombuffer(struct.pack("<H", bits), _F16)[0])
    if vfield in (7, 10):
        return float(np.array(signed(int(x))).astype(np_dtype))
    return float(x)


def _from_content(content: bytes, np_dtype: str) -> float | None:
    if np_dtype == "bf16":
        if len(content) != 2:
            return None
        return _F32.unpack(b"\0\0" + content)[0]
    dt = np.dtype(np_dtype)
    if len(content) != dt.itemsize:
        return None
    return float(np.frombuffer(content, dt)[0])
