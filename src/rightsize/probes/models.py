"""The three torch probes (the sklearn ECG probe lives in :mod:`rightsize.probes.linear`).

All take the same batch tensors ``(echo, clip_mask, ecg, has_ecg)`` and return one
standardized LVEF prediction per row. Inputs are normalized inside the model with
train-split moments (buffers, saved in the state dict) and multiplied by their presence
mask, so an absent modality is exactly "zeros + masked tokens" whatever the caller passed.
Every attention has a learned null token that is always attendable, so a row whose key
set is entirely masked (no clips, no ECG) still gets finite weights.

EF<=40 is not a separate head: its score is the negated LVEF prediction (EF<=40 is a
threshold of LVEF, so the regression output ranks it directly; AUROC is rank-based).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from rightsize.probes.data import Moments

ARCH_KEYS = {
    "echo": ("echo_dim", "ecg_dim", "pca_rank"),
    "concat": ("echo_dim", "ecg_dim", "pca_rank", "hidden", "dropout"),
    "fused": ("echo_dim", "ecg_dim", "pca_rank", "fusion_dim", "heads", "hidden", "dropout"),
}


class FeatureNorm(nn.Module):
    """``(x - mean) / sd``, optionally denoised, times the presence mask.

    With ``rank > 0`` the standardized vector is projected onto the top-``rank`` principal
    directions of the train split (``z -> B B^T z``, ``B`` a fixed buffer): the remaining
    directions of a 1024-d embedding carry mostly noise that a probe trained on a few
    hundred subjects would otherwise memorize. Buffers only: nothing here is trained.
    """

    def __init__(self, dim: int, rank: int = 0) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("inv_sd", torch.ones(dim))
        self.rank = rank if 0 < rank < dim else 0
        if self.rank:
            self.register_buffer("basis", torch.eye(dim, self.rank))

    def set_moments(self, mean: np.ndarray, sd: np.ndarray,
                    basis: np.ndarray | None = None) -> None:
        """Load train-split moments (float32 arrays of length ``dim``; basis ``(dim, rank)``)."""
        with torch.no_grad():
            self.mean.copy_(torch.from_numpy(np.asarray(mean, np.float32)))
            self.inv_sd.copy_(torch.from_numpy(1.0 / np.asarray(sd, np.float32)))
            if self.rank and basis is not None:      # None: no train rows to fit it on
                self.basis.copy_(torch.from_numpy(np.asarray(basis, np.float32)))

    def forward(self, x: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """Normalize ``x`` (..., dim) and zero it where ``present`` (...) is False."""
        z = self.coords(x, present)
        return z @ self.basis.T if self.rank else z

    def coords(self, x: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """Masked coordinates: ``B^T z`` (..., rank) with a basis, else ``z`` itself (..., dim)."""
        z = (x - self.mean) * self.inv_sd
        if self.rank:
            z = z @ self.basis
        return z * present.unsqueeze(-1).to(x.dtype)

    def into(self, x: torch.Tensor, present: torch.Tensor, weight: torch.Tensor,
             bias: torch.Tensor | None = None) -> torch.Tensor:
        """``F.linear(forward(x), weight, bias)`` computed in the rank-dim coordinates.

        ``W (B B^T z) = (W B)(B^T z)``: the same function and the same gradient for ``W``,
        but each token costs ``rank x out`` multiply-adds instead of ``dim x out`` (32 vs 1024
        at the defaults); ``W B`` is formed once per call.
        """
        c = self.coords(x, present)
        w = weight @ self.basis if self.rank else weight
        return nn.functional.linear(c, w, bias)


def _with_null(null: torch.Tensor, tokens: torch.Tensor,
               valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Prepend an always-valid null token: returns (B, 1+k, d) tokens and (B, 1+k) validity."""
    b = tokens.shape[0]
    tok = torch.cat([null.expand(b, 1, null.shape[-1]), tokens], dim=1)
    ok = torch.cat([torch.ones(b, 1, dtype=torch.bool, device=valid.device), valid], dim=1)
    return tok, ok


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

    def forward(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                has_ecg: torch.Tensor) -> torch.Tensor:
        """(B,) standardized LVEF; ``ecg``/``has_ecg`` are ignored."""
        x = self.norm_echo(echo, clip_mask)
        tok, ok = _with_null(self.null, x, clip_mask)
        score = self.query(tok).squeeze(-1).masked_fill(~ok, float("-inf"))
        w = torch.softmax(score, dim=1)
        pooled = torch.bmm(w.unsqueeze(1), tok).squeeze(1)
        return self.head(pooled).squeeze(-1)


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

    def forward(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                has_ecg: torch.Tensor) -> torch.Tensor:
        """(B,) standardized LVEF."""
        # First layer split by input block and applied in the low-rank coordinates (see
        # FeatureNorm.into): mean-pooling commutes with the linear maps.
        first = self.mlp[0]
        de = self.norm_echo.mean.shape[0]
        n = clip_mask.sum(dim=1, keepdim=True).clamp(min=1).to(echo.dtype)
        h_echo = self.norm_echo.into(echo, clip_mask, first.weight[:, :de]).sum(dim=1) / n
        h_ecg = self.norm_ecg.into(ecg, has_ecg, first.weight[:, de:], first.bias)
        return self.mlp[1:](h_echo + h_ecg).squeeze(-1)


