"""One interface for every probe: architecture, fit (K seed replicas), load, input checks.

An :class:`Estimator` is a probe's spec (:class:`~rightsize.probes.spec.ProbeSpec`, which
the caller resolves once from the probe's name: :func:`rightsize.probes.registry.spec`)
with the ``train`` config. ``fit`` trains K replicas and returns one :class:`FitResult` per
seed, each holding a :class:`~rightsize.probes.engine.predict.Probe` (predict / mae / attention,
saved and loaded by :mod:`rightsize.probes.engine.checkpoint`); train, evaluate, the
missing-modality test, the footprint and the seed replicas all go through these. A
gradient-trained probe runs the one loop (:func:`rightsize.probes.engine.loop.train`) with the
trainer of the accelerator that applies (:func:`rightsize.probes.accel.select`) or the
textbook trainer (autograd of the probe's textbook forward); a closed-form probe (ECG) is
fitted once, its replicas identical.

Nothing here imports torch: a probe whose trainer is numpy never loads it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from rightsize import console
from rightsize.errors import InputError
from rightsize.probes import accel
from rightsize.probes.engine.build import build_module
from rightsize.probes.engine.config import INPUT_OVERRIDES, SCHEDULE_KEYS, TrainConfig
from rightsize.probes.engine.data import Moments, SplitData, Standardizer, ecg_tokens
from rightsize.probes.engine.fitted import FitResult
from rightsize.probes.engine.loop import train as train_loop
from rightsize.probes.engine.predict import Probe
from rightsize.probes.engine.runlog import RunLog
from rightsize.probes.spec import ProbeSpec


@dataclass(frozen=True)
class FitJob:
    """Everything a replica trainer needs (what ``Accelerator.trainer`` receives)."""

    name: str
    arch: dict[str, Any]
    cfg: TrainConfig
    probe_config: Any                # the probe's block (``cfg.<probe>``), resolved for the inputs
    train: SplitData
    val: SplitData
    std: Standardizer
    moments: Moments
    seeds: list[int]
    device: str
    build: Callable[[dict[str, Any]], Any]   # arch -> the textbook torch module


class Estimator:
    """Probe ``probe`` (its spec) under ``cfg`` on ``device``."""

    def __init__(self, probe: ProbeSpec, cfg: TrainConfig, device: str = "cpu") -> None:
        self.spec, self.cfg, self.device = probe, cfg, device
        self.name = probe.name
        self.probe_config = self.spec.block(cfg)

    def config_for(self, n_tokens: int) -> Any:
        """The probe's block as it trains on ``n_tokens`` ECG tokens per subject
        (:meth:`rightsize.probes.spec.ProbeSpec.block`)."""
        return self.spec.block(self.cfg, n_tokens)

    def arch(self, data: SplitData) -> dict[str, Any]:
        """The JSON-able architecture of a model for ``data``'s input geometry: the probe,
        input dims, ECG tokens and their pooling, ``pca_rank``, and every key of the probe's
        block that shapes the model (not :data:`~rightsize.probes.engine.config.SCHEDULE_KEYS`)."""
        arch: dict[str, Any] = {"probe": self.name, "echo_dim": int(data.echo.shape[-1]),
                                "ecg_dim": int(data.ecg.shape[-1]),
                                "pca_rank": int(self.cfg.pca_rank)}
        n = ecg_tokens(data.ecg)
        block = self.config_for(n)
        for f in fields(block):
            if f.name not in SCHEDULE_KEYS + INPUT_OVERRIDES:
                arch[f.name] = getattr(block, f.name)
        arch["ecg_tokens"] = n
        arch["ecg_pooling"] = self.spec.ecg_pooling
        return arch

    def accelerator(self, arch: dict[str, Any] | None = None) -> accel.Accelerator | None:
        """The accelerator that trains (and predicts) this probe, or None (textbook).

        Without ``arch`` (before the data is read) the answer is the config's alone.
        """
        settings = self._settings(arch)
        return accel.select(self.spec.accelerators, settings, self.spec.defaults(),
                            on=self.cfg.accelerate)

    def skipped_accelerators(self, arch: dict[str, Any] | None = None) -> str:
        """Why none of the probe's declared accelerators applies ("" when one does, or the
        probe declares none): :func:`rightsize.probes.accel.skipped`."""
        settings = self._settings(arch)
        return accel.skipped(self.spec.accelerators, settings, self.spec.defaults(),
                             on=self.cfg.accelerate)

    def _settings(self, arch: dict[str, Any] | None) -> dict[str, Any]:
        """The block resolved for ``arch``'s ECG tokens (pooled without it), with ``arch``."""
        block = self.config_for(int((arch or {}).get("ecg_tokens", 1)))
        return {**asdict(block), **(arch or {})}

    @property
    def uses_torch(self) -> bool:
        """True when training or predicting this probe loads torch (False: numpy only)."""
        if self.spec.closed_form:
            return False
        acc = self.accelerator()
        return acc is None or acc.uses_torch

    def build(self, arch: dict[str, Any]) -> Any:
        """The textbook torch module for ``arch`` (fresh parameters)."""
        return build_module(self.spec, arch)

    def fit(self, train: SplitData, val: SplitData, seeds: list[int],
            runlog: RunLog | None = None, count_flops: bool = False) -> list[FitResult]:
        """One replica per seed, trained on ``train``, each at its best ``val`` epoch;
        ``runlog`` receives replica 0's epochs. ``count_flops``: each fit's ``flops`` holds
        the FLOPs the loop executed (a torch-trained probe; :mod:`.flops`)."""
        std = Standardizer.fit(train.lvef)
        if self.spec.closed_form:
            fit = self.spec.closed_form()(self, train, val, std, runlog)
            return [fit] * len(seeds)
        arch = self.arch(train)
        moments = Moments.fit(train, self.cfg.pca_rank, ecg=self.spec.uses_ecg,
                              threads=self.cfg.threads)
        acc = self.accelerator(arch)
        skipped = self.skipped_accelerators(arch)
        if skipped:
            say = console.info if not self.cfg.accelerate else console.warn
            say(f"{self.name}: no accelerator, training autograd of the textbook forward "
                f"({skipped})")
        block = self.config_for(arch["ecg_tokens"])
        # the batch this probe steps on at this input (train.batch_size, or x crops)
        cfg = replace(self.cfg, batch_size=self.cfg.batch(self.name, arch["ecg_tokens"]))
        job = FitJob(self.name, arch, cfg, block, train, val, std, moments, seeds,
                     self.device, self.build)
        with accel.use(self.cfg.accelerate), self._runtime(acc):
            if acc is not None:
                make_trainer = acc.trainer
            else:
                from rightsize.probes.engine.torch_replicas import textbook_trainer

                make_trainer = textbook_trainer
            trainer = make_trainer(job)
            t_loop = time.perf_counter()
            reps = train_loop(trainer, len(train), cfg.batch_size, block.epochs,
                              self.name, seeds, runlog)
            t_loop = time.perf_counter() - t_loop
            del trainer       # its batches and optimizer state, before predicting the splits
            route = _gemm_route()
            flops = None
            if count_flops and (acc is None or acc.uses_torch):
                from rightsize.probes.engine.flops import loop_flops

                counted = loop_flops(make_trainer, job, cfg.batch_size, block.epochs)
                flops = None if counted is None else {**counted, "loop_s": t_loop}
            out = []
            for rep in reps:
                probe = Probe(self.name, rep.model, std)
                out.append(FitResult(probe=probe, arch=arch, best_epoch=rep.best_epoch,
                                     epochs=block.epochs, steps=rep.steps,
                                     train_loss=rep.train_loss, val_loss=rep.val_loss,
                                     val_mae=probe.mae(val), train_mae=probe.mae(train),
                                     extra={"accelerator": acc.name if acc else "none",
                                            **({"accelerator_skipped": skipped}
                                               if skipped else {}),
                                            **({"gemm_route": route} if route else {})},
                                     flops=flops))
        return out

    @contextlib.contextmanager
    def _runtime(self, acc: accel.Accelerator | None) -> Iterator[None]:
        """torch seeded and at ``train.threads`` threads, or numpy's BLAS at that many."""
        if acc is None or acc.uses_torch:
            from rightsize.probes.engine.torch_replicas import torch_runtime

            with torch_runtime(self.cfg.seed, self.cfg.threads, self.device):
                yield
        else:
            from threadpoolctl import threadpool_limits

            with threadpool_limits(limits=self.cfg.threads):
                yield


def check_inputs(arch: dict[str, Any], data: SplitData | Any, where: str, manifest: str) -> None:
    """``InputError`` unless a model with ``arch`` (saved in ``where``) reads ``data``'s
    inputs: the same echo and ECG dimensions and the same number of ECG tokens."""
    geo = (arch.get("echo_dim"), arch.get("ecg_dim"))
    have = (int(data.echo.shape[-1]), int(data.ecg.shape[-1]))
    if geo != have:
        raise InputError(f"{where}: trained on echo/ECG dims {geo}, manifest {manifest} "
                         f"has {have}")
    trained, given = int(arch.get("ecg_tokens", 1)), ecg_tokens(data.ecg)
    if trained != given:
        raise InputError(f"{where}: trained at {trained} ECG token(s) per subject, manifest "
                         f"{manifest} has {given} (retrain on this manifest, or evaluate on "
                         f"one with {trained})")


def _gemm_route() -> str | None:
    """The fp32 product route this process's training took (``onednn`` or ``mkl``, at the
    training threads: :mod:`rightsize.probes.accel.gemm_route`), or None where no torch
    product could go through it."""
    import sys

    gemm = sys.modules.get("rightsize.probes.accel.gemm")
    return None if gemm is None else gemm.route()
