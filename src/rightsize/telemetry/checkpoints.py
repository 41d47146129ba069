"""Preemptions and checkpoints: how often the run was interrupted, what each restart lost, how
often it checkpointed and what a checkpoint write cost, and the Young/Daly interval.

* ``restarts``: segments after the first (each began after an interruption);
  ``mean_hours_between_interruptions``: active hours / restarts;
  ``lost_steps_per_restart``: mean steps a restarted segment ran again.
* The checkpoint interval is inferred twice. From resumes: a restart resumes one step after a
  checkpoint, so every checkpoint step (its first logged step minus the logging interval) is a
  multiple of the interval; their
  gcd is the interval's largest candidate. From step times: a checkpoint write makes the step
  after it slow. The interval is the smallest divisor ``d`` of that gcd (or, with no resumes,
  of the commonest spacing between slow steps) whose grid deltas — the step deltas that
  contain the step after a multiple of ``d`` — are nearly all slow (``>= 80 %``; slow = extra
  time above the median extra by 8 robust SDs of all step deltas).
* ``checkpoint_write_s``: the median over grid deltas of their extra time, ``wall gap -
  median step x steps covered``, at the median step time of the delta's own segment (a
  restart may land on other hardware). Deltas that are pauses (``>= gap_s``) are left out.
* Young/Daly: ``tau = sqrt(2 x write cost x mean time between interruptions)``. Under the
  usual first-order assumptions — interruptions arrive at random (memoryless) during compute,
  each loses on average half an interval, a write costs the same every time and restart
  start-up does not depend on the interval — the run's checkpoint overhead at an interval of
  ``I`` steps is ``restarts x I/2 x step`` (redone) ``+ steps run / I x write``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rightsize.telemetry.account import Account, redone_steps_per_restart, resume_point

SLOW_SHARE = 0.8       # a candidate interval's grid deltas must be this often slow
NOISE_K = 8.0          # "slow" = extra time above this many robust SDs of off-grid extras
MIN_GRID = 3           # grid deltas needed to call an interval seen in the step times
ASSUMPTIONS = ("interruptions arrive at random times during compute (memoryless); each "
               "loses half a checkpoint interval on average; every write costs the measured "
               "median; restart start-up and queue waits do not depend on the interval")


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _on_grid(step_from: np.ndarray, step_to: np.ndarray, d: int) -> np.ndarray:
    """Deltas covering the step after a multiple of ``d`` (``from <= k*d < to``, ``k >= 1``)."""
    k = (step_to - 1) // d
    return (k >= 1) & (k * d >= step_from)


def _slow(acc: Account, median: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Deltas that count (advancing, not pauses), their extra time, and which are slow.

    Extra time: the wall gap minus the steps it covers at its segment's median step time
    (segments may run on other hardware; the run's median is the fallback). Slow: extra time
    above the median extra by ``NOISE_K`` robust SDs (1.4826 x MAD) of all counted deltas;
    checkpoint steps are a small minority, so the noise is the steps'.
    """
    d = acc.deltas
    dstep = d.step_to - d.step_from
    adv = (dstep > 0) & ~d.pause & (d.dwall >= 0)
    per = np.where(adv, d.dwall / np.where(dstep > 0, dstep, 1), np.nan)
    seg_median = np.full(per.size, median)
    bounds = np.r_[0, np.flatnonzero(d.file[1:] != d.file[:-1]) + 1, per.size]
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        x = per[a:b][adv[a:b]]
        if x.size:
            seg_median[a:b] = np.median(x)
    extra = d.dwall - seg_median * dstep
    x = extra[adv]
    if x.size < 2 * MIN_GRID:
        return adv, extra, np.zeros_like(adv)
    mid = float(np.median(x))
    mad = float(np.median(np.abs(x - mid))) * 1.4826
    return adv, extra, adv & (extra > mid + NOISE_K * max(mad, 1e-6 * median))


def _slow_evidence(acc: Account, slow: tuple[np.ndarray, np.ndarray, np.ndarray],
                   candidates: list[int]) -> tuple[int | None, np.ndarray | None, float | None]:
    """Smallest candidate whose grid deltas are nearly all slow, its grid mask, the share."""
    d = acc.deltas
    adv, _, is_slow = slow
    n_adv = int(adv.sum())
    for cand in candidates:
        grid = _on_grid(d.step_from, d.step_to, cand) & adv
        n = int(grid.sum())
        if n < MIN_GRID or n_adv - n < MIN_GRID:
            continue
        share = int((grid & is_slow).sum()) / n
        if share >= SLOW_SHARE:
            return cand, grid, share
    return None, None, None


