"""Accelerator ``concat_stacked``: K concat replicas in one forward and one backward per step.

The concat probe is small (an MLP on two pooled vectors), so a step's time is the per-op
cost of autograd, paid once per replica by the textbook trainer. Here every parameter is
stacked on a leading replica axis (``P[name]`` is ``(K, *shape)``) and every batch tensor
carries that axis too (``echo`` (K, B, 1, r), ``clip_mask`` (K, B, 1), ``ecg`` (K, B, r),
``has_ecg`` (K, B)): each replica sees its own rows, drawn in its own order, and one
autograd graph whose ops each work on all K replicas gives every gradient (5 concat
replicas train in ~3x one replica's time). The fixed buffers (normalization and PCA basis)
depend on the train split only, so all replicas share one module's (``m``).

:func:`concat_forward` computes, for every replica, the probe's textbook
``forward_encoded`` (same parameters, same coordinates); the tests hold each replica's
output and gradients to autograd of its own textbook forward in float64, dropout on with
the same masks. Head dropout draws its keep-masks from each replica's own generator (after
that replica's shuffle), one AdamW call updates all stacked parameters, and each replica
ends as an ordinary concat module with its best epoch's weights.

Applies to every concat configuration (any K, any ECG token count: concat reads the mean
ECG token, pooled before batching).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from rightsize.probes.accel import Accelerator
from rightsize.probes.engine.torch_model import PREDICT_BATCH, TorchModel
from rightsize.probes.engine.torch_replicas import Batch, TorchReplicas, init_modules
from rightsize.probes.models.featurenorm import masked_mean

F = nn.functional
Params = dict[str, torch.Tensor]
Noise = Callable[[tuple[int, ...]], torch.Tensor] | None
FIRST = "mlp.0.weight"          # held as its echo and ECG column blocks (FIRST:echo, FIRST:ecg)


def _lift(norm: nn.Module, w: torch.Tensor) -> torch.Tensor:
    """(K, out, dim) -> (K, out, rank): each replica's ``FeatureNorm.lift``."""
    return w @ norm.basis if norm.rank else w


def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ w^T + b`` per replica: x (K, ..., in), w (K, out, in), b (K, out)."""
    k, shape = x.shape[0], x.shape[1:-1]
    y = torch.bmm(x.reshape(k, -1, x.shape[-1]), w.transpose(1, 2))
    if b is not None:
        y = y + b.unsqueeze(1)
    return y.view(k, *shape, w.shape[1])


def concat_forward(m: nn.Module, P: Params, echo: torch.Tensor, clip_mask: torch.Tensor,
                   ecg: torch.Tensor, has_ecg: torch.Tensor, drop: Noise = None
                   ) -> torch.Tensor:
    """The concat probe's ``forward_encoded`` per replica: (K, B). ``drop`` draws the
    head-dropout keep-masks (None: eval mode)."""
    x_e = masked_mean(echo, clip_mask)                                       # (K, B, r)
    x_g = ecg * has_ecg.unsqueeze(-1).to(ecg.dtype)
    h = (_linear(x_e, _lift(m.norm_echo, P[f"{FIRST}:echo"]))
         + _linear(x_g, _lift(m.norm_ecg, P[f"{FIRST}:ecg"]), P["mlp.0.bias"]))
    a = F.gelu(h)
    if drop is not None:
        a = a * drop(tuple(a.shape))
    return _linear(a, P["mlp.3.weight"], P["mlp.3.bias"]).squeeze(-1)


def split_params(m: nn.Module, params: Params) -> Params:
    """``params`` (module names, stacked) with the first layer's weight cut into its echo
    and ECG column blocks (neither block's gradient is then formed by slicing)."""
    out = dict(params)
    de = m.norm_echo.mean.shape[0]
    w = out.pop(FIRST)
    out[f"{FIRST}:echo"], out[f"{FIRST}:ecg"] = w[..., :de], w[..., de:]
    return out


def join_params(params: Params) -> Params:
    """Inverse of :func:`split_params`: module parameter names again."""
    out = dict(params)
    out[FIRST] = torch.cat([out.pop(f"{FIRST}:echo"), out.pop(f"{FIRST}:ecg")], dim=-1)
    return out


class AllReplicasBatched(TorchReplicas):
    """All replicas' parameters stacked (K, ...): one forward and backward per step."""

    def __init__(self, job: Any) -> None:
        models, _ = init_modules(job)
        self.base = models[0]
        self.names = [n for n, p in self.base.named_parameters() if p.requires_grad]
        whole = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
                 for n in self.names}
        self.params = {n: t.contiguous().requires_grad_()
                       for n, t in split_params(self.base, whole).items()}
        drops = [m.p for m in self.base.modules() if isinstance(m, nn.Dropout)]
        self.p_drop = float(drops[0]) if drops else 0.0
        super().__init__(job, models)
        self.best = {key: v.detach().clone() for key, v in self.params.items()}

    def tensors(self) -> list[torch.Tensor]:
        """What the optimizer updates."""
        return list(self.params.values())

    def _noise(self, shape: tuple[int, ...]) -> torch.Tensor:
        p = self.p_drop
        draws = [torch.empty(shape[1:]).bernoulli_(1 - p, generator=g) for g in self.gens]
        return torch.stack(draws).div_(1 - p).to(self.device)

    def loss_backward(self, batch: Batch, y: torch.Tensor) -> torch.Tensor:
        """Set every replica's gradients; return the (K,) losses."""
        for p in self.params.values():
            p.grad = None
        pred = concat_forward(self.base, self.params, **batch,
                              drop=self._noise if self.p_drop > 0 else None)
        per_rep = ((pred - y) ** 2).mean(1)
        per_rep.sum().backward()
        return per_rep.detach()

    @torch.no_grad()
    def val_losses(self) -> list[float]:
        """Validation MSE per replica (no dropout), float64."""
        preds = []
        for lo in range(0, self.y_val.shape[0], PREDICT_BATCH):
            part = {key: t[lo:lo + PREDICT_BATCH] for key, t in self.tr_val.items()}
            part = {key: t.unsqueeze(0).expand(self.k, *t.shape) for key, t in part.items()}
            preds.append(concat_forward(self.base, self.params, **part, drop=None))
        pred = torch.cat(preds, dim=1).to("cpu", torch.float64)
        return ((pred - torch.from_numpy(self.y_val)) ** 2).mean(1).tolist()

    def keep(self, replicas: list[int]) -> None:
        """Copy these replicas' current parameters as their best."""
        rows = torch.tensor(replicas)
        for key, v in self.params.items():
            self.best[key][rows] = v.detach()[rows]

    def finish(self) -> list[TorchModel]:
        """Each replica's module with its best parameters loaded (eval mode)."""
        best = join_params(self.best)
        out = []
        for r, model in enumerate(self.models):
            params = dict(model.named_parameters())
            with torch.no_grad():
                for key in self.names:
                    params[key].copy_(best[key][r])
            model.eval()
            out.append(TorchModel(model, device=self.device, accelerate=self.accelerate))
        return out


ACCELERATOR = Accelerator(
    name="concat_stacked",
    precondition="any concat probe: K replicas stacked (K >= 1), autograd once per step",
    handles=frozenset(("epochs", "hidden", "dropout")),
    applies=lambda settings: True,
    trainer=AllReplicasBatched,
)
