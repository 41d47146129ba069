"""Measurement primitives of the cost report: tag choice, step times, segments, epoch spacing.

Vocabulary (the rules of the cost report):

* a *launch* is one event file; a *segment* is a launch that logged training steps;
* a *step delta* is the wall-time difference between two consecutive points of the step tag
  inside one segment, divided by their step difference (per-step time when a run logs every
  ``k`` steps). Each segment's first point has no delta (its time includes start-up); a delta
  is *dropped* when its raw wall-time difference is ``>= gap_s`` (a pause: validation,
  checkpointing, a stall), when it goes back in time, or when the step does not advance;
* a step re-logged by a later segment (resumed from a checkpoint) is one point of the curve —
  the later value wins — but its deltas count once per segment that ran it.

Everything here works on numpy arrays (one array per column), never one object per point.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc

from rightsize.telemetry.table import ScalarTable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Series:
    """One tag's points in one run, in table order (file order, then record order)."""

    step: np.ndarray       # int64
    wall: np.ndarray       # float64
    value: np.ndarray      # float64
    file: np.ndarray       # int32, index into ScalarTable.files

    def __len__(self) -> int:
        return int(self.step.size)


@dataclass(frozen=True)
class StepTimes:
    """Step deltas of one tag: every delta logged inside a segment, and which were kept."""

    per_step: np.ndarray   # float64 seconds per step, one per logged delta
    kept: np.ndarray       # bool, same length: counted in the statistics
    file: np.ndarray       # int32, the segment (file index) of each delta

    @property
    def logged(self) -> int:
        """Deltas between consecutive points inside one segment."""
        return int(self.kept.size)

    @property
    def n(self) -> int:
        """Deltas kept (the sample size of the step-time statistics)."""
        return int(self.kept.sum())

    @property
    def dropped(self) -> int:
        """Deltas dropped as pauses, time going backwards or steps not advancing."""
        return self.logged - self.n

    def quantiles(self, file: int | None = None) -> dict[str, float | None]:
        """Median, p25 and p75 of the kept per-step times (of one segment when ``file``)."""
        mask = self.kept if file is None else self.kept & (self.file == file)
        x = self.per_step[mask]
        if x.size == 0:
            return {"median": None, "p25": None, "p75": None}
        p25, med, p75 = np.percentile(x, [25.0, 50.0, 75.0])
        return {"median": float(med), "p25": float(p25), "p75": float(p75)}


def run_series(table: ScalarTable, run: str) -> dict[str, Series]:
    """Split the rows of ``run`` by tag, keeping table order."""
    cols = table.columns
    if cols.num_rows:
        cols = cols.filter(pc.equal(cols.column("run"), run))
    if cols.num_rows == 0:
        return {}
    tag = cols.column("tag").combine_chunks()
    codes = tag.indices.to_numpy(zero_copy_only=False)
    names = tag.dictionary.to_pylist()
    step = cols.column("step").to_numpy()
    wall = cols.column("wall_time").to_numpy()
    value = cols.column("value").to_numpy()
    file = cols.column("file").to_numpy()
    out: dict[str, Series] = {}
    for code in np.unique(codes):
        m = codes == code
        out[names[int(code)]] = Series(step[m], wall[m], value[m], file[m])
    return out


def pick_step_tag(series: dict[str, Series]) -> str | None:
    """The densest tag: most points, ties broken by name."""
    if not series:
        return None
    return min(series, key=lambda t: (-len(series[t]), t))


def step_base(step_series: Series) -> int:
    """First step index of the run's counter: 0 when the step tag logs step 0, else 1."""
    return 0 if step_series.step.size and int(step_series.step.min()) <= 0 else 1


def epoch_spacing(steps: np.ndarray, base: int = 1) -> int | None:
    """Steps per epoch implied by an epoch-level tag's steps, or None without evidence.

    A tag logged at the step closing each epoch sits at positions ``k * spacing`` (steps
    counted from ``base``), so the spacing is the gcd of the positions, even when some epochs'
    points are missing. When that gcd is implausibly fine (fewer than a quarter of the epochs
    it implies have a point: the tag is offset from the epoch ends) the gcd of the gaps between
    points is used instead. Spacings below 2 are not evidence.
    """
    u = np.unique(np.asarray(steps, dtype=np.int64))
    pos = u - base + 1
    pos = pos[pos > 0]
    g_diff = int(np.gcd.reduce(np.diff(u))) if u.size >= 2 else 0
    if pos.size:
        g_pos = int(np.gcd.reduce(pos))
        if g_pos >= 2:
            coverage = pos.size / (int(pos.max()) // g_pos)
            if g_diff >= 2 and g_diff != g_pos and coverage < 0.25:
                return g_diff
            return g_pos
    return g_diff if g_diff >= 2 else None


def pick_val_tag(series: dict[str, Series], step_tag: str) -> str | None:
    """The epoch-level tag: regular spacing wider than the step tag's; "val" names preferred."""
    base = step_base(series[step_tag])
    st = np.unique(series[step_tag].step)
    interval = int(np.gcd.reduce(np.diff(st))) if st.size >= 2 else 1
    ranked = []
    for tag, s in series.items():
        if tag == step_tag:
            continue
        spacing = epoch_spacing(s.step, base)
        if spacing is None or spacing <= interval:
            continue
        n = int(np.unique(s.step).size)
        named = "val" in tag.lower()
        if not named and n < 2:
            continue
        ranked.append((-int(named), -int(n >= 2), -spacing, -n, tag))
    return min(ranked)[-1] if ranked else None


def step_times(s: Series, gap_s: float) -> StepTimes:
    """Per-step deltas between consecutive points of ``s`` inside each segment (file)."""
    order = np.argsort(s.file, kind="stable")
    step, wall, file = s.step[order], s.wall[order], s.file[order]
    same = file[1:] == file[:-1]
    dstep = np.diff(step)[same]
    dwall = np.diff(wall)[same]
    seg = file[1:][same]
    ok = (dstep > 0) & (dwall >= 0)
    per = np.where(ok, dwall / np.where(dstep > 0, dstep, 1), np.nan)
    kept = ok & (dwall < gap_s)
    return StepTimes(per.astype(np.float64), kept, seg.astype(np.int32))


def latest_per_step(s: Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unique steps (ascending) with the value and wall time of their last logging."""
    if s.step.size == 0:
        empty = np.empty(0)
        return s.step[:0], empty, empty
    rev = slice(None, None, -1)
    steps, idx = np.unique(s.step[rev], return_index=True)
    return steps, s.value[rev][idx], s.wall[rev][idx]


def relogged(s: Series) -> int:
    """Points superseded by a later logging of the same step (rows minus unique steps)."""
    return int(s.step.size - np.unique(s.step).size)


def steps_per_epoch_from_records(train_records: int, global_batch: int, drop_last: bool) -> int:
    """Optimizer steps per epoch from dataset geometry: floor(N/B) with drop_last, else ceil."""
    q, r = divmod(train_records, global_batch)
    return q if drop_last or r == 0 else q + 1


def epoch_of(step: np.ndarray, base: int, steps_per_epoch: int) -> list[int | float]:
    """Epoch number of each epoch-closing step (int when whole, else a rounded float)."""
    out: list[int | float] = []
    for x in (np.asarray(step, dtype=np.int64) - base + 1) / steps_per_epoch:
        r = round(float(x))
        out.append(r if abs(float(x) - r) < 1e-9 else round(float(x), 6))
    return out
