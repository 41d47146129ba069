"""Accelerator ``echo_numpy``: the ``echo`` probe trained and run in numpy, without torch.

The model is the textbook :class:`rightsize.probes.models.echo.model.EchoAttnProbe` (the tests
hold this module's predictions and gradients to autograd of that torch module's forward): clip
embeddings are standardized with train-split moments and projected on the top-``pca_rank`` principal
directions; a learned query scores a learned null token and every present clip, a softmax
over them pools the clip coordinates, and a linear head reads the pooled vector (and the
null token's share). 3,074 parameters at echo_dim 1024: the whole fit is ~0.04 s of numpy
on one core, while starting torch costs ~0.9 s of a probe process, so this probe, like the
ECG probe, trains and predicts without torch (on the CPU, whatever ``train.device`` says).

Training runs in the one loop (:mod:`rightsize.probes.engine.loop`; :class:`NumpyEchoReplicas` is
the trainer): MSE on the train-standardized LVEF, mini-batches of a per-epoch permutation,
AdamW with torch's update rule (:func:`adamw_step`), the epoch with the lowest validation MSE
kept. Applies to every echo probe (it reads no ECG). Initial weights are drawn as
``nn.Linear`` draws them (uniform in ``+-1/sqrt(echo_dim)``, null token zero), from numpy's
generator seeded with the replica's seed, which then draws the shuffles: other numbers than
torch's generator would give, the same distribution. Arrays are float32, as in the torch
probes; weights save to ``weights.npz`` (plain arrays, no pickle).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.probes.accel import Accelerator
from rightsize.probes.engine.data import Moments, SplitData
from rightsize.probes.engine.npzfile import load_npz, save_npz

PARAMS = ("query_weight", "query_bias", "null", "head_weight", "head_bias")
F32 = np.float32


@dataclass(frozen=True)
class AttentiveEchoProbe:
    """Buffers and parameters of a fitted echo probe (float32; rank 0 = no PCA basis)."""

    mean: np.ndarray           # (dim,) train-split clip mean
    inv_sd: np.ndarray         # (dim,) 1 / train-split sd
    basis: np.ndarray          # (dim, rank) principal directions; (dim, 0) without PCA
    query_weight: np.ndarray   # (dim,) scores: q . x + b (the bias cancels in the softmax)
    query_bias: np.ndarray     # (1,)
    null: np.ndarray           # (dim,) the always-present null token
    head_weight: np.ndarray    # (dim,)
    head_bias: np.ndarray      # (1,)

    @property
    def n_params(self) -> int:
        """Trainable parameters (buffers excluded), as ``count_params`` of the torch module."""
        return int(sum(getattr(self, name).size for name in PARAMS))

    def lift(self, w: np.ndarray) -> np.ndarray:
        """``w B`` (..., rank): weights on the input as weights on the coordinates."""
        return w @ self.basis if self.basis.shape[1] else w

    def unlift(self, g: np.ndarray) -> np.ndarray:
        """``g B^T`` (..., dim): a gradient for ``lift(w)`` as the gradient for ``w``."""
        return g @ self.basis.T if self.basis.shape[1] else g

    def coords(self, data: SplitData) -> tuple[np.ndarray, np.ndarray]:
        """Masked clip coordinates (m, c, rank) and the clip mask (m, c)."""
        z = (data.echo - self.mean) * self.inv_sd
        if self.basis.shape[1]:
            z = z @ self.basis
        return z * data.clip_mask[..., None].astype(z.dtype), data.clip_mask

    def forward_coords(self, c: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Standardized LVEF (m,) from :meth:`coords` output (``c``'s dtype)."""
        return _scores_values(self, c, mask)[0]

    def predict_z(self, data: SplitData) -> np.ndarray:
        """Standardized LVEF predictions (m,) float64."""
        return self.forward_coords(*self.coords(data)).astype(np.float64)

    def save(self, out_dir: str | os.PathLike[str]) -> Path:
        """Write ``<out_dir>/weights.npz`` atomically (plain arrays, no pickle)."""
        return save_npz(self, out_dir)

    @classmethod
    def load(cls, out_dir: str | os.PathLike[str]) -> AttentiveEchoProbe:
        """Read ``<out_dir>/weights.npz`` with ``allow_pickle=False``."""
        return load_npz(cls, out_dir, "echo")


