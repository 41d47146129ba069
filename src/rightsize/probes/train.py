"""Train one probe on cached embeddings and keep its best-validation epoch.

Torch probes: the whole train split lives in tensors on the device, already through the
probe's fixed normalization (``encode``: rank-``pca_rank`` coordinates); each epoch draws one
``torch.randperm`` from a seeded generator, gathers the split in that order once, and every
batch is a row slice of the result (no per-row Python, no DataLoader). The loss is MSE on
the train-standardized LVEF; the epoch with the lowest validation MSE is kept. Step losses
stay on the device and are read once per epoch; each step's wall time is recorded as it
happens, for the event log.

The ``ecg`` probe is ridge + L2 logistic regression (:mod:`rightsize.probes.glm`): one "epoch".
The ``echo`` probe trains the same way as the torch probes but in numpy
(:mod:`rightsize.probes.attentive`): neither probe's process imports torch.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rightsize.cohort.arrays import CohortArrays
from rightsize.errors import InputError
from rightsize.probes.config import TrainConfig, arch_of, check_probe
from rightsize.probes.data import Moments, SplitData, Standardizer, split_data
from rightsize.probes.linear import fit_linear
from rightsize.probes.predict import Probe, encode_split, predict_encoded_z
from rightsize.probes.runlog import RunLog

log = logging.getLogger(__name__)


@dataclass
class FitResult:
    """A trained probe and how it got there."""

    probe: Probe
    arch: dict[str, Any]
    best_epoch: int
    epochs: int
    steps: int                       # optimizer steps taken (1 for ecg)
    train_loss: list[float]          # per epoch, standardized MSE
    val_loss: list[float]
    val_mae: float                   # best epoch, percent
    train_mae: float                 # best epoch, percent
    extra: dict[str, Any] = field(default_factory=dict)


def resolve_device(name: str) -> str:
    """``cpu``/``cuda``/``auto`` -> a torch device string (InputError if CUDA is absent)."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"device {name!r} requested but CUDA is not available")
    if name not in ("cpu",) and not name.startswith("cuda"):
        raise InputError(f"unknown device {name!r} (use cpu, cuda or auto)")
    return name


@contextlib.contextmanager
def torch_runtime(seed: int, threads: int, device: str) -> Iterator[None]:
    """Seed torch and set its thread count (and CUDA determinism); restore afterwards."""
    import torch

    prev_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    # The CPU kernels used here are deterministic for a fixed thread count (the tests check
    # it); torch.use_deterministic_algorithms costs a 2 s import, so only CUDA turns it on,
    # as warn-only (strict mode needs CUBLAS_WORKSPACE_CONFIG set before CUDA starts).
    cuda = device.startswith("cuda")
    if cuda:
        prev_det = torch.are_deterministic_algorithms_enabled()
        prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
        torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.set_num_threads(prev_threads)
        if cuda:
            torch.use_deterministic_algorithms(prev_det, warn_only=prev_warn)


def train_probe(name: str, arrays: CohortArrays, cfg: TrainConfig, device: str = "cpu",
                runlog: RunLog | None = None) -> FitResult:
    """Train probe ``name`` on the train split, select on val; log epochs to ``runlog``."""
    check_probe(name)
    train = split_data(arrays, "train")
    val = split_data(arrays, "val")
    std = Standardizer.fit(train.lvef)
    if name == "ecg":
        return _fit_ecg(train, val, std, cfg, runlog)
    if name == "echo":
        return fit_echo(train, val, std, cfg, [cfg.seed], runlog)[0]
    with torch_runtime(cfg.seed, cfg.threads, device):
        return _fit_torch(name, train, val, std, cfg, device, runlog)


def _fit_ecg(train: SplitData, val: SplitData, std: Standardizer, cfg: TrainConfig,
             runlog: RunLog | None) -> FitResult:
    model, grid = fit_linear(train, val, std, cfg.ecg, threads=cfg.threads)
    t1 = time.time()
    probe = Probe("ecg", model, std)
    train_loss = float(np.mean((model.predict_z(train) - std.forward(train.lvef)) ** 2))
    val_loss = float(np.mean((model.predict_z(val) - std.forward(val.lvef)) ** 2))
    if runlog is not None:
        runlog.epoch(1, 1, [train_loss], [t1], train_loss, val_loss, time.time())
    arch = {"probe": "ecg", "echo_dim": int(train.echo.shape[-1]),
            "ecg_dim": int(train.ecg.shape[-1]), "alpha": grid["alpha"], "C": grid["C"]}
    return FitResult(probe=probe, arch=arch, best_epoch=1, epochs=1, steps=1,
                     train_loss=[train_loss], val_loss=[val_loss], val_mae=probe.mae(val),
                     train_mae=probe.mae(train),
                     extra={"val_mse_by_alpha": grid["val_mse"],
                            "val_logloss_by_C": grid["val_logloss"]})


