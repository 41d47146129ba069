"""Arrow columns as numpy arrays, read from their buffers.

pyarrow's ``to_numpy`` goes through its pandas conversion layer, whose first use imports
pandas (0.15-0.2 s a process) even for a zero-copy float column. Loading a manifest needs
none of it: its columns are fixed-width numbers, booleans (bit-packed) and strings, which
these helpers read straight from the arrow buffers (zero-copy for numbers, one
``unpackbits`` for booleans). Values under nulls are unspecified unless a function says
otherwise; callers check ``null_count`` first, as the manifest validator does.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_NUMPY = {"float": np.float32, "double": np.float64, "halffloat": np.float16,
          "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
          "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}


def single(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """``column`` as one array (chunks combined; an array is returned as is)."""
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _bits(buf: pa.Buffer, offset: int, n: int) -> np.ndarray:
    packed = np.frombuffer(buf, dtype=np.uint8)
    return np.unpackbits(packed, bitorder="little")[offset:offset + n].astype(bool)


def valid(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """(n,) bool: True where ``column`` is not null."""
    arr = single(column)
    if arr.null_count == 0 or arr.buffers()[0] is None:
        return np.ones(len(arr), dtype=bool)
    return _bits(arr.buffers()[0], arr.offset, len(arr))


def numbers(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A fixed-width numeric column as numpy of the matching dtype (a view when possible).

    Floating columns get NaN under nulls, so a value check that rejects non-finite
    values also rejects nulls.
    """
    arr = single(column)
    dtype = _NUMPY.get(str(arr.type))
    if dtype is None:
        raise TypeError(f"not a fixed-width numeric arrow type: {arr.type}")
    n = len(arr)
    buf = arr.buffers()[1]
    if n == 0 or buf is None:
        return np.zeros(n, dtype=dtype)
    out = np.frombuffer(buf, dtype=dtype)[arr.offset:arr.offset + n]
    if arr.null_count and np.issubdtype(dtype, np.floating):
        out = out.copy()
        out[~valid(arr)] = np.nan
    return out


def bools(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A boolean column as a numpy bool array."""
    arr = single(column)
    if not pa.types.is_boolean(arr.type):
        raise TypeError(f"not a boolean arrow type: {arr.type}")
    if len(arr) == 0:
        return np.zeros(0, dtype=bool)
    return _bits(arr.buffers()[1], arr.offset, len(arr))


def string_codes(column: pa.ChunkedArray | pa.Array, values: tuple[str, ...]) -> np.ndarray:
    """(n,) int8: the index of each string of ``column`` in ``values``; -1 for others and nulls.

    A string or large-string column is compared byte by byte from its offsets and data
    buffers (``pyarrow.compute.index_in`` does the same, but importing ``pyarrow.compute``
    costs ~25 ms of every process that loads a manifest); other types go through
    ``index_in``.
    """
    arr = single(column)
    n = len(arr)
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        import pyarrow.compute as pc

        idx = single(pc.index_in(arr, value_set=pa.array(list(values), pa.string())))
        return np.where(valid(idx), numbers(idx), -1).astype(np.int8)
    codes = np.full(n, -1, dtype=np.int8)
    if n == 0:
        return codes
    _, off_buf, data_buf = arr.buffers()
    off_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(off_buf, dtype=off_type)[arr.offset:arr.offset + n + 1]
    starts, lengths = offsets[:-1].astype(np.int64), np.diff(offsets)
    data = np.zeros(0, np.uint8) if data_buf is None else np.frombuffer(data_buf, np.uint8)
    for code, value in enumerate(values):
        want = value.encode("utf-8")
        hit = np.flatnonzero(lengths == len(want))
        for j, byte in enumerate(want):
            hit = hit[data[starts[hit] + j] == byte]
        codes[hit] = code
    codes[~valid(arr)] = -1
    return codes


def strings(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A string column as a numpy object array of ``str`` (None under nulls)."""
    return np.array(single(column).to_pylist(), dtype=object)
