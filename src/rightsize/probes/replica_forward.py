"""Forward passes of K replicas of one torch probe at once: a leading replica axis.

Each function computes, for every replica ``k``, the function the probe's own
``forward_encoded`` computes (same parameters, same coordinates), with every parameter
stacked on a leading axis (``P[name]`` is ``(K, *shape)``) and every batch tensor
carrying that axis too (``echo`` (K, B, c, r), ``clip_mask`` (K, B, c), ``ecg`` (K, B, r),
``has_ecg`` (K, B)): each replica sees its own rows, drawn in its own order. The fixed
buffers (normalization and PCA basis) depend on the train split only, so all replicas
share one module's (``m``). Autograd gives the gradients: one graph whose ops each work
on all K replicas, instead of K graphs (the fused probe's forward is ~120 ops). The tests
hold each replica's output and gradients to its own probe's in float64.

``drop`` draws the head-dropout keep-masks (``None``: eval mode, no dropout).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

F = nn.functional
Params = dict[str, torch.Tensor]
Noise = Callable[[tuple[int, ...]], torch.Tensor] | None


def _lift(norm: nn.Module, w: torch.Tensor) -> torch.Tensor:
    """(K, out, dim) -> (K, out, rank): each replica's ``FeatureNorm.lift``."""
    return w @ norm.basis if norm.rank else w


def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ w^T + b`` per replica: x (K, ..., in), w (K, out, in), b (K, out)."""
    k, shape = x.shape[0], x.shape[1:-1]
    y = torch.bmm(x.reshape(k, -1, x.shape[-1]), w.transpose(1, 2))
    if b is not None:
        y = y + b.unsqueeze(1)
    return y.view(k, *shape, w.shape[1])


def _masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of x (K, B, c, d) over the clips where mask (K, B, c) holds; 0 with none."""
    m = mask.to(x.dtype).unsqueeze(-1)
    return (x * m).sum(2) / m.sum(2).clamp(min=1)


def _layer_norm(x: torch.Tensor, P: Params, name: str, eps: float) -> torch.Tensor:
    w, b = P[f"{name}.weight"], P[f"{name}.bias"]
    view = (w.shape[0],) + (1,) * (x.dim() - 2) + (w.shape[1],)
    return F.layer_norm(x, x.shape[-1:], eps=eps) * w.view(view) + b.view(view)


def _head(z: torch.Tensor, P: Params, prefix: str, drop: Noise) -> torch.Tensor:
    """Linear -> GELU -> Dropout -> Linear(1): (K, B, in) -> (K, B)."""
    a = F.gelu(_linear(z, P[f"{prefix}.0.weight"], P[f"{prefix}.0.bias"]))
    if drop is not None:
        a = a * drop(tuple(a.shape))
    return _linear(a, P[f"{prefix}.3.weight"], P[f"{prefix}.3.bias"]).squeeze(-1)


def echo_forward(m: nn.Module, P: Params, echo: torch.Tensor, clip_mask: torch.Tensor,
                 ecg: torch.Tensor, has_ecg: torch.Tensor, drop: Noise = None) -> torch.Tensor:
    """:meth:`EchoAttnProbe.forward_encoded` per replica: (K, B)."""
    k = echo.shape[0]
    c = echo * clip_mask.unsqueeze(-1).to(echo.dtype)                       # (K, B, c, r)
    qw, qb, hw, hb = P["query.weight"], P["query.bias"], P["head.weight"], P["head.bias"]
    null = P["null"].view(k, 1, -1)                                          # (K, 1, dim)
    s_null = (null * qw).sum(-1) + qb                                        # (K, 1)
    s_clip = _linear(c, _lift(m.norm_echo, qw), qb).squeeze(-1)              # (K, B, c)
    b = c.shape[1]
    score = torch.cat([s_null.view(k, 1, 1).expand(k, b, 1), s_clip], dim=2)
    ok = torch.cat([torch.ones_like(clip_mask[..., :1]), clip_mask], dim=2)
    w = torch.softmax(score.masked_fill(~ok, float("-inf")), dim=2)          # (K, B, 1+c)
    pooled = (w[..., 1:].unsqueeze(-1) * c).sum(2)                           # (K, B, r)
    h_null = (null * hw).sum(-1)                                             # (K, 1)
    out = _linear(pooled, _lift(m.norm_echo, hw), hb).squeeze(-1)            # (K, B)
    return out + w[..., 0] * h_null


