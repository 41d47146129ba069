"""Accelerators: every speed-up of the probe engine, behind this one boundary.

A probe's model is its textbook forward (``rightsize.probes.models.<probe>``) trained by the one
loop (:mod:`rightsize.probes.engine.loop`) with autograd. An accelerator computes the same
function faster for a special case, says when it applies, is chosen automatically, and is
switched off with ``train.accelerate: false`` (:func:`use`). Two kinds:

* **probe accelerators** (:class:`Accelerator`), each in its probe's home
  (``rightsize.probes.models.<probe>``), declared in its spec and chosen by :func:`select`:
  a replica trainer (``trainer``) and, for a torch probe, an inference forward (``forward``);
* **kernel accelerators**, used by the textbook code and the probe accelerators alike:
  oneDNN routing of fp32 products (:mod:`.gemm`), torch's fused AdamW kernel (:mod:`.adamw`)
  and aten's GELU / layer-norm backward kernels (:mod:`.handgrad`). Each calls a private
  torch API (the only modules of the project that do) and falls back to public torch ops
  when the API is missing or accelerators are off.

An accelerator was written for the probe configuration of its day: it lists the config and
architecture keys it ``handles``, and :func:`select` uses it only where every other key holds
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

# Keys every accelerator understands (the input geometry; ECG tokens are each one's own test)
GEOMETRY_KEYS = frozenset(("probe", "echo_dim", "ecg_dim", "pca_rank", "ecg_tokens", "ecg_pooling"))

_SWITCH = {"on": True}


def enabled() -> bool:
    """True unless accelerators are switched off (``train.accelerate: false``)."""
    return _SWITCH["on"]


@contextlib.contextmanager
def use(on: bool) -> Iterator[None]:
    """Run the block with accelerators on or off (``train.accelerate``); restore afterwards."""
    old = _SWITCH["on"]
    _SWITCH["on"] = bool(on)
    try:
        yield
    finally:
        _SWITCH["on"] = old


@dataclass(frozen=True)
class Accelerator:
    """One probe accelerator.

    ``applies(settings)`` answers for the settings of a run (the probe's config block and its
    architecture dict, :func:`select`); ``precondition`` says the same in words (docs,
    logs). ``trainer(job)`` builds the replica trainer the loop drives (``job`` is a
    :class:`rightsize.probes.engine.estimator.FitJob`); ``forward(module, **batch)`` is the
    inference forward of a torch module and ``attend(module, **batch)`` the same with the
    attention weights (None: the module's own).
    """

    name: str
    precondition: str
    handles: frozenset[str]
    applies: Callable[[dict[str, Any]], bool]
    trainer: Callable[[Any], Any]
    forward: Callable[..., Any] | None = None
    attend: Callable[..., Any] | None = None
    uses_torch: bool = True


def why_not(acc: Accelerator, settings: dict[str, Any], defaults: dict[str, Any]) -> str | None:
    """Why ``acc`` does not cover ``settings`` (one clause), or None when it does.

    It covers them where every key it does not handle (:attr:`Accelerator.handles`, beside
    the input geometry) holds its default value, and its own ``applies`` holds.
    """
    unknown = {k: v for k, v in settings.items() if k not in acc.handles | GEOMETRY_KEYS}
    changed = sorted(k for k, v in unknown.items() if not (k in defaults and defaults[k] == v))
    if changed:
        covers = [f"{k} == {defaults[k]!r}" if k in defaults else f"no {k}" for k in changed]
        return (f"{', '.join(f'{k}={unknown[k]!r}' for k in changed)} not handled (it covers "
                f"{', '.join(covers)}: {acc.precondition})")
    if not acc.applies(settings):
        return f"needs {acc.precondition}"
    return None


Declared = Callable[[], Accelerator]     # a probe spec's accelerator: imports it when called


def select(declared: tuple[Declared, ...], settings: dict[str, Any], defaults: dict[str, Any],
           on: bool | None = None) -> Accelerator | None:
    """The first of a probe's ``declared`` accelerators that covers ``settings``
    (:func:`why_not`), or None; each is imported only once it is considered.

    ``settings`` are the probe's config block and architecture (keys and values); ``defaults``
    the config block's default values. Nothing applies where accelerators are off; ``on``
    overrides :func:`enabled`.
    """
    if not (enabled() if on is None else on):
        return None
    for load in declared:
        acc = load()
        if why_not(acc, settings, defaults) is None:
            return acc
    return None


def skipped(declared: tuple[Declared, ...], settings: dict[str, Any],
            defaults: dict[str, Any], on: bool | None = None) -> str:
    """One line saying why none of ``declared`` trains a probe with ``settings`` ("" when
    one does, or the probe declares none)."""
    if not declared or select(declared, settings, defaults, on) is not None:
        return ""
    accs = [load() for load in declared]
    if not (enabled() if on is None else on):
        return f"{', '.join(a.name for a in accs)} switched off (train.accelerate: false)"
    return "; ".join(f"{a.name}: {why_not(a, settings, defaults)}" for a in accs)
