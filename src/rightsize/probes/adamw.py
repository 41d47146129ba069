"""AdamW (decoupled weight decay) as one fused kernel call per step, outside ``torch.optim``.

``torch.optim.AdamW(fused=True)`` runs the same kernel (``torch._fused_adamw_``: one pass
over parameters, gradients and both moments). Constructing any ``torch.optim`` optimizer
imports ``torch._dynamo``, about 1.2 s per process on these machines, which is a large
share of a probe run that takes a few seconds. The tests hold :class:`FusedAdamW` to
``torch.optim.AdamW(fused=True)`` bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class FusedAdamW:
    """AdamW over ``params`` (one device, one dtype), ``torch.optim.AdamW`` defaults."""

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float, weight_decay: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        # float32 step counters on the parameters' device, as torch keeps them for fused=True
        self.steps = [torch.zeros((), dtype=torch.float32, device=p.device) for p in self.params]

    def zero_grad(self) -> None:
        """Drop every gradient (``set_to_none=True``)."""
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient."""
        live = [i for i, p in enumerate(self.params) if p.grad is not None]
        if not live:
            return
        steps = [self.steps[i] for i in live]
        torch._foreach_add_(steps, 1)
        torch._fused_adamw_(
            [self.params[i] for i in live], [self.params[i].grad for i in live],
            [self.exp_avg[i] for i in live], [self.exp_avg_sq[i] for i in live], [], steps,
            amsgrad=False, lr=self.lr, beta1=self.betas[0], beta2=self.betas[1],
            weight_decay=self.weight_decay, eps=self.eps, maximize=False, grad_scale=None,
            found_inf=None)
