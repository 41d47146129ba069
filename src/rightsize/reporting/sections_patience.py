"""Epochs that mattered: how much of each probe's training came after its best val epoch, and
what early stopping with a patience of 3 / 5 / 10 epochs would have saved.

Measured from the committed curves (``metrics/curves/<probe>.csv``: ``epoch``, ``val_loss``;
with a ``seed`` column, the first seed's rows). Early stopping with patience ``p`` stops after
the first epoch that is ``p`` epochs past the best so far and keeps that best; it saves the
epochs after it. Seconds saved use the probe's measured training seconds per epoch
(``wall_clock_s.train / epochs`` of ``metrics/eval/<probe>.json``) where present. Training
itself has no patience setting: these are what-ifs read off the curve, not runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rightsize import fmt
from rightsize.fmt import num
from rightsize.reporting.doc import Block, Heading, Note, table
from rightsize.reporting.sources import ReportInputs

PATIENCES = (3, 5, 10)


@dataclass(frozen=True)
class StopAt:
    """Early stopping with one patience on one curve."""

    patience: int
    stop_epoch: int           # last epoch run
    saved_epochs: int
    kept_best_epoch: int      # best epoch among those run
    kept_best_val: float


@dataclass(frozen=True)
class CurveFacts:
    """Best epoch and the early-stopping what-ifs of one val curve."""

    epochs: int
    best_epoch: int
    best_val: float
    stops: tuple[StopAt, ...]

    @property
    def after_best(self) -> int:
        """Epochs run after the best one."""
        return self.epochs - self.best_epoch


def curve_facts(data: dict[str, Any] | None) -> CurveFacts | None:
    """Facts of one curve's columns (``None`` without a finite val loss)."""
    if not isinstance(data, dict) or "epoch" not in data or "val_loss" not in data:
        return None
    epoch = np.asarray(data["epoch"], np.float64)
    val = np.asarray(data["val_loss"], np.float64)
    if "seed" in data:
        seed = np.asarray(data["seed"], np.float64)
        first = seed[np.isfinite(seed)]
        if first.size:
            keep = seed == first[0]
            epoch, val = epoch[keep], val[keep]
    ok = np.isfinite(epoch) & np.isfinite(val)
    epoch, val = epoch[ok], val[ok]
    if epoch.size == 0:
        return None
    order = np.argsort(epoch, kind="stable")
    epoch, val = epoch[order].astype(np.int64), val[order]
    k = int(np.argmin(val))
    stops = []
    for p in PATIENCES:
        best_i, stop_i = 0, len(val) - 1
        for i in range(1, len(val)):
            if val[i] < val[best_i]:
                best_i = i
            elif epoch[i] - epoch[best_i] >= p:
                stop_i = i
                break
        run_best = int(np.argmin(val[:stop_i + 1]))
        stops.append(StopAt(p, int(epoch[stop_i]), int(epoch[-1] - epoch[stop_i]),
                            int(epoch[run_best]), float(val[run_best])))
    return CurveFacts(int(epoch[-1]), int(epoch[k]), float(val[k]), tuple(stops))


def patience_blocks(inputs: ReportInputs) -> list[Block]:
    """The 'epochs that mattered' table for every probe with a val curve."""
    rows = []
    for p in inputs.probes:
        src = inputs.curves[p]
        facts = curve_facts(src.data) if src.ok else None
        if facts is None or facts.epochs <= 1:
            continue
        ev = inputs.evals[p]
        train_s = num(ev.data, "wall_clock_s.train") if ev.ok else None
        per_epoch = train_s / facts.epochs if train_s is not None else None
        row = [p, f"{facts.best_epoch} of {facts.epochs}",
               f"{facts.after_best} ({100 * facts.after_best / facts.epochs:.0f} %)"]
        for s in facts.stops:
            saved = f"{s.saved_epochs} ep"
            if per_epoch is not None:
                saved += f", {fmt.seconds(s.saved_epochs * per_epoch)}"
            if s.kept_best_epoch != facts.best_epoch:
                saved += (f" (keeps epoch {s.kept_best_epoch}: val "
                          f"{fmt.number(s.kept_best_val, 4)} vs {fmt.number(facts.best_val, 4)})")
            row.append(saved)
        rows.append(row)
    blocks: list[Block] = [Heading("Epochs that mattered", 3, "probe-patience")]
    if not rows:
        return blocks + [Note("No probe has a validation curve of more than one epoch.")]
    header = ["probe", "best epoch", "epochs after best",
              *(f"patience {p}: saved" for p in PATIENCES)]
    caption = ("Read off each probe's val-loss curve (metrics/curves/<probe>.csv). Early "
               "stopping with patience p stops p epochs after the best so far and keeps it; "
               "seconds at the measured training seconds per epoch (train wall-clock / "
               "epochs). What-ifs from the curve: training has no patience setting.")
    return blocks + [table(header, rows, caption)]
