"""What every probe is, as types: its textbook module, its fitted model, a fit's record.

:class:`TextbookModule` is the interface a gradient-trained probe's torch module keeps (the
engine normalizes and projects inputs once, ``encode``, and trains ``forward_encoded``);
:class:`FittedModel` is what any trainer hands back and a checkpoint loads (a torch module
with its forward, or a numpy model). Both are ``typing.Protocol`` classes, checked for every
registered probe by one test suite (``tests/probes/test_probes_registry_suite.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from rightsize.probes.engine.data import Moments, SplitData
    from rightsize.probes.engine.predict import Probe


@runtime_checkable
class TextbookModule(Protocol):
    """A probe's readable torch forward (an ``nn.Module``), built from its architecture."""

    def set_moments(self, m: Moments) -> None:
        """Load the train split's input moments (normalization, PCA basis)."""

    def encode(self, echo: Any, clip_mask: Any, ecg: Any, has_ecg: Any) -> dict[str, Any]:
        """The fixed part of the forward (normalize, project): the tensors to batch."""

    def forward_encoded(self, **batch: Any) -> Any:
        """(B,) standardized LVEF from :meth:`encode` output (what training differentiates)."""

    def forward(self, echo: Any, clip_mask: Any, ecg: Any, has_ecg: Any) -> Any:
        """(B,) standardized LVEF from raw inputs: ``forward_encoded(**encode(...))``."""


@runtime_checkable
class FittedModel(Protocol):
    """A trained model of any kind, as :class:`~rightsize.probes.engine.predict.Probe` and
    the checkpoints use it (``ef_score`` / ``attention`` are optional extras)."""

    @property
    def n_params(self) -> int:
        """Trainable parameter count."""

    def predict_z(self, data: SplitData) -> np.ndarray:
        """Standardized LVEF predictions (m,) float64."""

    def save(self, out_dir: str | os.PathLike[str]) -> Path:
        """Write the weights file into ``out_dir``; its path."""


@dataclass
class FitResult:
    """A trained replica and how it got there."""

    probe: Probe
    arch: dict[str, Any]
    best_epoch: int
    epochs: int
    steps: int                       # optimizer steps taken (1 for a closed-form probe)
    train_loss: list[float]          # per epoch, standardized MSE
    val_loss: list[float]
    val_mae: float                   # best epoch, percent
    train_mae: float                 # best epoch, percent
    extra: dict[str, Any] = field(default_factory=dict)
    flops: dict[str, Any] | None = None     # the loop's executed FLOPs (engine/flops.py)


