"""Textbook forward passes of the three torch probes: the oracle for the fast ones.

Each function computes, from the same module's parameters and buffers, the function its
probe's ``forward`` computes, written the way the architecture is described: inputs
normalized and projected back to their full dimension, full-width linear layers on every
token, null tokens concatenated to every row's keys, and torch's own
``multi_head_attention_forward`` for the attention. Tests hold the fast forward passes
to these (outputs and parameter gradients); the probe benchmark's naive baseline trains
with them.
"""

from __future__ import annotations

import torch
from torch import nn

from rightsize.probes.featurenorm import masked_mean
from rightsize.probes.fused import CrossAttention, CrossAttnFusedProbe
from rightsize.probes.models import ConcatMLPProbe, EchoAttnProbe


def reference_forward(model: nn.Module, echo: torch.Tensor, clip_mask: torch.Tensor,
                      ecg: torch.Tensor, has_ecg: torch.Tensor) -> torch.Tensor:
    """(B,) standardized LVEF of ``model`` computed the textbook way."""
    if isinstance(model, CrossAttnFusedProbe):
        return reference_fuse(model, echo, clip_mask, ecg, has_ecg)[0]
    if isinstance(model, ConcatMLPProbe):
        pooled = masked_mean(model.norm_echo(echo, clip_mask), clip_mask)  # (B, dim)
        x_g = model.norm_ecg(ecg, has_ecg)
        return model.mlp(torch.cat([pooled, x_g], dim=1)).squeeze(-1)
    if isinstance(model, EchoAttnProbe):
        x = model.norm_echo(echo, clip_mask)
        tok, ok = with_null(model.null, x, clip_mask)
        score = model.query(tok).squeeze(-1).masked_fill(~ok, float("-inf"))
        w = torch.softmax(score, dim=1)
        pooled = torch.bmm(w.unsqueeze(1), tok).squeeze(1)
        return model.head(pooled).squeeze(-1)
    raise TypeError(f"no reference forward for {type(model).__name__}")


def reference_fuse(model: CrossAttnFusedProbe, echo: torch.Tensor, clip_mask: torch.Tensor,
                   ecg: torch.Tensor, has_ecg: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The fused probe's output and per-head attention weights, via torch's multi-head attention."""
    e = model.echo_proj(model.norm_echo(echo, clip_mask))                     # (B, c, d)
    g = model.ecg_proj(model.norm_ecg(ecg, has_ecg)).unsqueeze(1)             # (B, 1, d)
    kv_g, ok_g = with_null(model.ecg_null, g, has_ecg.unsqueeze(1))
    a_e, w_e = attention(model.echo_to_ecg, e, kv_g, ok_g)
    pooled = masked_mean(model.ln_echo(e + a_e), clip_mask)
    kv_e, ok_e = with_null(model.echo_null, e, clip_mask)
    a_g, w_g = attention(model.ecg_to_echo, g, kv_e, ok_e)
    g2 = model.ln_ecg(g + a_g).squeeze(1)
    out = model.head(torch.cat([pooled, g2], dim=1)).squeeze(-1)
    return out, w_e, w_g


def attention(block: CrossAttention, query: torch.Tensor, kv: torch.Tensor,
              valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``F.multi_head_attention_forward`` of ``block``: (B, q, d) output, (B, H, q, k) weights."""
    d = block.q.in_features
    out, w = nn.functional.multi_head_attention_forward(
        query.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1), d, block.heads,
        None, torch.cat([block.q.bias, block.k.bias, block.v.bias]), None, None, False, 0.0,
        block.out.weight, block.out.bias, training=block.training, key_padding_mask=~valid,
        need_weights=True, use_separate_proj_weight=True, q_proj_weight=block.q.weight,
        k_proj_weight=block.k.weight, v_proj_weight=block.v.weight,
        average_attn_weights=False)
    return out.transpose(0, 1), w


def with_null(null: torch.Tensor, tokens: torch.Tensor,
              valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Prepend an always-valid null token: returns (B, 1+k, d) tokens and (B, 1+k) validity."""
    b = tokens.shape[0]
    tok = torch.cat([null.expand(b, 1, null.shape[-1]), tokens], dim=1)
    ok = torch.cat([torch.ones(b, 1, dtype=torch.bool, device=valid.device), valid], dim=1)
    return tok, ok


class ReferenceModel(nn.Module):
    """Wraps a probe so that calling it runs :func:`reference_forward` (same parameters)."""

    def __init__(self, probe: nn.Module) -> None:
        super().__init__()
        self.probe = probe

    def forward(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                has_ecg: torch.Tensor) -> torch.Tensor:
        """(B,) standardized LVEF."""
        return reference_forward(self.probe, echo, clip_mask, ecg, has_ecg)