class CrossAttnFusedProbe(nn.Module):
    """Bidirectional cross-attention fusion of echo clip tokens and the ECG token.

    echo->ECG: each clip token queries [null, ECG]; ECG->echo: the ECG token queries
    [null, clips] (masked). Residual + LayerNorm per direction; echo outputs are mean-pooled
    over present clips; [pooled echo || ECG output] feeds an MLP head.
    """

    def __init__(self, echo_dim: int, ecg_dim: int, fusion_dim: int = 256, heads: int = 4,
                 hidden: int = 256, dropout: float = 0.1, pca_rank: int = 0) -> None:
        super().__init__()
        d = fusion_dim
        self.norm_echo = FeatureNorm(echo_dim, pca_rank)
        self.norm_ecg = FeatureNorm(ecg_dim, pca_rank)
        self.echo_proj = nn.Linear(echo_dim, d)
        self.ecg_proj = nn.Linear(ecg_dim, d)
        self.echo_null = nn.Parameter(0.02 * torch.randn(1, 1, d))
        self.ecg_null = nn.Parameter(0.02 * torch.randn(1, 1, d))
        self.echo_to_ecg = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ecg_to_echo = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln_echo = nn.LayerNorm(d)
        self.ln_ecg = nn.LayerNorm(d)
        self.head = nn.Sequential(nn.Linear(2 * d, hidden), nn.GELU(), nn.Dropout(dropout),
                                  nn.Linear(hidden, 1))

    def set_moments(self, m: Moments) -> None:
        """Load train-split input moments."""
        self.norm_echo.set_moments(m.echo_mean, m.echo_sd, m.echo_basis)
        self.norm_ecg.set_moments(m.ecg_mean, m.ecg_sd, m.ecg_basis)

    def fuse(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
             has_ecg: torch.Tensor, need_weights: bool = False
             ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Prediction plus per-head attention weights when ``need_weights``.

        Weights: echo->ECG (B, H, c, 2) over [null, ECG]; ECG->echo (B, H, 1, 1+c) over
        [null, clips].
        """
        e = self.norm_echo.into(echo, clip_mask, self.echo_proj.weight,
                                self.echo_proj.bias)                        # (B, c, d)
        g = self.norm_ecg.into(ecg, has_ecg, self.ecg_proj.weight,
                               self.ecg_proj.bias).unsqueeze(1)             # (B, 1, d)
        kv_g, ok_g = _with_null(self.ecg_null, g, has_ecg.unsqueeze(1))
        a_e, w_e = self.echo_to_ecg(e, kv_g, kv_g, key_padding_mask=~ok_g,
                                    need_weights=need_weights, average_attn_weights=False)
        e2 = self.ln_echo(e + a_e)
        m = clip_mask.unsqueeze(-1).to(e2.dtype)
        pooled = (e2 * m).sum(dim=1) / m.sum(dim=1).clamp(min=1)
        kv_e, ok_e = _with_null(self.echo_null, e, clip_mask)
        a_g, w_g = self.ecg_to_echo(g, kv_e, kv_e, key_padding_mask=~ok_e,
                                    need_weights=need_weights, average_attn_weights=False)
        g2 = self.ln_ecg(g + a_g).squeeze(1)
        out = self.head(torch.cat([pooled, g2], dim=1)).squeeze(-1)
        return out, w_e, w_g

    def forward(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                has_ecg: torch.Tensor) -> torch.Tensor:
        """(B,) standardized LVEF."""
        return self.fuse(echo, clip_mask, ecg, has_ecg)[0]


def arch_of(probe: str, cfg: Any, echo_dim: int, ecg_dim: int) -> dict[str, Any]:
    """The JSON-able architecture dict of ``probe`` from a :class:`TrainConfig`."""
    arch: dict[str, Any] = {"probe": probe, "echo_dim": int(echo_dim), "ecg_dim": int(ecg_dim),
                            "pca_rank": int(cfg.pca_rank)}
    sub = getattr(cfg, probe)
    for key in ARCH_KEYS[probe][3:]:
        arch[key] = getattr(sub, key)
    return arch


def build_model(arch: dict[str, Any]) -> nn.Module:
    """Instantiate the torch probe described by ``arch`` (see :func:`arch_of`)."""
    probe = arch["probe"]
    kwargs = {k: arch[k] for k in ARCH_KEYS[probe] if k in arch}
    cls = {"echo": EchoAttnProbe, "concat": ConcatMLPProbe, "fused": CrossAttnFusedProbe}[probe]
    return cls(**kwargs)


def count_params(model: nn.Module) -> int:
    """Number of trainable parameters (buffers excluded)."""
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))
