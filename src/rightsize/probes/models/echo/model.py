"""The ``echo`` probe's textbook torch model, :class:`EchoAttnProbe` (its forward is
described in the home, :mod:`rightsize.probes.models.echo`, which imports without torch);
this module imports torch and is loaded only when the model is built (``SPEC.model()``)."""

from __future__ import annotations

import torch
from torch import nn

from rightsize.probes.engine.data import Moments
from rightsize.probes.models.featurenorm import FeatureNorm

Batch = dict[str, torch.Tensor]


class EchoAttnProbe(nn.Module):
    """Attentive pooling over echo clips (learned query, masked softmax) + linear head."""

    def __init__(self, echo_dim: int, ecg_dim: int, pca_rank: int = 0) -> None:
        super().__init__()
        self.norm_echo = FeatureNorm(echo_dim, pca_rank)
        self.query = nn.Linear(echo_dim, 1)             # score_j = q . x_j + b
        self.null = nn.Parameter(torch.zeros(1, 1, echo_dim))
        self.head = nn.Linear(echo_dim, 1)

    def set_moments(self, m: Moments) -> None:
        """Load train-split input moments."""
        self.norm_echo.set_moments(m.echo_mean, m.echo_sd, m.echo_basis)

    def encode(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
               has_ecg: torch.Tensor) -> Batch:
        """Clip coordinates (B, c, r); the ECG is not used (an empty (B, 0) tensor)."""
        return {"echo": self.norm_echo.coords(echo, clip_mask), "clip_mask": clip_mask,
                "ecg": ecg.new_zeros(ecg.shape[0], 0), "has_ecg": has_ecg}

    def forward(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                has_ecg: torch.Tensor) -> torch.Tensor:
        """(B,) standardized LVEF from raw embeddings."""
        return self.forward_encoded(**self.encode(echo, clip_mask, ecg, has_ecg))

    def forward_encoded(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                        has_ecg: torch.Tensor) -> torch.Tensor:
        """(B,) standardized LVEF from :meth:`encode`'s output."""
        b = echo.shape[0]
        clips = self.norm_echo.expand(echo * clip_mask.unsqueeze(-1).to(echo.dtype))
        tokens = torch.cat([self.null.expand(b, 1, -1), clips], dim=1)     # (B, 1+c, D)
        valid = torch.cat([torch.ones_like(clip_mask[:, :1]), clip_mask], dim=1)
        scores = self.query(tokens).squeeze(-1).masked_fill(~valid, float("-inf"))
        pooled = (scores.softmax(dim=1).unsqueeze(-1) * tokens).sum(dim=1)    # (B, D)
        return self.head(pooled).squeeze(-1)
