"""CrossAttnFusedProbe: bidirectional cross-attention between echo clips and the ECG.

echo->ECG: each clip token queries [null, ECG]; ECG->echo: the ECG token queries
[null, clips] (masked). Residual + LayerNorm per direction; echo outputs are mean-pooled
over present clips; [pooled echo || ECG output] feeds an MLP head.

Each direction is a standard multi-head attention block (:class:`CrossAttention`: separate
q/k/v/out projections, initialized exactly as ``nn.MultiheadAttention`` would be;
:mod:`rightsize.probes.reference` runs them through ``F.multi_head_attention_forward``).
The forward pass here computes the same function with less arithmetic:

* every token is an affine function of its rank-``r`` coordinates (``e = c A^T + a``), so
  a projection ``W e + b`` can be applied as ``c (W A)^T + (W a + b)``: one ``d x d x r``
  product per batch instead of ``d x d`` per token, whichever is cheaper for the batch at
  hand (:func:`project`);
* the clips' queries, keys and values are never formed: scores and the attention output
  contract the clip coordinates with per-row, per-head ``r``-vectors (``M_h^T q``);
* the null tokens' keys and values are projected once per batch, not once per row;
* an echo clip attends over two keys, so its softmax is a sigmoid of the score difference
  and its attention output is ``v_null + w (v_ecg - v_null)`` per head; with several clips
  the output projection is applied once per row to each head's difference and mixed per
  clip with the head weights (:func:`mix_two_keys`).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from rightsize.probes.data import Moments
from rightsize.probes.featurenorm import FeatureNorm, masked_mean
from rightsize.probes.gemm import linear, mm
from rightsize.probes.models import Batch, ProbeModule, Update

F = nn.functional


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
    """Parameters of one multi-head attention block: ``q``, ``k``, ``v`` and ``out``."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"fusion_dim {dim} is not divisible by heads {heads}")
        self.heads = heads
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


def per_batch_cheaper(width: int, rank: int, rows: int, extra: int = 2) -> bool:
    """True when a layer on ``width``-wide tokens of rank ``rank`` is cheaper applied per batch.

    Per output unit: composing the layer with the token basis once per batch costs
    ``width x (rank + extra)`` (``extra`` = bias and null rows) plus ``rows x rank`` to apply
    it, against ``rows x width`` for the layer on full-width rows. The one test behind
    :func:`project`, the clip-side coordinates and :mod:`rightsize.probes.fused_step`.
    """
    return width * (rank + extra) + rows * rank < rows * width


