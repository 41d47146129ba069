"""Manifest validation: schema, per-row values and cross-row consistency.

Run on every build (each row group before it is written) and on every load. Each failure
is a one-line :class:`~rightsize.errors.DataError` naming the file, the column and the
row/subject, e.g. ``data/manifest.parquet: column echo: non-finite value at row 17
(subject S00017, clip 2)``. Checks are vectorised per row group: no per-row Python.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from rightsize.cohort.arrays import SPLITS
from rightsize.cohort.columns import bools, numbers, strings, valid
from rightsize.cohort.manifest import (
    COLUMNS,
    flat_values,
    iter_row_groups,
    metadata_of,
    open_manifest,
    split_codes,
)
from rightsize.errors import DataError

_BOOL_COLUMNS = ("ef_le_40", "has_echo", "has_ecg")


@dataclass(frozen=True)
class Geometry:
    """Shape of a manifest as declared by its metadata."""

    max_clips: int
    echo_dim: int
    ecg_dim: int
    n_subjects: int | None = None
    splits: dict[str, int] | None = None
    ecg_tokens: int = 1      # ECG vectors per subject; absent from a pooled manifest's metadata

    @classmethod
    def from_metadata(cls, meta: dict[str, Any], where: str) -> Geometry:
        """Read ``meta["geometry"]`` (DataError naming ``where`` when malformed)."""
        g = meta.get("geometry", {})
        try:
            geo = cls(max_clips=int(g["max_clips"]), echo_dim=int(g["echo_dim"]),
                      ecg_dim=int(g["ecg_dim"]),
                      n_subjects=None if g.get("n_subjects") is None else int(g["n_subjects"]),
                      splits=None if g.get("splits") is None else
                      {k: int(v) for k, v in g["splits"].items()},
                      ecg_tokens=int(g.get("ecg_tokens", 1)))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise DataError(f"{where}: metadata geometry must give integer max_clips, "
                            "echo_dim and ecg_dim (and ecg_tokens, when given)") from None
        if geo.ecg_tokens < 1:
            raise DataError(f"{where}: metadata geometry ecg_tokens = {geo.ecg_tokens} "
                            "is not a positive integer")
        return geo

    @property
    def ecg_width(self) -> int:
        """Floats per subject in the flattened ``ecg`` column (``ecg_tokens * ecg_dim``)."""
        return self.ecg_tokens * self.ecg_dim


@dataclass(frozen=True)
class ManifestSummary:
    """What a valid manifest holds."""

    path: str
    n_rows: int
    split_counts: dict[str, int]
    n_has_echo: int
    n_has_ecg: int
    geometry: Geometry
    metadata: dict[str, Any] = field(repr=False)


def check_schema(schema: pa.Schema, geo: Geometry, where: str) -> None:
    """Every manifest column is present with the declared type and dimension."""
    names = set(schema.names)
    for col in COLUMNS:
        if col not in names:
            raise DataError(f"{where}: missing column {col}")
    for col in ("subject_id", "split"):
        if not (pa.types.is_string(schema.field(col).type)
                or pa.types.is_large_string(schema.field(col).type)):
            raise DataError(f"{where}: column {col}: expected string, got {schema.field(col).type}")
    if not pa.types.is_floating(schema.field("lvef").type):
        raise DataError(f"{where}: column lvef: expected float32, got {schema.field('lvef').type}")
    if not pa.types.is_integer(schema.field("n_clips").type):
        raise DataError(f"{where}: column n_clips: expected int16, "
                        f"got {schema.field('n_clips').type}")
    for col in _BOOL_COLUMNS:
        if not pa.types.is_boolean(schema.field(col).type):
            raise DataError(f"{where}: column {col}: expected bool, got {schema.field(col).type}")
    dims = {"echo": (geo.max_clips * geo.echo_dim,
                     f"max_clips*echo_dim = {geo.max_clips}*{geo.echo_dim}"),
            "ecg": (geo.ecg_width, "ecg_dim" if geo.ecg_tokens == 1 else
                    f"ecg_tokens*ecg_dim = {geo.ecg_tokens}*{geo.ecg_dim}")}
    for col, (width, what) in dims.items():
        tp = schema.field(col).type
        if not (pa.types.is_fixed_size_list(tp) and tp.value_type == pa.float32()):
            raise DataError(f"{where}: column {col}: expected fixed_size_list<float32>, got {tp}")
        if tp.list_size != width:
            raise DataError(f"{where}: column {col}: wrong dimension {tp.list_size}, "
                            f"expected {what} = {width}")


class ManifestChecker:
    """Check manifest row groups one at a time, then cross-row consistency in :meth:`finish`."""

    def __init__(self, geometry: Geometry, where: str, ef_threshold: float | None = None,
                 target_range: tuple[float, float] | None = None) -> None:
        self.geo = geometry
        self.where = where
        self.ef_threshold = ef_threshold
        self.target_range = target_range      # None: LVEF, percent in [0, 100]
        self._ids: list[pa.Array] = []
        self._codes: list[np.ndarray] = []
        self._n_echo = 0
        self._n_ecg = 0

    def _fail(self, table: pa.Table | pa.RecordBatch, offset: int, i: int, col: str,
              what: str, extra: str = "") -> None:
        sid = table.column("subject_id")[i].as_py()
        raise DataError(f"{self.where}: column {col}: {what} at row {offset + i} "
                        f"(subject {sid}{extra})")

    def check(self, table: pa.Table | pa.RecordBatch, offset: int) -> np.ndarray:
        """Validate rows ``offset .. offset+len(table)``; return their int8 split codes."""
        for col in COLUMNS:
            column = table.column(col)
            if column.null_count:
                first = int(np.flatnonzero(~valid(column))[0])
                if col == "subject_id":
                    raise DataError(f"{self.where}: column subject_id: null at row "
                                    f"{offset + first}")
                self._fail(table, offset, first, col, "null value")
        codes = split_codes(table.column("split"))
        bad = np.flatnonzero(codes < 0)
        if bad.size:
            value = table.column("split")[int(bad[0])].as_py()
            self._fail(table, offset, int(bad[0]), "split",
                       f"{value!r} is not one of {', '.join(SPLITS)}")
        lvef = numbers(table.column("lvef")).astype(np.float32, copy=False)
        bad = np.flatnonzero(~np.isfinite(lvef))
        if bad.size:
            self._fail(table, offset, int(bad[0]), "lvef", f"non-finite value {lvef[bad[0]]}")
        lo, hi = self.target_range or (0.0, 100.0)
        bad = np.flatnonzero((lvef < lo) | (lvef > hi))
        if bad.size:
            self._fail(table, offset, int(bad[0]), "lvef", f"{lvef[bad[0]]:g} outside " + (
                "[0, 100] percent" if self.target_range is None else
                f"the target's range [{lo:g}, {hi:g}] (metadata target)"))
        if self.ef_threshold is not None:
            ef = bools(table.column("ef_le_40"))
            bad = np.flatnonzero(ef != (lvef <= np.float32(self.ef_threshold)))
            if bad.size:
                self._fail(table, offset, int(bad[0]), "ef_le_40",
                           f"disagrees with lvef {lvef[bad[0]]:g} <= {self.ef_threshold:g}")
        self._check_echo(table, offset)
        self._check_ecg(table, offset)
        self._ids.append(table.column("subject_id").combine_chunks()
                         if isinstance(table, pa.Table) else table.column("subject_id"))
        self._codes.append(codes)
        return codes

    def _check_echo(self, table: pa.Table | pa.RecordBatch, offset: int) -> None:
        c, d = self.geo.max_clips, self.geo.echo_dim
        n_clips = numbers(table.column("n_clips")).astype(np.int64)
        bad = np.flatnonzero((n_clips < 0) | (n_clips > c))
        if bad.size:
            self._fail(table, offset, int(bad[0]), "n_clips",
                       f"{n_clips[bad[0]]} outside [0, max_clips={c}]")
        has_echo = bools(table.column("has_echo"))
        bad = np.flatnonzero(has_echo != (n_clips > 0))
        if bad.size:
            self._fail(table, offset, int(bad[0]), "has_echo",
                       f"{bool(has_echo[bad[0]])} disagrees with n_clips {n_clips[bad[0]]}")
        self._n_echo += int(has_echo.sum())
        echo = flat_values(table.column("echo")).reshape(len(n_clips), c, d)
        finite = np.isfinite(echo).all(axis=2)
        bad_row, bad_clip = np.nonzero(~finite)
        if bad_row.size:
            self._fail(table, offset, int(bad_row[0]), "echo", "non-finite value",
                       f", clip {int(bad_clip[0])}")
        padded = np.arange(c)[None, :] >= n_clips[:, None]
        bad_row, bad_clip = np.nonzero(padded & (echo != 0).any(axis=2))
        if bad_row.size:
            self._fail(table, offset, int(bad_row[0]), "echo",
                       f"padded clip {int(bad_clip[0])} (n_clips "
                       f"{n_clips[bad_row[0]]}) is not zeros")

    def _check_ecg(self, table: pa.Table | pa.RecordBatch, offset: int) -> None:
        """Finite values; a subject's ECG is all present or all absent (no per-token mask)."""
        has_ecg = bools(table.column("has_ecg"))
        self._n_ecg += int(has_ecg.sum())
        t, d = self.geo.ecg_tokens, self.geo.ecg_dim
        ecg = flat_values(table.column("ecg")).reshape(len(has_ecg), t, d)
        bad_row, bad_token = np.nonzero(~np.isfinite(ecg).all(axis=2))
        if bad_row.size:
            self._fail(table, offset, int(bad_row[0]), "ecg", "non-finite value",
                       f", token {int(bad_token[0])}" if t > 1 else "")
        nonzero = (ecg != 0).reshape(len(has_ecg), -1).any(axis=1)
        bad = np.flatnonzero(~has_ecg & nonzero)
        if bad.size:
            self._fail(table, offset, int(bad[0]), "ecg", "has_ecg is false but values not zeros")
        bad = np.flatnonzero(has_ecg & ~nonzero)
        if bad.size:
            self._fail(table, offset, int(bad[0]), "ecg",
                       "has_ecg is true but every value is zero")

    def finish(self, metadata: dict[str, Any] | None = None) -> ManifestSummary:
        """Cross-row checks: unique subjects, one split each, no empty split, declared sizes."""
        ids = (strings(pa.concat_arrays(self._ids)) if self._ids
               else np.array([], dtype=object))
        codes = np.concatenate(self._codes) if self._codes else np.array([], dtype=np.int8)
        order = np.argsort(ids, kind="stable")
        ids_sorted = ids[order]
        dup = np.flatnonzero(ids_sorted[1:] == ids_sorted[:-1])
        if dup.size:
            a, b = int(order[dup[0]]), int(order[dup[0] + 1])
            sa, sb = SPLITS[codes[a]], SPLITS[codes[b]]
            if sa != sb:
                raise DataError(f"{self.where}: column split: subject {ids[a]} in two splits "
                                f"({sa} at row {a}, {sb} at row {b})")
            raise DataError(f"{self.where}: column subject_id: duplicate subject {ids[a]} "
                            f"at rows {a} and {b}")
        counts = np.bincount(codes.astype(np.int64), minlength=len(SPLITS))
        split_counts = {name: int(counts[i]) for i, name in enumerate(SPLITS)}
        for name, n in split_counts.items():
            if n == 0:
                raise DataError(f"{self.where}: column split: split {name} is empty")
        if self.geo.n_subjects is not None and len(ids) != self.geo.n_subjects:
            raise DataError(f"{self.where}: {len(ids)} rows but metadata geometry declares "
                            f"n_subjects = {self.geo.n_subjects}")
        for name, n in (self.geo.splits or {}).items():
            if split_counts.get(name) != n:
                raise DataError(f"{self.where}: column split: split {name} has "
                                f"{split_counts.get(name)} rows but metadata declares {n}")
        return ManifestSummary(path=self.where, n_rows=len(ids), split_counts=split_counts,
                               n_has_echo=self._n_echo, n_has_ecg=self._n_ecg,
                               geometry=self.geo, metadata=metadata or {})


def checker_for(metadata: dict[str, Any], where: str) -> ManifestChecker:
    """A checker configured from a manifest's metadata."""
    threshold = metadata.get("ef_threshold")
    return ManifestChecker(Geometry.from_metadata(metadata, where), where,
                           None if threshold is None else float(threshold),
                           _target_range(metadata, where))


def _target_range(metadata: dict[str, Any], where: str) -> tuple[float, float] | None:
    """The metadata ``target``'s valid range (absent: None, LVEF in [0, 100])."""
    target = metadata.get("target")
    if target is None:
        return None
    try:
        lo, hi = (float(v) for v in target["range"])
    except (KeyError, TypeError, ValueError):
        raise DataError(f"{where}: metadata target.range must be [low, high] numbers") from None
    return lo, hi


def validate_manifest(path: str | os.PathLike[str]) -> ManifestSummary:
    """Validate manifest ``path`` row group by row group; DataError on the first problem."""
    where = str(path)
    pf = open_manifest(path)
    meta = metadata_of(pf.schema_arrow, where)
    checker = checker_for(meta, where)
    check_schema(pf.schema_arrow, checker.geo, where)
    for offset, table in iter_row_groups(pf):
        checker.check(table, offset)
    return checker.finish(meta)
