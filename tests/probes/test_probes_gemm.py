"""The oneDNN route for fp32 products: same numbers as torch.mm, and taken only where safe.

The float64 gradient tests (test_probes_accel_fused.py) never reach oneDNN (it is float32
only), so the fp32 hand-written fused step is held here to the same step with the route
turned off, at a size where the route is taken.
"""

from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from rightsize.probes import accel
from rightsize.probes.accel import gemm
from rightsize.probes.models.fused.model import CrossAttnFusedProbe
from rightsize.probes.models.fused.step import fused_loss_backward, manual_step_applies

needs_onednn = pytest.mark.skipif(not gemm.onednn_available(),
                                  reason="this torch build has no oneDNN fp32 linear")


@pytest.fixture
def route():
    """oneDNN forced on (whatever this machine's route); the switch restored afterwards."""
    old = gemm.set_onednn(True)
    yield
    gemm.set_onednn(old)


def _ops(fn) -> set[str]:
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return {e.key for e in prof.key_averages()}


def _ref(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a.double() @ b.double()).float()


CASES = {   # name: (a, b) with a @ b eligible for the route
    "row-major": lambda g: (torch.randn(34, 256, generator=g), torch.randn(256, 300, generator=g)),
    "weight transposed": lambda g: (torch.randn(34, 256, generator=g),
                                    torch.randn(300, 256, generator=g).t()),
    "both transposed": lambda g: (torch.randn(256, 34, generator=g).t(),
                                  torch.randn(300, 256, generator=g).t()),
    "row slice": lambda g: (torch.randn(40, 256, generator=g)[3:37],
                            torch.randn(256, 300, generator=g)),
}


@needs_onednn
@pytest.mark.parametrize("case", sorted(CASES))
def test_mm_takes_onednn_and_matches_float64(route, case):
    a, b = CASES[case](torch.Generator().manual_seed(0))
    assert "mkldnn::_linear_pointwise" in _ops(lambda: gemm.mm(a, b))
    torch.testing.assert_close(gemm.mm(a, b), _ref(a, b), rtol=1e-5, atol=1e-4)


@needs_onednn
def test_mm_into_a_strided_view_and_linear_with_bias(route):
    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(256, 34, generator=g).t(), torch.randn(34, 256, generator=g)
    grad = torch.full((256, 4, 256), 7.0)
    gemm.mm(a.t(), b, out=grad[:, 2])                           # one head's columns
    torch.testing.assert_close(grad[:, 2], _ref(a.t(), b), rtol=1e-5, atol=1e-4)
    assert bool((grad[:, [0, 1, 3]] == 7.0).all())             # nothing else written
    x, w, bias = torch.randn(64, 512, generator=g), torch.randn(128, 512, generator=g), \
        torch.randn(128, generator=g)
    assert "mkldnn::_linear_pointwise" in _ops(lambda: gemm.linear(x, w, bias))
    torch.testing.assert_close(gemm.linear(x, w, bias), _ref(x, w.t()) + bias,
                               rtol=1e-5, atol=1e-4)
    # a wide, short weight: 512 x 32 x 256 multiply-adds route (512 x 32 x 32 would not)
    x, w = torch.randn(512, 32, generator=g), torch.randn(256, 32, generator=g)
    assert "mkldnn::_linear_pointwise" in _ops(lambda: gemm.linear(x, w))
    torch.testing.assert_close(gemm.linear(x, w), _ref(x, w.t()), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("case", ["float64", "strided weight", "small", "autograd", "off",
                                  "accelerate off"])
def test_mm_falls_back_to_torch_where_the_route_does_not_apply(route, case):
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(34, 256, generator=g), torch.randn(256, 256, generator=g)
    if case == "float64":
        a, b = a.double(), b.double()
    elif case == "strided weight":                            # 1000x slower in oneDNN
        b = torch.randn(256, 1024, generator=g)[:, ::4]
    elif case == "small":
        a, b = a[:8, :32], b[:32, :64]
    elif case == "autograd":
        b.requires_grad_(True)
    elif case == "off":
        gemm.set_onednn(False)
    with accel.use(case != "accelerate off"):
        ops = _ops(lambda: gemm.mm(a, b))
    assert "mkldnn::_linear_pointwise" not in ops and "aten::mm" in ops
    out = gemm.mm(a, b)
    torch.testing.assert_close(out, (a.double() @ b.double()).to(out.dtype),
                               rtol=1e-5, atol=1e-4)
    if case == "autograd":
        out.sum().backward()
        torch.testing.assert_close(b.grad, a.sum(0, keepdim=True).t().expand(256, 256))


@needs_onednn
@pytest.mark.parametrize("fusion_dim", [256, 512])
def test_fused_fp32_step_with_onednn_matches_the_step_without(route, fusion_dim):
    torch.manual_seed(0)
    model = CrossAttnFusedProbe(96, 80, fusion_dim=fusion_dim, heads=4, hidden=64,
                                dropout=0.0, pca_rank=16)
    # the output composites go per head through oneDNN at 512 (18 x 128 x 512), bmm at 256
    assert gemm.routes(18, fusion_dim // 4, fusion_dim, torch.ones(1)) == (fusion_dim == 512)
    for norm in (model.norm_echo, model.norm_ecg):
        q, _ = torch.linalg.qr(torch.randn(norm.mean.shape[0], norm.rank))
        norm.basis.copy_(q)
    g = torch.Generator().manual_seed(3)
    rows, clips = 64, 4
    x = (torch.randn(rows, clips, 96, generator=g),
         torch.arange(clips)[None, :] < torch.randint(0, clips + 1, (rows, 1), generator=g),
         torch.randn(rows, 80, generator=g), torch.rand(rows, generator=g) > 0.1)
    enc, y = model.encode(*x), torch.randn(rows, generator=g)
    assert manual_step_applies(model, rows)
    results = []
    for on in (True, False):
        gemm.set_onednn(on)
        ops = _ops(lambda: fused_loss_backward(model, enc, y))
        assert ("mkldnn::_linear_pointwise" in ops) == on
        loss = fused_loss_backward(model, enc, y)
        results.append((loss, {n: p.grad.clone() for n, p in model.named_parameters()}))
    (loss_on, g_on), (loss_off, g_off) = results
    torch.testing.assert_close(loss_on, loss_off, rtol=1e-5, atol=0)
    # float32 rounding, relative to each gradient's size; the key bias's gradient is zero up
    # to rounding (a softmax ignores a shift shared by all keys), so it is held absolutely
    floor = 1e-6 * max(float(g.abs().max()) for g in g_off.values())
    for name, grad in g_off.items():
        atol = 1e-4 * float(grad.abs().max()) + floor
        torch.testing.assert_close(g_on[name], grad, rtol=0, atol=atol, msg=name)
