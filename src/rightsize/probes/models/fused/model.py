"""The ``fused`` probe's textbook torch model (nanoGPT-style: one module-level class per block,
each with its own ``forward``): :class:`CrossAttention`, :class:`FusionBlock` (both attention
directions) and :class:`CrossAttnFusedProbe`. The forward is described in the home,
:mod:`rightsize.probes.models.fused`, which imports without torch; this module imports torch
and is loaded only when the model is built (``SPEC.model()``)."""

from __future__ import annotations

import math
from functools import cache

import torch
from torch import nn

from rightsize.cohort.token_layout import same_moment
from rightsize.probes.engine.data import Moments
from rightsize.probes.models.featurenorm import FeatureNorm, masked_mean

F = nn.functional
Batch = dict[str, torch.Tensor]

def _uninitialized_linear(dim: int) -> nn.Linear:
    """A ``dim x dim`` nn.Linear with uninitialized parameters and no random draw.

    What ``torch.nn.utils.skip_init`` gives, without its ``to_empty`` call, whose first use
    imports torch's symbolic-shapes machinery and sympy (~0.4 s of every process that
    builds this probe).
    """
    lin = nn.Linear(dim, dim, device="meta")
    lin.weight = nn.Parameter(torch.empty(dim, dim))
    lin.bias = nn.Parameter(torch.empty(dim))
    return lin


@cache
def _same_moment(n_tokens: int) -> torch.Tensor | None:
    idx = same_moment(n_tokens)
    return None if idx is None else torch.from_numpy(idx)


def mix_leads(g: torch.Tensor, lead_mix: float) -> torch.Tensor:
    """ECG token coordinates ``g`` (B, N, r) plus ``lead_mix`` x the mean of the 12 tokens that
    see the same moment, one per lead (HuBERT-ECG's layout,
    :func:`rightsize.cohort.token_layout.same_moment`); ``g`` itself where ``lead_mix`` is 0 or
    ``N`` is not a whole number of 93-token crops."""
    idx = _same_moment(g.shape[1]) if lead_mix and g.dim() == 3 else None
    return g if idx is None else g + lead_mix * g[:, idx].mean(dim=2)


