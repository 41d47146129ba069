"""The ``concat`` probe's textbook torch model, :class:`ConcatMLPProbe` (its forward is
described in the home, :mod:`rightsize.probes.models.concat`, which imports without torch);
this module imports torch and is loaded only when the model is built (``SPEC.model()``)."""

from __future__ import annotations

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
