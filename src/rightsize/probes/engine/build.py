"""A probe's textbook module for an architecture, and the model a checkpoint loads into.

What the estimator (training) and the checkpoint loader (inference) both ask of a probe's
spec (:class:`~rightsize.probes.spec.ProbeSpec`), in one module that imports neither of
them; the callers resolve the spec from the probe's name (:mod:`rightsize.probes.registry`).
"""

from __future__ import annotations

from typing import Any

from rightsize.probes import accel
from rightsize.probes.spec import ProbeSpec

# Architecture keys that describe the inputs, not the module's constructor
INPUT_KEYS = ("probe", "ecg_tokens", "ecg_pooling")


def build_module(probe: ProbeSpec, arch: dict[str, Any]) -> Any:
    """Probe ``probe``'s textbook torch module for architecture ``arch`` (fresh parameters;
    ``TypeError`` for an arch key its constructor does not take)."""
    model = probe.model
    if model is None:
        raise TypeError(f"probe {probe.name!r} has no textbook torch module (closed-form)")
    return model()(**{k: v for k, v in arch.items() if k not in INPUT_KEYS})


def inference_accelerator(probe: ProbeSpec, arch: dict[str, Any],
                          on: bool) -> accel.Accelerator | None:
    """The accelerator whose forward predicts with a saved ``arch`` model, or None."""
    return accel.select(probe.accelerators, arch, probe.defaults(), on=on)


def load_torch_model(probe: ProbeSpec, arch: dict[str, Any], device: Any = "cpu",
                     accelerate: bool = True) -> Any:
    """Probe ``probe``'s module for ``arch`` (weights not yet loaded:
    :meth:`TorchModel.load_weights`), with the inference forward of the accelerator that
    applies to it, if any."""
    from rightsize.probes.engine.torch_model import TorchModel

    module = build_module(probe, arch)
    acc = inference_accelerator(probe, arch, accelerate)
    if acc is None:
        return TorchModel(module, device=device, accelerate=accelerate)
    return TorchModel(module, acc.forward, acc.attend, device, accelerate)
