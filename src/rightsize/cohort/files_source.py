"""Cohort from cached embedding files (``source: files``): join echo, ECG and labels.

Expected inputs (paths from ``cohort.files``, relative to the working directory):

``files.echo`` -- parquet, one row per clip:
    ``subject_id`` (string or integer), ``clip`` (integer; any order, gaps allowed),
    ``embedding`` (``fixed_size_list`` or ``list`` of float32/float64, ``echo_dim`` values).
    ``(subject_id, clip)`` must be unique. Up to ``max_clips`` clips per subject are kept,
    lowest clip index first; the rest are dropped (logged).
``files.ecg`` -- parquet, one row per subject:
    ``subject_id``, ``embedding`` (``ecg_dim`` floats). ``subject_id`` must be unique.
``files.labels`` -- CSV with a header:
    ``subject_id``, ``lvef`` (percent), optional ``split`` (``train``/``val``/``test``);
    other columns are ignored. Without ``split``, subjects are shuffled with ``seed`` and
    cut into ``cohort.splits`` sizes; with it, its counts must equal ``cohort.splits``.

The labels file defines the cohort: one manifest row per labelled subject, sorted by
``subject_id``; embedding rows of unlabelled subjects are ignored (a warning counts them). A
labelled subject without echo clips (ECG row) gets ``has_echo`` (``has_ecg``) false and
zeros. Subject ids are compared as strings (integer ids are cast: ``7`` matches ``"7"``
but not ``"007"``). ``ef_le_40`` is ``lvef <= ef_threshold``.

The echo file is read one parquet row group at a time, so memory stays near one manifest
row group plus one input row group; the ECG file (``n x ecg_dim``) is read whole.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rightsize import console
from rightsize.cohort.arrays import SPLITS
from rightsize.cohort.config import CohortConfig
from rightsize.cohort.manifest import Chunk, split_codes
from rightsize.errors import DataError, InputError

log = logging.getLogger(__name__)


def _open_parquet(path: Path, columns: tuple[str, ...]) -> pq.ParquetFile:
    if not path.is_file():
        raise InputError(f"{path}: input file not found")
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{path}: not a parquet file ({str(exc).splitlines()[0]})") from None
    for col in columns:
        if col not in pf.schema_arrow.names:
            raise DataError(f"{path}: missing column {col}")
    return pf


def _as_string_ids(column: pa.ChunkedArray | pa.Array, path: Path) -> pa.Array:
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if arr.null_count:
        raise DataError(f"{path}: column subject_id: null at row "
                        f"{int(np.flatnonzero(arr.is_null().to_numpy(zero_copy_only=False))[0])}")
    return arr.cast(pa.string())


def _embedding_matrix(column: pa.Array, dim: int, path: Path,
                      describe: Callable[[int], str]) -> np.ndarray:
    """``(rows, dim)`` float32 from a list-like column; ``describe(i)`` names row ``i``."""
    tp = column.type
    if not (pa.types.is_list(tp) or pa.types.is_large_list(tp) or pa.types.is_fixed_size_list(tp)):
        raise DataError(f"{path}: column embedding: expected a list of floats, got {tp}")
    if not pa.types.is_floating(tp.value_type):
        raise DataError(f"{path}: column embedding: expected float values, got {tp.value_type}")
    if column.null_count:
        i = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
        raise DataError(f"{path}: column embedding: null for {describe(i)}")
    lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(lengths != dim)
    if bad.size:
        i = int(bad[0])
        raise DataError(f"{path}: column embedding: wrong dimension {lengths[i]} for "
                        f"{describe(i)}, expected {dim}")
    flat = column.flatten()
    if flat.null_count:
        raise DataError(f"{path}: column embedding: null value inside a vector")
    values = flat.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(-1, dim)
    bad = np.flatnonzero(~np.isfinite(values).all(axis=1))
    if bad.size:
        i = int(bad[0])
        raise DataError(f"{path}: column embedding: non-finite value for {describe(i)}")
    return values


def _first_duplicate(keys: np.ndarray) -> int | None:
    """Index of the first value of sorted-able ``keys`` that occurs twice, else None."""
    order = np.argsort(keys, kind="stable")
    dup = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    return None if dup.size == 0 else int(order[dup[0] + 1])


class FilesCohort:
    """A cohort joined from echo/ECG embedding parquets and a labels CSV."""

    def __init__(self, cfg: CohortConfig) -> None:
        self.cfg = cfg
        self.echo_path = Path(str(cfg.files.echo))
        self.ecg_path = Path(str(cfg.files.ecg))
        self.labels_path = Path(str(cfg.files.labels))
        self._read_labels()
        self._read_ecg()
        self._index_echo()

    # -- labels ------------------------------------------------------------------------
    def _read_labels(self) -> None:
        import pyarrow.csv as pacsv

        path, cfg = self.labels_path, self.cfg
        if not path.is_file():
            raise InputError(f"{path}: input file not found")
        try:
            table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
                column_types={"subject_id": pa.string(), "split": pa.string(),
                              "lvef": pa.float64()}))
        except pa.ArrowInvalid as exc:
            raise DataError(f"{path}: unreadable labels CSV ({str(exc).splitlines()[0]})") from None
        for col in ("subject_id", "lvef"):
            if col not in table.column_names:
                raise DataError(f"{path}: missing column {col}")
        table = table.sort_by("subject_id")
        ids = _as_string_ids(table.column("subject_id"), path)
        id_np = ids.to_numpy(zero_copy_only=False)
        lvef_col = table.column("lvef")
        lvef = lvef_col.to_numpy().astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(lvef) | (lvef < 0) | (lvef > 100))
        if bad.size:
            raise DataError(f"{path}: column lvef: {lvef[bad[0]]} for subject {id_np[bad[0]]} "
                            "is not a finite percentage in [0, 100]")
        if "split" in table.column_names:
            split = split_codes(table.column("split"))
            bad = np.flatnonzero(split < 0)
            if bad.size:
                value = table.column("split")[int(bad[0])].as_py()
                raise DataError(f"{path}: column split: {value!r} for subject {id_np[bad[0]]} "
                                f"is not one of {', '.join(SPLITS)}")
        else:
            split = self._assign_splits(len(id_np))
        dup = _first_duplicate(id_np)
        if dup is not None:
            first = int(np.flatnonzero(id_np == id_np[dup])[0])
            if split[first] != split[dup]:
                raise DataError(f"{path}: column split: subject {id_np[dup]} in two splits "
                                f"({SPLITS[split[first]]}, {SPLITS[split[dup]]})")
            raise DataError(f"{path}: column subject_id: duplicate subject {id_np[dup]}")
        counts = np.bincount(split.astype(np.int64), minlength=len(SPLITS))
        if len(id_np) != cfg.n_subjects:
            raise DataError(f"{path}: {len(id_np)} labelled subjects but cohort.n_subjects = "
                            f"{cfg.n_subjects}")
        for i, name in enumerate(SPLITS):
            want = cfg.splits.as_dict()[name]
            if counts[i] != want:
                raise DataError(f"{path}: column split: {name} has {counts[i]} subjects but "
                                f"cohort.splits.{name} = {want}")
        self.subject_id = ids
        self._ids_np = id_np
        self.split = split
        self.lvef = lvef.astype(np.float32)
        self.ef_le_40 = self.lvef <= np.float32(cfg.ef_threshold)

    def _assign_splits(self, n: int) -> np.ndarray:
        sp = self.cfg.splits
        split = np.full(n, 2, dtype=np.int8)
        perm = np.random.default_rng([self.cfg.seed, 2]).permutation(n)
        split[perm[:sp.train]] = 0
        split[perm[sp.train:sp.train + sp.val]] = 1
        return split

    def _rows_of(self, ids: pa.Array) -> np.ndarray:
        """Manifest row of each id (-1 when unlabelled)."""
        idx = pc.index_in(ids, value_set=self.subject_id)
        return idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)

    # -- ECG -----------------------------------------------------------------------------
    def _read_ecg(self) -> None:
        path, n = self.ecg_path, len(self._ids_np)
        table = _open_parquet(path, ("subject_id", "embedding")).read(
            columns=["subject_id", "embedding"])
        ids = _as_string_ids(table.column("subject_id"), path)
        dup = _first_duplicate(ids.to_numpy(zero_copy_only=False))
        if dup is not None:
            raise DataError(f"{path}: column subject_id: duplicate subject {ids[dup]}")
        values = _embedding_matrix(table.column("embedding").combine_chunks(), self.cfg.ecg_dim,
                                   path, lambda i: f"subject {ids[i]}")
        rows = self._rows_of(ids)
        self._warn_unlabelled(path, rows, "ECG rows")
        keep = rows >= 0
        self.ecg = np.zeros((n, self.cfg.ecg_dim), dtype=np.float32)
        self.ecg[rows[keep]] = values[keep]
        self.has_ecg = np.zeros(n, dtype=bool)
        self.has_ecg[rows[keep]] = True

    def _warn_unlabelled(self, path: Path, rows: np.ndarray, what: str) -> None:
        n_out = int((rows < 0).sum())
        if n_out:
            console.warn(f"{path}: {n_out} {what} of subjects without labels ignored")

    # -- echo ----------------------------------------------------------------------------
    def _index_echo(self) -> None:
        """Choose the kept clips: (manifest row, slot, input row group, row in group)."""
        path, cfg = self.echo_path, self.cfg
        self._echo_pf = _open_parquet(path, ("subject_id", "clip", "embedding"))
        tp = self._echo_pf.schema_arrow.field("embedding").type
        if pa.types.is_fixed_size_list(tp) and tp.list_size != cfg.echo_dim:
            raise DataError(f"{path}: column embedding: wrong dimension {tp.list_size}, "
                            f"expected echo_dim = {cfg.echo_dim}")
        keys = self._echo_pf.read(columns=["subject_id", "clip"])
        ids = _as_string_ids(keys.column("subject_id"), path)
        clip_col = keys.column("clip")
        if not pa.types.is_integer(clip_col.type):
            raise DataError(f"{path}: column clip: expected integers, got {clip_col.type}")
        if clip_col.null_count:
            raise DataError(f"{path}: column clip: null clip index")
        clip = clip_col.to_numpy().astype(np.int64)
        rows = self._rows_of(ids)
        self._warn_unlabelled(path, rows, "clip rows")
        file_row = np.flatnonzero(rows >= 0)
        row, clip = rows[file_row], clip[file_row]
        order = np.lexsort((clip, row))
        row, clip, file_row = row[order], clip[order], file_row[order]
        same = (row[1:] == row[:-1]) & (clip[1:] == clip[:-1])
        if same.any():
            i = int(np.flatnonzero(same)[0])
            raise DataError(f"{path}: duplicate clip {clip[i]} for subject {self._ids_np[row[i]]}")
        group_start = np.r_[0, np.flatnonzero(row[1:] != row[:-1]) + 1]
        first = np.repeat(group_start, np.diff(np.r_[group_start, len(row)]))
        slot = np.arange(len(row)) - first
        keep = slot < cfg.max_clips
        if (~keep).any():
            log.info("%s: %d clips beyond max_clips=%d dropped", path, int((~keep).sum()),
                     cfg.max_clips)
        self.clips_dropped = int((~keep).sum())
        self._sel_row, self._sel_slot = row[keep], slot[keep]
        self._sel_clip = clip[keep]
        sizes = [self._echo_pf.metadata.row_group(g).num_rows
                 for g in range(self._echo_pf.num_row_groups)]
        bounds = np.cumsum([0, *sizes])
        sel_file = file_row[keep]
        self._sel_group = np.searchsorted(bounds, sel_file, side="right") - 1
        self._sel_in_group = sel_file - bounds[self._sel_group]
        self.n_clips = np.bincount(self._sel_row, minlength=len(self._ids_np)).astype(np.int16)
        self.has_echo = self.n_clips > 0
        self._cache: tuple[int, pa.Array] | None = None

    def _echo_group(self, g: int) -> pa.Array:
        if self._cache is None or self._cache[0] != g:
            col = self._echo_pf.read_row_group(g, columns=["embedding"]).column("embedding")
            self._cache = (g, col.combine_chunks())
        return self._cache[1]

    def _echo_rows(self, start: int, stop: int) -> np.ndarray:
        cfg = self.cfg
        echo = np.zeros((stop - start, cfg.max_clips, cfg.echo_dim), dtype=np.float32)
        lo, hi = np.searchsorted(self._sel_row, [start, stop])
        groups = self._sel_group[lo:hi]
        for g in np.unique(groups):
            pick = lo + np.flatnonzero(groups == g)
            taken = self._echo_group(int(g)).take(pa.array(self._sel_in_group[pick]))
            r = self._sel_row[pick]
            clips = self._sel_clip[pick]
            values = _embedding_matrix(
                taken, cfg.echo_dim, self.echo_path,
                lambda i: f"subject {self._ids_np[r[i]]}, clip {clips[i]}")  # noqa: B023
            echo[r - start, self._sel_slot[pick]] = values
        return echo

    # -- source interface ----------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        """Source-specific manifest metadata (no planted truth: perfect MAE unknown)."""
        return {"perfect_model_mae": None, "perfect_model_mae_test": None,
                "inputs": {"echo": str(self.cfg.files.echo), "ecg": str(self.cfg.files.ecg),
                           "labels": str(self.cfg.files.labels)},
                "clips_dropped": self.clips_dropped}

    def chunks(self) -> Iterator[Chunk]:
        """Yield manifest rows in groups of ``row_group_size`` (sorted by subject_id)."""
        n, step = len(self._ids_np), self.cfg.row_group_size
        for start in range(0, n, step):
            stop = min(start + step, n)
            rows = slice(start, stop)
            yield Chunk(subject_id=self.subject_id.slice(start, stop - start),
                        split=self.split[rows], lvef=self.lvef[rows],
                        ef_le_40=self.ef_le_40[rows], echo=self._echo_rows(start, stop),
                        n_clips=self.n_clips[rows], ecg=self.ecg[rows],
                        has_echo=self.has_echo[rows], has_ecg=self.has_ecg[rows])
