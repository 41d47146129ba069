"""The torch probes' textbook modules: parameter counts, masking, null tokens, permutation
invariance, ECG tokens."""

from __future__ import annotations

import pytest
import torch

from rightsize.probes.engine.build import build_module
from rightsize.probes.engine.torch_model import count_params
from rightsize.probes.models.concat.model import ConcatMLPProbe
from rightsize.probes.models.echo.model import EchoAttnProbe
from rightsize.probes.models.fused.model import CrossAttnFusedProbe
from rightsize.probes.registry import spec as probe_spec


def _batch(b=6, c=5, de=16, dg=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    echo = torch.randn(b, c, de, generator=g)
    n = torch.tensor([0, 1, 2, 3, 5, 4])[:b]
    mask = torch.arange(c)[None, :] < n[:, None]
    echo = echo * mask[..., None]
    ecg = torch.randn(b, dg, generator=g)
    has_ecg = torch.tensor([True, True, False, True, True, False])[:b]
    return echo, mask, ecg * has_ecg[:, None], has_ecg


MODELS = [
    lambda: EchoAttnProbe(16, 12),
    lambda: ConcatMLPProbe(16, 12, hidden=8, dropout=0.0),
    lambda: CrossAttnFusedProbe(16, 12, fusion_dim=8, heads=2, hidden=8, dropout=0.0),
]


@pytest.mark.parametrize("dim, lo, hi", [(256, 1.0e6, 1.25e6), (1024, 9.0e6, 11.5e6)])
def test_fused_parameter_count_in_the_reference_ballpark(dim, lo, hi):
    n = count_params(CrossAttnFusedProbe(1024, 768, fusion_dim=dim, heads=4, hidden=256))
    assert lo <= n <= hi


def test_buffers_are_not_parameters():
    m = CrossAttnFusedProbe(16, 12, fusion_dim=8, heads=2, hidden=8)
    assert count_params(m) == sum(p.numel() for p in m.parameters())
    assert "norm_echo.mean" in m.state_dict()


@pytest.mark.parametrize("make", MODELS)
def test_all_masked_rows_are_finite_with_finite_gradients(make):
    torch.manual_seed(0)
    model = make()
    echo, mask, ecg, has_ecg = _batch()
    mask[:] = False
    has_ecg[:] = False
    out = model(echo, mask, ecg, has_ecg)
    assert out.shape == (6,) and torch.isfinite(out).all()
    out.sum().backward()
    for p in model.parameters():
        assert p.grad is None or torch.isfinite(p.grad).all()


@pytest.mark.parametrize("make", MODELS)
def test_masked_inputs_do_not_change_the_output(make):
    torch.manual_seed(0)
    model = make().eval()
    echo, mask, ecg, has_ecg = _batch()
    base = model(echo, mask, ecg, has_ecg)
    junk_echo = echo + 100.0 * (~mask)[..., None]            # garbage in padded clips
    junk_ecg = ecg + 100.0 * (~has_ecg)[:, None]              # garbage where ECG is absent
    torch.testing.assert_close(model(junk_echo, mask, junk_ecg, has_ecg), base)


@pytest.mark.parametrize("make", MODELS)
def test_clip_order_does_not_matter(make):
    torch.manual_seed(0)
    model = make().eval()
    echo, mask, ecg, has_ecg = _batch()
    perm = torch.tensor([4, 2, 0, 3, 1])
    echo_p, mask_p = echo[:, perm], mask[:, perm]
    torch.testing.assert_close(model(echo_p, mask_p, ecg, has_ecg),
                               model(echo, mask, ecg, has_ecg), rtol=1e-5, atol=1e-6)


def test_fused_uses_both_modalities_and_reports_attention():
    torch.manual_seed(0)
    model = CrossAttnFusedProbe(16, 12, fusion_dim=8, heads=2, hidden=8).eval()
    echo, mask, ecg, has_ecg = _batch()
    out, w_e, w_g = model.attend(**model.encode(echo, mask, ecg, has_ecg))
    assert w_e.shape == (6, 2, 5, 2) and w_g.shape == (6, 2, 1, 6)
    torch.testing.assert_close(w_e.sum(-1), torch.ones_like(w_e.sum(-1)))
    # masked keys get zero weight; with no clips / no ECG all weight is on the null token
    assert (w_g[..., 1:][~mask[:, None, None, :].expand_as(w_g[..., 1:])] == 0).all()
    assert (w_g[0, :, 0, 0] == 1).all()
    assert (w_e[2, :, :, 0] == 1).all()
    no_ecg = model(echo, mask, ecg, torch.zeros_like(has_ecg))
    no_echo = model(echo, torch.zeros_like(mask), ecg, has_ecg)
    assert not torch.allclose(no_ecg[has_ecg], out[has_ecg])
    assert not torch.allclose(no_echo[mask.any(1)], out[mask.any(1)])


def test_build_module_from_arch_dict():
    arch = {"probe": "fused", "echo_dim": 16, "ecg_dim": 12, "fusion_dim": 8, "heads": 2,
            "hidden": 8, "dropout": 0.0, "ecg_tokens": 4, "ecg_pooling": "attention"}
    model = build_module(probe_spec("fused"), arch)
    assert isinstance(model, CrossAttnFusedProbe)
    assert model.echo_proj.out_features == 8
    echo_arch = {"probe": "echo", "echo_dim": 16, "ecg_dim": 12}
    assert isinstance(build_module(probe_spec("echo"), echo_arch), EchoAttnProbe)
    with pytest.raises(TypeError):
        build_module(probe_spec("concat"), {**arch, "probe": "concat"})   # fusion_dim: not concat's
