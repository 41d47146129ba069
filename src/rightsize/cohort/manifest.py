"""The manifest parquet: schema, metadata, streaming atomic writer and row-group reader.

One row per subject:

==========  =====================================  ==========================================
column      type                                   meaning
==========  =====================================  ==========================================
subject_id  string                                 unique subject key
split       string                                 ``train`` / ``val`` / ``test``
lvef        float32                                the target: left-ventricular ejection
                                                   fraction, percent, unless metadata
                                                   ``target`` names another
ef_le_40    bool                                   ``lvef <= ef_threshold`` (the target's
                                                   threshold, 40 by default)
echo        fixed_size_list<float32>[c*echo_dim]   ``c = max_clips`` clip vectors, row-major;
                                                   padded clips are zeros
n_clips     int16                                  clips present (0 when echo is missing)
ecg         fixed_size_list<float32>[t*ecg_dim]    ``t = ecg_tokens`` token vectors, row-major
                                                   (``t = 1``: one pooled vector); all zeros
                                                   when ECG is missing
has_echo    bool                                   echo embedding available
has_ecg     bool                                   ECG embedding available
==========  =====================================  ==========================================

The parquet key-value metadata holds one JSON document under ``rightsize.cohort``:
``format``, ``source``, ``seed``, ``geometry`` (n_subjects, max_clips, echo_dim, ecg_dim,
row_group_size, splits, and ``ecg_tokens`` only when it is above 1: a reader takes a
missing key as 1, so a pooled manifest is byte for byte what it was before tokens),
``ef_threshold``, ``target`` (``cohort.target`` as JSON, only when it is not the default
LVEF), ``perfect_model_mae`` (expected, ``null`` when unknown),
``perfect_model_mae_test`` (empirical on the test split), ``ef_le_40_prevalence``,
``payload_bytes`` and source-specific details. Files are written row group by row group,
atomically (a reader never sees a half-written manifest).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rightsize.cohort.arrays import SPLITS
from rightsize.cohort.columns import numbers, single, string_codes
from rightsize.cohort.input_files import open_parquet
from rightsize.errors import DataError

log = logging.getLogger(__name__)

METADATA_KEY = b"rightsize.cohort"
FORMAT_VERSION = 1
COLUMNS = ("subject_id", "split", "lvef", "ef_le_40", "echo", "n_clips", "ecg",
           "has_echo", "has_ecg")


def _string_array(values: tuple[str, ...]) -> pa.Array:
    """``values`` as an arrow string array, built from buffers.

    ``pa.array`` would do, but its first call imports pandas (0.15-0.2 s), which nothing
    that reads a manifest needs.
    """
    data = [v.encode("utf-8") for v in values]
    offsets = np.cumsum([0, *(len(b) for b in data)], dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), len(values),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


_SPLIT_VALUES = _string_array(SPLITS)


def manifest_schema(max_clips: int, echo_dim: int, ecg_dim: int,
                    metadata: dict[str, Any] | None = None, ecg_tokens: int = 1) -> pa.Schema:
    """The manifest's arrow schema, with ``metadata`` JSON-encoded under ``rightsize.cohort``."""
    schema = pa.schema([
        ("subject_id", pa.string()),
        ("split", pa.string()),
        ("lvef", pa.float32()),
        ("ef_le_40", pa.bool_()),
        ("echo", pa.list_(pa.float32(), max_clips * echo_dim)),
        ("n_clips", pa.int16()),
        ("ecg", pa.list_(pa.float32(), ecg_tokens * ecg_dim)),
        ("has_echo", pa.bool_()),
        ("has_ecg", pa.bool_()),
    ])
    if metadata is not None:
        schema = schema.with_metadata({METADATA_KEY: json.dumps(metadata, sort_keys=True)})
    return schema


@dataclass(frozen=True)
class Chunk:
    """A run of consecutive manifest rows as numpy columns (``r`` rows, ``c`` clips)."""

    subject_id: pa.Array     # (r,) string
    split: np.ndarray        # (r,) int8 index into SPLITS
    lvef: np.ndarray         # (r,) float32
    ef_le_40: np.ndarray     # (r,) bool
    echo: np.ndarray         # (r, c, echo_dim) float32, C-contiguous
    n_clips: np.ndarray      # (r,) int16
    ecg: np.ndarray          # (r, ecg_dim) or (r, ecg_tokens, ecg_dim) float32, C-contiguous
    has_echo: np.ndarray     # (r,) bool
    has_ecg: np.ndarray      # (r,) bool

    def __len__(self) -> int:
        return len(self.lvef)


