"""The ``fused`` probe: bidirectional cross-attention between echo clips and ECG tokens.

The textbook forward (:meth:`CrossAttnFusedProbe.attend`), on the PCA coordinates of the
inputs (:meth:`~CrossAttnFusedProbe.encode`; each first projection is applied to the PCA
reconstruction, ``W (B c) = (W B) c``):

1. project the echo clips to ``e`` (B, c, d) and the subject's ECG tokens to ``g``
   (B, N, d); a pooled ECG is one token (N = 1);
2. each :class:`FusionBlock` (``train.fused.layers``, default 1):

   * **echo -> ECG**: every clip queries ``[null, g_1 ... g_N]`` (standard multi-head
     attention, :class:`CrossAttention`; an absent ECG leaves only the null key);
     residual + LayerNorm;
   * **ECG -> echo**: one query, the mean of the ECG tokens, attends over
     ``[null, clips]`` (absent clips masked); residual + LayerNorm. One query whatever N,
     so this direction's cost does not grow with the number of ECG tokens;

3. the echo tokens are mean-pooled over present clips; ``[pooled echo || ECG query]``
   feeds an MLP head (Linear, GELU, Dropout, Linear) to the standardized LVEF.

Every attention has a learned null token that is always attendable, so a row without
clips or without an ECG still gets finite weights. The accelerators ``fused_pooled`` (one
ECG token: each clip attends over two keys ``[null, ECG]``) and ``fused_tokens`` (N tokens)
compute one block of this forward in PCA coordinates (:mod:`rightsize.probes.models.fused.coords`);
the tests hold them to this forward.
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
class FusedConfig:
    """``train.fused``: CrossAttnFusedProbe (bidirectional cross-attention, MLP head)."""

    epochs: int = 50
    fusion_dim: int = 256
    heads: int = 4
    hidden: int = 256
    dropout: float = 0.1
    modality_dropout: float = 0.1   # per-row chance of hiding echo (and, separately, ECG)
    layers: int = 1         # fusion blocks (cross-attention both ways), stacked
    attn_scale: float = 1.0  # echo->ECG score multiplier (x 1/sqrt(head dim)): a sharper softmax

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        check_epochs(self.epochs, key)
        require(self.fusion_dim >= 1, f"{key}.fusion_dim", f"must be >= 1, got {self.fusion_dim}")
        require(self.heads >= 1, f"{key}.heads", f"must be >= 1, got {self.heads}")
        require(self.fusion_dim % self.heads == 0, f"{key}.heads",
                f"fusion_dim {self.fusion_dim} is not divisible by heads {self.heads}")
        require(self.hidden >= 1, f"{key}.hidden", f"must be >= 1, got {self.hidden}")
        check_dropout(self.dropout, f"{key}.dropout")
        check_dropout(self.modality_dropout, f"{key}.modality_dropout", hi=0.5)
        require(self.layers >= 1, f"{key}.layers", f"must be >= 1, got {self.layers}")
        require(self.attn_scale > 0, f"{key}.attn_scale", f"must be > 0, got {self.attn_scale}")


def _fused_pooled() -> Accelerator:
    from rightsize.probes.models.fused.step import POOLED
    return POOLED


def _fused_tokens() -> Accelerator:
    from rightsize.probes.models.fused.step import TOKENS
    return TOKENS


SPEC = ProbeSpec("fused", FusedConfig, model=lambda: textbook()["CrossAttnFusedProbe"],
                 accelerators=(_fused_pooled, _fused_tokens),
                 ecg_pooling="attention (echo->ECG); mean (ECG->echo query)")

@functools.cache
def textbook() -> dict[str, type]:
    """The textbook torch classes, defined (and torch imported) on first use, so that
    importing this home (its config and spec) never loads torch."""
    import math

    import torch
    from torch import nn

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


    class CrossAttnFusedProbe(nn.Module):
        """Bidirectional cross-attention fusion of echo clip tokens and ECG tokens."""

        def __init__(self, echo_dim: int, ecg_dim: int, fusion_dim: int = 256, heads: int = 4,
                     hidden: int = 256, dropout: float = 0.1, pca_rank: int = 0,
                     layers: int = 1, attn_scale: float = 1.0) -> None:
            super().__init__()
            d = fusion_dim
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
            """The fixed part (normalization, PCA): clip coordinates (B, c, r) and ECG
            coordinates (B, r) pooled or (B, N, r) tokens, under the same four keys."""
            return {"echo": self.norm_echo.coords(echo, clip_mask), "clip_mask": clip_mask,
                    "ecg": self.norm_ecg.coords(ecg, has_ecg), "has_ecg": has_ecg}

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
                a_e, w_e = blk.echo_to_ecg(e, ecg_keys, ecg_ok)
                a_g, w_g = blk.ecg_to_echo(query, echo_keys, echo_ok)
                e, query = blk.ln_echo(e + a_e), blk.ln_ecg(query + a_g)
            pooled = masked_mean(e, clip_mask)
            out = self.head(torch.cat([pooled, query.squeeze(1)], dim=1)).squeeze(-1)
            return out, w_e, w_g

    return module_names({"CrossAttention": CrossAttention, "FusionBlock": FusionBlock,
            "CrossAttnFusedProbe": CrossAttnFusedProbe})


def __getattr__(name: str) -> Any:
    """The textbook classes (CrossAttention, FusionBlock, CrossAttnFusedProbe) as module
    attributes, built on first use."""
    if name in ("CrossAttention", "FusionBlock", "CrossAttnFusedProbe"):
        return textbook()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
