"""A probe's textbook module for an architecture, and the model a checkpoint loads into.

What the estimator (training) and the checkpoint loader (inference) both ask of the probe
registry (:mod:`rightsize.probes.registry`), in one module that imports neither of them.
"""

from __future__ import annotations

from typing import Any

from rightsize.probes import accel
from rightsize.probes.registry import spec

# Architecture keys that describe the inputs, not the module's constructor
INPUT_KEYS = ("probe", "ecg_tokens", "ecg_pooling")


def config_defaults(name: str) -> dict[str, Any]:
    """Default value of every key of probe ``name``'s config block."""
    return spec(name).defaults()


def build_module(name: str, arch: dict[str, Any]) -> Any:
    """Probe ``name``'s textbook torch module for architecture ``arch`` (fresh parameters;
    ``TypeError`` for an arch key its constructor does not take)."""
    model = spec(name).model
    if model is None:
        raise TypeError(f"probe {name!r} has no textbook torch module (closed-form)")
    return model()(**{k: v for k, v in arch.items() if k not in INPUT_KEYS})


def inference_accelerator(name: str, arch: dict[str, Any],
                          on: bool) -> accel.Accelerator | None:
    """The accelerator whose forward predicts with a saved ``arch`` model, or None."""
    return accel.select(spec(name).accelerators, arch, config_defaults(name), on=on)


def load_torch_model(name: str, arch: dict[str, Any], device: Any = "cpu",
                     accelerate: bool = True) -> Any:
    """Probe ``name``'s module for ``arch`` (weights not yet loaded:
    :meth:`TorchModel.load_weights`), with the inference forward of the accelerator that
    applies to it, if any."""
    from rightsize.probes.engine.torch_model import TorchModel

    module = build_module(name, arch)
    acc = inference_accelerator(name, arch, accelerate)
    if acc is None:
        return TorchModel(module, device=device, accelerate=accelerate)
    return TorchModel(module, acc.forward, acc.attend, device, accelerate)
