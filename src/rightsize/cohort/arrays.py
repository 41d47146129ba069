"""In-memory cohort arrays: the contract between the manifest and the probes.

Loaded once from ``data/manifest.parquet``; every probe slices these numpy arrays by split
index (no per-row Python objects). ``n`` subjects, ``c = max_clips``, ``t = ecg_tokens``.

A pooled manifest (``t = 1``) gives a 2-D ``ecg`` ``(n, ecg_dim)``; a token-level one
(``t > 1``) a 3-D ``ecg`` ``(n, t, ecg_dim)``. A subject's ECG is all present or all absent
(``has_ecg``; zeros when absent): there is no per-token mask.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class CohortArrays:
    """Whole-cohort arrays, aligned by row."""

    subject_id: np.ndarray   # (n,) str (object) or int64
    split: np.ndarray        # (n,) int8: 0 train, 1 val, 2 test (index into SPLITS)
    lvef: np.ndarray         # (n,) float32, percent
    ef_le_40: np.ndarray     # (n,) bool
    echo: np.ndarray         # (n, c, echo_dim) float32; padded clips are zeros
    n_clips: np.ndarray      # (n,) int16, 0 when echo is missing
    ecg: np.ndarray          # (n, ecg_dim) or, t > 1, (n, t, ecg_dim) float32; zeros if missing
    has_echo: np.ndarray     # (n,) bool
    has_ecg: np.ndarray      # (n,) bool
    metadata: dict           # manifest metadata (e.g. perfect_model_mae, seed, source)

    @property
    def ecg_tokens(self) -> int:
        """ECG vectors per subject: 1 for a pooled (2-D) ``ecg``, else ``ecg.shape[1]``."""
        return 1 if self.ecg.ndim == 2 else int(self.ecg.shape[1])

    @property
    def clip_mask(self) -> np.ndarray:
        """(n, c) bool: True where a clip is present."""
        return np.arange(self.echo.shape[1])[None, :] < self.n_clips[:, None]

    def index(self, split: str) -> np.ndarray:
        """Row indices of ``split`` (``train``/``val``/``test``)."""
        return np.flatnonzero(self.split == SPLITS.index(split))


def load_arrays(path: str | os.PathLike[str]) -> CohortArrays:
    """Load and validate manifest ``path`` into :class:`CohortArrays`.

    Reads one parquet row group at a time into preallocated arrays (fixed-size lists are
    reinterpreted zero-copy, then copied once into place), so peak memory is about the
    arrays themselves plus one row group. Raises DataError (naming column and row) on an
    invalid manifest, InputError when the file is missing.
    """
    import pyarrow as pa

    from rightsize.cohort.columns import bools, numbers, strings
    from rightsize.cohort.manifest import flat_values, iter_row_groups, metadata_of, open_manifest
    from rightsize.cohort.validate import check_schema, checker_for

    where = str(path)
    pf = open_manifest(path)
    meta = metadata_of(pf.schema_arrow, where)
    checker = checker_for(meta, where)
    check_schema(pf.schema_arrow, checker.geo, where)
    n, c = pf.metadata.num_rows, checker.geo.max_clips
    geo = checker.geo
    echo = np.empty((n, c, geo.echo_dim), dtype=np.float32)
    ecg_shape = (geo.ecg_dim,) if geo.ecg_tokens == 1 else (geo.ecg_tokens, geo.ecg_dim)
    ecg = np.empty((n, *ecg_shape), dtype=np.float32)
    split = np.empty(n, dtype=np.int8)
    lvef = np.empty(n, dtype=np.float32)
    n_clips = np.empty(n, dtype=np.int16)
    flags = {name: np.empty(n, dtype=bool) for name in ("ef_le_40", "has_echo", "has_ecg")}
    ids: list[pa.Array] = []
    for off, table in iter_row_groups(pf):
        rows = slice(off, off + table.num_rows)
        split[rows] = checker.check(table, off)
        lvef[rows] = numbers(table.column("lvef"))
        n_clips[rows] = numbers(table.column("n_clips"))
        for name, arr in flags.items():
            arr[rows] = bools(table.column(name))
        echo[rows] = flat_values(table.column("echo")).reshape(table.num_rows, c, -1)
        ecg[rows] = flat_values(table.column("ecg")).reshape(table.num_rows, *ecg_shape)
        ids.append(table.column("subject_id").combine_chunks())
        del table
    checker.finish(meta)
    subject_id = strings(pa.concat_arrays(ids)) if ids else np.array([], dtype=object)
    return CohortArrays(subject_id=subject_id, split=split, lvef=lvef,
                        ef_le_40=flags["ef_le_40"], echo=echo, n_clips=n_clips, ecg=ecg,
                        has_echo=flags["has_echo"], has_ecg=flags["has_ecg"], metadata=meta)