def _slow_spacing(acc: Account, slow: tuple[np.ndarray, np.ndarray, np.ndarray]) -> int | None:
    """Commonest spacing between steps after slow deltas (no resumes to go by)."""
    steps = np.unique(acc.deltas.step_to[slow[2]])
    if steps.size < MIN_GRID:
        return None
    gaps, counts = np.unique(np.diff(steps), return_counts=True)
    return int(gaps[np.argmax(counts)])


def checkpoints(acc: Account, median: float | None, max_step: int) -> dict[str, Any]:
    """The ``checkpoints`` block (scalars, plus an ``advice`` line and ``notes``)."""
    segs = acc.segments
    restarts = max(0, len(segs) - 1)
    lost = redone_steps_per_restart(acc)
    active_h = acc.active / 3600.0
    out: dict[str, Any] = {
        "restarts": restarts,
        "mean_hours_between_interruptions": active_h / restarts if restarts else None,
        "lost_steps_per_restart": float(np.mean(lost)) if lost else None,
        "checkpoint_interval_steps": None,
        "checkpoint_interval_from_resumes": None,
        "checkpoint_interval_from_step_times": None,
        "checkpoint_slow_share": None,
        "checkpoint_writes_seen": None,
        "checkpoint_write_s": None,
        "young_daly_steps": None,
        "young_daly_hours": None,
        "overhead_hours_at_interval": None,
        "overhead_hours_at_young_daly": None,
    }
    notes: list[str] = []
    resumes = [resume_point(sg, acc.log_interval) for sg in segs[1:]
               if sg.prior_max is not None
               and resume_point(sg, acc.log_interval) <= sg.prior_max]
    resumes = [c for c in resumes if c > 0]
    from_resumes = int(np.gcd.reduce(np.asarray(resumes, np.int64))) if resumes else None
    out["checkpoint_interval_from_resumes"] = from_resumes
    if median is None or median <= 0:
        notes.append("no step time measured: checkpoint cost not measurable")
    else:
        slow = _slow(acc, median)
        base = from_resumes or _slow_spacing(acc, slow)
        if base is not None and base >= 1:
            cand, grid, share = _slow_evidence(acc, slow, _divisors(base))
            if cand is not None and grid is not None:
                out["checkpoint_interval_from_step_times"] = cand
                out["checkpoint_slow_share"] = share
                out["checkpoint_writes_seen"] = int(grid.sum())
                out["checkpoint_write_s"] = float(np.median(slow[1][grid]))
        interval = out["checkpoint_interval_from_step_times"] or from_resumes
        out["checkpoint_interval_steps"] = interval
        if interval is None:
            notes.append("checkpoint interval not found: no restart resumed from a "
                         "checkpoint and no periodic slow step in the step times")
        elif out["checkpoint_write_s"] is None:
            notes.append(f"no visible checkpoint cost: the steps after every "
                         f"{interval:,}th are not slower than the others")
        elif from_resumes and from_resumes != interval:
            notes.append(f"resumes are all multiples of {from_resumes:,} steps; the slow "
                         f"steps show checkpoints every {interval:,}")
    write = out["checkpoint_write_s"]
    if restarts == 0:
        out["advice"] = "no interruptions observed: no checkpoint advice"
    elif write is None or median is None or write <= 0:
        out["advice"] = ("checkpoint write cost not measurable: Young/Daly interval not "
                         "computed")
    else:
        mtbi_s = out["mean_hours_between_interruptions"] * 3600.0
        tau_s = math.sqrt(2.0 * write * mtbi_s)
        tau = tau_s / median
        out["young_daly_steps"] = tau
        out["young_daly_hours"] = tau_s / 3600.0
        interval = out["checkpoint_interval_steps"]

        def overhead(i: float) -> float:
            return (restarts * i / 2.0 * median + max_step / i * write) / 3600.0

        out["overhead_hours_at_young_daly"] = overhead(tau)
        if interval:
            out["overhead_hours_at_interval"] = overhead(float(interval))
            better = overhead(tau) < overhead(float(interval))
            out["advice"] = (
                f"checkpoint every ~{tau:,.0f} steps (Young/Daly) instead of every "
                f"{interval:,}: {overhead(float(interval)):.2f} h -> {overhead(tau):.2f} h of "
                f"redone steps + writes" if better else
                f"the interval used ({interval:,} steps) is already near Young/Daly "
                f"(~{tau:,.0f} steps)")
        else:
            out["advice"] = f"checkpoint every ~{tau:,.0f} steps (Young/Daly)"
    out["assumptions"] = ASSUMPTIONS
    out["notes"] = notes
    return out
