"""Train K replicas of a torch probe (concat, fused) together, one per seed, each keeping its
best epoch (the numpy echo probe trains its replicas in turn: ``train.fit_echo``).

Replica ``k`` is the probe built under ``torch.manual_seed(seeds[k])`` (the initial weights
a single run with that seed starts from); its rows are shuffled, and its modality-dropout
masks drawn, by its own generator seeded with ``seeds[k]``, as a single run's are. The
input moments and the encoded splits depend on the train split only and are computed once
for all replicas; every epoch gathers all replicas' shuffled rows at once, and one fused
AdamW call updates every replica's parameters (AdamW is elementwise: each replica's update
is its own). Two ways to take a step, chosen per probe by measured speed:

* :class:`Stacked` (concat): parameters stacked on a leading replica axis, one
  forward (:mod:`rightsize.probes.replica_forward`) and one autograd backward for all
  replicas: the per-op cost of this small model is paid once per step, not K times
  (5 concat replicas train in ~3x one replica's time).
* :class:`Lockstep` (fused): each replica's own hand-written step
  (:mod:`rightsize.probes.fused_step`) in turn, with its own head-dropout random stream.
  The stacked autograd step measured 60 ms for 5 fused replicas against 5 x 7.7 ms for the
  hand-written one (fusion_dim 256, benchmark machine): the fused step is arithmetic-bound
  and its hand-written form does less of it. Each replica then repeats a single run with
  its seed bit for bit.

Each replica ends as an ordinary single probe (its best-validation-epoch weights loaded
into its own module), so prediction, evaluation and checkpoints are unchanged.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch

from rightsize.errors import InputError
from rightsize.probes.adamw import FusedAdamW
from rightsize.probes.config import TrainConfig, arch_of
from rightsize.probes.data import Moments, SplitData, Standardizer
from rightsize.probes.models import Update, build_model
from rightsize.probes.predict import PREDICT_BATCH, Probe, encode_split, predict_encoded_z
from rightsize.probes.replica_forward import FORWARD, join_params, split_params
from rightsize.probes.runlog import RunLog

LOCKSTEP = ("fused",)
Batch = dict[str, torch.Tensor]


class Stacked:
    """All replicas' parameters stacked (K, ...): one forward and backward per step."""

    def __init__(self, name: str, models: list[torch.nn.Module], seeds: list[int],
                 gens: list[torch.Generator], rng_states: list[torch.Tensor]) -> None:
        self.name, self.models, self.base = name, models, models[0]
        self.names = [n for n, p in self.base.named_parameters() if p.requires_grad]
        whole = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
                 for n in self.names}
        self.params = {n: t.contiguous().requires_grad_()
                       for n, t in split_params(name, self.base, whole).items()}
        self.forward = FORWARD[name]
        self.gens = gens
        mods = dict(self.base.named_modules())
        drops = [m.p for m in mods.values() if isinstance(m, torch.nn.Dropout)]
        self.p_drop = float(drops[0]) if drops else 0.0

    def tensors(self) -> list[torch.Tensor]:
        """What the optimizer updates."""
        return list(self.params.values())

    def _noise(self, shape: tuple[int, ...]) -> torch.Tensor:
        p = self.p_drop
        draws = [torch.empty(shape[1:]).bernoulli_(1 - p, generator=g) for g in self.gens]
        return torch.stack(draws).div_(1 - p).to(next(iter(self.params.values())).device)

    def step(self, batch: Batch, y: torch.Tensor, update: Update) -> torch.Tensor:
        """Set every replica's gradients; return the (K,) losses. (``update`` is not used.)"""
        for p in self.params.values():
            p.grad = None
        pred = self.forward(self.base, self.params, **batch,
                            drop=self._noise if self.p_drop > 0 else None)
        per_rep = ((pred - y) ** 2).mean(1)
        per_rep.sum().backward()
        return per_rep.detach()

    @torch.no_grad()
    def val_loss(self, encoded: Batch, y_val: np.ndarray) -> torch.Tensor:
        """(K,) float64 validation MSE (no dropout)."""
        k, preds = len(self.models), []
        for lo in range(0, y_val.shape[0], PREDICT_BATCH):
            part = {key: t[lo:lo + PREDICT_BATCH] for key, t in encoded.items()}
            part = {key: t.unsqueeze(0).expand(k, *t.shape) for key, t in part.items()}
            preds.append(self.forward(self.base, self.params, **part, drop=None))
        pred = torch.cat(preds, dim=1).to("cpu", torch.float64)
        return ((pred - torch.from_numpy(y_val)) ** 2).mean(1)

    def snapshot(self) -> dict[str, torch.Tensor]:
        """Parameters by name, (K, ...) each (views; copy before keeping)."""
        return {k: v.detach() for k, v in self.params.items()}

    def finish(self, best: dict[str, torch.Tensor]) -> None:
        """Load replica k's best parameters into ``models[k]``."""
        best = join_params(self.name, best)
        for r, model in enumerate(self.models):
            params = dict(model.named_parameters())
            with torch.no_grad():
                for key in self.names:
                    params[key].copy_(best[key][r])


