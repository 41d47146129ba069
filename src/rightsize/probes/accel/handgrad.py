"""Helpers for the probes' hand-written backward passes (no autograd graph).

A probe that computes its own gradients writes them into persistent ``.grad`` tensors
(:func:`grad_buffers`) and draws its dropout masks exactly as ``nn.Dropout`` does in
train mode (:func:`dropout_noise`), so a hand-written step consumes the same random
numbers as autograd's and the two can be tested against each other draw for draw.

The GELU and layer-norm backward passes are aten's kernels (``torch.ops.aten.gelu_backward``,
``native_layer_norm_backward``: private API) where accelerators are on and this torch has
them, else the same formulas written with public ops (:func:`gelu_backward`,
:func:`layer_norm_backward`; equal to float rounding, held in the tests).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from rightsize.probes.accel import enabled

_ATEN = getattr(torch.ops, "aten", None)
_PRIVATE = {"gelu_backward": getattr(_ATEN, "gelu_backward", None),
            "native_layer_norm_backward": getattr(_ATEN, "native_layer_norm_backward", None)}


def grad_buffers(model: nn.Module, handed_over: frozenset[str] = frozenset()
                 ) -> dict[str, torch.Tensor]:
    """Each trainable parameter's ``.grad`` by name, allocated (contiguous) if missing.

    The same tensors are reused every step: products write their gradients straight into
    them (``out=``), and no fresh multi-megabyte buffer has to be faulted in per step. The
    answer is kept on the model and reused while every parameter still holds the same
    ``.grad`` tensor (walking the module tree each step costs ~0.1 ms). Parameters named in
    ``handed_over`` get none, and their ``.grad`` is set to None: a step that hands their
    gradients straight to the optimizer leaves no stale ones behind.
    """
    cache = model.__dict__.setdefault("_grad_buffers", {})
    cached = cache.get(handed_over)
    if cached is not None and all(p.grad is g for p, g in cached[0]):
        return cached[1]
    grads, pairs = {}, []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if name in handed_over:
            p.grad = None
        else:
            if p.grad is None or p.grad.shape != p.shape or not p.grad.is_contiguous():
                p.grad = torch.empty_like(p, memory_format=torch.contiguous_format)
            grads[name] = p.grad
        pairs.append((p, p.grad))
    cache[handed_over] = (pairs, grads)
    return grads


def named_parameters(model: nn.Module) -> dict[str, nn.Parameter]:
    """``dict(model.named_parameters())``, kept on the model (a module walk costs ~0.1 ms a
    step; a module's parameters stay the same objects while it trains)."""
    cached = model.__dict__.get("_named_parameters")
    if cached is None:
        cached = model.__dict__["_named_parameters"] = dict(model.named_parameters())
    return cached


def dropout_noise(drop: nn.Dropout, x: torch.Tensor) -> torch.Tensor | None:
    """The scaled keep-mask ``nn.Dropout`` would multiply ``x`` by, or None when inactive.

    ``F.dropout`` on CPU draws ``empty_like(x).bernoulli_(1 - p)`` and divides by
    ``1 - p``; drawing the same way keeps the generator's stream identical.
    """
    if not drop.training or drop.p == 0:
        return None
    if drop.p == 1:
        return torch.zeros_like(x)
    return torch.empty_like(x).bernoulli_(1 - drop.p).div_(1 - drop.p)


def gelu_backward(grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``grad * GELU'(x)`` for the exact (erf) GELU."""
    op = _PRIVATE["gelu_backward"]
    if op is not None and enabled():
        return op(grad, x)
    cdf = 0.5 * (1.0 + torch.erf(x * (1.0 / math.sqrt(2.0))))
    pdf = torch.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))
    return grad * (cdf + x * pdf)


def layer_norm_backward(d_out: torch.Tensor, x: torch.Tensor, shape: tuple[int, ...],
                        mean: torch.Tensor, rstd: torch.Tensor, weight: torch.Tensor,
                        bias: torch.Tensor, mask: list[bool]
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients ``(d x, d weight, d bias)`` of a layer norm over the last dimension, from
    its forward's ``mean`` and ``rstd`` (``torch.native_layer_norm``'s second and third
    outputs); ``mask`` is aten's (all three wanted)."""
    op = _PRIVATE["native_layer_norm_backward"]
    if op is not None and enabled():
        return op(d_out, x, shape, mean, rstd, weight, bias, mask)
    x_hat = (x - mean) * rstd
    rows = tuple(range(x.dim() - 1))
    d_w, d_b = (d_out * x_hat).sum(rows), d_out.sum(rows)
    g = d_out * weight
    d_x = rstd * (g - g.mean(-1, keepdim=True) - x_hat * (g * x_hat).mean(-1, keepdim=True))
    return d_x, d_w, d_b


def gelu_dropout_linear_mse(h: torch.Tensor, drop: nn.Dropout, last: nn.Linear,
                            y: torch.Tensor, grad_w: torch.Tensor, grad_b: torch.Tensor
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward and backward of ``MSE(last(drop(gelu(h))).squeeze(-1), y)``.

    The tail both MLP heads share (concat and fused: first layer, GELU, dropout, one
    output). Writes ``last``'s gradients into ``grad_w`` (1, hidden) and ``grad_b`` (1,);
    returns the loss and its gradient with respect to ``h`` (b, hidden).
    """
    a = nn.functional.gelu(h)
    noise = dropout_noise(drop, a)
    if noise is not None:
        a = a * noise
    err = torch.addmm(last.bias, a, last.weight.t()).squeeze(-1) - y       # (b,)
    d_out = (2.0 / y.shape[0]) * err
    torch.mm(d_out.view(1, -1), a, out=grad_w)
    grad_b.copy_(d_out.sum().view(1))
    d_a = d_out.unsqueeze(1) * last.weight                                 # (b, hidden)
    if noise is not None:
        d_a = d_a * noise
    return (err * err).mean(), gelu_backward(d_a, h)
