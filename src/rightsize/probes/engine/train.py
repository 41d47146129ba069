"""Train a probe on cached embeddings: its seed replicas, each at its best-validation epoch.

A thin entry to :class:`rightsize.probes.engine.estimator.Estimator` for a cohort's arrays: the
train and validation splits are sliced once, and the probe's estimator fits every replica
through the one loop (:mod:`rightsize.probes.engine.loop`; the ECG probe is closed-form). The
loss is MSE on the train-standardized LVEF; the epoch with the lowest validation MSE is
kept. ``train_probe`` is one replica (seed ``train.seed``); :func:`train_seeds` all of
``train.seeds`` (what ``rightsize train`` and ``dvc repro`` run).
"""

from __future__ import annotations

import dataclasses

from rightsize.cohort.arrays import CohortArrays
from rightsize.probes.engine.config import TrainConfig
from rightsize.probes.engine.data import split_data
from rightsize.probes.engine.estimator import Estimator, FitResult
from rightsize.probes.engine.replicas import seed_list
from rightsize.probes.engine.runlog import RunLog
from rightsize.probes.spec import ProbeSpec

__all__ = ["FitResult", "resolve_device", "train_probe", "train_seeds"]


def train_seeds(probe: ProbeSpec, arrays: CohortArrays, cfg: TrainConfig, device: str = "cpu",
                runlog: RunLog | None = None, count_flops: bool = False) -> list[FitResult]:
    """Probe ``probe`` (its spec: :func:`rightsize.probes.registry.spec` of its name):
    one :class:`FitResult` per seed ``train.seed ... train.seed + train.seeds - 1``.

    ``runlog`` receives replica 0's epochs (its per-step wall times are the steps of all
    replicas together); ``count_flops``: :meth:`Estimator.fit`.
    """
    est = Estimator(probe, cfg, device)
    return est.fit(split_data(arrays, "train"), split_data(arrays, "val"), seed_list(cfg),
                   runlog, count_flops)


def train_probe(probe: ProbeSpec, arrays: CohortArrays, cfg: TrainConfig, device: str = "cpu",
                runlog: RunLog | None = None) -> FitResult:
    """Probe ``probe`` with seed ``train.seed`` alone (one replica)."""
    return train_seeds(probe, arrays, dataclasses.replace(cfg, seeds=1), device, runlog)[0]


def resolve_device(name: str) -> str:
    """``cpu``/``cuda``/``auto`` -> a torch device string (InputError if CUDA is absent)."""
    from rightsize.probes.engine.torch_replicas import resolve_device as resolve

    return resolve(name)
