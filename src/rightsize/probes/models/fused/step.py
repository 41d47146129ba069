"""One training step of the fused probe with a hand-written backward pass.

Under autograd a fused step at fusion_dim 256 runs ~1,900 aten ops, of which ~40 are the
matmuls that hold the arithmetic. Here the MSE loss and every parameter gradient are
straight-line tensor code (~1,550 aten ops per step, views included), the weight gradients
are written straight into persistent ``.grad`` buffers, and the output projections are
per-head composites (below): about 12 % less time per fit at fusion_dim 256 and 10 % at
1024 on the benchmark machine. The weight-sized products go through
:mod:`rightsize.probes.accel.gemm` (oneDNN where it applies: a further ~30 % off a
fusion_dim-1024 step there). The tests hold the loss and every gradient to autograd of the
textbook forward
(:meth:`rightsize.probes.models.fused.model.CrossAttnFusedProbe.attend`) in float64, dropout
on, and the fp32 oneDNN step to the same step without it.

Notation (one batch): ``b`` rows, ``c`` clips, ``r`` ranks, ``d`` fusion_dim, ``H`` heads.
Every token is affine in its coordinates: clip ``e = c_e A_e^T + beta_e``, ECG
``g = c_g A_g^T + beta_g`` with ``A = W_proj B`` (the projection lifted to the PCA basis).
``X = [A^T; beta; null]`` (r+2, d) stacks a side's token basis with its null token, so each
q/k/v weight enters one product ``X W^T`` per batch. The output projections are applied
per head to the few basis vectors their inputs are made of (``O[h] = basis[h] W_out[:, h]^T``),
and rows mix those ``(r+2) x d`` rows with their attention weights: fewer FLOPs than
``W_out`` per row once ``d`` is large, the same at d=256.

echo->ECG: a clip's two keys are [null, ECG], so its weight on the ECG is a sigmoid of the
score difference ``q . (k_g - k_null)`` and its output is ``v_null + w (v_g - v_null)``
per head. ECG->echo: a softmax over [null, clips]; its output is the weighted clip
coordinates ``px`` mapped through the value basis.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from rightsize.probes.accel import Accelerator
from rightsize.probes.accel.gemm import linear, mm, routes
from rightsize.probes.accel.handgrad import (
    gelu_dropout_linear_mse,
    grad_buffers,
    layer_norm_backward,
    named_parameters,
)
from rightsize.probes.engine.torch_replicas import Batch, ReplicaByReplica, Update, init_modules
from rightsize.probes.models.fused.coords import (
    coords_loss_backward,
    fast_attend,
    fast_forward,
    per_batch_cheaper,
)

# rightsize.probes.models.fused's textbook class, typed by its base: that home declares this
# module as its accelerator, so importing the class here would make an import circle
CrossAttnFusedProbe = torch.nn.Module

# The weight matrices, whose gradients a step with ``update`` hands over as it goes (the
# attention output weights' from a scratch buffer their per-head products write into)
BLOCK = "blocks.0."       # the one fusion block's parameters
OUT_WEIGHTS = (f"{BLOCK}echo_to_ecg.out.weight", f"{BLOCK}ecg_to_echo.out.weight")
HANDED_OVER = frozenset(("head.0.weight", "echo_proj.weight", "ecg_proj.weight", *OUT_WEIGHTS,
                         *(f"{BLOCK}{block}.{w}.weight"
                           for block in ("echo_to_ecg", "ecg_to_echo") for w in "qkv")))


def manual_step_applies(model: CrossAttnFusedProbe, rows: int) -> bool:
    """True when the coordinate form is the cheaper one for a batch of ``rows`` rows.

    Needs a PCA basis on both inputs (``pca_rank > 0``) and :func:`per_batch_cheaper` for
    both, the test :func:`~rightsize.probes.models.fused.coords.project` applies.
    """
    d = model.echo_proj.out_features
    ranks = (model.norm_echo.rank, model.norm_ecg.rank)
    return all(r > 0 and per_batch_cheaper(d, r, rows) for r in ranks)


def _heads(m: torch.Tensor, heads: int) -> torch.Tensor:
    """(n, d) -> (n, H, dh)."""
    return m.view(m.shape[0], heads, -1)


def _out_composite(basis: torch.Tensor, w_out: torch.Tensor, heads: int
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``O[h] = basis[:, h] @ w_out[:, h]^T`` (H, n, d) for basis (n, d), plus ``basis`` and
    ``w_out`` split by head ((H, n, dh), (H, d, dh)) for :func:`_out_composite_backward`.

    One ``bmm`` over the heads, or one oneDNN product per head where that route applies
    (it needs each head's weight columns copied out contiguously: a strided weight would
    send it to a slow path).
    """
    (n, d), dh = basis.shape, w_out.shape[1] // heads
    w_h = w_out.view(d, heads, dh).transpose(0, 1)                 # (H, d, dh)
    b_h = _heads(basis, heads).transpose(0, 1)                     # (H, n, dh)
    if not routes(n, dh, d, basis):
        return torch.bmm(b_h, w_h.transpose(1, 2)), b_h, w_h
    w_h, b_h = w_h.contiguous(), b_h.contiguous()
    return torch.stack([mm(b_h[h], w_h[h].t()) for h in range(heads)]), b_h, w_h