def affine_map(lin: nn.Linear, a_w: torch.Tensor, a_b: torch.Tensor,
               null: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """``(M, m, lin(null))`` with ``lin(F.linear(c, a_w, a_b)) = F.linear(c, M, m)``.

    One product ``lin.weight @ [a_w | a_b | null]``, so the backward pass forms the weight's
    gradient once for the tokens and the null token together.
    """
    rank = a_w.shape[1]
    rows = [a_w.t(), a_b.unsqueeze(0)] + ([] if null is None else [null.view(1, -1)])
    # Transposed, (r+2, mid) @ (mid, out): both backward products then have the long
    # dimension outermost, which runs 1.5-2x faster than W^T @ dM at these skinny shapes.
    prod = mm(torch.cat(rows), lin.weight.t())                                 # (r+1|2, out)
    out_null = None if null is None else (prod[rank + 1] + lin.bias).view(1, -1)
    return prod[:rank].t(), prod[rank] + lin.bias, out_null


def project(lin: nn.Linear, c: torch.Tensor, a_w: torch.Tensor, a_b: torch.Tensor,
            x: torch.Tensor, null: torch.Tensor | None = None
            ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``lin`` applied to tokens ``x = F.linear(c, a_w, a_b)`` (..., d) and to a null token.

    Returns ``(lin(x), lin(null))`` (the second None without a null token), in the cheaper
    association order: either ``lin.weight @ [a_w | a_b | null]`` once and then rank-``r``
    rows, or ``lin`` on the full-width rows. Either way ``lin.weight`` enters one product,
    so the backward pass forms its gradient once.
    """
    rows, (out_dim, mid), rank = c.numel() // c.shape[-1], lin.weight.shape, a_w.shape[1]
    extra = 1 if null is None else 2
    if per_batch_cheaper(mid, rank, rows, extra):
        m_w, m_b, out_null = affine_map(lin, a_w, a_b, null)
        return F.linear(c, m_w, m_b), out_null
    flat = x.reshape(rows, mid)
    if null is not None:
        flat = torch.cat([flat, null.view(1, mid)])
    y = linear(flat, lin.weight, lin.bias)
    return y[:rows].view(*x.shape[:-1], out_dim), None if null is None else y[rows:]


def mix_two_keys(w: torch.Tensor, v_null: torch.Tensor, v_key: torch.Tensor,
                 out: nn.Linear, heads: int) -> torch.Tensor:
    """``out(v_null + w (v_key - v_null))`` per head: (B, c, d) from weights ``w`` (B, c, H).

    ``v_null`` (1, d) is shared, ``v_key`` (B, d) is per row. With one clip the mix is formed
    and projected; with more, ``out`` is applied per row to each head's difference (and
    to ``v_null``, in the same product: ``B d^2``) and the ``c`` clips only mix ``H``
    projected vectors.
    """
    b, c, _ = w.shape
    d = v_null.shape[-1]
    dh = d // heads
    diff = (v_key - v_null).view(b, heads, dh)
    if c * d <= d + c * heads:
        mixed = v_null.view(1, 1, heads, dh) + w.unsqueeze(-1) * diff.unsqueeze(1)
        return linear(mixed.reshape(b * c, d), out.weight, out.bias).view(b, c, d)
    rows = torch.cat([diff, v_null.view(1, heads, dh)])                       # (B+1, H, dh)
    per_head = torch.einsum("bhk,ohk->bho", rows, out.weight.view(d, heads, dh))
    return per_head[b].sum(0) + out.bias + torch.bmm(w, per_head[:b])


class CrossAttnFusedProbe(ProbeModule):
    """Bidirectional cross-attention fusion of echo clip tokens and the ECG token."""

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
        self.echo_to_ecg = CrossAttention(d, heads)
        self.ecg_to_echo = CrossAttention(d, heads)
        self.ln_echo = nn.LayerNorm(d)
        self.ln_ecg = nn.LayerNorm(d)
        self.head = nn.Sequential(nn.Linear(2 * d, hidden), nn.GELU(), nn.Dropout(dropout),
                                  nn.Linear(hidden, 1))

    def set_moments(self, m: Moments) -> None:
        """Load train-split input moments."""
        self.norm_echo.set_moments(m.echo_mean, m.echo_sd, m.echo_basis)
        self.norm_ecg.set_moments(m.ecg_mean, m.ecg_sd, m.ecg_basis)

    def encode(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
               has_ecg: torch.Tensor) -> Batch:
        """Clip coordinates (B, c, r) and ECG coordinates (B, r)."""
        return {"echo": self.norm_echo.coords(echo, clip_mask), "clip_mask": clip_mask,
                "ecg": self.norm_ecg.coords(ecg, has_ecg), "has_ecg": has_ecg}

    def forward_encoded(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                        has_ecg: torch.Tensor) -> torch.Tensor:
        """(B,) standardized LVEF."""
        return self.fuse_encoded(echo, clip_mask, ecg, has_ecg)[0]

    def loss_backward(self, batch: Batch, y: torch.Tensor, update: Update | None = None
                      ) -> torch.Tensor:
        """:meth:`ProbeModule.loss_backward`, by :mod:`rightsize.probes.fused_step` (which
        uses ``update``) when the batch is in its coordinate form (PCA on, batch wider than
        a per-batch product)."""
        from rightsize.probes.fused_step import fused_loss_backward, manual_step_applies

        if manual_step_applies(self, y.shape[0]):
            return fused_loss_backward(self, **batch, y=y, update=update)
        return super().loss_backward(batch, y)

    def fuse(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
             has_ecg: torch.Tensor, need_weights: bool = False
             ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Prediction from raw inputs plus per-head attention weights when ``need_weights``.

        Weights: echo->ECG (B, H, c, 2) over [null, ECG]; ECG->echo (B, H, 1, 1+c) over
        [null, clips].
        """
        return self.fuse_encoded(**self.encode(echo, clip_mask, ecg, has_ecg),
                                 need_weights=need_weights)

    def fuse_encoded(self, echo: torch.Tensor, clip_mask: torch.Tensor, ecg: torch.Tensor,
                     has_ecg: torch.Tensor, need_weights: bool = False
                     ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """:meth:`fuse` on :meth:`encode`'s output."""
        b, c = clip_mask.shape
        e2g, g2e = self.echo_to_ecg, self.ecg_to_echo
        heads, d = e2g.heads, self.echo_proj.out_features
        dh = d // heads
        a_e = self.norm_echo.lift(self.echo_proj.weight)                      # (d, r_e)
        a_g = self.norm_ecg.lift(self.ecg_proj.weight)                        # (d, r_g)
        c_e = echo * clip_mask.unsqueeze(-1).to(echo.dtype)
        c_g = ecg * has_ecg.unsqueeze(-1).to(ecg.dtype)
        e = F.linear(c_e, a_e, self.echo_proj.bias)                           # (B, c, d)
        g = F.linear(c_g, a_g, self.ecg_proj.bias)                            # (B, d)
        scale = 1.0 / math.sqrt(dh)

        # Clip-side queries, keys and values are never formed per clip: each is an affine map
        # (M, m) of the clip coordinates x_e, and the attention contracts x_e with per-row,
        # per-head vectors (M_h^T q) instead. x_e is c_e (rank r) when that is cheaper, else e.
        n_e, n_g = self.echo_null.view(1, d), self.ecg_null.view(1, d)
        in_coords = per_batch_cheaper(d, a_e.shape[1], b)
        x_e = c_e if in_coords else e

        def clip_map(lin: nn.Linear, null: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
            if in_coords:
                return affine_map(lin, a_e, self.echo_proj.bias, null)
            return lin.weight, lin.bias, None if null is None else lin(null)

        # echo -> [null, ECG]: two keys, so the softmax is a sigmoid of the score difference.
        k_g, k_null = project(e2g.k, c_g, a_g, self.ecg_proj.bias, g, n_g)
        dk = ((k_g - k_null) * scale).view(b, heads, dh)                      # (B, H, dh)
        mq, bq, _ = clip_map(e2g.q)
        t = torch.einsum("bhk,hkr->bhr", dk, mq.view(heads, dh, -1))
        diff = torch.einsum("bcr,bhr->bch", x_e, t) + (bq.view(heads, dh) * dk).sum(-1)[:, None]
        w_ecg = torch.sigmoid(diff.masked_fill(~has_ecg.view(b, 1, 1), float("-inf")))
        v_g, v_null = project(e2g.v, c_g, a_g, self.ecg_proj.bias, g, n_g)
        att_e = mix_two_keys(w_ecg, v_null, v_g, e2g.out, heads)                # (B, c, d)
        pooled = masked_mean(self.ln_echo(e + att_e), clip_mask)             # (B, d)

        # ECG -> [null, clips] (masked).
        qg = project(g2e.q, c_g, a_g, self.ecg_proj.bias, g)[0].view(b, heads, dh) * scale
        mk, bk, k_null = clip_map(g2e.k, n_e)
        u = torch.einsum("bhk,hkr->bhr", qg, mk.view(heads, dh, -1))
        s_clip = (torch.einsum("bhr,bcr->bhc", u, x_e)
                  + (bk.view(heads, dh) * qg).sum(-1, keepdim=True))
        s_null = (qg * k_null.view(heads, dh)).sum(-1, keepdim=True)          # (B, H, 1)
        s_clip = s_clip.masked_fill(~clip_mask.unsqueeze(1), float("-inf"))
        w_g = torch.softmax(torch.cat([s_null, s_clip], dim=-1), dim=-1)      # (B, H, 1+c)
        mv, bv, v_null = clip_map(g2e.v, n_e)
        pooled_x = torch.einsum("bhc,bcr->bhr", w_g[..., 1:], x_e)             # (B, H, r)
        o_g = (w_g[..., :1] * v_null.view(heads, dh) + (1 - w_g[..., :1]) * bv.view(heads, dh)
               + torch.einsum("bhr,hkr->bhk", pooled_x, mv.view(heads, dh, -1)))
        g2 = self.ln_ecg(g + linear(o_g.reshape(b, d), g2e.out.weight, g2e.out.bias))
        out = self.head(torch.cat([pooled, g2], dim=1)).squeeze(-1)
        if not need_weights:
            return out, None, None
        w_e = torch.stack([1 - w_ecg, w_ecg], dim=-1).permute(0, 2, 1, 3)     # (B, H, c, 2)
        return out, w_e, w_g.unsqueeze(2)
