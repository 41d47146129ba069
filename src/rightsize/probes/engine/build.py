"""A probe's textbook module for an architecture, and the accelerator that predicts with it.

What the estimator (training) and the torch checkpoint loader (inference) both ask of the
registry, in one module that imports neither of them.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from rightsize.probe_registry import entry, resolve
from rightsize.probes import accel
from rightsize.probes.engine.config import TrainConfig

# Architecture keys that describe the inputs, not the module's constructor
INPUT_KEYS = ("probe", "ecg_tokens", "ecg_pooling")


def config_defaults(name: str) -> dict[str, Any]:
    """Default value of every key of probe ``name``'s config block."""
    block = TrainConfig.__dataclass_fields__[name].default_factory()   # type: ignore[misc]
    return {f.name: getattr(block, f.name) for f in fields(block)}


def build_module(name: str, arch: dict[str, Any]) -> Any:
    """Probe ``name``'s textbook torch module for architecture ``arch`` (fresh parameters;
    ``TypeError`` for an arch key its constructor does not take)."""
    cls = resolve(entry(name).model)
    return cls(**{k: v for k, v in arch.items() if k not in INPUT_KEYS})


def inference_accelerator(name: str, arch: dict[str, Any],
                          on: bool) -> accel.Accelerator | None:
    """The accelerator whose forward predicts with a saved ``arch`` model, or None."""
    return accel.select(entry(name).accelerators, arch, config_defaults(name), on=on)
