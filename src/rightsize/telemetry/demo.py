"""A synthetic preempted training run with planted truth, written with :class:`EventWriter`.

The run looks like a rescued multi-node job: several launches on different hosts (some with
dotted names), each resuming from the last checkpoint before the previous launch died (so
steps are re-logged), queue waits between launches, start-up before each launch's first step,
a close event some seconds after the last step (the tail), validation pauses and one stall
inside launches, a checkpoint every ``checkpoint_every`` steps whose write slows the step
after it, and a few header-only launches that died at start-up. ``Loss/train_step`` is logged
every ``log_every`` steps, ``Loss/val_epoch`` at the step closing each epoch. One launch is
preempted right after logging validation, so its successor re-logs that epoch's value.

The truth is computed from the plan (which gaps were planted as pauses), not by running the
analyzer, so a test comparing the two checks the analyzer's rules.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rightsize import atomic
from rightsize.errors import InputError
from rightsize.ground.event_writer import EventWriter
from rightsize.params import require
from rightsize.telemetry.sha256sums import manifest_for

log = logging.getLogger(__name__)

STEP_TAG = "Loss/train_step"
VAL_TAG = "Loss/val_epoch"
HOSTS = ("g3050", "gpu-a07.cluster.example.org", "node12.hpc.local", "g3082", "dgx-3.internal")


@dataclass(frozen=True)
class DemoParams:
    """The ``demo`` params block."""

    seed: int = 0

    def validate(self, key: str) -> None:
        """Raise ``ParamsError`` naming ``<key>.seed`` unless it is >= 0."""
        require(self.seed >= 0, f"{key}.seed", f"must be an integer >= 0, got {self.seed}")


@dataclass(frozen=True)
class DemoConfig:
    """Geometry of the demo run (matches ``params.yaml`` ``telemetry.runs.demo``)."""

    seed: int = 0
    train_records: int = 96000
    global_batch: int = 32          # -> 3000 steps per epoch (drop_last)
    gpus: int = 8
    log_every: int = 1
    checkpoint_every: int = 500
    gap_s: float = 600.0            # planted pauses are >= gap_s + 50, other deltas far below

    @property
    def steps_per_epoch(self) -> int:
        """Optimizer steps per epoch (partial last batch dropped)."""
        return self.train_records // self.global_batch


@dataclass
class Launch:
    """One planned event file."""

    start: float                    # header wall time
    host: str
    pid: int
    steps: list[int] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    pause_before: list[bool] = field(default_factory=list)  # planted pause since last logged
    write_before: list[bool] = field(default_factory=list)  # checkpoint write since last logged
    vals: list[tuple[int, float, float]] = field(default_factory=list)  # (step, wall, value)
    close: float | None = None      # wall time of the bare close event after the last step

    @property
    def end(self) -> float:
        """Wall time of the last event written."""
        close = [] if self.close is None else [self.close]
        return max([self.start, *self.walls, *(w for _, w, _ in self.vals), *close])


def plan(cfg: DemoConfig) -> list[Launch]:
    """Plan every launch of the run (deterministic per ``cfg.seed``)."""
    rng = np.random.default_rng(cfg.seed)
    spe, k, ck = cfg.steps_per_epoch, cfg.log_every, cfg.checkpoint_every
    total = int(rng.integers(3 * spe + 200, 4 * spe - 200))
    t_step = float(rng.uniform(0.35, 0.6))
    stall_at = int(rng.integers(spe // 2, total - spe // 2))
    val_curve = 0.55 + 0.6 / np.arange(1, 5) + rng.normal(0, 0.06, 4)
    extra = np.random.default_rng([cfg.seed, 14])   # checkpoint writes and close events
    write_s = float(extra.uniform(2.0, 6.0))
    planted_val_preempt = False
    launches: list[Launch] = []
    t = 1.7e9 + float(rng.uniform(0, 1e7))
    done = 0                        # last checkpointed step
    while done < total:
        seg = Launch(t, str(rng.choice(HOSTS)), int(rng.integers(1000, 99999)))
        speed = float(rng.uniform(0.9, 1.1))
        length = int(rng.integers(800, 4000))
        end = min(done + length, total)
        boundary = (done // spe + 1) * spe
        if not planted_val_preempt and done + ck < boundary <= done + 2 * length:
            end, planted_val_preempt = min(boundary, total), boundary <= total
        w = t + float(rng.uniform(60, 300))           # start-up before the first step
        paused = wrote = False
        for step in range(done + 1, end + 1):
            if (step - 1) % ck == 0 and step - 1 > done:   # checkpoint written after step-1
                w += write_s * (1 + 0.05 * float(extra.standard_normal()))
                wrote = True
            w += t_step * speed * (1 + 0.03 * float(rng.standard_normal()))
            if rng.random() < 0.002:
                w += float(rng.uniform(5, 120))      # hiccup: slow but not a pause
            if step == stall_at:
                w += float(rng.uniform(cfg.gap_s + 300, cfg.gap_s + 2400))
                paused = True
            if step % k == 0:
                loss = 2.0 * np.exp(-step / 4000) + 0.3 + 0.05 * rng.standard_normal()
                seg.steps.append(step)
                seg.walls.append(w)
                seg.values.append(float(loss))
                seg.pause_before.append(paused)
                seg.write_before.append(wrote)
                paused = wrote = False
            if step % spe == 0:
                w += float(rng.uniform(cfg.gap_s + 50, cfg.gap_s + 400))   # validation
                e = step // spe
                seg.vals.append((step, w, float(val_curve[e - 1] + rng.normal(0, 0.01))))
                paused = True
        if not seg.vals or seg.vals[-1][0] != end:
            seg.close = w + float(extra.uniform(5.0, 90.0))
        launches.append(seg)
        done = end if end == total else ((end - 1) // ck) * ck
        t = seg.end + float(rng.uniform(900, 3 * 3600))     # queue wait before the requeue
    n_dead = int(rng.integers(2, 4))
    for slot in sorted(rng.choice(np.arange(1, len(launches) + 1), n_dead, replace=False))[::-1]:
        launches.insert(int(slot), Launch(0.0, str(rng.choice(HOSTS)), int(rng.integers(1000,
                                                                                     99999))))
    _retime(launches, rng)
    return launches


def _retime(launches: list[Launch], rng: np.random.Generator) -> None:
    """Give header-only launches a start time and shift later launches after them."""
    t_prev = None
    for seg in launches:
        if seg.steps or seg.vals:
            if t_prev is not None and seg.start <= t_prev:
                shift = t_prev + float(rng.uniform(900, 3600)) - seg.start
                seg.start += shift
                seg.walls = [w + shift for w in seg.walls]
                seg.vals = [(s, w + shift, v) for s, w, v in seg.vals]
                seg.close = None if seg.close is None else seg.close + shift
            t_prev = seg.end
        else:
            seg.start = (t_prev or 1.7e9) + float(rng.uniform(900, 3600))
            t_prev = seg.start


def truth(cfg: DemoConfig, launches: list[Launch]) -> dict[str, Any]:
    """What the analyzer must recover, from the plan alone."""
    per_step = []
    for seg in launches:
        s, w = np.asarray(seg.steps, np.int64), np.asarray(seg.walls, np.float64)
        keep = ~np.asarray(seg.pause_before[1:], bool)
        per_step.append((np.diff(w) / np.diff(s))[keep])
    x = np.concatenate(per_step)
    p25, med, p75 = np.percentile(x, [25.0, 50.0, 75.0])
    rows = sum(len(seg.steps) for seg in launches)
    unique = {s for seg in launches for s in seg.steps}
    val: dict[int, tuple[int, float]] = {}
    for seg in launches:
        for step, _, v in seg.vals:
            val[step] = (step, float(np.float32(v)))      # later launch wins
    curve = [{"epoch": s // cfg.steps_per_epoch, "step": s, "value": v}
             for s, v in (val[k] for k in sorted(val))]
    best = min(curve, key=lambda c: c["value"]) if curve else None
    segs = [seg for seg in launches if seg.steps]
    max_step = max(unique)
    return {
        "seed": cfg.seed,
        "step_tag": STEP_TAG,
        "val_tag": VAL_TAG,
        "step_time_s": {"median": float(med), "p25": float(p25), "p75": float(p75),
                        "n": int(x.size)},
        "steps_per_epoch": cfg.steps_per_epoch,
        "max_step": max_step,
        "epochs_run": max_step / cfg.steps_per_epoch,
        "val_epochs": len(curve),
        "active_hours": sum(seg.walls[-1] - seg.walls[0] for seg in segs) / 3600.0,
        "calendar_hours": (max(s.end for s in launches) - min(s.start for s in launches)) / 3600,
        "launches": len(launches),
        "segments": len(segs),
        "header_only_files": len(launches) - len(segs),
        "relogged_steps": rows - len(unique),
        "relogged_val_steps": sum(len(seg.vals) for seg in launches) - len(curve),
        "best_epoch": best["epoch"] if best else None,
        "best_val": best["value"] if best else None,
        "val_curve": curve,
        "hosts": sorted({seg.host for seg in launches}),
        **account_truth(cfg, launches),
    }


def account_truth(cfg: DemoConfig, launches: list[Launch]) -> dict[str, Any]:
    """The planted account (hours), restarts and checkpoint cost, from the plan's flags (the
    write cost is the median over planted writes of the step gap's excess over its launch's
    median step time)."""
    segs = [seg for seg in launches if seg.steps]
    parts = dict.fromkeys(("useful_steps", "redone_steps", "in_segment_pauses"), 0.0)
    extra: list[np.ndarray] = []
    prior = None
    lost = []
    for seg in segs:
        s, w = np.asarray(seg.steps, np.int64), np.asarray(seg.walls, np.float64)
        ds, dw = np.diff(s), np.diff(w)
        pause = np.asarray(seg.pause_before[1:], bool)
        wrote = np.asarray(seg.write_before[1:], bool) & ~pause
        p = -1 if prior is None else prior
        share = np.clip(p - s[:-1], 0, ds) / ds
        parts["in_segment_pauses"] += float(dw[pause].sum())
        parts["redone_steps"] += float((dw * share)[~pause].sum())
        parts["useful_steps"] += float((dw * (1 - share))[~pause].sum())
        seg_median = float(np.median(dw[~pause] / ds[~pause]))
        extra.append(dw[wrote] - seg_median * ds[wrote])
        if prior is not None:
            lost.append(max(0, min(prior, int(s.max())) - int(s[0]) + (cfg.log_every - 1) + 1))
        prior = int(s.max()) if prior is None else max(prior, int(s.max()))
    calendar = max(x.end for x in launches) - min(x.start for x in launches)
    parts["startup"] = sum(seg.walls[0] - seg.start for seg in segs)
    parts["tail"] = sum(seg.end - seg.walls[-1] for seg in segs)
    parts["waiting"] = calendar - sum(seg.end - seg.start for seg in segs)
    x = np.concatenate(extra)
    return {
        "account": {k: v / 3600.0 for k, v in parts.items()},
        "startup_hours": parts["startup"] / 3600.0,
        "tail_hours": parts["tail"] / 3600.0,
        "restarts": len(segs) - 1,
        "lost_steps_per_restart": float(np.mean(lost)) if lost else None,
        "checkpoint_interval_steps": cfg.checkpoint_every,
        "checkpoint_write_s": float(np.median(x)) if x.size else None,
        "checkpoint_writes": int(x.size),
    }


def write_run(dest: Path, launches: list[Launch]) -> list[Path]:
    """Write one event file per launch into ``dest`` (which must exist)."""
    paths = []
    for seg in launches:
        with EventWriter(dest, wall_time=seg.start, host=seg.host, pid=seg.pid) as wr:
            events = [(w, 0, s, v) for s, w, v in zip(seg.steps, seg.walls, seg.values,
                                                      strict=True)]
            events += [(w, 1, s, v) for s, w, v in seg.vals]
            for w, kind, s, v in sorted(events):
                wr.add_scalar(VAL_TAG if kind else STEP_TAG, v, s, w)
            if seg.close is not None:
                wr.add_event(seg.close, seg.steps[-1] if seg.steps else 0)
            paths.append(wr.path)
    return paths


def demo_run(dest: str | os.PathLike[str], truth_path: str | os.PathLike[str] | None,
             cfg: DemoConfig) -> dict[str, Any]:
    """Write the demo run to ``dest`` (replacing it whole), its SHA256SUMS and the truth JSON."""
    dest = Path(dest)
    if dest.exists() and not dest.is_dir():
        raise InputError(f"{dest}: exists and is not a directory")
    launches = plan(cfg)
    facts = truth(cfg, launches)
    dest.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        os.chmod(stage, 0o755)
        write_run(stage, launches)
        manifest_for(stage)
        if dest.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old.", dir=dest.parent))
            os.replace(dest, old / dest.name)
            os.replace(stage, dest)
            shutil.rmtree(old)
        else:
            os.replace(stage, dest)
    finally:
        if stage.exists():
            shutil.rmtree(stage)
    if truth_path is not None:
        atomic.write_json(truth_path, facts)
    log.debug("demo run: %d launches into %s", len(launches), dest)
    return facts
