"""Accelerators ``fused_pooled`` and ``fused_tokens``: the fused probe in PCA coordinates.

:func:`fuse_encoded` computes the function of the textbook forward
(:meth:`rightsize.probes.models.fused.model.CrossAttnFusedProbe.attend`, one fusion block) with less
arithmetic:

* every token is an affine function of its rank-``r`` coordinates (``e = c A^T + a``), so
  a projection ``W e + b`` can be applied as ``c (W A)^T + (W a + b)``: one ``d x d x r``
  product per batch instead of ``d x d`` per token, whichever is cheaper for the batch at
  hand (:func:`project`);
* the clips' queries, keys and values are never formed: scores and the attention output
  contract the clip coordinates with per-row, per-head ``r``-vectors (``M_h^T q``);
* the null tokens' keys and values are projected once per batch, not once per row;
* with one ECG token (pooled) a clip attends over two keys, so its softmax is a sigmoid of
  the score difference and its attention output is ``v_null + w (v_ecg - v_null)`` per head;
  with several clips the output projection is applied once per row to each head's
  difference and mixed per clip with the head weights (:func:`mix_two_keys`). With N ECG
  tokens the scores of every clip against ``[null, tokens]`` come from the clip coordinates
  and each token's per-head key (:func:`_echo_to_tokens`), and the ECG->echo query is the
  mean token, projected once.

Two accelerators use it, each for one fusion block (by the rule of
:func:`rightsize.probes.accel.select`, ``train.fused.layers`` at its default):

* ``fused_pooled`` (``ecg_tokens`` 1): the training step is hand-written
  (:mod:`rightsize.probes.models.fused.step`) where PCA is on and the batch is wide enough,
  else autograd of :func:`fuse_encoded` (:func:`coords_loss_backward`). Each replica steps in
  turn (:class:`rightsize.probes.engine.torch_replicas.ReplicaByReplica`: a stacked autograd
  version of the fused step measured 60 ms for 5 replicas against 5 x 7.7 ms for the
  hand-written one, fusion_dim 256).
* ``fused_tokens`` (``ecg_tokens`` > 1): autograd of :func:`fuse_encoded`.

Both are the inference forward of the models they train. The tests hold the forward, its
attention weights and its gradients, and the training steps (loss and every gradient,
dropout on), to autograd of the textbook forward in float64.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from rightsize.probes.accel.gemm import linear, mm
from rightsize.probes.engine.torch_replicas import autograd_loss_backward
from rightsize.probes.models.featurenorm import masked_mean

F = nn.functional


def per_batch_cheaper(width: int, rank: int, rows: int, extra: int = 2) -> bool:
    """True when a layer on ``width``-wide tokens of rank ``rank`` is cheaper applied per batch.

    Per output unit: composing the layer with the token basis once per batch costs
    ``width x (rank + extra)`` (``extra`` = bias and null rows) plus ``rows x rank`` to apply
    it, against ``rows x width`` for the layer on full-width rows. The one test behind
    :func:`project`, the clip-side coordinates and :mod:`rightsize.probes.models.fused.step`.
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


