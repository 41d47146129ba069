"""AdamW (decoupled weight decay) for the torch probes, outside ``torch.optim``.

Constructing any ``torch.optim`` optimizer imports ``torch._dynamo``, about 1.2 s per process
on these machines, a large share of a probe run that takes a few seconds. :class:`AdamW`
updates in one of two ways:

* **fused kernel** (the accelerator; accelerators on and the kernel present): one call of
  ``torch._fused_adamw_`` per step, the kernel ``torch.optim.AdamW(fused=True)`` runs (one
  pass over parameters, gradients and both moments). The tests hold it to
  ``torch.optim.AdamW(fused=True)`` bit for bit.
* **public ops** (the fallback): torch's single-tensor AdamW written with public in-place
  ops, the update ``torch.optim.AdamW(foreach=False)`` computes (held to it bit for bit),
  equal to the fused kernel to float rounding.

A hand-written backward pass can also hand each gradient over as soon as it is final
(:meth:`AdamW.update`): the parameter is updated while it and its gradient are still in
cache, and the gradient needs no ``.grad`` buffer. AdamW is elementwise, so a parameter
updated alone gets exactly the update :meth:`AdamW.step` would give it.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from rightsize.probes.accel import enabled

_PRIVATE = {"fused_adamw": getattr(torch, "_fused_adamw_", None),
            "foreach_add": getattr(torch, "_foreach_add_", None)}


class AdamW:
    """AdamW over ``params`` (one device, one dtype), ``torch.optim.AdamW`` defaults.

    ``fused`` says which update runs (default: the fused kernel where accelerators are on
    and this torch has it).
    """

    def __init__(self, params: Iterable[torch.nn.Parameter], lr: float, weight_decay: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 fused: bool | None = None) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        available = all(op is not None for op in _PRIVATE.values())
        self.fused = available and (enabled() if fused is None else fused)
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
        if not self.fused:
            for i, grad in zip(idx, grads, strict=True):
                self._public_update(i, grad)
            return
        _PRIVATE["foreach_add"](steps, 1)
        _PRIVATE["fused_adamw"](
            [self.params[i] for i in idx], grads,
            [self.exp_avg[i] for i in idx], [self.exp_avg_sq[i] for i in idx], [], steps,
            amsgrad=False, lr=self.lr, beta1=self.betas[0], beta2=self.betas[1],
            weight_decay=self.weight_decay, eps=self.eps, maximize=False, grad_scale=None,
            found_inf=None)

    def _public_update(self, i: int, grad: torch.Tensor) -> None:
        """torch's single-tensor AdamW step (``decoupled_weight_decay``), public ops only."""
        param, m, v = self.params[i], self.exp_avg[i], self.exp_avg_sq[i]
        beta1, beta2 = self.betas
        self.steps[i] += 1
        step = float(self.steps[i])
        if self.weight_decay != 0:
            param.mul_(1 - self.lr * self.weight_decay)
        m.lerp_(grad, 1 - beta1)
        v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_size = self.lr / (1 - beta1 ** step)
        denom = (v.sqrt() / (1 - beta2 ** step) ** 0.5).add_(self.eps)
        param.addcdiv_(m, denom, value=-step_size)
