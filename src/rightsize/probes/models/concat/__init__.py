"""The ``concat`` probe: an MLP on [mean-pooled echo clips || ECG].

The textbook forward: the echo clips are averaged over present clips, the subject's ECG is
its vector or the mean of its ECG tokens, both normalized (absent ones are zeros), and an
MLP (Linear, GELU, Dropout, Linear) reads them side by side. The inputs arrive as PCA
coordinates (:meth:`ConcatMLPProbe.encode`, the fixed part; clips and ECG tokens are
pooled there, which commutes with the linear normalization); the first layer on
``[echo || ECG]`` is the sum of its two column blocks, each applied to its input's PCA
reconstruction as ``(W B) c`` (:meth:`~rightsize.probes.models.featurenorm.FeatureNorm.lift`).

EF<=40 is not a separate head: its score is the negated LVEF prediction (EF<=40 is a
threshold of LVEF, so the regression output ranks it directly; AUROC is rank-based).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rightsize.params import require
from rightsize.probes.spec import ProbeSpec, check_dropout, check_epochs, module_names

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


SPEC = ProbeSpec("concat", ConcatConfig, model=lambda: textbook()["ConcatMLPProbe"],
                 accelerators=(_concat_stacked,))

@functools.cache
def textbook() -> dict[str, type]:
    """The textbook torch classes, defined (and torch imported) on first use, so that
    importing this home (its config and spec) never loads torch."""
    import torch
    from torch import nn

    from rightsize.probes.engine.data import Moments
    from rightsize.probes.models.featurenorm import FeatureNorm, masked_mean

    Batch = dict[str, torch.Tensor]

    class ConcatMLPProbe(nn.Module):
        """MLP on [mean-pooled echo || ECG] (normalized; absent parts are zeros)."""

        def __init__(self, echo_dim: int, ecg_dim: int, hidden: int = 256,
                     dropout: float = 0.1, pca_rank: int = 0) -> None:
            super().__init__()
            self.norm_echo = FeatureNorm(echo_dim, pca_rank)
            self.norm_ecg = FeatureNorm(ecg_dim, pca_rank)
            self.mlp = nn.Sequential(nn.Linear(echo_dim + ecg_dim, hidden), nn.GELU(),
                                     nn.Dropout(dropout), nn.Linear(hidden, 1))

        def set_moments(self, m: Moments) -> None:
            """Load train-split input moments."""
            self.norm_echo.set_moments(m.echo_mean, m.echo_sd, m.echo_basis)
            self.norm_ecg.set_moments(m.ecg_mean, m.ecg_sd, m.ecg_basis)

        def encode(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                   has_ecg: torch.Tensor) -> Batch:
            """The fixed part: the clips' mean coordinates as one pseudo-clip (B, 1, r) and the
            ECG's coordinates (B, r), token-level ECGs averaged over their tokens."""
            c = self.norm_echo.coords(echo, clip_mask)
            g = self.norm_ecg.coords(ecg, has_ecg)
            return {"echo": masked_mean(c, clip_mask).unsqueeze(1),
                    "clip_mask": clip_mask.any(dim=1, keepdim=True),
                    "ecg": g if g.dim() == 2 else g.mean(dim=1), "has_ecg": has_ecg}

        def forward(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                    has_ecg: torch.Tensor) -> torch.Tensor:
            """(B,) standardized LVEF from raw embeddings."""
            return self.forward_encoded(**self.encode(echo, clip_mask, ecg, has_ecg))

        def forward_encoded(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                            has_ecg: torch.Tensor) -> torch.Tensor:
            """(B,) standardized LVEF from :meth:`encode`'s output (masks may be narrowed since:
            the inputs are masked again)."""
            first = self.mlp[0]
            de = self.norm_echo.mean.shape[0]
            x_e = masked_mean(echo, clip_mask)
            x_g = ecg * has_ecg.unsqueeze(-1).to(ecg.dtype)
            h = (nn.functional.linear(x_e, self.norm_echo.lift(first.weight[:, :de]))
                 + nn.functional.linear(x_g, self.norm_ecg.lift(first.weight[:, de:]), first.bias))
            return self.mlp[1:](h).squeeze(-1)

    return module_names({"ConcatMLPProbe": ConcatMLPProbe})


def __getattr__(name: str) -> Any:
    """The textbook classes (ConcatMLPProbe) as module attributes, built on first use."""
    if name in ("ConcatMLPProbe",):
        return textbook()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
