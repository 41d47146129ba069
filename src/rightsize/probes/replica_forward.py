"""Forward passes of K replicas of the concat probe at once: a leading replica axis.

Each function computes, for every replica ``k``, the function the probe's own
``forward_encoded`` computes (same parameters, same coordinates), with every parameter
stacked on a leading axis (``P[name]`` is ``(K, *shape)``) and every batch tensor
carrying that axis too (``echo`` (K, B, c, r), ``clip_mask`` (K, B, c), ``ecg`` (K, B, r),
``has_ecg`` (K, B)): each replica sees its own rows, drawn in its own order. The fixed
buffers (normalization and PCA basis) depend on the train split only, so all replicas
share one module's (``m``). Autograd gives the gradients: one graph whose ops each work
on all K replicas, instead of K graphs. The tests hold each replica's output and gradients
to its own probe's in float64. (The fused probe's replicas take its hand-written step in
turn instead: a stacked autograd version of its forward measured slower, see
:mod:`rightsize.probes.replicas`; the echo probe is numpy, :mod:`rightsize.probes.attentive`.)

``drop`` draws the head-dropout keep-masks (``None``: eval mode, no dropout).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from rightsize.probes.featurenorm import masked_mean

F = nn.functional
Params = dict[str, torch.Tensor]
Noise = Callable[[tuple[int, ...]], torch.Tensor] | None


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
    """:meth:`ConcatMLPProbe.forward_encoded` per replica: (K, B).

    The first layer's weight is held as its echo and ECG column blocks
    (``mlp.0.weight:echo``, ``mlp.0.weight:ecg``; see :func:`split_params`), so neither
    block's gradient is formed by slicing the whole weight.
    """
    x_e = masked_mean(echo, clip_mask)                                      # (K, B, r)
    x_g = ecg * has_ecg.unsqueeze(-1).to(ecg.dtype)
    h = (_linear(x_e, _lift(m.norm_echo, P["mlp.0.weight:echo"]))
         + _linear(x_g, _lift(m.norm_ecg, P["mlp.0.weight:ecg"]), P["mlp.0.bias"]))
    a = F.gelu(h)
    if drop is not None:
        a = a * drop(tuple(a.shape))
    return _linear(a, P["mlp.3.weight"], P["mlp.3.bias"]).squeeze(-1)


SPLITS = {"concat": {"mlp.0.weight": ("echo", "ecg")}}


def split_params(name: str, m: nn.Module, params: Params) -> Params:
    """``params`` (module names, stacked) with the weights of :data:`SPLITS` cut into
    their column blocks (echo columns first, ``m``'s input widths)."""
    out = dict(params)
    for key, parts in SPLITS.get(name, {}).items():
        de = m.norm_echo.mean.shape[0]
        w = out.pop(key)
        out[f"{key}:{parts[0]}"], out[f"{key}:{parts[1]}"] = w[..., :de], w[..., de:]
    return out


def join_params(name: str, params: Params) -> Params:
    """Inverse of :func:`split_params`: module parameter names again."""
    out = dict(params)
    for key, parts in SPLITS.get(name, {}).items():
        out[key] = torch.cat([out.pop(f"{key}:{p}") for p in parts], dim=-1)
    return out


FORWARD = {"concat": concat_forward}