def _fixed_list(values: np.ndarray, width: int) -> pa.FixedSizeListArray:
    flat = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
    return pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), width)


def chunk_to_batch(chunk: Chunk, schema: pa.Schema) -> pa.RecordBatch:
    """Convert ``chunk`` to a record batch of ``schema`` (embeddings zero-copy from numpy)."""
    r = len(chunk)
    echo_width = schema.field("echo").type.list_size
    ecg_width = schema.field("ecg").type.list_size
    columns = [
        chunk.subject_id.cast(pa.string()),
        _SPLIT_VALUES.take(pa.array(chunk.split.astype(np.int32))),
        pa.array(chunk.lvef.astype(np.float32, copy=False)),
        pa.array(chunk.ef_le_40.astype(bool, copy=False)),
        _fixed_list(chunk.echo.reshape(r, -1), echo_width),
        pa.array(chunk.n_clips.astype(np.int16, copy=False)),
        _fixed_list(chunk.ecg.reshape(r, -1), ecg_width),
        pa.array(chunk.has_echo.astype(bool, copy=False)),
        pa.array(chunk.has_ecg.astype(bool, copy=False)),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


class ManifestWriter:
    """Write a manifest row group by row group to ``path`` (the caller's staged name: see
    :func:`rightsize.cohort.build.build_manifest`).

    Use as a context manager; each :meth:`write` call becomes one parquet row group, so
    peak memory is one chunk plus the writer's page buffers, never the whole cohort.
    """

    def __init__(self, path: str | os.PathLike[str], schema: pa.Schema) -> None:
        self.path = Path(path)
        self.schema = schema
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None

    def __enter__(self) -> ManifestWriter:
        self._writer = pq.ParquetWriter(
            self.path, self.schema,
            compression="zstd",   # padded clips are zeros: ~half the echo column at 8 clips
            use_dictionary=["split"],
            write_statistics=["subject_id", "split", "lvef", "n_clips"],
        )
        return self

    def write(self, batch: pa.RecordBatch) -> None:
        """Append ``batch`` (of :attr:`schema`, see :func:`chunk_to_batch`) as one row group."""
        assert self._writer is not None, "use ManifestWriter as a context manager"
        self._writer.write_batch(batch, row_group_size=max(batch.num_rows, 1))
        self.rows += batch.num_rows

    def __exit__(self, *exc: object) -> None:
        assert self._writer is not None
        self._writer.close()


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``rightsize.cohort`` metadata of manifest ``path`` (DataError when absent)."""
    return metadata_of(open_manifest(path).schema_arrow, path)


def metadata_of(schema: pa.Schema, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Decode the JSON metadata stored in ``schema`` (DataError naming ``path`` if absent)."""
    raw = (schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise DataError(f"{path}: not a rightsize manifest (no {METADATA_KEY.decode()} metadata)")
    try:
        meta = json.loads(raw)
    except ValueError:
        raise DataError(f"{path}: {METADATA_KEY.decode()} metadata is not valid JSON") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("geometry"), dict):
        raise DataError(f"{path}: {METADATA_KEY.decode()} metadata lacks a geometry mapping")
    return meta


def open_manifest(path: str | os.PathLike[str]) -> pq.ParquetFile:
    """Open ``path`` as parquet (InputError when missing, DataError when not parquet)."""
    return open_parquet(Path(path), (), "manifest")


def iter_row_groups(pf: pq.ParquetFile) -> Iterator[tuple[int, pa.Table]]:
    """Yield ``(first_row, table)`` for each row group of ``pf``, one at a time."""
    offset = 0
    for i in range(pf.num_row_groups):
        table = pf.read_row_group(i, columns=[c for c in COLUMNS if c in pf.schema_arrow.names])
        yield offset, table
        offset += table.num_rows


def split_codes(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Map split strings to int8 codes (index into SPLITS); unknown values and nulls become -1."""
    return string_codes(column, SPLITS)


def flat_values(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """The float values of a fixed-size-list column as one flat numpy array.

    Zero-copy for a single chunk without nulls; null values read as NaN. A fixed-size list
    is sliced out of its child array by hand (``flatten`` would do the same, but its first
    call imports ``pyarrow.compute``, ~25 ms of every process that loads a manifest).
    """
    arr = single(column)
    if not pa.types.is_fixed_size_list(arr.type):
        return numbers(arr.flatten())
    size = arr.type.list_size
    return numbers(arr.values.slice(arr.offset * size, len(arr) * size))
