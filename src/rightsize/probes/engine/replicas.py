"""Seed replicas of a probe: their seeds and their checkpoint folders.

``train.seeds: K`` trains K replicas of each probe from seeds ``train.seed ...
train.seed + K - 1`` (:func:`seed_list`), together, in the one loop
(:mod:`rightsize.probes.engine.loop`; K = 1 is the same path). Replica 0 is saved in the
model folder itself, replicas 1 ... K-1 under ``replicas/r<k>`` (:func:`save_replicas`).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from rightsize.probes.engine.config import TrainConfig


def seed_list(cfg: TrainConfig) -> list[int]:
    """The replicas' seeds: ``train.seed + k`` for ``k < train.seeds``."""
    return [cfg.seed + k for k in range(cfg.seeds)]


REPLICAS_DIR = "replicas"


def replica_dirs(model_dir: str | Path) -> list[Path]:
    """``<model_dir>/replicas/r<k>`` of replicas 1 ... K-1, in order (replica 0 is
    ``model_dir`` itself)."""
    root = Path(model_dir) / REPLICAS_DIR
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and p.name[1:].isdigit()]
    return sorted(found, key=lambda p: int(p.name[1:]))


def save_replicas(model_dir: str | Path, fits: list[Any], seeds: list[int],
                  info: dict[str, Any]) -> None:
    """Checkpoints of replicas 1 ... K-1 under ``<model_dir>/replicas/r<k>`` (weights +
    sidecar, as replica 0's); stale replica directories from a larger K are removed."""
    from rightsize.probes.engine.checkpoint import save_checkpoint

    root = Path(model_dir) / REPLICAS_DIR
    for stale in replica_dirs(model_dir):
        if int(stale.name[1:]) >= len(fits):
            shutil.rmtree(stale)
    for k in range(1, len(fits)):
        fit = fits[k]
        save_checkpoint(root / f"r{k}", fit.probe, fit.arch,
                        {**info, "seed": seeds[k], "replica": k, "best_epoch": fit.best_epoch,
                         "epochs": fit.epochs, "val_mae": fit.val_mae,
                         "train_mae": fit.train_mae})
    if len(fits) <= 1 and root.is_dir() and not any(root.iterdir()):
        root.rmdir()
