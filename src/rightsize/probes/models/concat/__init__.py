"""The ``concat`` probe: an MLP on [mean-pooled echo clips || ECG].

The textbook forward: the echo clips are averaged over present clips, the subject's ECG is
its vector or the mean of its ECG tokens, both normalized (absent ones are zeros), and an
MLP (Linear, GELU, Dropout, Linear) reads them side by side. The inputs arrive as PCA
coordinates (:meth:`.model.ConcatMLPProbe.encode`, the fixed part; clips and ECG tokens are
pooled there, which commutes with the linear normalization); the first layer on
``[echo || ECG]`` is the sum of its two column blocks, each applied to its input's PCA
reconstruction as ``(W B) c`` (:meth:`~rightsize.probes.models.featurenorm.FeatureNorm.lift`).

EF<=40 is not a separate head: its score is the negated LVEF prediction (EF<=40 is a
threshold of LVEF, so the regression output ranks it directly; AUROC is rank-based).

This home (config, spec) imports without torch; the textbook torch class is in
:mod:`rightsize.probes.models.concat.model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rightsize.params import require
from rightsize.probes.spec import ProbeSpec, check_dropout, check_epochs

if TYPE_CHECKING:
    from rightsize.probes.accel import Accelerator


@dataclass(frozen=True)
class ConcatConfig:
    """``train.concat``: MLP on [mean-pooled echo || ECG]."""

    epochs: int = 40
    hidden: int = 256
    dropout: float = 0.1

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        check_epochs(self.epochs, key)
        require(self.hidden >= 1, f"{key}.hidden", f"must be >= 1, got {self.hidden}")
        check_dropout(self.dropout, f"{key}.dropout")


def _concat_stacked() -> Accelerator:
    from rightsize.probes.models.concat.stacked import ACCELERATOR
    return ACCELERATOR


def _model() -> type:
    from rightsize.probes.models.concat.model import ConcatMLPProbe
    return ConcatMLPProbe


SPEC = ProbeSpec("concat", ConcatConfig, model=_model,
                 accelerators=(_concat_stacked,))
