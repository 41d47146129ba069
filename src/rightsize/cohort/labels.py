"""Subject labels of a ``files`` cohort: ids, the target and split, checked against the params.

The target is ``cohort.target`` (:mod:`rightsize.cohort.target`; LVEF by default): its
``column`` is read, a value outside its ``range`` refused, and ``value <= threshold`` is the
binary label. :class:`Labels` keeps the manifest's names (``lvef``, ``ef_le_40``) for them.

Shared by the labels CSV of the three-file layout and the joined one-file layout. Subject
ids are compared as strings (integer ids are cast: ``7`` matches ``"7"`` but not
``"007"``). Without a split column, subjects are shuffled with ``cohort.seed`` and cut into
``cohort.splits`` sizes; with one, its counts must equal ``cohort.splits``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from rightsize.cohort.arrays import SPLITS
from rightsize.cohort.columns import single, valid
from rightsize.cohort.config import CohortConfig
from rightsize.cohort.latent import rng
from rightsize.cohort.manifest import split_codes
from rightsize.errors import DataError, InputError


@dataclass(frozen=True)
class Labels:
    """One entry per subject, in the order of the input rows they came from."""

    subject_id: pa.Array     # (n,) string
    ids: np.ndarray          # (n,) the same ids as a numpy object array (for messages)
    split: np.ndarray        # (n,) int8 index into SPLITS
    lvef: np.ndarray         # (n,) float32: the target (LVEF percent by default)
    ef_le_40: np.ndarray     # (n,) bool: target <= cohort.target.threshold


def string_ids(column: pa.ChunkedArray | pa.Array, where: Path | str) -> pa.Array:
    """``column`` as one string array; DataError naming the first null."""
    arr = single(column)
    if arr.null_count:
        raise DataError(f"{where}: column subject_id: null at row "
                        f"{int(np.flatnonzero(~valid(arr))[0])}")
    return arr.cast(pa.string())


def first_duplicate(keys: np.ndarray) -> int | None:
    """Index of the first value of sortable ``keys`` that occurs twice, else None."""
    order = np.argsort(keys, kind="stable")
    dup = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    return None if dup.size == 0 else int(order[dup[0] + 1])


SPLIT_STREAM = 2   # the random stream of the split shuffle (the synthetic cohort's too)


def assign_splits(n: int, cfg: CohortConfig) -> np.ndarray:
    """(n,) int8 splits: a ``cohort.seed`` shuffle cut into ``cohort.splits`` sizes."""
    sp = cfg.splits
    split = np.full(n, 2, dtype=np.int8)
    perm = rng(cfg.seed, SPLIT_STREAM).permutation(n)
    split[perm[:sp.train]] = 0
    split[perm[sp.train:sp.train + sp.val]] = 1
    return split


def check_labels(ids: pa.Array, lvef: np.ndarray, split_column: pa.ChunkedArray | None,
                 cfg: CohortConfig, where: Path | str) -> Labels:
    """Validate one labels table (any row order) and return it as :class:`Labels`.

    DataError naming ``where``, the column and the subject: a target value outside
    ``cohort.target.range`` or not finite, an unknown split, a duplicate subject (or one in
    two splits), or counts that differ from ``cohort.n_subjects`` / ``cohort.splits``.
    """
    id_np = ids.to_numpy(zero_copy_only=False)
    lvef = np.asarray(lvef, dtype=np.float64)
    target = cfg.target
    lo, hi = target.range
    bad = np.flatnonzero(~np.isfinite(lvef) | (lvef < lo) | (lvef > hi))
    if bad.size:
        what = ("percentage in [0, 100]" if target.is_default else
                f"{target.name} in cohort.target.range [{lo:g}, {hi:g}]")
        raise DataError(f"{where}: column {target.column}: {lvef[bad[0]]} for subject "
                        f"{id_np[bad[0]]} is not a finite {what}")
    if split_column is not None:
        split = split_codes(split_column)
        bad = np.flatnonzero(split < 0)
        if bad.size:
            value = split_column[int(bad[0])].as_py()
            raise DataError(f"{where}: column split: {value!r} for subject {id_np[bad[0]]} "
                            f"is not one of {', '.join(SPLITS)}")
    else:
        split = assign_splits(len(id_np), cfg)
    dup = first_duplicate(id_np)
    if dup is not None:
        first = int(np.flatnonzero(id_np == id_np[dup])[0])
        if split[first] != split[dup]:
            raise DataError(f"{where}: column split: subject {id_np[dup]} in two splits "
                            f"({SPLITS[split[first]]}, {SPLITS[split[dup]]})")
        raise DataError(f"{where}: column subject_id: duplicate subject {id_np[dup]}")
    counts = np.bincount(split.astype(np.int64), minlength=len(SPLITS))
    if len(id_np) != cfg.n_subjects:
        raise DataError(f"{where}: {len(id_np)} labelled subjects but cohort.n_subjects = "
                        f"{cfg.n_subjects}")
    for i, name in enumerate(SPLITS):
        want = cfg.splits.as_dict()[name]
        if counts[i] != want:
            raise DataError(f"{where}: column split: {name} has {counts[i]} subjects but "
                            f"cohort.splits.{name} = {want}")
    lvef32 = lvef.astype(np.float32)
    return Labels(subject_id=ids, ids=id_np, split=split, lvef=lvef32,
                  ef_le_40=lvef32 <= np.float32(target.threshold))


def read_labels_csv(path: Path, cfg: CohortConfig) -> Labels:
    """The labels CSV (``subject_id``, the target's column, optional ``split``), sorted by
    subject_id."""
    import pyarrow.csv as pacsv

    if not path.is_file():
        raise InputError(f"{path}: input file not found")
    column = cfg.target.column
    try:
        table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
            column_types={"subject_id": pa.string(), "split": pa.string(),
                          column: pa.float64()}))
    except pa.ArrowInvalid as exc:
        raise DataError(f"{path}: unreadable labels CSV ({str(exc).splitlines()[0]})") from None
    for col in ("subject_id", column):
        if col not in table.column_names:
            raise DataError(f"{path}: missing column {col}" + (
                " (cohort.target.column)" if col == column else ""))
    table = table.sort_by("subject_id")
    ids = string_ids(table.column("subject_id"), path)
    split = table.column("split") if "split" in table.column_names else None
    return check_labels(ids, table.column(column).to_numpy(), split, cfg, path)
