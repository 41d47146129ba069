"""Where the calendar went: every second between the first and the last event of a run.

Definitions (in the order a reader meets them):

* a segment's *active* time runs from the wall time of its first logged training step to
  that of its last (the RampNet write-up's "active compute"); ``active_hours`` is the sum
  over segments. The launch's header and start-up (data loading, model build) come before
  the first step and are ``startup``; whatever it logged after its last step (a final
  validation, a close event) is ``tail``;
* inside a segment, consecutive logged steps are *deltas*. A delta whose wall-time gap is
  ``>= gap_s`` is an ``in_segment_pause`` (validation pass, stall) — the whole gap, whatever
  else it held; every other delta is compute. Compute on steps that an earlier segment
  (by start time) already ran is ``redone_steps`` (lost since the last checkpoint and run
  again after a restart); the rest is ``useful_steps``. A delta covering both is split by
  its share of steps;
* ``waiting`` is calendar time inside no segment's span (first event to last event): queue
  waits between launches, and launches that died before their first step.

The six parts add up to ``calendar_hours`` whenever segments do not overlap in time (one
process writing at a time). When they do, the overlap is counted twice and the account says
so (``overlap_hours``) instead of hiding it.

Everything here works on numpy arrays; one pass over the step tag's points.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from rightsize.telemetry.cost import Series
from rightsize.telemetry.table import FileInfo

log = logging.getLogger(__name__)

# the parts of the calendar; what each means, in words: rightsize.account_parts
PARTS = ("useful_steps", "redone_steps", "in_segment_pauses", "startup", "tail", "waiting")


@dataclass(frozen=True)
class Segment:
    """One launch that logged training steps, with the walls that bound its parts."""

    file: int                # index into ScalarTable.files
    start: float             # first event of the launch (header included)
    end: float               # last event of the launch
    first_wall: float        # wall time of its first logged step (file order)
    last_wall: float         # wall time of its last logged step (file order)
    first_step: int
    last_step: int
    max_step: int
    prior_max: int | None    # highest step run by segments that started earlier
    points: int = 0          # logged step-tag points of the launch

    @property
    def active(self) -> float:
        """Seconds from first to last logged step."""
        return self.last_wall - self.first_wall


@dataclass(frozen=True)
class Deltas:
    """Consecutive logged steps inside one segment (file order), one entry per pair."""

    file: np.ndarray         # int32, the segment
    step_from: np.ndarray    # int64, step of the earlier point
    step_to: np.ndarray      # int64, step of the later point
    dwall: np.ndarray        # float64, wall-time gap in seconds
    pause: np.ndarray        # bool, dwall >= gap_s
    redone_share: np.ndarray # float64 in [0, 1], share of the delta's steps run before


@dataclass(frozen=True)
class Account:
    """The six parts of the calendar (seconds) and the segments they came from."""

    seconds: dict[str, float]
    calendar: float
    overlap: float
    segments: tuple[Segment, ...]
    deltas: Deltas
    log_interval: int        # steps between logged points (gcd of the advancing step deltas)

    @property
    def active(self) -> float:
        """Summed first-to-last-step seconds of the segments."""
        return sum(s.active for s in self.segments)

    def hours(self) -> dict[str, float]:
        """The ``account`` block: each part in hours, plus their sum and any overlap."""
        out = {k: v / 3600.0 for k, v in self.seconds.items()}
        out["total"] = sum(self.seconds.values()) / 3600.0
        out["overlap_hours"] = self.overlap / 3600.0
        return out


def _segments(launches: list[tuple[int, FileInfo]], s: Series
              ) -> tuple[list[Segment], np.ndarray, np.ndarray, np.ndarray]:
    """Segments ordered by their first step's wall time, and the points in file order.

    The one per-launch segmentation: the cost report's ``segment_table`` is built from
    these segments (``cost_report._launch_rows``), not recomputed.
    """
    order = np.argsort(s.file, kind="stable")
    step, wall, file = s.step[order], s.wall[order], s.file[order]
    if step.size == 0:
        return [], step, wall, file
    first = np.r_[0, np.flatnonzero(file[1:] != file[:-1]) + 1]     # file is sorted
    ids = file[first]
    last = np.r_[first[1:] - 1, file.size - 1]
    seg_max = np.maximum.reduceat(step, first)
    info = dict(launches)
    rows = []
    for f, a, b, mx in zip(ids.tolist(), first.tolist(), last.tolist(), seg_max.tolist(),
                           strict=True):
        fi = info.get(f)
        lo = min(float(wall[a]), float(wall[a:b + 1].min()))
        hi = max(float(wall[b]), float(wall[a:b + 1].max()))
        start = lo if fi is None or fi.first_wall_time is None else min(fi.first_wall_time, lo)
        end = hi if fi is None or fi.last_wall_time is None else max(fi.last_wall_time, hi)
        rows.append((float(wall[a]), f, start, end, float(wall[b]), int(step[a]),
                     int(step[b]), int(mx), b - a + 1))
    rows.sort()
    segs: list[Segment] = []
    running: int | None = None
    for first_wall, f, start, end, last_wall, s0, s1, mx, n in rows:
        segs.append(Segment(f, start, end, first_wall, last_wall, s0, s1, mx, running, n))
        running = mx if running is None else max(running, mx)
    return segs, step, wall, file


def _deltas(segs: list[Segment], step: np.ndarray, wall: np.ndarray, file: np.ndarray,
            gap_s: float) -> Deltas:
    same = file[1:] == file[:-1]
    f = file[1:][same]
    s_from, s_to = step[:-1][same], step[1:][same]
    dwall = np.diff(wall)[same]
    pause = dwall >= gap_s
    prior = {sg.file: sg.prior_max for sg in segs}
    lut_keys = np.array(sorted(prior), dtype=np.int64)
    lut_vals = np.array([-(2 ** 62) if prior[k] is None else prior[k] for k in lut_keys.tolist()],
                        dtype=np.int64)
    pmax = lut_vals[np.searchsorted(lut_keys, f)] if f.size else np.empty(0, np.int64)
    dstep = s_to - s_from
    advancing = dstep > 0
    share = np.where(advancing,
                     np.clip(pmax - s_from, 0, np.where(advancing, dstep, 1))
                     / np.where(advancing, dstep, 1), 1.0)
    return Deltas(f.astype(np.int32), s_from, s_to, dwall, pause, share.astype(np.float64))


def _covered(spans: list[tuple[float, float]]) -> float:
    """Length of the union of ``[a, b]`` spans."""
    total, cur_a, cur_b = 0.0, None, None
    for a, b in sorted(spans):
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        total += cur_b - cur_a
    return total


def account(launches: list[tuple[int, FileInfo]], s: Series, gap_s: float) -> Account:
    """Split the run's calendar into the six parts (see the module docs)."""
    segs, step, wall, file = _segments(launches, s)
    d = _deltas(segs, step, wall, file, gap_s)
    compute = np.where(d.pause, 0.0, d.dwall)
    starts = [f.first_wall_time for _, f in launches if f.first_wall_time is not None]
    ends = [f.last_wall_time for _, f in launches if f.last_wall_time is not None]
    starts += [sg.start for sg in segs]
    ends += [sg.end for sg in segs]
    calendar = (max(ends) - min(starts)) if starts and ends else 0.0
    spans = [(sg.start, sg.end) for sg in segs]
    covered = _covered(spans)
    seconds = {
        "useful_steps": float((compute * (1.0 - d.redone_share)).sum()),
        "redone_steps": float((compute * d.redone_share).sum()),
        "in_segment_pauses": float(d.dwall[d.pause].sum()),
        "startup": float(sum(sg.first_wall - sg.start for sg in segs)),
        "tail": float(sum(sg.end - sg.last_wall for sg in segs)),
        "waiting": float(calendar - covered),
    }
    overlap = float(sum(b - a for a, b in spans) - covered)
    dstep = d.step_to - d.step_from
    k = int(np.gcd.reduce(dstep[dstep > 0])) if (dstep > 0).any() else 1
    return Account(seconds, float(calendar), overlap, tuple(segs), d, max(k, 1))


def resume_point(sg: Segment, log_interval: int) -> int:
    """The checkpoint step a segment resumed from: one logging interval before its first point."""
    return sg.first_step - log_interval


def redone_steps_per_restart(acc: Account) -> list[int]:
    """Steps each restarted segment ran again (from its checkpoint to what ran before it)."""
    out = []
    for sg in acc.segments[1:]:
        prior = -1 if sg.prior_max is None else sg.prior_max
        out.append(max(0, min(prior, sg.max_step) - resume_point(sg, acc.log_interval)))
    return out