def concat_forward(m: nn.Module, P: Params, echo: torch.Tensor, clip_mask: torch.Tensor,
                   ecg: torch.Tensor, has_ecg: torch.Tensor, drop: Noise = None
                   ) -> torch.Tensor:
    """:meth:`ConcatMLPProbe.forward_encoded` per replica: (K, B).

    The first layer's weight is held as its echo and ECG column blocks
    (``mlp.0.weight:echo``, ``mlp.0.weight:ecg``; see :func:`split_params`), so neither
    block's gradient is formed by slicing the whole weight.
    """
    x_e = _masked_mean(echo, clip_mask)                                      # (K, B, r)
    x_g = ecg * has_ecg.unsqueeze(-1).to(ecg.dtype)
    h = (_linear(x_e, _lift(m.norm_echo, P["mlp.0.weight:echo"]))
         + _linear(x_g, _lift(m.norm_ecg, P["mlp.0.weight:ecg"]), P["mlp.0.bias"]))
    a = F.gelu(h)
    if drop is not None:
        a = a * drop(tuple(a.shape))
    return _linear(a, P["mlp.3.weight"], P["mlp.3.bias"]).squeeze(-1)


def _affine(P: Params, lin: str, a_w: torch.Tensor, a_b: torch.Tensor,
            null: torch.Tensor | None = None
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """``(M, m, lin(null))`` per replica with ``lin(c a_w^T + a_b) = c M^T + m``."""
    w, b = P[f"{lin}.weight"], P[f"{lin}.bias"]                               # (K, out, mid)
    mw = w @ a_w                                                              # (K, out, r)
    mb = (w @ a_b.unsqueeze(-1)).squeeze(-1) + b
    out_null = None if null is None else (w @ null.unsqueeze(-1)).squeeze(-1) + b
    return mw, mb, out_null


def fused_forward(m: nn.Module, P: Params, echo: torch.Tensor, clip_mask: torch.Tensor,
                  ecg: torch.Tensor, has_ecg: torch.Tensor, drop: Noise = None
                  ) -> torch.Tensor:
    """:meth:`CrossAttnFusedProbe.forward_encoded` per replica: (K, B).

    The coordinate form of :mod:`rightsize.probes.fused` throughout: every projection of a
    token is an affine map of its coordinates, clip-side queries, keys and values are never
    formed, the echo->ECG softmax over two keys is a sigmoid, and the output projection is
    applied per head to each row's value difference.
    """
    k, b, c, _ = echo.shape
    heads = m.echo_to_ecg.heads
    d = m.echo_proj.out_features
    dh = d // heads
    scale = 1.0 / math.sqrt(dh)
    a_e = _lift(m.norm_echo, P["echo_proj.weight"])                          # (K, d, r_e)
    a_g = _lift(m.norm_ecg, P["ecg_proj.weight"])                            # (K, d, r_g)
    b_e, b_g = P["echo_proj.bias"], P["ecg_proj.bias"]
    n_e, n_g = P["echo_null"].view(k, d), P["ecg_null"].view(k, d)
    c_e = echo * clip_mask.unsqueeze(-1).to(echo.dtype)                      # (K, B, c, r_e)
    c_g = ecg * has_ecg.unsqueeze(-1).to(ecg.dtype)                          # (K, B, r_g)
    e = _linear(c_e, a_e, b_e)                                               # (K, B, c, d)
    g = _linear(c_g, a_g, b_g)                                               # (K, B, d)

    # echo -> [null, ECG]: weight on the ECG = sigmoid of the score difference
    mk, mkb, k_null = _affine(P, "echo_to_ecg.k", a_g, b_g, n_g)
    dk = ((_linear(c_g, mk, mkb) - k_null.unsqueeze(1)) * scale).view(k, b, heads, dh)
    mq, bq, _ = _affine(P, "echo_to_ecg.q", a_e, b_e)
    t = torch.einsum("nbhk,nhkr->nbhr", dk, mq.view(k, heads, dh, -1))       # (K, B, H, r_e)
    diff = (torch.einsum("nbcr,nbhr->nbch", c_e, t)
            + (bq.view(k, 1, heads, dh) * dk).sum(-1).unsqueeze(2))          # (K, B, c, H)
    w_ecg = torch.sigmoid(diff.masked_fill(~has_ecg.view(k, b, 1, 1), float("-inf")))
    mv, mvb, v_null = _affine(P, "echo_to_ecg.v", a_g, b_g, n_g)
    v_diff = (_linear(c_g, mv, mvb) - v_null.unsqueeze(1)).view(k, b, heads, dh)
    w_out = P["echo_to_ecg.out.weight"].view(k, d, heads, dh)
    per_head = torch.einsum("nbhk,nohk->nbho", v_diff, w_out)                # (K, B, H, d)
    base = _linear(v_null.unsqueeze(1), P["echo_to_ecg.out.weight"],
                   P["echo_to_ecg.out.bias"])                                # (K, 1, d)
    att_e = base.unsqueeze(1) + torch.einsum("nbch,nbhd->nbcd", w_ecg, per_head)
    pooled = _masked_mean(_layer_norm(e + att_e, P, "ln_echo", m.ln_echo.eps), clip_mask)

    # ECG -> [null, clips] (masked)
    gq, gqb, _ = _affine(P, "ecg_to_echo.q", a_g, b_g)
    qg = (_linear(c_g, gq, gqb) * scale).view(k, b, heads, dh)
    mk2, bk2, k_null2 = _affine(P, "ecg_to_echo.k", a_e, b_e, n_e)
    u = torch.einsum("nbhk,nhkr->nbhr", qg, mk2.view(k, heads, dh, -1))      # (K, B, H, r_e)
    s_clip = (torch.einsum("nbhr,nbcr->nbhc", u, c_e)
              + (bk2.view(k, 1, heads, dh) * qg).sum(-1, keepdim=True))
    s_null = (qg * k_null2.view(k, 1, heads, dh)).sum(-1, keepdim=True)      # (K, B, H, 1)
    s_clip = s_clip.masked_fill(~clip_mask.unsqueeze(2), float("-inf"))
    w_g = torch.softmax(torch.cat([s_null, s_clip], dim=-1), dim=-1)         # (K, B, H, 1+c)
    mv2, bv2, v_null2 = _affine(P, "ecg_to_echo.v", a_e, b_e, n_e)
    px = torch.einsum("nbhc,nbcr->nbhr", w_g[..., 1:], c_e)                  # (K, B, H, r_e)
    o_g = (w_g[..., :1] * v_null2.view(k, 1, heads, dh)
           + (1 - w_g[..., :1]) * bv2.view(k, 1, heads, dh)
           + torch.einsum("nbhr,nhkr->nbhk", px, mv2.view(k, heads, dh, -1)))
    y_g = g + _linear(o_g.reshape(k, b, d), P["ecg_to_echo.out.weight"],
                      P["ecg_to_echo.out.bias"])
    g2 = _layer_norm(y_g, P, "ln_ecg", m.ln_ecg.eps)
    return _head(torch.cat([pooled, g2], dim=-1), P, "head", drop)


SPLITS = {"concat": {"mlp.0.weight": ("echo", "ecg")}}


def split_params(name: str, m: nn.Module, params: Params) -> Params:
    """``params`` (module names, stacked) with the weights of :data:`SPLITS` cut into
    their column blocks (echo columns first, ``m``'s input widths)."""
    out = dict(params)
    for key, parts in SPLITS.get(name, {}).items():
        de = m.norm_echo.mean.shape[0]
        w = out.pop(key)
        out[f"{key}:{parts[0]}"], out[f"{key}:{parts[1]}"] = w[..., :de], w[..., de:]
    return out


def join_params(name: str, params: Params) -> Params:
    """Inverse of :func:`split_params`: module parameter names again."""
    out = dict(params)
    for key, parts in SPLITS.get(name, {}).items():
        out[key] = torch.cat([out.pop(f"{key}:{p}") for p in parts], dim=-1)
    return out


FORWARD = {"echo": echo_forward, "concat": concat_forward, "fused": fused_forward}