class Lockstep:
    """Each replica's own ``loss_backward`` in turn, with its own global-RNG stream."""

    def __init__(self, name: str, models: list[torch.nn.Module], seeds: list[int],
                 gens: list[torch.Generator], rng_states: list[torch.Tensor]) -> None:
        self.models = models
        self.names = [n for n, p in models[0].named_parameters() if p.requires_grad]
        # head dropout draws from the global generator, as in a single run: each replica
        # carries its own state on from where its model's initialization left it
        self.rng = list(rng_states)

    def tensors(self) -> list[torch.Tensor]:
        """What the optimizer updates: every replica's parameters, replica by replica."""
        return [dict(m.named_parameters())[n] for m in self.models for n in self.names]

    def step(self, batch: Batch, y: torch.Tensor, update: Update) -> torch.Tensor:
        """Set every replica's gradients, or hand them to ``update`` as each replica's
        ``loss_backward`` does; return the (K,) losses."""
        losses = []
        for r, model in enumerate(self.models):
            torch.set_rng_state(self.rng[r])
            losses.append(model.loss_backward({k: t[r] for k, t in batch.items()}, y[r],
                                              update))
            self.rng[r] = torch.get_rng_state()
        return torch.stack(losses)

    def val_loss(self, encoded: Batch, y_val: np.ndarray) -> torch.Tensor:
        """(K,) float64 validation MSE (eval mode), as a single run computes it."""
        return torch.tensor([float(np.mean((predict_encoded_z(m, encoded) - y_val) ** 2))
                             for m in self.models], dtype=torch.float64)

    def snapshot(self) -> dict[str, torch.Tensor]:
        """Parameters by name, stacked (K, ...) (a copy)."""
        return {n: torch.stack([dict(m.named_parameters())[n].detach() for m in self.models])
                for n in self.names}

    def finish(self, best: dict[str, torch.Tensor]) -> None:
        """Load replica k's best parameters into ``models[k]``."""
        for r, model in enumerate(self.models):
            params = dict(model.named_parameters())
            with torch.no_grad():
                for key in self.names:
                    params[key].copy_(best[key][r])