def _scores_values(m: AttentiveEchoProbe, c: np.ndarray, mask: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Prediction (b,), softmax weights (b, 1+c), token values (b, 1+c), query/head stack.

    The head is linear, so each token carries a scalar value ``v_j = head . x_j`` and the
    prediction is ``sum_j w_j v_j + bias``: one ``(b c, r) @ (r, 2)`` product gives every
    score and value. Token 0 is the null token.
    """
    b, n_clips, rank = c.shape
    qh = np.stack([m.query_weight, m.head_weight])                       # (2, dim)
    sv_null = qh @ m.null                                               # (2,)
    sv = (c.reshape(b * n_clips, rank) @ m.lift(qh).T).reshape(b, n_clips, 2)
    s = np.empty((b, 1 + n_clips), c.dtype)
    s[:, 0] = sv_null[0]
    s[:, 1:] = np.where(mask, sv[..., 0], -np.inf)
    s -= s.max(axis=1, keepdims=True)
    w = np.exp(s)
    w /= w.sum(axis=1, keepdims=True)
    v = np.empty_like(w)
    v[:, 0] = sv_null[1]
    v[:, 1:] = sv[..., 1]
    return (w * v).sum(axis=1) + m.head_bias[0], w, v, qh


def loss_and_grads(m: AttentiveEchoProbe, c: np.ndarray, mask: np.ndarray, y: np.ndarray
                   ) -> tuple[float, dict[str, np.ndarray]]:
    """MSE of :meth:`AttentiveEchoProbe.forward_coords` against ``y`` and every gradient.

    ``c`` are masked coordinates (b, c, rank), float32 in training (float64 in the tests:
    every array follows ``c``'s dtype). The query bias shifts every score of a row equally
    and cancels in the softmax: its gradient is exactly 0.
    """
    b, n_clips, rank = c.shape
    pred, w, v, qh = _scores_values(m, c, mask)
    err = pred - y
    d_out = (2.0 / b) * err                                             # dtype of c
    d_wv = d_out[:, None] * w                                           # d value
    d_s = w * (d_out[:, None] * v - (d_wv * v).sum(axis=1, keepdims=True))   # d score
    flat = c.reshape(b * n_clips, rank)
    d_coords = np.stack([d_s[:, 1:], d_wv[:, 1:]]).reshape(2, b * n_clips) @ flat   # (2, r)
    d_null_sv = np.array([d_s[:, 0].sum(), d_wv[:, 0].sum()], c.dtype)
    d_qh = m.unlift(d_coords) + np.outer(d_null_sv, m.null)
    grads = {"query_weight": d_qh[0], "query_bias": np.zeros(1, c.dtype), "null": d_null_sv @ qh,
             "head_weight": d_qh[1], "head_bias": np.array([d_out.sum()], c.dtype)}
    return float(np.mean(err.astype(np.float64) ** 2)), grads


@dataclass
class AdamWMoments:
    """AdamW moments of a set of named arrays (``torch.optim.AdamW`` defaults)."""

    lr: float
    weight_decay: float
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    step: int = 0
    exp_avg: dict[str, np.ndarray] | None = None
    exp_avg_sq: dict[str, np.ndarray] | None = None


def adamw_step(opt: AdamWMoments, params: dict[str, np.ndarray],
               grads: dict[str, np.ndarray]) -> None:
    """Update ``params`` in place with torch's AdamW rule (decoupled weight decay first)."""
    if opt.exp_avg is None or opt.exp_avg_sq is None:
        opt.exp_avg = {k: np.zeros_like(p) for k, p in params.items()}
        opt.exp_avg_sq = {k: np.zeros_like(p) for k, p in params.items()}
    opt.step += 1
    b1, b2 = opt.betas
    step_size = opt.lr / (1 - b1 ** opt.step)
    bc2_sqrt = math.sqrt(1 - b2 ** opt.step)
    for k, p in params.items():
        g, m, v = grads[k], opt.exp_avg[k], opt.exp_avg_sq[k]
        p *= F32(1 - opt.lr * opt.weight_decay)
        m += F32(1 - b1) * (g - m)
        v *= F32(b2)
        v += F32(1 - b2) * g * g
        p -= F32(step_size) * m / (np.sqrt(v) / F32(bc2_sqrt) + F32(opt.eps))


def init_probe(moments: Moments, seed: int) -> tuple[AttentiveEchoProbe, np.random.Generator]:
    """Initial probe for ``seed`` and the generator that goes on to draw its shuffles.

    The PCA basis is ``moments.echo_basis`` (None when ``pca_rank`` is off: no projection).
    """
    dim = moments.echo_mean.shape[0]
    basis = moments.echo_basis
    rng = np.random.default_rng(seed)
    bound = 1.0 / math.sqrt(dim)

    def uniform(n: int) -> np.ndarray:
        return rng.uniform(-bound, bound, n).astype(F32)

    qw, qb, hw, hb = uniform(dim), uniform(1), uniform(dim), uniform(1)
    probe = AttentiveEchoProbe(
        mean=moments.echo_mean.astype(F32), inv_sd=(1.0 / moments.echo_sd.astype(F32)),
        basis=(np.zeros((dim, 0), F32) if basis is None else basis.astype(F32)),
        query_weight=qw, query_bias=qb, null=np.zeros(dim, F32), head_weight=hw, head_bias=hb)
    return probe, rng


class NumpyEchoReplicas:
    """K replicas of the echo probe for the one loop (:mod:`rightsize.probes.engine.loop`), in
    numpy.

    Replica ``k`` starts from :func:`init_probe` with ``seeds[k]``, whose generator then
    draws its shuffles; each has its own AdamW moments. Replicas step in lockstep, and each
    repeats a single run with its seed bit for bit (its arithmetic never mixes with another's).
    """

    def __init__(self, job: Any) -> None:
        starts = [init_probe(job.moments, s) for s in job.seeds]
        self.start = [model for model, _ in starts]
        self.rngs = [rng for _, rng in starts]
        # the clip coordinates depend on the train moments only: the same for every replica
        self.c_tr, self.m_tr = self.start[0].coords(job.train)
        self.c_va, self.m_va = self.start[0].coords(job.val)
        self.y = job.std.forward(job.train.lvef).astype(F32)
        self.y_val = job.std.forward(job.val.lvef)
        self.n, self.bs = len(job.train), job.cfg.batch_size
        self.params = [{k: getattr(m, k).copy() for k in PARAMS} for m in self.start]
        self.live = [replace(m, **p) for m, p in zip(self.start, self.params, strict=True)]
        self.opts = [AdamWMoments(lr=job.cfg.lr, weight_decay=job.cfg.weight_decay)
                     for _ in self.start]
        self.best: list[dict[str, np.ndarray] | None] = [None] * len(self.start)

    def start_epoch(self) -> None:
        """Each replica's permutation, drawn from its own generator."""
        self.order = []
        for rng in self.rngs:
            perm = rng.permutation(self.n)
            self.order.append((self.c_tr[perm], self.m_tr[perm], self.y[perm]))
        self.losses: list[list[float]] = [[] for _ in self.start]

    def step(self, j: int, rows: slice) -> None:
        """One AdamW step of every replica on its rows ``rows``."""
        for r, (cs, ms, ys) in enumerate(self.order):
            loss, grads = loss_and_grads(self.live[r], cs[rows], ms[rows], ys[rows])
            adamw_step(self.opts[r], self.params[r], grads)
            self.losses[r].append(loss)

    def end_epoch(self) -> tuple[list[float], list[float]]:
        """Row-weighted train MSE per replica; replica 0's step losses."""
        sizes = np.minimum(self.bs, self.n - np.arange(0, self.n, self.bs))
        return [float(np.dot(lo, sizes) / self.n) for lo in self.losses], self.losses[0]

    def val_losses(self) -> list[float]:
        """Validation MSE per replica."""
        out = []
        for live in self.live:
            pred = live.forward_coords(self.c_va, self.m_va).astype(np.float64)
            out.append(float(np.mean((pred - self.y_val) ** 2)))
        return out

    def keep(self, replicas: list[int]) -> None:
        """Copy these replicas' parameters as their best so far."""
        for r in replicas:
            self.best[r] = {k: p.copy() for k, p in self.params[r].items()}

    def finish(self) -> list[AttentiveEchoProbe]:
        """Each replica's probe with its best parameters."""
        return [replace(m, **(b or {})) for m, b in zip(self.start, self.best, strict=True)]


ACCELERATOR = Accelerator(
    name="echo_numpy",
    precondition="any echo probe (it reads no ECG); trains and predicts on the CPU in numpy",
    handles=frozenset(("epochs",)),
    applies=lambda settings: True,
    trainer=NumpyEchoReplicas,
    uses_torch=False,
)