def fuse_encoded(m: nn.Module, echo: torch.Tensor, clip_mask: torch.Tensor,
                 ecg: torch.Tensor, has_ecg: torch.Tensor, need_weights: bool = False
                 ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """The prediction (B,) from :meth:`CrossAttnFusedProbe.encode`'s output (clip
    coordinates (B, c, r), ECG coordinates (B, r) pooled or (B, N, r) tokens), plus per-head
    attention weights when ``need_weights``: echo->ECG (B, H, c, 1+N) over [null, ECG
    tokens]; ECG->echo (B, H, 1, 1+c) over [null, clips]."""
    b, c = clip_mask.shape
    blk = m.blocks[0]
    e2g, g2e = blk.echo_to_ecg, blk.ecg_to_echo
    heads, d = e2g.heads, m.echo_proj.out_features
    dh = d // heads
    a_e = m.norm_echo.lift(m.echo_proj.weight)                      # (d, r_e)
    a_g = m.norm_ecg.lift(m.ecg_proj.weight)                        # (d, r_g)
    c_e = echo * clip_mask.unsqueeze(-1).to(echo.dtype)
    c_g = ecg * has_ecg.view(b, *[1] * (ecg.dim() - 1)).to(ecg.dtype)
    e = F.linear(c_e, a_e, m.echo_proj.bias)                           # (B, c, d)
    g = F.linear(c_g, a_g, m.ecg_proj.bias)                            # (B, d) or (B, N, d)
    scale = 1.0 / math.sqrt(dh)

    # Clip-side queries, keys and values are never formed per clip: each is an affine map
    # (M, m) of the clip coordinates x_e, and the attention contracts x_e with per-row,
    # per-head vectors (M_h^T q) instead. x_e is c_e (rank r) when that is cheaper, else e.
    n_e, n_g = m.echo_null.view(1, d), m.ecg_null.view(1, d)
    in_coords = per_batch_cheaper(d, a_e.shape[1], b)
    x_e = c_e if in_coords else e

    def clip_map(lin: nn.Linear, null: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        if in_coords:
            return affine_map(lin, a_e, m.echo_proj.bias, null)
        # F.linear, not lin(null): a module called on a view of a parameter under no_grad
        # trips the module hooks of torch's FLOP counter (engine/flops.py); same bits
        return lin.weight, lin.bias, None if null is None else F.linear(null, lin.weight,
                                                                        lin.bias)

    if ecg.dim() == 3:          # echo -> [null, N tokens]: a softmax per clip and head
        mq, bq, _ = clip_map(e2g.q)
        att_e, w_e = _echo_to_tokens(e2g, x_e, mq, bq, c_g, a_g, m.ecg_proj.bias, g, n_g,
                                     has_ecg, scale * e2g.scale if e2g.scale != 1.0 else scale)
        c_g, g = c_g.mean(dim=1), g.mean(dim=1)                     # the ECG->echo query
    else:                       # echo -> [null, ECG]: a sigmoid of the score difference
        k_g, k_null = project(e2g.k, c_g, a_g, m.ecg_proj.bias, g, n_g)
        dk = ((k_g - k_null) * scale).view(b, heads, dh)                      # (B, H, dh)
        mq, bq, _ = clip_map(e2g.q)
        t = torch.einsum("bhk,hkr->bhr", dk, mq.view(heads, dh, -1))
        diff = (torch.einsum("bcr,bhr->bch", x_e, t)
                + (bq.view(heads, dh) * dk).sum(-1)[:, None])
        w_ecg = torch.sigmoid(diff.masked_fill(~has_ecg.view(b, 1, 1), float("-inf")))
        v_g, v_null = project(e2g.v, c_g, a_g, m.ecg_proj.bias, g, n_g)
        att_e = mix_two_keys(w_ecg, v_null, v_g, e2g.out, heads)                # (B, c, d)
        w_e = None
    pooled = masked_mean(blk.ln_echo(e + att_e), clip_mask)             # (B, d)

    # ECG -> [null, clips] (masked).
    qg = project(g2e.q, c_g, a_g, m.ecg_proj.bias, g)[0].view(b, heads, dh) * scale
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
    g2 = blk.ln_ecg(g + linear(o_g.reshape(b, d), g2e.out.weight, g2e.out.bias))
    out = m.head(torch.cat([pooled, g2], dim=1)).squeeze(-1)
    if not need_weights:
        return out, None, None
    if w_e is None:
        w_e = torch.stack([1 - w_ecg, w_ecg], dim=-1).permute(0, 2, 1, 3)   # (B, H, c, 2)
    return out, w_e, w_g.unsqueeze(2)


def _echo_to_tokens(e2g: nn.Module, x_e: torch.Tensor, mq: torch.Tensor, bq: torch.Tensor,
                    c_g: torch.Tensor, a_g: torch.Tensor, bias: torch.Tensor, g: torch.Tensor,
                    n_g: torch.Tensor, has_ecg: torch.Tensor, scale: float
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """Every clip over ``[null, N ECG tokens]``: the output (B, c, d) and the weights
    (B, H, c, 1+N). The clip queries are the affine map ``(mq, bq)`` of ``x_e``.

    Token keys and values are affine maps ``(M, m)`` of the token coordinates ``c_g`` (rank
    ``r``), so when ``c * H`` queries per row are fewer than the width ``d`` neither is
    formed: each query is taken into token coordinates (``M_h^T q``, (B, c, H, r)) and
    scored against ``c_g`` directly, and each clip's weights pool ``c_g`` before ``M_v``
    maps the pooled coordinates per head. Otherwise every token's key and value is formed.
    """
    b, n, d = g.shape
    heads, c, rank = e2g.heads, x_e.shape[1], c_g.shape[-1]
    dh = d // heads
    ok = torch.cat([torch.ones_like(has_ecg).view(b, 1), has_ecg.view(b, 1).expand(b, n)], 1)
    if c * heads < d and rank < d:
        q = (torch.einsum("bcr,hkr->bchk", x_e, mq.view(heads, dh, -1))
             + bq.view(heads, dh)) * scale                                   # (B, c, H, dh)
        mk, bk, k_null = affine_map(e2g.k, a_g, bias, n_g)
        qk = torch.einsum("bchk,hkr->bchr", q, mk.view(heads, dh, rank))     # (B, c, H, r)
        s_tok = (torch.einsum("bchr,bnr->bchn", qk, c_g)
                 + (q * bk.view(heads, dh)).sum(-1, keepdim=True))
        s_null = (q * k_null.view(heads, dh)).sum(-1, keepdim=True)          # (B, c, H, 1)
        s = torch.cat([s_null, s_tok], dim=-1)                               # (B, c, H, 1+N)
        w = torch.softmax(s.masked_fill(~ok.view(b, 1, 1, 1 + n), float("-inf")), dim=-1)
        mv, bv, v_null = affine_map(e2g.v, a_g, bias, n_g)
        w_tok = w[..., 1:]
        pooled = torch.einsum("bchn,bnr->bchr", w_tok, c_g)                  # (B, c, H, r)
        mixed = (torch.einsum("bchr,hkr->bchk", pooled, mv.view(heads, dh, rank))
                 + w_tok.sum(-1, keepdim=True) * bv.view(heads, dh)
                 + w[..., :1] * v_null.view(heads, dh))                      # (B, c, H, dh)
    else:
        k_g, k_null = project(e2g.k, c_g, a_g, bias, g, n_g)                  # (B, N, d)
        keys = torch.cat([k_null.view(1, 1, d).expand(b, 1, d), k_g], dim=1)
        keys = (keys * scale).view(b, 1 + n, heads, dh)
        t = torch.einsum("bnhk,hkr->bnhr", keys, mq.view(heads, dh, -1))
        s = (torch.einsum("bcr,bnhr->bchn", x_e, t)
             + torch.einsum("hk,bnhk->bhn", bq.view(heads, dh), keys).unsqueeze(1))
        w = torch.softmax(s.masked_fill(~ok.view(b, 1, 1, 1 + n), float("-inf")), dim=-1)
        v_g, v_null = project(e2g.v, c_g, a_g, bias, g, n_g)
        values = torch.cat([v_null.view(1, 1, d).expand(b, 1, d), v_g], dim=1)
        mixed = torch.einsum("bchn,bnhk->bchk", w, values.view(b, 1 + n, heads, dh))
    att = linear(mixed.reshape(b * c, d), e2g.out.weight, e2g.out.bias).view(b, c, d)
    return att, w.permute(0, 2, 1, 3)


def coords_loss_backward(model: nn.Module, batch: dict[str, torch.Tensor], y: torch.Tensor,
                         update: Any = None) -> torch.Tensor:
    """MSE of :func:`fuse_encoded` against ``y``; every ``.grad`` by autograd (``update``
    unused). The loss, no graph."""
    return autograd_loss_backward(model, batch, y, update, forward=fast_forward)


def fast_forward(model: nn.Module, **batch: torch.Tensor) -> torch.Tensor:
    """The inference forward: (B,) standardized LVEF (:func:`fuse_encoded`)."""
    return fuse_encoded(model, **batch)[0]


def fast_attend(model: nn.Module, **batch: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The prediction and per-head attention weights (:func:`fuse_encoded`)."""
    return fuse_encoded(model, **batch, need_weights=True)
