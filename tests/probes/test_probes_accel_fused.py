"""Accelerators ``fused_pooled`` and ``fused_tokens`` equal the fused probe's textbook
forward, and the textbook forward equals torch's own multi-head attention.

Float64, random moments, orthonormal PCA bases, masked clips and absent modalities; the
shapes make :func:`project` and :func:`mix_two_keys` take each of their two branches and
the training step take both its hand-written and its autograd form. Head dropout is on in
the step tests, with the same masks on both sides (both draw from the global generator).
"""

from __future__ import annotations

import pytest
import torch

from rightsize.probes.models.featurenorm import masked_mean
from rightsize.probes.models.fused.coords import (
    coords_loss_backward,
    fuse_encoded,
    mix_two_keys,
    project,
)
from rightsize.probes.models.fused.step import fused_loss_backward, manual_step_applies

from .probe_fixtures import makers, probe_inputs, randomized

F = torch.nn.functional


def _mha(block, query, keys, valid):
    """torch's ``multi_head_attention_forward`` with ``block``'s weights: the oracle."""
    d = block.q.in_features
    out, w = F.multi_head_attention_forward(
        query.transpose(0, 1), keys.transpose(0, 1), keys.transpose(0, 1), d, block.heads,
        None, torch.cat([block.q.bias, block.k.bias, block.v.bias]), None, None, False, 0.0,
        block.out.weight, block.out.bias, training=False, key_padding_mask=~valid,
        need_weights=True, use_separate_proj_weight=True, q_proj_weight=block.q.weight,
        k_proj_weight=block.k.weight, v_proj_weight=block.v.weight,
        average_attn_weights=False)
    return out.transpose(0, 1), w


def _oracle(model, echo, clip_mask, ecg, has_ecg):
    """The fused probe as its docstring describes it, on full-width normalized inputs, one
    block, with torch's multi-head attention (no coordinates, no lift)."""
    blk = model.blocks[0]
    e = model.echo_proj(model.norm_echo(echo, clip_mask))                    # (B, c, d)
    tokens = ecg if ecg.dim() == 3 else ecg.unsqueeze(1)
    g = model.ecg_proj(model.norm_ecg(tokens, has_ecg))                      # (B, N, d)
    b, n = g.shape[:2]
    ones = torch.ones(b, 1, dtype=torch.bool)
    kv_g = torch.cat([model.ecg_null.expand(b, 1, -1), g], dim=1)
    a_e, w_e = _mha(blk.echo_to_ecg, e, kv_g, torch.cat([ones, has_ecg[:, None].expand(b, n)], 1))
    pooled = masked_mean(blk.ln_echo(e + a_e), clip_mask)
    q = g.mean(1, keepdim=True)
    kv_e = torch.cat([model.echo_null.expand(b, 1, -1), e], dim=1)
    a_g, w_g = _mha(blk.ecg_to_echo, q, kv_e, torch.cat([ones, clip_mask], 1))
    g2 = blk.ln_ecg(q + a_g).squeeze(1)
    return model.head(torch.cat([pooled, g2], dim=1)).squeeze(-1), w_e, w_g


