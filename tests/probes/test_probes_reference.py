"""The fast forward passes equal the textbook ones: outputs, attention weights, gradients.

Float64, random moments, orthonormal PCA bases, masked clips and absent modalities; the
shapes make :func:`project` and :func:`mix_two_keys` take each of their two branches.
"""

from __future__ import annotations

import pytest
import torch

from rightsize.probes.adamw import FusedAdamW
from rightsize.probes.fused import mix_two_keys, project
from rightsize.probes.reference import ReferenceModel, reference_forward, reference_fuse

from .probe_fixtures import MAKERS, model_inputs, random_model


# 7 rows keep the fused probe's clip attention on full-width tokens, 42 rows (rank 8) put it
# in the clip coordinates (see the cost test in CrossAttnFusedProbe.fuse_encoded).
@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("rank, rows", [(0, 7), (8, 7), (8, 42)])
@pytest.mark.parametrize("clips", [1, 5])
def test_fast_forward_equals_textbook_forward_and_gradients(name, rank, rows, clips):
    model = random_model(MAKERS[name], rank)
    x = model_inputs(clips, rows)
    weights = torch.arange(rows, dtype=torch.float64)    # a loss that weighs rows differently
    fast = model(*x)
    ref = reference_forward(model, *x)
    torch.testing.assert_close(fast, ref, rtol=1e-10, atol=1e-12)
    params = list(model.parameters())
    g_fast = torch.autograd.grad((fast * weights).sum(), params)
    g_ref = torch.autograd.grad((ref * weights).sum(), params)
    for (pname, _), a, b in zip(model.named_parameters(), g_fast, g_ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11, msg=pname)


@pytest.mark.parametrize("clips", [1, 5])
@pytest.mark.parametrize("rows", [7, 42])
def test_fused_attention_weights_equal_multi_head_attention(clips, rows):
    model = random_model(MAKERS["fused"], 8)
    x = model_inputs(clips, rows)
    _, w_e, w_g = model.fuse(*x, need_weights=True)
    _, r_e, r_g = reference_fuse(model, *x)
    torch.testing.assert_close(w_e, r_e, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(w_g, r_g, rtol=1e-10, atol=1e-12)


def test_encoded_batches_equal_raw_batches():
    model = random_model(MAKERS["concat"], 8)
    x = model_inputs(5)
    enc = model.encode(*x)
    assert enc["echo"].shape == (7, 1, 8)                  # clips pooled before batching
    rows = torch.tensor([6, 2, 3])
    part = {k: t[rows] for k, t in enc.items()}
    torch.testing.assert_close(model.forward_encoded(**part), model(*x)[rows])


@pytest.mark.parametrize("rows, rank", [(2, 4), (64, 4), (64, 40)])
def test_project_either_order_is_the_same_affine_map(rows, rank):
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 12).double()
    a_w, a_b = torch.randn(16, rank, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    c = torch.randn(rows, rank, dtype=torch.float64)
    x = torch.nn.functional.linear(c, a_w, a_b)
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


def test_reference_model_trains_the_same_parameters():
    model = random_model(MAKERS["fused"], 8)
    wrapped = ReferenceModel(model)
    assert list(wrapped.parameters()) == list(model.parameters())
    torch.testing.assert_close(wrapped(*model_inputs(3)), model(*model_inputs(3)))


def test_fused_adamw_matches_torch_adamw_bit_for_bit():
    torch.manual_seed(0)
    ours = MAKERS["fused"](8)
    theirs = MAKERS["fused"](8)
    theirs.load_state_dict(ours.state_dict())
    unused = torch.nn.Parameter(torch.ones(3))            # no gradient: skipped by both
    opt_ours = FusedAdamW([*ours.parameters(), unused], lr=3e-3, weight_decay=0.1)
    opt_theirs = torch.optim.AdamW(theirs.parameters(), lr=3e-3, weight_decay=0.1, fused=True)
    x = [t.float() if t.is_floating_point() else t for t in model_inputs(4)]
    for _ in range(5):
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            model(*x).square().mean().backward()
            opt.step()
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)
    assert torch.equal(unused, torch.ones(3))
