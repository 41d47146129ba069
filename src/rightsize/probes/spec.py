"""The typed spec of a probe, and the two range checks most probe configs share.

A probe's home, ``rightsize.probes.models.<name>``, defines its config dataclass (the
``train.<name>`` params block), its textbook module or closed-form fit, and a module-level
``SPEC = ProbeSpec(...)``; :mod:`rightsize.probes.registry` collects the specs of the homes
that :data:`rightsize.probe_names.PROBES` names. The heavy parts are zero-argument
functions that import them when called, so a home imports light: the numpy probes'
processes never load torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from rightsize.params import require

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

    def block(self, cfg: Any, ecg_tokens: int = 1) -> Any:
        """The probe's config block of train config ``cfg`` (its defaults when ``cfg`` has
        none: a probe registered at run time) as it trains on ``ecg_tokens`` ECG tokens per
        subject: a block with ``for_ecg_tokens`` (the fused probe's ``train.fused.tokens``)
        resolves its overrides there."""
        block = getattr(cfg, self.name, None) or self.config()
        resolve = getattr(block, "for_ecg_tokens", None)
        return resolve(ecg_tokens) if resolve else block


def check_epochs(epochs: int, key: str) -> None:
    """``ParamsError`` naming ``<key>.epochs`` unless ``epochs >= 1``."""
    require(epochs >= 1, f"{key}.epochs", f"must be >= 1, got {epochs}")


def check_dropout(p: float, key: str, hi: float = 1.0) -> None:
    """``ParamsError`` naming ``key`` unless ``0 <= p < hi``."""
    require(0.0 <= p < hi, key, f"must be in [0, {hi}), got {p}")


def module_names(classes: dict[str, type]) -> dict[str, type]:
    """``classes`` (a one-file home's textbook classes, defined inside a function), each
    renamed as if defined at the home's top level (reprs, error messages)."""
    for name, cls in classes.items():
        cls.__qualname__ = name
    return classes