@pytest.mark.parametrize("rank", [0, 8])
@pytest.mark.parametrize("clips", [1, 5])
@pytest.mark.parametrize("tokens", [0, 3])
def test_textbook_forward_is_torch_multi_head_attention(rank, clips, tokens):
    model = randomized(makers()["fused"], rank).eval()
    x = probe_inputs(clips, 14, tokens=tokens)
    out, w_e, w_g = model.attend(**model.encode(*x))
    ref, r_e, r_g = _oracle(model, *x)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(w_e, r_e, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(w_g, r_g, rtol=1e-10, atol=1e-12)
    assert w_e.shape == (14, 4, clips, 1 + max(tokens, 1)) and w_g.shape == (14, 4, 1, 1 + clips)


# 7 rows keep the clip attention on full-width tokens, 42 rows (rank 8) put it in the clip
# coordinates (see the cost test in fuse_encoded).
@pytest.mark.parametrize("rank, rows", [(0, 7), (8, 7), (8, 42)])
@pytest.mark.parametrize("clips", [1, 5])
@pytest.mark.parametrize("tokens", [0, 3])
def test_fast_forward_equals_the_textbook_forward_and_its_gradients(rank, rows, clips, tokens):
    model = randomized(makers()["fused"], rank)
    enc = model.encode(*probe_inputs(clips, rows, tokens=tokens))
    weights = torch.arange(rows, dtype=torch.float64)    # a loss that weighs rows differently
    fast, f_e, f_g = fuse_encoded(model, **enc, need_weights=True)
    ref, r_e, r_g = model.attend(**enc)
    torch.testing.assert_close(fast, ref, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(f_e, r_e, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(f_g, r_g, rtol=1e-10, atol=1e-12)
    params = list(model.parameters())
    g_fast = torch.autograd.grad((fast * weights).sum(), params)
    g_ref = torch.autograd.grad((ref * weights).sum(), params)
    for (name, _), a, b in zip(model.named_parameters(), g_fast, g_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11, msg=name)


def _textbook_grads(model, enc, y, seed):
    torch.manual_seed(seed)
    loss = F.mse_loss(model.forward_encoded(**enc), y)
    return loss, torch.autograd.grad(loss, list(model.parameters()))


@pytest.mark.parametrize("rank, rows", [(0, 7), (8, 7), (8, 42), (8, 84)])
@pytest.mark.parametrize("clips", [1, 5])
@pytest.mark.parametrize("train", [True, False])
def test_training_step_equals_autograd_of_the_textbook_forward(rank, rows, clips, train):
    """Loss and every gradient, dropout on (train mode) with the same masks."""
    model = randomized(makers(dropout=0.3)["fused"], rank)
    model.train(train)
    enc = model.encode(*probe_inputs(clips, rows))
    y = torch.linspace(-2, 2, rows, dtype=torch.float64)
    ref_loss, ref_grads = _textbook_grads(model, enc, y, seed=3)
    for _ in range(2):                       # the second call replaces, not adds
        torch.manual_seed(3)
        loss = fused_loss_backward(model, enc, y)
        assert loss.grad_fn is None
        torch.testing.assert_close(loss, ref_loss.detach(), rtol=1e-12, atol=0)
        for (name, p), g in zip(model.named_parameters(), ref_grads, strict=True):
            torch.testing.assert_close(p.grad, g, rtol=1e-9, atol=1e-11, msg=name)


# Width 16, 4 heads: 1 clip (4 queries per row) scores the queries in the token coordinates
# at rank 8; 5 clips (20 queries), or rank 0 (the tokens' full 30-d width), form the keys.
@pytest.mark.parametrize("rank, rows", [(0, 7), (8, 42)])
@pytest.mark.parametrize("clips", [1, 5])
@pytest.mark.parametrize("train", [True, False])
def test_token_training_step_equals_autograd_of_the_textbook_forward(rank, rows, clips, train):
    """fused_tokens: autograd of the coordinate-form forward, N = 3 tokens, dropout on."""
    model = randomized(makers(dropout=0.3)["fused"], rank)
    model.train(train)
    enc = model.encode(*probe_inputs(clips, rows, tokens=3))
    y = torch.linspace(-2, 2, rows, dtype=torch.float64)
    ref_loss, ref_grads = _textbook_grads(model, enc, y, seed=3)
    torch.manual_seed(3)
    loss = coords_loss_backward(model, enc, y)
    torch.testing.assert_close(loss, ref_loss.detach(), rtol=1e-12, atol=0)
    for (name, p), g in zip(model.named_parameters(), ref_grads, strict=True):
        torch.testing.assert_close(p.grad, g, rtol=1e-9, atol=1e-11, msg=name)


# The settings the hand-written step is checked at: every config key fused_pooled declares
# it handles (the rest must hold their defaults, e.g. layers == 1), several values each
CLAIMED = [  # (fusion_dim, heads, hidden, dropout)
    (8, 1, 4, 0.0), (8, 2, 16, 0.3), (16, 4, 4, 0.3), (16, 1, 16, 0.0), (24, 3, 8, 0.1)]
# the loop's and the batch's, and encode's (the lead mix, before every trainer), not the step's
NOT_IN_THE_STEP = {"epochs", "modality_dropout", "lead_mix", "batch_per_crop"}


def test_the_claimed_grid_varies_every_key_the_pooled_accelerator_handles():
    from rightsize.probes.models.fused.step import POOLED

    assert POOLED.handles - NOT_IN_THE_STEP == {"fusion_dim", "heads", "hidden", "dropout"}
    assert all(len({row[i] for row in CLAIMED}) > 1 for i in range(4))
    from rightsize.probes.models.fused.model import CrossAttnFusedProbe

    from .probe_fixtures import DE, DG

    hand = [manual_step_applies(randomized(lambda r, f=f, h=h, k=k: CrossAttnFusedProbe(
        DE, DG, fusion_dim=f, heads=h, hidden=k, pca_rank=r), 8), 84) for f, h, k, _ in CLAIMED]
    assert sum(hand) >= 3, hand        # most settings take the hand-written form, not autograd


@pytest.mark.parametrize("fusion_dim, heads, hidden, dropout", CLAIMED)
def test_hand_written_step_equals_autograd_at_every_claimed_setting(fusion_dim, heads, hidden,
                                                                    dropout):
    """A sublayer added to the textbook forward (a parameter, or an op) makes the loss or a
    gradient differ here, or leaves a gradient unset: the check fails, naming it."""
    from rightsize.probes.models.fused.model import CrossAttnFusedProbe

    from .probe_fixtures import DE, DG

    model = randomized(lambda r: CrossAttnFusedProbe(DE, DG, fusion_dim=fusion_dim, heads=heads,
                                                     hidden=hidden, dropout=dropout,
                                                     pca_rank=r), 8)
    model.train(True)
    enc = model.encode(*probe_inputs(5, 84))
    y = torch.linspace(-2, 2, 84, dtype=torch.float64)
    ref_loss, ref_grads = _textbook_grads(model, enc, y, seed=5)
    torch.manual_seed(5)
    loss = fused_loss_backward(model, enc, y)
    torch.testing.assert_close(loss, ref_loss.detach(), rtol=1e-12, atol=0)
    for (name, p), g in zip(model.named_parameters(), ref_grads, strict=True):
        assert p.grad is not None, f"{name}: the hand-written step sets no gradient"
        torch.testing.assert_close(p.grad, g, rtol=1e-9, atol=1e-11, msg=name)


def test_the_hand_written_step_is_the_one_tested():
    model = randomized(makers()["fused"], 8)
    assert manual_step_applies(model, 42) and manual_step_applies(model, 84)
    assert not manual_step_applies(model, 7)                   # falls back to autograd
    assert not manual_step_applies(randomized(makers()["fused"], 0), 84)


def test_hand_written_dropout_is_live_in_train_mode():
    model = randomized(makers(dropout=0.3)["fused"], 8)
    enc, y = model.encode(*probe_inputs(5, 42)), torch.zeros(42, dtype=torch.float64)
    losses = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        losses.append(fused_loss_backward(model, enc, y))
    assert losses[0] != losses[1]
    model.eval()
    assert fused_loss_backward(model, enc, y) == fused_loss_backward(model, enc, y)


def test_a_step_after_the_gradients_were_dropped_fills_fresh_ones():
    model = randomized(makers(dropout=0.3)["fused"], 8)
    enc = model.encode(*probe_inputs(5, 42))
    y = torch.linspace(-1, 1, 42, dtype=torch.float64)
    torch.manual_seed(0)
    fused_loss_backward(model, enc, y)
    first = {n: p.grad.clone() for n, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = None                          # what zero_grad(set_to_none=True) does
    torch.manual_seed(0)
    fused_loss_backward(model, enc, y)
    for n, p in model.named_parameters():
        assert p.grad is not None, n
        torch.testing.assert_close(p.grad, first[n], rtol=0, atol=0, msg=n)


@pytest.mark.parametrize("rows, rank", [(2, 4), (64, 4), (64, 40)])
def test_project_either_order_is_the_same_affine_map(rows, rank):
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 12).double()
    a_w, a_b = torch.randn(16, rank, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    c = torch.randn(rows, rank, dtype=torch.float64)
    x = F.linear(c, a_w, a_b)
    null = torch.randn(1, 16, dtype=torch.float64)
    tokens, out_null = project(lin, c, a_w, a_b, x, null)
    torch.testing.assert_close(tokens, lin(x))
    torch.testing.assert_close(out_null, lin(null))
    assert project(lin, c, a_w, a_b, x)[1] is None


@pytest.mark.parametrize("clips", [1, 6])
def test_mix_two_keys_is_the_projected_convex_mix(clips):
    torch.manual_seed(0)
    b, d, heads = 3, 8, 2
    out = torch.nn.Linear(d, d).double()
    w = torch.rand(b, clips, heads, dtype=torch.float64)
    v_null, v_key = torch.randn(1, d, dtype=torch.float64), torch.randn(b, d, dtype=torch.float64)
    per_head_w = w.repeat_interleave(d // heads, dim=-1)               # (b, clips, d)
    expect = out(v_null + per_head_w * (v_key.unsqueeze(1) - v_null))
    torch.testing.assert_close(mix_two_keys(w, v_null, v_key, out, heads), expect)


@pytest.mark.parametrize("rank, rows", [(0, 7), (8, 42)])
def test_attn_scale_multiplies_the_echo_to_ecg_scores_in_both_forwards(rank, rows):
    """train.fused.attn_scale: the textbook echo->ECG scores times the factor (torch's
    multi-head attention on queries scaled by it), and fused_tokens' forward, weights and
    every gradient equal to autograd of that textbook forward (N = 3 tokens)."""
    from rightsize.probes.models.fused.model import CrossAttnFusedProbe

    from .probe_fixtures import DE, DG

    def build(scale):
        torch.manual_seed(5)
        return randomized(lambda r: CrossAttnFusedProbe(DE, DG, fusion_dim=16, heads=4,
                                                        hidden=16, pca_rank=r,
                                                        attn_scale=scale), rank).eval()

    plain, sharp = build(1.0), build(2.5)
    sharp.load_state_dict(plain.state_dict())
    enc = sharp.encode(*probe_inputs(5, rows, tokens=3))
    _, w_plain, _ = plain.attend(**enc)
    ref, w_ref, _ = sharp.attend(**enc)
    blk = sharp.blocks[0].echo_to_ecg
    with torch.no_grad():        # scaling the query weights and bias scales the scores
        blk.q.weight.mul_(2.5)
        blk.q.bias.mul_(2.5)
        blk.scale = 1.0
        _, w_scaled_q, _ = sharp.attend(**enc)
        blk.q.weight.div_(2.5)
        blk.q.bias.div_(2.5)
        blk.scale = 2.5
    torch.testing.assert_close(w_ref, w_scaled_q, rtol=1e-10, atol=1e-12)
    assert not torch.allclose(w_ref, w_plain)
    fast, f_e, _ = fuse_encoded(sharp, **enc, need_weights=True)
    torch.testing.assert_close(fast, ref, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(f_e, w_ref, rtol=1e-10, atol=1e-12)
    weights = torch.arange(rows, dtype=torch.float64)
    params = list(sharp.parameters())
    g_fast = torch.autograd.grad((fuse_encoded(sharp, **enc)[0] * weights).sum(), params)
    g_ref = torch.autograd.grad((sharp.forward_encoded(**enc) * weights).sum(), params)
    for (name, _), a, b in zip(sharp.named_parameters(), g_fast, g_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11, msg=name)


def test_attn_scale_keeps_fused_tokens_and_sends_one_token_to_the_textbook():
    from rightsize.probes.engine.config import TrainConfig
    from rightsize.probes.engine.estimator import Estimator
    from rightsize.probes.models.fused import FusedConfig
    from rightsize.probes.registry import spec as probe_spec

    est = Estimator(probe_spec("fused"), TrainConfig(fused=FusedConfig(attn_scale=4.0)))
    assert est.accelerator({"ecg_tokens": 93}).name == "fused_tokens"
    assert est.accelerator({"ecg_tokens": 1}) is None
    plain = Estimator(probe_spec("fused"), TrainConfig())
    assert plain.accelerator({"ecg_tokens": 1}).name == "fused_pooled"


@pytest.mark.parametrize("tokens, beta", [(93, 1.0), (186, 0.5), (16, 1.0), (93, 0.0)])
def test_lead_mix_adds_each_moments_mean_over_the_leads_in_encode(tokens, beta):
    """train.fused.lead_mix: encode's ECG coordinates are ``(I + beta A / 12) z`` with ``A``
    marking, for each token, the 12 tokens of the same moment (HuBERT-ECG's layout, one per
    lead); a count with no crop layout (16) and beta 0 leave ``z`` as it is. Every trainer
    and forward starts from encode, so fused_tokens keeps applying."""
    from rightsize.cohort.token_layout import same_moment
    from rightsize.probes.models.fused.model import CrossAttnFusedProbe

    from .probe_fixtures import DE, DG

    def build(mix):
        return randomized(lambda r: CrossAttnFusedProbe(DE, DG, fusion_dim=8, heads=2, hidden=8,
                                                        pca_rank=r, lead_mix=mix), 8)

    inputs = probe_inputs(3, 7, tokens=tokens)
    plain = build(0.0).encode(*inputs)["ecg"]
    mixed = build(beta).encode(*inputs)["ecg"]
    idx = same_moment(tokens)
    if idx is None or beta == 0:
        assert torch.equal(mixed, plain)
        return
    a = torch.zeros(tokens, tokens, dtype=torch.float64)
    a[torch.arange(tokens)[:, None], torch.from_numpy(idx)] = 1.0
    expect = torch.einsum("tu,bur->btr", torch.eye(tokens, dtype=torch.float64) + beta * a / 12,
                          plain)
    torch.testing.assert_close(mixed, expect, rtol=1e-12, atol=1e-12)
    assert not torch.allclose(mixed, plain)


def test_lead_mix_keeps_both_accelerators():
    from rightsize.probes.engine.config import TrainConfig
    from rightsize.probes.engine.estimator import Estimator
    from rightsize.probes.models.fused import FusedConfig
    from rightsize.probes.registry import spec as probe_spec

    est = Estimator(probe_spec("fused"), TrainConfig(fused=FusedConfig(lead_mix=1.0)))
    assert est.accelerator({"ecg_tokens": 93}).name == "fused_tokens"
    assert est.accelerator({"ecg_tokens": 1}).name == "fused_pooled"
