"""Load a manifest into :class:`~rightsize.cohort.arrays.CohortArrays`: the room above the
manifest reader and its validation (arrays.py holds only the data types they share)."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from rightsize.cohort.arrays import CohortArrays
from rightsize.cohort.columns import bools, numbers, strings
from rightsize.cohort.manifest import flat_values, iter_row_groups, metadata_of, open_manifest
from rightsize.cohort.validate import check_schema, checker_for


def load_arrays(path: str | os.PathLike[str]) -> CohortArrays:
    """Load and validate manifest ``path`` into :class:`CohortArrays`.

    Reads one parquet row group at a time into preallocated arrays (fixed-size lists are
    reinterpreted zero-copy, then copied once into place), so peak memory is about the
    arrays themselves plus one row group. Raises DataError (naming column and row) on an
    invalid manifest, InputError when the file is missing.
    """
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