def fit_replicas(name: str, train: SplitData, val: SplitData, std: Standardizer,
                 cfg: TrainConfig, seeds: list[int], device: str,
                 runlog: RunLog | None) -> list[dict[str, Any]]:
    """Train one replica of torch probe ``name`` per seed; log replica 0 to ``runlog``.

    Returns per replica ``{probe, arch, best_epoch, epochs, steps, train_loss, val_loss}``
    (curves per epoch, standardized MSE) with ``probe`` holding its best epoch's weights.
    """
    arch = arch_of(name, cfg, train.echo.shape[-1], train.ecg.shape[-1])
    moments = Moments.fit(train, cfg.pca_rank, threads=cfg.threads)
    models, rng_states = [], []
    for s in seeds:
        torch.manual_seed(s)
        model = build_model(arch)
        rng_states.append(torch.get_rng_state())
        model.set_moments(moments)
        models.append(model.to(device))
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    engine_cls = Lockstep if name in LOCKSTEP else Stacked
    engine = engine_cls(name, models, seeds, gens, rng_states)
    tr = encode_split(models[0], train, device)        # buffers only: shared by all replicas
    tr_val = encode_split(models[0], val, device)
    y = torch.from_numpy(std.forward(train.lvef).astype(np.float32)).to(device)
    y_val = std.forward(val.lvef)
    opt = FusedAdamW(engine.tensors(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    p_mod = cfg.fused.modality_dropout if name == "fused" else 0.0

    k_rep = len(seeds)
    n, bs, epochs = len(train), cfg.batch_size, cfg.epochs(name)
    n_steps = math.ceil(n / bs)
    sizes = torch.tensor([min(bs, n - j * bs) for j in range(n_steps)], dtype=torch.float64)
    step_loss = torch.empty(n_steps, k_rep, device=device)
    best_val = torch.full((k_rep,), math.inf, dtype=torch.float64)
    best_epoch = [0] * k_rep
    best = {key: v.clone() for key, v in engine.snapshot().items()}
    curves: list[tuple[list[float], list[float]]] = [([], []) for _ in seeds]
    step = 0
    for epoch in range(1, epochs + 1):
        for m in models:
            m.train()
        perms = torch.stack([torch.randperm(n, generator=g) for g in gens]).to(device)
        shuffled = {key: t[perms] for key, t in tr.items()}                 # (K, n, ...)
        y_shuffled = y[perms]
        walls: list[float] = []
        for j in range(n_steps):
            batch = {key: t[:, j * bs:(j + 1) * bs] for key, t in shuffled.items()}
            if p_mod > 0:
                batch = _modality_dropout(batch, p_mod, gens)
            step_loss[j] = engine.step(batch, y_shuffled[:, j * bs:(j + 1) * bs], opt.update)
            opt.step()
            walls.append(time.time())
        losses = step_loss.to("cpu", torch.float64)                        # (steps, K)
        train_loss = [float((losses[:, r] * sizes).sum() / n) for r in range(k_rep)]
        val_loss = engine.val_loss(tr_val, y_val)
        for r in range(k_rep):
            curves[r][0].append(train_loss[r])
            curves[r][1].append(float(val_loss[r]))
        if runlog is not None:
            runlog.epoch(epoch, step + 1, losses[:, 0].tolist(), walls, train_loss[0],
                         float(val_loss[0]), time.time())
        step += n_steps
        improved = val_loss < best_val
        if bool(improved.any()):
            rows = improved.nonzero().view(-1)
            for key, v in engine.snapshot().items():
                best[key][rows] = v[rows]
            best_val = torch.where(improved, val_loss, best_val)
            for r in rows.tolist():
                best_epoch[r] = epoch
    engine.finish(best)
    out = []
    for r, model in enumerate(models):
        if best_epoch[r] == 0:
            raise InputError(f"{name} (seed {seeds[r]}): validation loss was never finite "
                             "(diverged); lower train.lr")
        model.eval()
        out.append({"probe": Probe(name, model, std, device), "arch": arch,
                    "best_epoch": best_epoch[r], "epochs": epochs, "steps": step,
                    "train_loss": curves[r][0], "val_loss": curves[r][1]})
    return out


def _modality_dropout(batch: Batch, p: float, gens: list[torch.Generator]) -> Batch:
    """Per replica: hide echo in a ``p`` fraction of rows and ECG in another (never both),
    drawn from the replica's generator as a single run draws them."""
    rows = batch["has_ecg"].shape[1]
    u = torch.stack([torch.rand(rows, generator=g) for g in gens]).to(batch["has_ecg"].device)
    drop_echo, drop_ecg = u < p, (u >= p) & (u < 2 * p)
    return {**batch, "clip_mask": batch["clip_mask"] & ~drop_echo.unsqueeze(-1),
            "has_ecg": batch["has_ecg"] & ~drop_ecg}