class CrossAttention(nn.Module):
    """Multi-head attention of query tokens over key tokens: ``q``, ``k``, ``v``, ``out``."""

    def __init__(self, dim: int, heads: int, scale: float = 1.0) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"fusion_dim {dim} is not divisible by heads {heads}")
        self.heads = heads
        self.scale = scale      # score multiplier on top of 1/sqrt(head dim)
        # nn.MultiheadAttention's initialization, random draws in the same order: the output
        # layer as an nn.Linear, then Xavier-uniform over the packed (3d, d) input
        # projection; all biases zero.
        self.out = nn.Linear(dim, dim)
        self.q, self.k, self.v = (_uninitialized_linear(dim) for _ in range(3))
        packed = nn.init.xavier_uniform_(torch.empty(3 * dim, dim))
        with torch.no_grad():
            for i, lin in enumerate((self.q, self.k, self.v)):
                lin.weight.copy_(packed[i * dim:(i + 1) * dim])
                lin.bias.zero_()
            self.out.bias.zero_()

    def forward(self, query: torch.Tensor, keys: torch.Tensor, valid: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """``query`` (B, q, d) over ``keys`` (B, k, d) where ``valid`` (B, k): the output
        (B, q, d) and the attention weights (B, H, q, k)."""
        b, n_q, d = query.shape
        dh = d // self.heads
        q = self.q(query).view(b, n_q, self.heads, dh).transpose(1, 2)       # (B, H, q, dh)
        k = self.k(keys).view(b, -1, self.heads, dh).transpose(1, 2)         # (B, H, k, dh)
        v = self.v(keys).view(b, -1, self.heads, dh).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(dh)
        if self.scale != 1.0:
            scores = scores * self.scale
        weights = scores.masked_fill(~valid[:, None, None, :], float("-inf")).softmax(-1)
        return self.out((weights @ v).transpose(1, 2).reshape(b, n_q, d)), weights


class FusionBlock(nn.Module):
    """Both attention directions, each with a residual connection and a LayerNorm."""

    def __init__(self, dim: int, heads: int, attn_scale: float = 1.0) -> None:
        super().__init__()
        self.echo_to_ecg = CrossAttention(dim, heads, attn_scale)
        self.ecg_to_echo = CrossAttention(dim, heads)
        self.ln_echo = nn.LayerNorm(dim)
        self.ln_ecg = nn.LayerNorm(dim)

    def forward(self, e: torch.Tensor, query: torch.Tensor, ecg_keys: torch.Tensor,
                ecg_ok: torch.Tensor, echo_keys: torch.Tensor, echo_ok: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The clip tokens ``e`` (B, c, d) attend over ``ecg_keys`` where ``ecg_ok``, the ECG
        query (B, 1, d) over ``echo_keys`` where ``echo_ok``; each with residual + LayerNorm.
        Returns the new ``e``, the new query and both attention weights (echo->ECG,
        ECG->echo)."""
        a_e, w_e = self.echo_to_ecg(e, ecg_keys, ecg_ok)
        a_g, w_g = self.ecg_to_echo(query, echo_keys, echo_ok)
        return self.ln_echo(e + a_e), self.ln_ecg(query + a_g), w_e, w_g


class CrossAttnFusedProbe(nn.Module):
    """Bidirectional cross-attention fusion of echo clip tokens and ECG tokens."""

    def __init__(self, echo_dim: int, ecg_dim: int, fusion_dim: int = 256, heads: int = 4,
                 hidden: int = 256, dropout: float = 0.1, pca_rank: int = 0,
                 layers: int = 1, attn_scale: float = 1.0, lead_mix: float = 0.0) -> None:
        super().__init__()
        d = fusion_dim
        self.lead_mix = lead_mix
        self.norm_echo = FeatureNorm(echo_dim, pca_rank)
        self.norm_ecg = FeatureNorm(ecg_dim, pca_rank)
        self.echo_proj = nn.Linear(echo_dim, d)
        self.ecg_proj = nn.Linear(ecg_dim, d)
        self.echo_null = nn.Parameter(0.02 * torch.randn(1, 1, d))
        self.ecg_null = nn.Parameter(0.02 * torch.randn(1, 1, d))
        self.blocks = nn.ModuleList([FusionBlock(d, heads, attn_scale) for _ in range(layers)])
        self.head = nn.Sequential(nn.Linear(2 * d, hidden), nn.GELU(), nn.Dropout(dropout),
                                  nn.Linear(hidden, 1))

    def set_moments(self, m: Moments) -> None:
        """Load train-split input moments."""
        self.norm_echo.set_moments(m.echo_mean, m.echo_sd, m.echo_basis)
        self.norm_ecg.set_moments(m.ecg_mean, m.ecg_sd, m.ecg_basis)

    def encode(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
               has_ecg: torch.Tensor) -> Batch:
        """The fixed part (normalization, PCA, the lead mix): clip coordinates (B, c, r) and
        ECG coordinates (B, r) pooled or (B, N, r) tokens, under the same four keys."""
        ecg_coords = mix_leads(self.norm_ecg.coords(ecg, has_ecg), self.lead_mix)
        return {"echo": self.norm_echo.coords(echo, clip_mask), "clip_mask": clip_mask,
                "ecg": ecg_coords, "has_ecg": has_ecg}

    def forward(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                has_ecg: torch.Tensor) -> torch.Tensor:
        """(B,) standardized LVEF from raw embeddings."""
        return self.forward_encoded(**self.encode(echo, clip_mask, ecg, has_ecg))

    def forward_encoded(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                        has_ecg: torch.Tensor) -> torch.Tensor:
        """(B,) standardized LVEF from :meth:`encode`'s output."""
        return self.attend(echo, clip_mask, ecg, has_ecg)[0]

    def attend(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
               has_ecg: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The prediction (B,) and the last block's attention weights per head: echo->ECG
        (B, H, c, 1+N) over ``[null, ECG tokens]``, ECG->echo (B, H, 1, 1+c) over
        ``[null, clips]``.

        Inputs are :meth:`encode`'s output; the masks may have been narrowed since (the
        training loop's modality dropout), so the coordinates are masked again here.
        """
        if ecg.dim() == 2:
            ecg = ecg.unsqueeze(1)                                 # one pooled ECG token
        b, n = ecg.shape[:2]
        ones = torch.ones(b, 1, dtype=torch.bool, device=has_ecg.device)
        c_e = echo * clip_mask.unsqueeze(-1).to(echo.dtype)
        c_g = ecg * has_ecg.view(b, 1, 1).to(ecg.dtype)
        e = F.linear(c_e, self.norm_echo.lift(self.echo_proj.weight), self.echo_proj.bias)
        g = F.linear(c_g, self.norm_ecg.lift(self.ecg_proj.weight), self.ecg_proj.bias)
        query = g.mean(dim=1, keepdim=True)                        # (B, 1, d): mean ECG token
        ecg_keys = torch.cat([self.ecg_null.expand(b, 1, -1), g], dim=1)
        ecg_ok = torch.cat([ones, has_ecg.view(b, 1).expand(b, n)], dim=1)
        echo_ok = torch.cat([ones, clip_mask], dim=1)
        for blk in self.blocks:
            echo_keys = torch.cat([self.echo_null.expand(b, 1, -1), e], dim=1)
            e, query, w_e, w_g = blk(e, query, ecg_keys, ecg_ok, echo_keys, echo_ok)
        pooled = masked_mean(e, clip_mask)
        out = self.head(torch.cat([pooled, query.squeeze(1)], dim=1)).squeeze(-1)
        return out, w_e, w_g
