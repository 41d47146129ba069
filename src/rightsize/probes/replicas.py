"""Train K replicas of one torch probe together, one per seed, each keeping its best epoch.

Replica ``k`` is the probe built under ``torch.manual_seed(seeds[k])`` (the same initial
weights a single run with that seed starts from); its rows are shuffled, and its
modality- and head-dropout masks drawn, by its own generator seeded with ``seeds[k]``.
The parameters of all replicas are stacked on a leading axis and go through one
forward (:mod:`rightsize.probes.replica_forward`), one autograd backward and one fused
AdamW call per step: the per-op cost of a small model is paid once per step, not K times.
AdamW is elementwise, so each replica's update is its own. The input moments and
the encoded splits depend on the train split only and are computed once for all.

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
from rightsize.probes.config import TrainConfig
from rightsize.probes.data import Moments, SplitData, Standardizer
from rightsize.probes.models import arch_of, build_model
from rightsize.probes.predict import PREDICT_BATCH, Probe, encode_split
from rightsize.probes.replica_forward import FORWARD, join_params, split_params
from rightsize.probes.runlog import RunLog


def _dropout_p(name: str, model: torch.nn.Module) -> float:
    if name == "concat":
        return float(model.mlp[2].p)
    if name == "fused":
        return float(model.head[2].p)
    return 0.0


def fit_replicas(name: str, train: SplitData, val: SplitData, std: Standardizer,
                 cfg: TrainConfig, seeds: list[int], device: str,
                 runlog: RunLog | None) -> list[dict[str, Any]]:
    """Train one replica of torch probe ``name`` per seed; log replica 0 to ``runlog``.

    Returns per replica ``{probe, arch, best_epoch, epochs, steps, train_loss, val_loss}``
    (curves per epoch, standardized MSE) with ``probe`` holding its best epoch's weights.
    """
    arch = arch_of(name, cfg, train.echo.shape[-1], train.ecg.shape[-1])
    moments = Moments.fit(train, cfg.pca_rank, ecg=name != "echo")
    models = []
    for s in seeds:
        torch.manual_seed(s)
        model = build_model(arch)
        model.set_moments(moments)
        models.append(model.to(device))
    base = models[0]
    names = [n for n, p in base.named_parameters() if p.requires_grad]
    whole = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
             for n in names}
    stacked = {n: t.contiguous().requires_grad_()
               for n, t in split_params(name, base, whole).items()}
    gens = [torch.Generator().manual_seed(s) for s in seeds]
    forward = FORWARD[name]
    k_rep = len(seeds)
    p_drop = _dropout_p(name, base)
    p_mod = cfg.fused.modality_dropout if name == "fused" else 0.0

    def noise(shape: tuple[int, ...]) -> torch.Tensor:
        draws = [torch.empty(shape[1:]).bernoulli_(1 - p_drop, generator=g) for g in gens]
        return torch.stack(draws).div_(1 - p_drop).to(device)

    tr = encode_split(base, train, device)
    tr_val = encode_split(base, val, device)
    y = torch.from_numpy(std.forward(train.lvef).astype(np.float32)).to(device)
    y_val = torch.from_numpy(std.forward(val.lvef)).to(device)
    opt = FusedAdamW(stacked.values(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    n, bs, epochs = len(train), cfg.batch_size, cfg.epochs(name)
    n_steps = math.ceil(n / bs)
    sizes = torch.tensor([min(bs, n - j * bs) for j in range(n_steps)], dtype=torch.float64)
    step_loss = torch.empty(n_steps, k_rep, device=device)
    best_val = torch.full((k_rep,), math.inf, dtype=torch.float64)
    best_epoch = [0] * k_rep
    best = {k: v.detach().clone() for k, v in stacked.items()}
    curves: list[tuple[list[float], list[float]]] = [([], []) for _ in seeds]
    step = 0
    for epoch in range(1, epochs + 1):
        perms = torch.stack([torch.randperm(n, generator=g) for g in gens]).to(device)
        shuffled = {key: t[perms] for key, t in tr.items()}                 # (K, n, ...)
        y_shuffled = y[perms]
        walls: list[float] = []
        for j in range(n_steps):
            batch = {key: t[:, j * bs:(j + 1) * bs] for key, t in shuffled.items()}
            if p_mod > 0:
                batch = _modality_dropout(batch, p_mod, gens)
            for p in stacked.values():
                p.grad = None
            pred = forward(base, stacked, **batch, drop=noise if p_drop > 0 else None)
            per_rep = ((pred - y_shuffled[:, j * bs:(j + 1) * bs]) ** 2).mean(1)  # (K,)
            per_rep.sum().backward()
            step_loss[j] = per_rep.detach()
            opt.step()
            walls.append(time.time())
        losses = step_loss.to("cpu", torch.float64)                        # (steps, K)
        train_loss = (losses * sizes.unsqueeze(1)).sum(0) / n
        val_loss = _val_loss(forward, base, stacked, tr_val, y_val)
        for r in range(k_rep):
            curves[r][0].append(float(train_loss[r]))
            curves[r][1].append(float(val_loss[r]))
        if runlog is not None:
            runlog.epoch(epoch, step + 1, losses[:, 0].tolist(), walls, float(train_loss[0]),
                         float(val_loss[0]), time.time())
        step += n_steps
        improved = val_loss < best_val
        if bool(improved.any()):
            rows = improved.nonzero().view(-1).to(device)
            with torch.no_grad():
                for key, v in stacked.items():
                    best[key][rows] = v[rows]
            best_val = torch.where(improved, val_loss, best_val)
            for r in improved.nonzero().view(-1).tolist():
                best_epoch[r] = epoch
    best = join_params(name, best)
    out = []
    for r, model in enumerate(models):
        if best_epoch[r] == 0:
            raise InputError(f"{name} (seed {seeds[r]}): validation loss was never finite "
                             "(diverged); lower train.lr")
        params = dict(model.named_parameters())
        with torch.no_grad():
            for key in names:
                params[key].copy_(best[key][r])
        model.eval()
        out.append({"probe": Probe(name, model, std, device), "arch": arch,
                    "best_epoch": best_epoch[r], "epochs": epochs, "steps": step,
                    "train_loss": curves[r][0], "val_loss": curves[r][1]})
    return out


def _modality_dropout(batch: dict[str, torch.Tensor], p: float,
                      gens: list[torch.Generator]) -> dict[str, torch.Tensor]:
    """Per replica: hide echo in a ``p`` fraction of rows and ECG in another (never both)."""
    rows = batch["has_ecg"].shape[1]
    u = torch.stack([torch.rand(rows, generator=g) for g in gens]).to(batch["has_ecg"].device)
    drop_echo, drop_ecg = u < p, (u >= p) & (u < 2 * p)
    return {**batch, "clip_mask": batch["clip_mask"] & ~drop_echo.unsqueeze(-1),
            "has_ecg": batch["has_ecg"] & ~drop_ecg}


@torch.no_grad()
def _val_loss(forward: Any, base: torch.nn.Module, stacked: dict[str, torch.Tensor],
              encoded: dict[str, torch.Tensor], y_val: torch.Tensor) -> torch.Tensor:
    """(K,) float64 validation MSE of every replica (eval mode: no dropout)."""
    k = next(iter(stacked.values())).shape[0]
    m = y_val.shape[0]
    preds = []
    for lo in range(0, m, PREDICT_BATCH):
        part = {key: t[lo:lo + PREDICT_BATCH].unsqueeze(0).expand(k, *t[lo:lo + PREDICT_BATCH]
                                                                  .shape)
                for key, t in encoded.items()}
        preds.append(forward(base, stacked, **part, drop=None))
    pred = torch.cat(preds, dim=1).to("cpu", torch.float64)
    return ((pred - y_val.to("cpu")) ** 2).mean(1)
