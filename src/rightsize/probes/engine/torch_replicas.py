"""K replicas of a torch probe for the one loop (:mod:`rightsize.probes.engine.loop`).

Replica ``k`` is the probe's module built under ``torch.manual_seed(seeds[k])`` (the
initial weights a single run with that seed starts from). Its rows are shuffled, and its
modality-dropout masks drawn, by its own generator seeded with ``seeds[k]``; its head
dropout draws from the global generator, carried on per replica from where its
initialization left it, as in a single run. The input moments and the encoded splits
(the fixed normalization and PCA projection, ``encode``) depend on the train split only:
computed once for all replicas. Every epoch gathers all replicas' shuffled rows at once;
one AdamW call per step updates every replica (AdamW is elementwise: each replica's
update is its own).

:class:`TorchReplicas` holds that shared part; :class:`ReplicaByReplica` takes each replica's step
in turn, by a ``loss_backward`` function: autograd of the module's textbook forward
(:func:`autograd_loss_backward`, the engine's reference) unless an accelerator brings its
own (:mod:`rightsize.probes.accel`).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from torch import nn

from rightsize.errors import InputError
from rightsize.probes.accel.adamw import AdamW
from rightsize.probes.engine.torch_model import Forward, TorchModel, encode_split, predict_encoded_z

Batch = dict[str, torch.Tensor]
# update(param, grad): a step may hand a gradient to the optimizer the moment it is final
Update = Callable[[nn.Parameter, torch.Tensor], None]
LossBackward = Callable[[nn.Module, Batch, torch.Tensor, Update], torch.Tensor]


def resolve_device(name: str) -> str:
    """``cpu``/``cuda``/``auto`` -> a torch device string (InputError if CUDA is absent)."""
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"device {name!r} requested but CUDA is not available")
    if name not in ("cpu",) and not name.startswith("cuda"):
        raise InputError(f"unknown device {name!r} (use cpu, cuda or auto)")
    return name


@contextlib.contextmanager
def torch_runtime(seed: int, threads: int, device: str) -> Iterator[None]:
    """Seed torch and set its thread count (and CUDA determinism); restore afterwards.

    CPU float arithmetic flushes subnormal numbers to zero while it trains: a sharp softmax
    leaves weights below 1.2e-38 whose products x86 cores compute ~100x slower (a 93-token
    fused fit with the lead mix took 27.6 s instead of 17.8 s, the same validation MAE to
    every digit; docs/numerics.md). Restored to IEEE subnormals afterwards."""
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    flushing = torch.set_flush_denormal(True)
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
        if flushing:
            torch.set_flush_denormal(False)
        if cuda:
            torch.use_deterministic_algorithms(prev_det, warn_only=prev_warn)


def init_modules(job: Any) -> tuple[list[nn.Module], list[torch.Tensor]]:
    """One module per seed of ``job`` (a :class:`~rightsize.probes.engine.estimator.FitJob`), with
    the train moments loaded, and the global RNG state each initialization left behind."""
    models, rng_states = [], []
    for s in job.seeds:
        torch.manual_seed(s)
        model = job.build(job.arch)
        rng_states.append(torch.get_rng_state())
        model.set_moments(job.moments)
        models.append(model.to(job.device))
    return models, rng_states


def autograd_loss_backward(model: nn.Module, batch: Batch, y: torch.Tensor,
                           update: Update | None = None,
                           forward: Forward | None = None) -> torch.Tensor:
    """MSE of ``forward(model, **batch)`` (default: the textbook ``model.forward_encoded``)
    against ``y``; each parameter's ``.grad`` replaced by its autograd gradient (``update``
    unused). The loss, no graph."""
    for p in model.parameters():
        p.grad = None
    out = model.forward_encoded(**batch) if forward is None else forward(model, **batch)
    loss = nn.functional.mse_loss(out, y)
    loss.backward()
    return loss.detach()


def modality_dropout(batch: Batch, p: float, gens: list[torch.Generator]) -> Batch:
    """Per replica: hide echo in a ``p`` fraction of rows and ECG in another (never both),
    drawn from the replica's generator as a single run draws them."""
    rows = batch["has_ecg"].shape[1]
    u = torch.stack([torch.rand(rows, generator=g) for g in gens]).to(batch["has_ecg"].device)
    drop_echo, drop_ecg = u < p, (u >= p) & (u < 2 * p)
    return {**batch, "clip_mask": batch["clip_mask"] & ~drop_echo.unsqueeze(-1),
            "has_ecg": batch["has_ecg"] & ~drop_ecg}


