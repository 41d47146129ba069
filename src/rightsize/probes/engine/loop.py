"""The one training loop: K seed replicas of a probe, each keeping its best-validation epoch.

Every gradient-trained probe (echo, concat, fused) trains here, K = 1 as well as the
default pipeline's K = ``train.seeds``; the closed-form ECG probe has no loop. What a step
computes is the trainer's business: the textbook trainer (autograd of the probe's textbook
forward, :class:`rightsize.probes.engine.torch_replicas.ReplicaByReplica`) or an accelerator's
(:mod:`rightsize.probes.accel`). The loop owns what every probe shares: epochs of
``ceil(n / batch_size)`` steps over a per-replica permutation, the step wall times,
replica 0's curves and events (:class:`~rightsize.probes.engine.runlog.RunLog`), and the choice
of each replica's best epoch (lowest validation MSE, the first on ties).

A replica's numbers do not depend on its companions: replica ``k`` draws its own
permutations, dropout masks and initial weights from its own seed, so it repeats a single
run with that seed bit for bit (the tests check it).

This module imports neither numpy's BLAS-heavy code nor torch.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any, Protocol

from rightsize.errors import InputError
from rightsize.probes.engine.runlog import RunLog

log = logging.getLogger(__name__)


class Trainer(Protocol):
    """K replicas of one probe that step together (what :func:`train` drives)."""

    def start_epoch(self) -> None:
        """Train mode; draw each replica's permutation of the train rows."""

    def step(self, j: int, rows: slice) -> None:
        """Optimizer step ``j`` of the epoch: every replica on ``rows`` of its permutation."""

    def end_epoch(self) -> tuple[list[float], list[float]]:
        """Per replica the epoch's train MSE (row-weighted over steps); replica 0's step losses."""

    def val_losses(self) -> list[float]:
        """Per replica the validation MSE of the current weights (eval mode)."""

    def keep(self, replicas: list[int]) -> None:
        """Remember the current weights of ``replicas`` as their best so far."""

    def finish(self) -> list[Any]:
        """Each replica's fitted model, holding its best weights."""


@dataclass
class Replica:
    """One replica's model after :func:`train`, and how it got there."""

    model: Any
    best_epoch: int
    steps: int
    train_loss: list[float]          # per epoch, standardized MSE
    val_loss: list[float]


def train(trainer: Trainer, n: int, batch_size: int, epochs: int, label: str,
          seeds: list[int], runlog: RunLog | None = None) -> list[Replica]:
    """Run ``epochs`` epochs of ``trainer`` over ``n`` train rows; log replica 0 to ``runlog``.

    Raises ``InputError`` naming the probe and seed when a replica's validation loss was
    never finite (diverged).
    """
    k = len(seeds)
    n_steps = math.ceil(n / batch_size)
    best_val, best_epoch = [math.inf] * k, [0] * k
    curves: list[tuple[list[float], list[float]]] = [([], []) for _ in range(k)]
    step = 0
    for epoch in range(1, epochs + 1):
        trainer.start_epoch()
        walls: list[float] = []
        for j in range(n_steps):
            trainer.step(j, slice(j * batch_size, (j + 1) * batch_size))
            walls.append(time.time())
        train_loss, steps0 = trainer.end_epoch()
        val_loss = trainer.val_losses()
        for r in range(k):
            curves[r][0].append(train_loss[r])
            curves[r][1].append(val_loss[r])
        if runlog is not None:
            runlog.epoch(epoch, step + 1, steps0, walls, train_loss[0], val_loss[0], time.time())
        step += n_steps
        improved = [r for r in range(k) if val_loss[r] < best_val[r]]
        if improved:
            trainer.keep(improved)
            for r in improved:
                best_val[r], best_epoch[r] = val_loss[r], epoch
        log.debug("%s epoch %d train %.4f val %.4f", label, epoch, train_loss[0], val_loss[0])
    for r, seed in enumerate(seeds):
        if best_epoch[r] == 0:
            raise InputError(f"{label} (seed {seed}): validation loss was never finite "
                             "(diverged); lower train.lr")
    return [Replica(model=m, best_epoch=best_epoch[r], steps=step, train_loss=curves[r][0],
                    val_loss=curves[r][1]) for r, m in enumerate(trainer.finish())]
