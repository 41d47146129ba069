"""AdamW (decoupled weight decay) as one fused kernel call per step, outside ``torch.optim``.

``torch.optim.AdamW(fused=True)`` runs the same kernel (``torch._fused_adamw_``: one pass
over parameters, gradients and both moments). Constructing any ``torch.optim`` optimizer
imports ``torch._dynamo``, about 1.2 s per process on these machines, which is a large
share of a probe run that takes a few seconds. The tests hold :class:`FusedAdamW` to
``torch.optim.AdamW(fused=True)`` bit for bit.

A hand-written backward pass can also hand each gradient over as soon as it is final
(:meth:`FusedAdamW.update`): the parameter is updated while it and its gradient are still
in cache, and the gradient needs no ``.grad`` buffer. AdamW is elementwise, so a parameter
updated alone gets exactly the update :meth:`FusedAdamW.step` would give it.
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
        self._index = {id(p): i for i, p in enumerate(self.params)}
        self._updated: set[int] = set()      # updated by update() since the last step()

    def zero_grad(self) -> None:
        """Drop every gradient (``set_to_none=True``)."""
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def update(self, param: torch.nn.Parameter, grad: torch.Tensor) -> None:
        """Update ``param`` alone with ``grad`` now; the next :meth:`step` leaves it out."""
        i = self._index[id(param)]
        if i in self._updated:
            raise RuntimeError("a parameter was updated twice in one step")
        self._updated.add(i)
        self._apply([i], [grad])

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient and was not updated alone
        (:meth:`update`) since the last step."""
        live = [i for i, p in enumerate(self.params)
                if p.grad is not None and i not in self._updated]
        self._updated.clear()
        if live:
            self._apply(live, [self.params[i].grad for i in live])

    def _apply(self, idx: list[int], grads: list[torch.Tensor]) -> None:
        steps = [self.steps[i] for i in idx]
        torch._foreach_add_(steps, 1)
        torch._fused_adamw_(
            [self.params[i] for i in idx], grads,
            [self.exp_avg[i] for i in idx], [self.exp_avg_sq[i] for i in idx], [], steps,
            amsgrad=False, lr=self.lr, beta1=self.betas[0], beta2=self.betas[1],
            weight_decay=self.weight_decay, eps=self.eps, maximize=False, grad_scale=None,
            found_inf=None)