class TorchReplicas:
    """The part of a torch replica trainer every step form shares (see the module doc).

    Subclasses define ``tensors`` (what the optimizer updates), ``loss_backward`` (every
    replica's gradients for one stacked batch; returns the (K,) losses), ``val_losses``,
    ``keep`` and ``finish``.
    """

    def __init__(self, job: Any, models: list[nn.Module]) -> None:
        self.models, self.k, self.device = models, len(models), job.device
        self.accelerate = job.cfg.accelerate
        self.gens = [torch.Generator().manual_seed(s) for s in job.seeds]
        self.tr = encode_split(models[0], job.train, job.device)   # buffers only: shared
        self.tr_val = encode_split(models[0], job.val, job.device)
        y = job.std.forward(job.train.lvef).astype(np.float32)
        self.y = torch.from_numpy(y).to(job.device)
        self.y_val = job.std.forward(job.val.lvef)
        self.n, bs = len(job.train), job.cfg.batch_size
        n_steps = math.ceil(self.n / bs)
        self.sizes = torch.tensor([min(bs, self.n - j * bs) for j in range(n_steps)],
                                  dtype=torch.float64)
        self.step_loss = torch.empty(n_steps, self.k, device=job.device)
        self.p_mod = float(getattr(job.probe_config, "modality_dropout", 0.0))
        self.opt = AdamW(self.tensors(), lr=job.cfg.lr, weight_decay=job.cfg.weight_decay)

    def tensors(self) -> list[torch.Tensor]:
        raise NotImplementedError

    def loss_backward(self, batch: Batch, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def start_epoch(self) -> None:
        """Train mode; one permutation per replica, all replicas' rows gathered at once."""
        for m in self.models:
            m.train()
        perms = torch.stack([torch.randperm(self.n, generator=g) for g in self.gens])
        perms = perms.to(self.device)
        self.shuffled = {key: t[perms] for key, t in self.tr.items()}          # (K, n, ...)
        self.y_shuffled = self.y[perms]

    def step(self, j: int, rows: slice) -> None:
        """Step ``j``: each replica's gradients (or hand-overs), then one AdamW step."""
        batch = {key: t[:, rows] for key, t in self.shuffled.items()}
        if self.p_mod > 0:
            batch = modality_dropout(batch, self.p_mod, self.gens)
        self.step_loss[j] = self.loss_backward(batch, self.y_shuffled[:, rows])
        self.opt.step()

    def end_epoch(self) -> tuple[list[float], list[float]]:
        """Row-weighted train MSE per replica; replica 0's step losses."""
        losses = self.step_loss.to("cpu", torch.float64)                    # (steps, K)
        train = [float((losses[:, r] * self.sizes).sum() / self.n) for r in range(self.k)]
        return train, losses[:, 0].tolist()


class ReplicaByReplica(TorchReplicas):
    """Each replica's own step in turn, with its own global-RNG stream.

    ``loss_backward(model, batch, y, update)`` is one replica's step (default: autograd of
    the textbook forward); ``forward`` / ``attend`` the inference forward the fitted models
    keep (default: the module's own).
    """

    def __init__(self, job: Any, models: list[nn.Module], rng_states: list[torch.Tensor],
                 loss_backward: LossBackward = autograd_loss_backward,
                 forward: Forward | None = None, attend: Forward | None = None) -> None:
        self.names = [n for n, p in models[0].named_parameters() if p.requires_grad]
        super().__init__(job, models)
        self.rng = list(rng_states)
        self._loss_backward, self.forward, self.attend = loss_backward, forward, attend
        self.best: list[dict[str, torch.Tensor] | None] = [None] * self.k

    def tensors(self) -> list[torch.Tensor]:
        """Every replica's parameters, replica by replica."""
        return [dict(m.named_parameters())[n] for m in self.models for n in self.names]

    def loss_backward(self, batch: Batch, y: torch.Tensor) -> torch.Tensor:
        """Each replica's step on its rows of the stacked batch; the (K,) losses."""
        losses = []
        for r, model in enumerate(self.models):
            torch.set_rng_state(self.rng[r])
            losses.append(self._loss_backward(model, {k: t[r] for k, t in batch.items()}, y[r],
                                              self.opt.update))
            self.rng[r] = torch.get_rng_state()
        return torch.stack(losses)

    def val_losses(self) -> list[float]:
        """Validation MSE per replica (eval mode), as a single run computes it."""
        return [float(np.mean((predict_encoded_z(m, self.tr_val, self.forward) - self.y_val)
                              ** 2)) for m in self.models]

    def keep(self, replicas: list[int]) -> None:
        """Copy these replicas' parameters into their best-so-far buffers."""
        for r in replicas:
            params = dict(self.models[r].named_parameters())
            best = self.best[r] or {n: torch.empty_like(params[n]) for n in self.names}
            with torch.no_grad():
                for n in self.names:
                    best[n].copy_(params[n])
            self.best[r] = best

    def finish(self) -> list[TorchModel]:
        """Each replica's module with its best parameters loaded, in eval mode."""
        out = []
        for model, best in zip(self.models, self.best, strict=True):
            params = dict(model.named_parameters())
            with torch.no_grad():
                for n in self.names if best is not None else ():
                    params[n].copy_(best[n])
            model.eval()
            out.append(TorchModel(model, self.forward, self.attend, self.device,
                                  self.accelerate))
        return out


def textbook_trainer(job: Any) -> ReplicaByReplica:
    """The reference trainer: autograd of each replica's textbook forward, in turn."""
    models, rng_states = init_modules(job)
    return ReplicaByReplica(job, models, rng_states)
