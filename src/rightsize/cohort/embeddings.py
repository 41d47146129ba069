"""Embedding list columns of the ``files`` inputs as validated float32 arrays.

A *vector* is a list of floats (``list``, ``large_list`` or ``fixed_size_list`` of float32
or float64) of ``dim`` values; a *sequence* is a list of such vectors (e.g. the ``N x 768``
hidden states of one HuBERT-ECG layer for one record, or one study's clip vectors). Every
error is a one-line :class:`~rightsize.errors.DataError` naming the file, the column and
the record (``describe(i)`` words row ``i``, e.g. ``subject P07`` or ``row 3 (subject
P07)``), plus the token or clip within it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rightsize.cohort.columns import valid
from rightsize.errors import DataError

Describe = Callable[[int], str]


def _is_list(tp: pa.DataType) -> bool:
    return pa.types.is_list(tp) or pa.types.is_large_list(tp) or pa.types.is_fixed_size_list(tp)


def list_depth(tp: pa.DataType, where: str, name: str) -> int:
    """1 for a list of floats, 2 for a list of lists of floats; DataError for anything else."""
    depth, inner = 0, tp
    while _is_list(inner) and depth < 2:
        depth, inner = depth + 1, inner.value_type
    if depth == 0 or not pa.types.is_floating(inner):
        raise DataError(f"{where}: column {name}: expected a list of floats or a list of lists "
                        f"of floats, got {tp}")
    return depth


def lengths(column: pa.Array) -> np.ndarray:
    """(rows,) int64 list lengths of ``column`` (0 under nulls)."""
    out = pc.list_value_length(column).fill_null(0)
    return out.to_numpy(zero_copy_only=False).astype(np.int64)


def _counted(lists: pa.Array, want: int, where: str, name: str, locate: Describe,
             wrong: Callable[[int, str], str]) -> None:
    """No null and every list ``want`` long; else DataError with ``wrong(length, locate(j))``."""
    if lists.null_count:
        raise DataError(f"{where}: column {name}: null for "
                        f"{locate(int(np.flatnonzero(~valid(lists))[0]))}")
    n = lengths(lists)
    bad = np.flatnonzero(n != want)
    if bad.size:
        j = int(bad[0])
        raise DataError(f"{where}: column {name}: {wrong(int(n[j]), locate(j))}")


def _checked(vecs: pa.Array, dim: int, where: str, name: str,
             locate: Describe) -> np.ndarray:
    """``(k, dim)`` float32 from ``k`` list-of-floats vectors; ``locate(j)`` names vector ``j``."""
    _counted(vecs, dim, where, name, locate,
             lambda n, at: f"wrong dimension {n} for {at}, expected {dim}")
    flat = vecs.flatten()
    if flat.null_count:
        raise DataError(f"{where}: column {name}: null value inside a vector")
    values = flat.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(-1, dim)
    bad = np.flatnonzero(~np.isfinite(values).all(axis=1))
    if bad.size:
        raise DataError(f"{where}: column {name}: non-finite value for {locate(int(bad[0]))}")
    return values


def vectors(column: pa.Array, dim: int, where: str, name: str, describe: Describe) -> np.ndarray:
    """``(rows, dim)`` float32 from a list-of-floats column; every row must be a finite vector."""
    list_depth(column.type, where, name)
    return _checked(column, dim, where, name, describe)


def sequences(column: pa.Array, dim: int, where: str, name: str, describe: Describe,
              item: str = "token") -> tuple[np.ndarray, np.ndarray]:
    """A list-of-vectors column as ``(values (k, dim) float32, counts (rows,) int64)``.

    ``values`` holds the rows' vectors one after another (``counts[i]`` of row ``i``; a null
    row counts 0). Every vector must have ``dim`` finite values; errors name the record and
    the ``item`` (token, clip) index within it.
    """
    if list_depth(column.type, where, name) != 2:
        raise DataError(f"{where}: column {name}: expected a list of {item} vectors "
                        f"(a list of lists of floats), got {column.type}")
    counts = lengths(column)
    starts = np.concatenate([[0], np.cumsum(counts)])

    def locate(k: int) -> str:
        i = int(np.searchsorted(starts, k, side="right") - 1)
        return f"{describe(i)}, {item} {k - starts[i]}"

    return _checked(column.flatten(), dim, where, name, locate), counts


def token_count(column: pa.Array, where: str, name: str,
                describe: Describe) -> tuple[int, int]:
    """``(tokens, row)``: the token count of the first non-null row of a sequence column."""
    ok = np.flatnonzero(valid(column))
    if ok.size == 0:
        raise DataError(f"{where}: column {name}: no ECG record to count tokens in")
    i = int(ok[0])
    count = int(lengths(column)[i])
    if count < 1:
        raise DataError(f"{where}: column {name}: no tokens for {describe(i)}")
    return count, i


def check_token_count(found: int, first: str, params: int | None, where: str,
                      name: str) -> int:
    """``found`` (tokens per record, first seen at ``first``) against ``cohort.ecg_tokens``.

    Returns the count to build with; DataError naming both when they differ.
    """
    if params is not None and params != found:
        raise DataError(f"{where}: column {name}: {found} token{'s' if found > 1 else ''} per "
                        f"record ({first}) but cohort.ecg_tokens = {params}")
    return found


def tokens(column: pa.Array, dim: int, n_tokens: int, where: str, name: str,
           describe: Describe) -> np.ndarray:
    """``(rows, n_tokens, dim)`` float32 token sequences (``n_tokens = 1``: vectors allowed).

    Every row must be present and hold exactly ``n_tokens`` tokens: a ragged count is a
    DataError naming the record, its count and the expected one.
    """
    if list_depth(column.type, where, name) == 1:
        if n_tokens != 1:
            raise DataError(f"{where}: column {name}: one vector per record, but "
                            f"{n_tokens} tokens expected")
        return vectors(column, dim, where, name, describe)[:, None, :]
    _counted(column, n_tokens, where, name, describe,
             lambda n, at: f"{n} tokens for {at}, expected {n_tokens} (token counts must agree "
                           "across records)")
    values, _ = sequences(column, dim, where, name, describe)
    return values.reshape(len(column), n_tokens, dim)
