"""Helpers for the probes' hand-written backward passes (no autograd graph).

A probe that computes its own gradients writes them into persistent ``.grad`` tensors
(:func:`grad_buffers`) and draws its dropout masks exactly as ``nn.Dropout`` does in
train mode (:func:`dropout_noise`), so a hand-written step consumes the same random
numbers as autograd's and the two can be tested against each other draw for draw.
"""

from __future__ import annotations

import torch
from torch import nn


def grad_buffers(model: nn.Module) -> dict[str, torch.Tensor]:
    """Each trainable parameter's ``.grad`` by name, allocated (contiguous) if missing.

    The same tensors are reused every step: products write their gradients straight into
    them (``out=``), and no fresh multi-megabyte buffer has to be faulted in per step.
    """
    grads = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if p.grad is None or p.grad.shape != p.shape or not p.grad.is_contiguous():
            p.grad = torch.empty_like(p, memory_format=torch.contiguous_format)
        grads[name] = p.grad
    return grads


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


gelu_backward = torch.ops.aten.gelu_backward
layer_norm_backward = torch.ops.aten.native_layer_norm_backward
