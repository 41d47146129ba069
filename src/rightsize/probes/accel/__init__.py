"""Accelerators: every speed-up of the probe engine, behind this one boundary.

A probe's model is its textbook forward (``rightsize.probes.<probe>``) trained by the one
loop (:mod:`rightsize.probes.engine.loop`) with autograd. An accelerator computes the same
function faster for a special case, says when it applies, is chosen automatically, and is
switched off with ``train.accelerate: false`` (:func:`use`). Two kinds:

* **probe accelerators** (:class:`Accelerator`, listed in :data:`MODULES`), chosen per probe
  by :func:`select` (the registry, :mod:`rightsize.probe_registry`, lists which a probe may
  use): a replica trainer (``trainer``) and, for a torch probe, an inference forward
  (``forward``);
* **kernel accelerators**, used by the textbook code and the probe accelerators alike:
  oneDNN routing of fp32 products (:mod:`.gemm`), torch's fused AdamW kernel (:mod:`.adamw`)
  and aten's GELU / layer-norm backward kernels (:mod:`.handgrad`). Each calls a private
  torch API (the only modules of the project that do) and falls back to public torch ops
  when the API is missing or accelerators are off.

An accelerator was written for the probe configuration of its day: it lists the config and
architecture keys it ``knows``, and :func:`select` uses it only where every other key holds
its default value (so a new option, e.g. ``train.fused.layers``, leaves the accelerator off
until someone teaches it). The tests hold every accelerator to autograd of the textbook
forward (loss and every gradient, float64, dropout on, the same dropout masks).

This module imports neither torch nor an accelerator until one is selected: the numpy
echo probe's process never loads torch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rightsize.probe_registry import resolve

# Keys every accelerator understands (the input geometry; ECG tokens are each one's own test)
COMMON = frozenset(("probe", "echo_dim", "ecg_dim", "pca_rank", "ecg_tokens", "ecg_pooling"))

# name -> "module:attribute" of the :class:`Accelerator`
MODULES = {
    "echo_numpy": "rightsize.probes.accel.echo_numpy:ACCELERATOR",
    "concat_stacked": "rightsize.probes.accel.concat_stacked:ACCELERATOR",
    "fused_pooled": "rightsize.probes.accel.fused_coords:POOLED",
    "fused_tokens": "rightsize.probes.accel.fused_coords:TOKENS",
}

_STATE = {"on": True}


def enabled() -> bool:
    """True unless accelerators are switched off (``train.accelerate: false``)."""
    return _STATE["on"]


@contextlib.contextmanager
def use(on: bool) -> Iterator[None]:
    """Run the block with accelerators on or off (``train.accelerate``); restore afterwards."""
    old = _STATE["on"]
    _STATE["on"] = bool(on)
    try:
        yield
    finally:
        _STATE["on"] = old


@dataclass(frozen=True)
class Accelerator:
    """One probe accelerator.

    ``applies(facts)`` answers for the facts of a run (the probe's config block and its
    architecture dict, :func:`select`); ``precondition`` says the same in words (docs,
    logs). ``trainer(job)`` builds the replica trainer the loop drives (``job`` is a
    :class:`rightsize.probes.engine.estimator.FitJob`); ``forward(module, **batch)`` is the
    inference forward of a torch module and ``attend(module, **batch)`` the same with the
    attention weights (None: the module's own).
    """

    name: str
    precondition: str
    knows: frozenset[str]
    applies: Callable[[dict[str, Any]], bool]
    trainer: Callable[[Any], Any]
    forward: Callable[..., Any] | None = None
    attend: Callable[..., Any] | None = None
    uses_torch: bool = True


def load(name: str) -> Accelerator:
    """The accelerator ``name`` (its module is imported here, not before)."""
    return resolve(MODULES[name])


def select(names: tuple[str, ...], facts: dict[str, Any], defaults: dict[str, Any],
           on: bool | None = None) -> Accelerator | None:
    """The first accelerator of ``names`` that applies to ``facts``, or None.

    ``facts`` are the probe's config block and architecture (keys and values); ``defaults``
    the config block's default values. An accelerator applies where accelerators are on,
    every key of ``facts`` it does not know holds its default, and its own ``applies``
    holds. ``on`` overrides :func:`enabled`.
    """
    if not (enabled() if on is None else on):
        return None
    for name in names:
        acc = load(name)
        unknown = {k: v for k, v in facts.items() if k not in acc.knows | COMMON}
        if all(k in defaults and defaults[k] == v for k, v in unknown.items()) and \
                acc.applies(facts):
            return acc
    return None