def fit_echo(train: SplitData, val: SplitData, std: Standardizer, cfg: TrainConfig,
             seeds: list[int], runlog: RunLog | None = None) -> list[FitResult]:
    """The numpy echo probe, one replica per seed (the input moments fitted once).

    Replica ``k`` repeats a single run with ``train.seed = seeds[k]`` bit for bit; ``runlog``
    receives replica 0's epochs.
    """
    from threadpoolctl import threadpool_limits

    from rightsize.probes.attentive import fit_attentive

    arch = arch_of("echo", cfg, train.echo.shape[-1], train.ecg.shape[-1])
    moments = Moments.fit(train, cfg.pca_rank, ecg=False, threads=cfg.threads)
    fits = []
    with threadpool_limits(limits=cfg.threads):
        for k, seed in enumerate(seeds):
            res = fit_attentive(train, val, std, moments, cfg.echo.epochs, cfg.batch_size,
                                cfg.lr, cfg.weight_decay, seed, runlog if k == 0 else None)
            probe = Probe("echo", res["model"], std)
            fits.append(FitResult(probe=probe, arch=arch, best_epoch=res["best_epoch"],
                                  epochs=cfg.echo.epochs, steps=res["steps"],
                                  train_loss=res["train_loss"], val_loss=res["val_loss"],
                                  val_mae=probe.mae(val), train_mae=probe.mae(train)))
    return fits


def _modality_dropout(batch: dict[str, Any], p: float, gen: Any) -> dict[str, Any]:
    """Hide echo in a ``p`` fraction of rows and ECG in another (never both)."""
    import torch

    u = torch.rand(batch["has_ecg"].shape[0], generator=gen).to(batch["has_ecg"].device)
    drop_echo = u < p
    drop_ecg = (u >= p) & (u < 2 * p)
    batch["clip_mask"] = batch["clip_mask"] & ~drop_echo.unsqueeze(1)
    batch["has_ecg"] = batch["has_ecg"] & ~drop_ecg
    return batch


def _fit_torch(name: str, train: SplitData, val: SplitData, std: Standardizer,
               cfg: TrainConfig, device: str, runlog: RunLog | None) -> FitResult:
    import torch

    from rightsize.probes.adamw import FusedAdamW
    from rightsize.probes.models import build_model

    arch = arch_of(name, cfg, train.echo.shape[-1], train.ecg.shape[-1])
    model = build_model(arch)
    model.set_moments(Moments.fit(train, cfg.pca_rank, threads=cfg.threads))
    model.to(device)
    gen = torch.Generator().manual_seed(cfg.seed)
    p_drop = cfg.fused.modality_dropout if name == "fused" else 0.0
    # The normalization and PCA projection are fixed buffers: apply them once per split and
    # batch the (m, c, rank) coordinates instead of the raw (m, c, dim) embeddings.
    tr = encode_split(model, train, device)
    tr_val = encode_split(model, val, device)
    y = torch.from_numpy(std.forward(train.lvef).astype(np.float32)).to(device)
    y_val = std.forward(val.lvef)
    probe = Probe(name, model, std, device)
    # torch.optim.AdamW(fused=True)'s kernel, without torch.optim's 1.2 s import of dynamo
    opt = FusedAdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    n, bs, epochs = len(train), cfg.batch_size, cfg.epochs(name)
    n_steps = math.ceil(n / bs)
    sizes = torch.tensor([min(bs, n - k * bs) for k in range(n_steps)], dtype=torch.float64)
    step_loss = torch.empty(n_steps, device=device)
    best = (math.inf, 0, None)
    train_curve: list[float] = []
    val_curve: list[float] = []
    step = 0
    for epoch in range(1, epochs + 1):
        model.train()
        perm = torch.randperm(n, generator=gen).to(device)
        # one gather per epoch; each batch is then a contiguous row slice (a view)
        shuffled = {key: t[perm] for key, t in tr.items()}
        y_shuffled = y[perm]
        walls: list[float] = []
        for k in range(n_steps):
            batch = {key: t[k * bs:(k + 1) * bs] for key, t in shuffled.items()}
            if p_drop > 0:
                batch = _modality_dropout(batch, p_drop, gen)
            # the fused probe's step updates each weight matrix as its gradient is ready;
            # step() updates the rest (all parameters for the other probes)
            step_loss[k] = model.loss_backward(batch, y_shuffled[k * bs:(k + 1) * bs],
                                               opt.update)
            opt.step()
            walls.append(time.time())
        losses = step_loss.to("cpu", torch.float64)
        train_loss = float((losses * sizes).sum() / n)
        val_loss = float(np.mean((predict_encoded_z(model, tr_val) - y_val) ** 2))
        train_curve.append(train_loss)
        val_curve.append(val_loss)
        if runlog is not None:
            runlog.epoch(epoch, step + 1, losses.tolist(), walls, train_loss, val_loss,
                         time.time())
        step += n_steps
        if val_loss < best[0]:
            # copied into the same tensors each time: no fresh 43 MB per improvement at d=1024
            state = best[2] or {k: torch.empty_like(v) for k, v in model.state_dict().items()}
            for k, v in model.state_dict().items():
                state[k].copy_(v)
            best = (val_loss, epoch, state)
        log.debug("%s epoch %d train %.4f val %.4f", name, epoch, train_loss, val_loss)
    if best[2] is None:
        raise InputError(f"{name}: validation loss was never finite (diverged); lower train.lr")
    model.load_state_dict(best[2])
    model.eval()
    return FitResult(probe=probe, arch=arch, best_epoch=best[1], epochs=epochs, steps=step,
                     train_loss=train_curve, val_loss=val_curve, val_mae=probe.mae(val),
                     train_mae=probe.mae(train))
