"""The probe specs: what the engine knows about each probe, as typed values.

A :class:`ProbeSpec` names the probe's params block (its config dataclass), its textbook
module or closed-form fit, the numpy model its checkpoint may hold, the accelerators that may
train it, and the facts shared code needs (does it read the ECG, how it pools ECG tokens, how
it scores EF<=40). The heavy parts are zero-argument functions that import them when called,
so this module stays light: the numpy probes' processes never load torch.

The built-in probes are listed here in pipeline order; their names are also the ground list
``rightsize.probe_registry.PROBES`` (which the CLI and the report read without importing the
engine; a test holds the two equal). :func:`register` adds a probe at run time (a test's
fifth probe does). Nothing else in the engine compares probe names (a test greps for it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from rightsize.errors import InputError
from rightsize.probes.engine.config import (
    ConcatConfig,
    EcgConfig,
    EchoConfig,
    FusedConfig,
    TrainConfig,
)

if TYPE_CHECKING:
    from rightsize.probes.accel import Accelerator


@dataclass(frozen=True)
class ProbeSpec:
    """One probe: its config block, model, fit and accelerators."""

    name: str
    config: type                                       # train.<name>'s dataclass
    model: Callable[[], type] | None = None            # the textbook torch module's class
    closed_form: Callable[[], Callable[..., Any]] | None = None   # fit in one go (no loop)
    numpy_model: Callable[[], type] | None = None      # class of a weights.npz model
    accelerators: tuple[Callable[[], Accelerator], ...] = ()
    uses_ecg: bool = True
    ecg_pooling: str = "mean"      # how a subject's ECG tokens reach the probe (arch, report)
    ef_score: str = "neg_lvef"     # EF<=40 score: "neg_lvef" or the model's "logit"

    def defaults(self) -> dict[str, Any]:
        """Default value of every key of the probe's config block."""
        block = self.config()
        return {f.name: getattr(block, f.name) for f in fields(block)}

    def block(self, cfg: TrainConfig) -> Any:
        """The probe's config block of ``cfg`` (its defaults when ``cfg`` has none: a probe
        registered at run time)."""
        return getattr(cfg, self.name, None) or self.config()


# The textbook modules, closed-form fits, numpy models and accelerators, imported on use

def _ecg_fit() -> Callable[..., Any]:
    from rightsize.probes.models.ecg import fit_probe
    return fit_probe


def _ecg_model() -> type:
    from rightsize.probes.models.ecg import LinearEcgProbe
    return LinearEcgProbe


def _echo() -> type:
    from rightsize.probes.models.echo import EchoAttnProbe
    return EchoAttnProbe


def _echo_numpy_model() -> type:
    from rightsize.probes.accel.echo_numpy import AttentiveEchoProbe
    return AttentiveEchoProbe


def _echo_numpy() -> Accelerator:
    from rightsize.probes.accel.echo_numpy import ACCELERATOR
    return ACCELERATOR


def _concat() -> type:
    from rightsize.probes.models.concat import ConcatMLPProbe
    return ConcatMLPProbe


def _concat_stacked() -> Accelerator:
    from rightsize.probes.accel.concat_stacked import ACCELERATOR
    return ACCELERATOR


def _fused() -> type:
    from rightsize.probes.models.fused import CrossAttnFusedProbe
    return CrossAttnFusedProbe


def _fused_pooled() -> Accelerator:
    from rightsize.probes.accel.fused_step import POOLED
    return POOLED


def _fused_tokens() -> Accelerator:
    from rightsize.probes.accel.fused_step import TOKENS
    return TOKENS


SPECS: dict[str, ProbeSpec] = {s.name: s for s in (
    ProbeSpec("ecg", EcgConfig, closed_form=_ecg_fit, numpy_model=_ecg_model, ef_score="logit"),
    ProbeSpec("echo", EchoConfig, model=_echo, numpy_model=_echo_numpy_model,
              accelerators=(_echo_numpy,), uses_ecg=False, ecg_pooling="none"),
    ProbeSpec("concat", ConcatConfig, model=_concat, accelerators=(_concat_stacked,)),
    ProbeSpec("fused", FusedConfig, model=_fused, accelerators=(_fused_pooled, _fused_tokens),
              ecg_pooling="attention (echo->ECG); mean (ECG->echo query)"),
)}


def spec(name: str) -> ProbeSpec:
    """The spec of probe ``name`` (``InputError`` listing the known probes)."""
    if name not in SPECS:
        raise InputError(f"unknown probe {name!r} (known: {', '.join(SPECS)})")
    return SPECS[name]


def register(probe: ProbeSpec) -> None:
    """Add ``probe`` to the registry (``ValueError`` if its name is taken)."""
    if probe.name in SPECS:
        raise ValueError(f"probe {probe.name!r} is already registered")
    SPECS[probe.name] = probe


def unregister(name: str) -> None:
    """Remove a probe :func:`register` added (a test's, when it is done)."""
    SPECS.pop(name)


def accelerator(name: str) -> Accelerator:
    """The declared accelerator called ``name``, whichever probe declares it."""
    for probe in SPECS.values():
        for load in probe.accelerators:
            acc = load()
            if acc.name == name:
                return acc
    raise InputError(f"unknown accelerator {name!r}")