def _out_composite_backward(d_o: torch.Tensor, b_h: torch.Tensor, w_h: torch.Tensor,
                            d_w_out: torch.Tensor) -> torch.Tensor:
    """Gradients of :func:`_out_composite`: returns d basis (n, d), writes d w_out (d, d)."""
    heads, n, d = d_o.shape
    dw_h = d_w_out.view(d, heads, d // heads)
    if not routes(n, d // heads, d, d_o):
        torch.bmm(d_o.transpose(1, 2), b_h, out=dw_h.transpose(0, 1))
        return torch.bmm(d_o, w_h).transpose(0, 1).reshape(n, d)
    for h in range(heads):
        mm(d_o[h].t(), b_h[h], out=dw_h[:, h])
    return torch.cat([mm(d_o[h], w_h[h]) for h in range(heads)], dim=1)


def fused_loss_backward(model: CrossAttnFusedProbe, batch: Batch, y: torch.Tensor,
                        update: Update | None = None) -> torch.Tensor:
    """One replica's training step: the MSE of the fused probe on ``batch`` (encoded)
    against ``y``, its gradients in ``.grad`` or handed to ``update``; the loss (no graph).

    The hand-written step (:func:`hand_step`) where it applies (:func:`manual_step_applies`:
    PCA on, the batch wide enough), else autograd of the coordinate-form forward
    (:func:`~rightsize.probes.models.fused.coords.coords_loss_backward`).
    """
    if manual_step_applies(model, y.shape[0]):
        return hand_step(model, **batch, y=y, update=update)
    return coords_loss_backward(model, batch, y)


def hand_step(model: CrossAttnFusedProbe, echo: torch.Tensor, clip_mask: torch.Tensor,
              ecg: torch.Tensor, has_ecg: torch.Tensor, y: torch.Tensor,
              update: Update | None = None) -> torch.Tensor:
    """MSE of the fused probe (one ECG token) against ``y``; each ``.grad`` set to its gradient,
    or, with ``update``, the weight matrices' (:data:`HANDED_OVER`) handed to
    ``update(param, grad)`` instead (their ``.grad`` set to None).

    Inputs are :meth:`CrossAttnFusedProbe.encode` output (clip coordinates (b, c, r_e),
    ECG coordinates (b, r_g)). Head dropout draws its mask exactly as ``nn.Dropout`` does
    in train mode. The gradients are written into the existing ``.grad`` tensors (allocated
    on the first call): the weight-gradient products write straight into them, and
    reusing the same memory every step keeps a fresh ``d x d`` buffer's page faults out
    of the loop. Returns the loss (0-d, no graph).

    With ``update`` (the training loop passes ``AdamW.update``) a weight is handed over
    as soon as its gradient is final and the rest of the pass no longer reads it, right
    after the backward product that reads it last: the optimizer finds the weight and its
    fresh gradient in cache, and the gradient goes from the product to the optimizer
    without a copy into ``.grad``. At fusion_dim 1024 (10.8 M parameters, 43 MB: more than
    the benchmark machine's L3) that keeps a pass over the weights and two over their
    gradients out of memory every step. The small parameters' gradients stay in ``.grad``
    for the optimizer's one ``step()`` after the pass (a call per tensor costs more there).
    """
    if update is None:
        grads = grad_buffers(model)
    else:
        grads = {**grad_buffers(model, HANDED_OVER), **_out_weight_scratch(model)}
    with torch.no_grad():
        return _loss_and_grads(model, echo, clip_mask, ecg, has_ecg, y, grads, update)


def _out_weight_scratch(model: CrossAttnFusedProbe) -> dict[str, torch.Tensor]:
    """Buffers the output weights' per-head gradient products write into before they are
    handed over (allocated once and kept on the model, like :func:`grad_buffers`)."""
    scratch = model.__dict__.get("_out_weight_grads")
    if scratch is None:
        params = named_parameters(model)
        scratch = {n: torch.empty_like(params[n]) for n in OUT_WEIGHTS}
        model.__dict__["_out_weight_grads"] = scratch
    return scratch


def _loss_and_grads(m: CrossAttnFusedProbe, echo: torch.Tensor, clip_mask: torch.Tensor,
                    ecg: torch.Tensor, has_ecg: torch.Tensor, y: torch.Tensor,
                    gr: dict[str, torch.Tensor], update: Update | None) -> torch.Tensor:
    """The loss; each parameter's gradient written into ``gr[name]`` (same shape), or those
    of :data:`HANDED_OVER` handed to ``update``."""
    # names within the one fusion block, as the rest of this function spells them
    gr = {k.removeprefix(BLOCK): v for k, v in gr.items()}
    params = ({k.removeprefix(BLOCK): v for k, v in named_parameters(m).items()}
              if update is not None else {})

    def hand_over(name: str) -> None:
        """``gr[name]`` is final and the parameter is read no more in this pass."""
        if update is not None:
            update(params[name], gr[name])

    def weight_grad(name: str, a: torch.Tensor, b: torch.Tensor) -> None:
        """``a @ b`` is the gradient of weight ``name``, which is read no more in this pass."""
        if update is None:
            mm(a, b, out=gr[name])
        else:
            update(params[name], mm(a, b))

    b, c = clip_mask.shape
    e2g, g2e, head = m.blocks[0].echo_to_ecg, m.blocks[0].ecg_to_echo, m.head
    heads, d = e2g.heads, m.echo_proj.out_features
    dh, dt = d // heads, echo.dtype
    scale = 1.0 / math.sqrt(dh)
    r_e, r_g = m.norm_echo.rank, m.norm_ecg.rank
    ln1, ln2 = m.blocks[0].ln_echo, m.blocks[0].ln_ecg
    eps1, eps2 = ln1.eps, ln2.eps

    # ---- forward -------------------------------------------------------------------------
    me = clip_mask.to(dt)                                                   # (b, c)
    c_e = echo * me.unsqueeze(-1)                                           # (b, c, r_e)
    c_g = ecg * has_ecg.to(dt).unsqueeze(-1)                                # (b, r_g)
    c_g1 = torch.cat([c_g, c_g.new_ones(b, 1)], dim=1)                      # (b, r_g+1)
    x_e = torch.cat([mm(m.echo_proj.weight, m.norm_echo.basis).t(),
                     m.echo_proj.bias.view(1, d), m.echo_null.view(1, d)])  # (r_e+2, d)
    x_g = torch.cat([mm(m.ecg_proj.weight, m.norm_ecg.basis).t(),
                     m.ecg_proj.bias.view(1, d), m.ecg_null.view(1, d)])    # (r_g+2, d)
    p_k = mm(x_g, e2g.k.weight.t())                                          # (r_g+2, d)
    p_v = mm(x_g, e2g.v.weight.t())
    p_q = mm(x_g[:r_g + 1], g2e.q.weight.t())                                # (r_g+1, d)
    q_e = mm(x_e[:r_e + 1], e2g.q.weight.t())                                # (r_e+1, d)
    k_e = mm(x_e, g2e.k.weight.t())                                          # (r_e+2, d)
    v_e = mm(x_e, g2e.v.weight.t())
    e = linear(c_e.reshape(b * c, r_e), x_e[:r_e].t(), x_e[r_e]).view(b, c, d)
    g = linear(c_g, x_g[:r_g].t(), x_g[r_g])                                # (b, d)

    # echo -> [null, ECG]: the k bias cancels in k_g - k_null
    dk = linear(c_g, p_k[:r_g].t(), p_k[r_g] - p_k[r_g + 1]) * scale         # (b, d)
    dk_h = _heads(dk, heads)
    q_r, qb1 = _heads(q_e[:r_e], heads), (q_e[r_e] + e2g.q.bias).view(heads, dh)
    t = torch.einsum("bhk,rhk->bhr", dk_h, q_r)                             # (b, H, r_e)
    diff = torch.bmm(c_e, t.transpose(1, 2)) + (dk_h * qb1).sum(-1).unsqueeze(1)  # (b, c, H)
    w = torch.sigmoid(diff) * has_ecg.to(dt).view(b, 1, 1)                  # weight on the ECG
    # value basis: v_g - v_null = c_g1 @ basis1[:r_g+1]; v_null = basis1[r_g+1]
    basis1 = torch.cat([p_v[:r_g], (p_v[r_g] - p_v[r_g + 1]).view(1, d),
                        (p_v[r_g + 1] + e2g.v.bias).view(1, d)])           # (r_g+2, d)
    o1, bo1_h, wo1_h = _out_composite(basis1, e2g.out.weight, heads)           # (H, r_g+2, d)
    u1 = mm(c_g1, o1[:, :r_g + 1].transpose(0, 1).reshape(r_g + 1, heads * d)
            ).view(b, heads, d)                                               # out(diff_v) per head
    att_e = torch.bmm(w, u1) + (o1[:, r_g + 1].sum(0) + e2g.out.bias)       # (b, c, d)
    y_e = e + att_e
    ln_e, mu1, rs1 = torch.native_layer_norm(y_e, (d,), ln1.weight, ln1.bias, eps1)
    cnt = me.sum(1).clamp(min=1).unsqueeze(-1)                              # (b, 1)
    pooled = torch.bmm(me.unsqueeze(1), ln_e).squeeze(1) / cnt              # (b, d)

    # ECG -> [null, clips]
    qg = linear(c_g, p_q[:r_g].t(), p_q[r_g] + g2e.q.bias) * scale          # (b, d)
    qg_h = _heads(qg, heads)
    k_r = _heads(k_e[:r_e], heads)
    kb, kn = (k_e[r_e] + g2e.k.bias).view(heads, dh), (k_e[r_e + 1] + g2e.k.bias).view(heads, dh)
    u = torch.einsum("bhk,rhk->bhr", qg_h, k_r)                             # (b, H, r_e)
    s_clip = torch.bmm(u, c_e.transpose(1, 2)) + (qg_h * kb).sum(-1, keepdim=True)
    s_null = (qg_h * kn).sum(-1, keepdim=True)                              # (b, H, 1)
    s_clip = s_clip.masked_fill(~clip_mask.unsqueeze(1), float("-inf"))
    wg = torch.softmax(torch.cat([s_null, s_clip], dim=-1), dim=-1)         # (b, H, 1+c)
    px = torch.bmm(wg[..., 1:], c_e)                                        # (b, H, r_e)
    # output = vb + px @ V_r + w0 (vn - vb) per head, vb/vn the clip bias / null values
    basis2 = torch.cat([v_e[:r_e], (v_e[r_e + 1] - v_e[r_e]).view(1, d),
                        (v_e[r_e] + g2e.v.bias).view(1, d)])               # (r_e+2, d)
    o2, bo2_h, wo2_h = _out_composite(basis2, g2e.out.weight, heads)           # (H, r_e+2, d)
    kappa = torch.cat([px, wg[..., :1]], dim=-1).reshape(b, heads * (r_e + 1))
    o2_flat = o2[:, :r_e + 1].reshape(heads * (r_e + 1), d)
    y_g = g + linear(kappa, o2_flat.t(), o2[:, r_e + 1].sum(0) + g2e.out.bias)
    ln_g, mu2, rs2 = torch.native_layer_norm(y_g, (d,), ln2.weight, ln2.bias, eps2)

    # head: Linear -> GELU -> Dropout -> Linear, and its backward down to h1
    z = torch.cat([pooled, ln_g], dim=1)                                    # (b, 2d)
    h1 = linear(z, head[0].weight, head[0].bias)
    loss, d_h1 = gelu_dropout_linear_mse(h1, head[2], head[3], y, gr["head.3.weight"],
                                         gr["head.3.bias"])

    # ---- backward ------------------------------------------------------------------------
    d_z = mm(d_h1, head[0].weight)                                          # (b, 2d)
    weight_grad("head.0.weight", d_h1.t(), z)
    torch.sum(d_h1, 0, out=gr["head.0.bias"])

    # ECG side: layer norm, output composite, softmax, scores
    d_yg, d_w2, d_b2 = layer_norm_backward(
        d_z[:, d:].contiguous(), y_g, (d,), mu2, rs2, ln2.weight, ln2.bias,
        [True, True, True])
    gr["ln_ecg.weight"].copy_(d_w2)
    gr["ln_ecg.bias"].copy_(d_b2)
    torch.sum(d_yg, 0, out=gr["ecg_to_echo.out.bias"])
    d_kappa = mm(d_yg, o2_flat.t()).view(b, heads, r_e + 1)
    d_o2 = torch.empty_like(o2)
    d_o2[:, :r_e + 1] = mm(kappa.t(), d_yg).view(heads, r_e + 1, d)
    d_o2[:, r_e + 1] = gr["ecg_to_echo.out.bias"]
    d_basis2 = _out_composite_backward(d_o2, bo2_h, wo2_h, gr["ecg_to_echo.out.weight"])
    hand_over("ecg_to_echo.out.weight")
    d_ve = torch.empty_like(v_e)
    d_ve[:r_e] = d_basis2[:r_e]
    d_ve[r_e] = d_basis2[r_e + 1] - d_basis2[r_e]
    d_ve[r_e + 1] = d_basis2[r_e]
    gr["ecg_to_echo.v.bias"].copy_(d_basis2[r_e + 1])
    d_px, d_w0 = d_kappa[..., :r_e], d_kappa[..., r_e:]
    d_wg = torch.cat([d_w0, torch.bmm(d_px, c_e.transpose(1, 2))], dim=-1)  # (b, H, 1+c)
    d_s = wg * (d_wg - (d_wg * wg).sum(-1, keepdim=True))
    d_snull, d_sclip = d_s[..., :1], d_s[..., 1:]
    d_u = torch.bmm(d_sclip, c_e)                                           # (b, H, r_e)
    d_sum = d_sclip.sum(-1, keepdim=True)
    d_qg = (d_snull * kn + d_sum * kb + torch.einsum("bhr,rhk->bhk", d_u, k_r)).view(b, d)
    d_kb = (d_sum * qg_h).sum(0)                                            # (H, dh)
    d_kn = (d_snull * qg_h).sum(0)
    d_ke = torch.cat([torch.einsum("bhr,bhk->rhk", d_u, qg_h).reshape(r_e, d),
                      d_kb.view(1, d), d_kn.view(1, d)])
    gr["ecg_to_echo.k.bias"].copy_((d_kb + d_kn).view(d))
    d_qg = d_qg * scale
    torch.sum(d_qg, 0, out=gr["ecg_to_echo.q.bias"])
    d_pq = torch.cat([mm(c_g.t(), d_qg), gr["ecg_to_echo.q.bias"].view(1, d)])  # (r_g+1, d)

    # echo side: mean over clips, layer norm, output composite, sigmoid, scores
    d_ln_e = (me / cnt).unsqueeze(-1) * d_z[:, :d].unsqueeze(1)             # (b, c, d)
    d_ye, d_w1, d_b1 = layer_norm_backward(
        d_ln_e, y_e, (d,), mu1, rs1, ln1.weight, ln1.bias, [True, True, True])
    gr["ln_echo.weight"].copy_(d_w1)
    gr["ln_echo.bias"].copy_(d_b1)
    torch.sum(d_ye, (0, 1), out=gr["echo_to_ecg.out.bias"])
    d_w = torch.bmm(d_ye, u1.transpose(1, 2))                               # (b, c, H)
    d_u1 = torch.bmm(w.transpose(1, 2), d_ye).view(b, heads * d)            # (b, H*d)
    d_o1 = torch.empty_like(o1)
    d_o1[:, :r_g + 1] = mm(c_g1.t(), d_u1).view(r_g + 1, heads, d).transpose(0, 1)
    d_o1[:, r_g + 1] = gr["echo_to_ecg.out.bias"]
    d_basis1 = _out_composite_backward(d_o1, bo1_h, wo1_h, gr["echo_to_ecg.out.weight"])
    hand_over("echo_to_ecg.out.weight")
    d_pv = torch.empty_like(p_v)
    d_pv[:r_g + 1] = d_basis1[:r_g + 1]
    d_pv[r_g + 1] = d_basis1[r_g + 1] - d_basis1[r_g]
    gr["echo_to_ecg.v.bias"].copy_(d_basis1[r_g + 1])
    d_diff = d_w * w * (1 - w)
    d_t = torch.bmm(d_diff.transpose(1, 2), c_e)                            # (b, H, r_e)
    d_sum1 = d_diff.sum(1).unsqueeze(-1)                                    # (b, H, 1)
    d_dk = (d_sum1 * qb1 + torch.einsum("bhr,rhk->bhk", d_t, q_r)).view(b, d) * scale
    d_qb1 = (d_sum1 * dk_h).sum(0).view(1, d)
    d_qe = torch.cat([torch.einsum("bhr,bhk->rhk", d_t, dk_h).reshape(r_e, d), d_qb1])
    gr["echo_to_ecg.q.bias"].copy_(d_qb1.view(d))
    d_pk_r = d_dk.sum(0).view(1, d)
    d_pk = torch.cat([mm(c_g.t(), d_dk), d_pk_r, -d_pk_r])
    gr["echo_to_ecg.k.bias"].zero_()                             # cancels in k_g - k_null

    # q/k/v weights and the token bases (residual streams included): each weight's
    # gradient right after the product that reads the weight for the last time
    def through_qkv(x: torch.Tensor, *parts: tuple[str, torch.Tensor]) -> torch.Tensor:
        """Gradient of the token basis ``x`` through the products ``d_p`` of its first
        rows with each weight ``name`` (``d_p @ W`` summed), each weight's own gradient
        ``d_p^T x`` taken right after its last read."""
        d_x = None
        for name, d_p in parts:
            w, n = params_of[name], d_p.shape[0]
            if d_x is None:
                d_x = mm(d_p, w)
            else:
                d_x[:n] += mm(d_p, w)
            weight_grad(name, d_p.t(), x[:n])
        return d_x

    params_of = {"echo_to_ecg.k.weight": e2g.k.weight, "echo_to_ecg.v.weight": e2g.v.weight,
                 "ecg_to_echo.q.weight": g2e.q.weight, "ecg_to_echo.k.weight": g2e.k.weight,
                 "ecg_to_echo.v.weight": g2e.v.weight, "echo_to_ecg.q.weight": e2g.q.weight}
    d_xg = through_qkv(x_g, ("echo_to_ecg.k.weight", d_pk), ("echo_to_ecg.v.weight", d_pv),
                       ("ecg_to_echo.q.weight", d_pq))
    d_xg[:r_g] += mm(c_g.t(), d_yg)
    d_xg[r_g] += gr["ecg_to_echo.out.bias"]                  # = d_yg summed over rows
    d_xe = through_qkv(x_e, ("ecg_to_echo.k.weight", d_ke), ("ecg_to_echo.v.weight", d_ve),
                       ("echo_to_ecg.q.weight", d_qe))
    d_xe_r = d_xe[:r_e]
    d_xe_r += mm(c_e.reshape(b * c, r_e).t(), d_ye.reshape(b * c, d))
    d_xe[r_e] += gr["echo_to_ecg.out.bias"]                  # = d_ye summed over rows, clips
    weight_grad("echo_proj.weight", d_xe[:r_e].t(), m.norm_echo.basis.t())
    gr["echo_proj.bias"].copy_(d_xe[r_e])
    gr["echo_null"].copy_(d_xe[r_e + 1].view(1, 1, d))
    weight_grad("ecg_proj.weight", d_xg[:r_g].t(), m.norm_ecg.basis.t())
    gr["ecg_proj.bias"].copy_(d_xg[r_g])
    gr["ecg_null"].copy_(d_xg[r_g + 1].view(1, 1, d))
    return loss


def _replica_by_replica(loss_backward: Any) -> Any:
    """A trainer factory: each replica's ``loss_backward`` in turn, inference by
    :func:`fuse_encoded`."""
    def trainer(job: Any) -> Any:
        models, rng_states = init_modules(job)
        return ReplicaByReplica(job, models, rng_states, loss_backward=loss_backward,
                        forward=fast_forward, attend=fast_attend)
    return trainer


# lead_mix: part of the model's encode, which every trainer runs once per split;
# batch_per_crop: the loop's batch (any batch steps the same way)
HANDLES = frozenset(("epochs", "fusion_dim", "heads", "hidden", "dropout", "modality_dropout",
                     "lead_mix", "batch_per_crop"))
POOLED = Accelerator(
    name="fused_pooled",
    precondition="fused probe with one ECG token per subject (pooled) and one fusion block",
    handles=HANDLES, applies=lambda settings: settings.get("ecg_tokens", 1) == 1,
    trainer=_replica_by_replica(fused_loss_backward), forward=fast_forward, attend=fast_attend)
TOKENS = Accelerator(
    name="fused_tokens",
    precondition="fused probe with N > 1 ECG tokens per subject and one fusion block",
    handles=HANDLES | {"attn_scale"},   # the echo->ECG score multiplier (train.fused.attn_scale)
    applies=lambda settings: settings.get("ecg_tokens", 1) > 1,
    trainer=_replica_by_replica(coords_loss_backward), forward=fast_forward, attend=fast_attend)
