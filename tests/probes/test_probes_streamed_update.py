"""The fused probe's step hands each weight matrix's gradient to the optimizer when final.

``fused_loss_backward(model, batch, y, update)`` calls ``update(param, grad)`` once per
weight matrix, at the point where the rest of the pass no longer reads that weight, and
leaves the other gradients in ``.grad`` (:mod:`rightsize.probes.models.fused.step`); the
training loop passes ``AdamW.update`` and then calls ``step()`` for the rest. Held here:
each weight is handed over exactly once with the gradient ``.grad`` would hold, and the rest are in
``.grad``; a weight poisoned the moment it is handed over leaves the rest of the pass
(loss and every later gradient) untouched; and float32 training with streamed updates
equals gradients-then-``step()`` bit for bit.
"""

from __future__ import annotations

import pytest
import torch

from rightsize.probes.accel.adamw import AdamW
from rightsize.probes.models.fused.model import CrossAttnFusedProbe
from rightsize.probes.models.fused.step import (
    HANDED_OVER,
    fused_loss_backward,
    manual_step_applies,
)

from .probe_fixtures import makers, probe_inputs, randomized


@pytest.mark.parametrize("clips", [1, 5])
def test_each_gradient_is_handed_over_once_and_its_parameter_is_not_read_after(clips):
    model = randomized(makers(dropout=0.3)["fused"], 8)
    x, y = probe_inputs(clips, 42), torch.linspace(-2, 2, 42, dtype=torch.float64)
    enc = model.encode(*x)
    assert manual_step_applies(model, 42)
    torch.manual_seed(5)
    loss = fused_loss_backward(model, enc, y)
    expected = {n: p.grad.clone() for n, p in model.named_parameters()}
    originals = {n: p.detach().clone() for n, p in model.named_parameters()}
    names = {id(p): n for n, p in model.named_parameters()}
    handed: dict[str, torch.Tensor] = {}

    def poison(param, grad):
        name = names[id(param)]
        assert name not in handed, f"{name} handed over twice"
        handed[name] = grad.clone()
        with torch.no_grad():
            param.fill_(float("nan"))          # any later read shows up downstream

    for p in model.parameters():
        p.grad = None
    torch.manual_seed(5)
    streamed_loss = fused_loss_backward(model, enc, y, poison)
    assert streamed_loss == loss
    assert sorted(handed) == sorted(HANDED_OVER)
    assert len(HANDED_OVER) == 11                # 6 q/k/v, 2 out, 2 input projections, head
    for name, p in model.named_parameters():
        got = handed[name] if name in HANDED_OVER else p.grad
        assert (p.grad is None) == (name in HANDED_OVER), name
        torch.testing.assert_close(got, expected[name], rtol=1e-12, atol=1e-14, msg=name)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(originals[n])


def test_below_the_hand_written_step_nothing_is_handed_over():
    model = randomized(makers(dropout=0.3)["fused"], 8)
    x, y = probe_inputs(5, 7), torch.zeros(7, dtype=torch.float64)
    assert not manual_step_applies(model, 7)                   # autograd fallback

    def refuse(param, grad):
        raise AssertionError("the autograd step leaves its gradients in .grad")

    fused_loss_backward(model, model.encode(*x), y, refuse)
    assert all(p.grad is not None for p in model.parameters())


def _fp32_fused(seed):
    torch.manual_seed(seed)
    model = CrossAttnFusedProbe(96, 80, fusion_dim=256, heads=4, hidden=64, dropout=0.1,
                                pca_rank=16)
    for norm in (model.norm_echo, model.norm_ecg):
        q, _ = torch.linalg.qr(torch.randn(norm.mean.shape[0], norm.rank))
        norm.basis.copy_(q)
    return model


def test_streamed_updates_train_bit_for_bit_as_gradients_then_step():
    g = torch.Generator().manual_seed(3)
    rows, clips = 64, 3
    x = (torch.randn(rows, clips, 96, generator=g),
         torch.arange(clips)[None, :] < torch.randint(0, clips + 1, (rows, 1), generator=g),
         torch.randn(rows, 80, generator=g), torch.rand(rows, generator=g) > 0.1)
    y = torch.randn(rows, generator=g)
    runs = []
    for streamed in (False, True):
        model = _fp32_fused(0)
        model.train()
        enc = model.encode(*x)
        opt = AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
        torch.manual_seed(11)                  # head dropout's draws
        losses = []
        for rows_now in (rows, rows, 9, rows):   # 9 rows: the autograd fallback mid-run
            part = {k: t[:rows_now] for k, t in enc.items()}
            update = opt.update if streamed else None
            losses.append(fused_loss_backward(model, part, y[:rows_now], update))
            opt.step()
        runs.append((torch.stack(losses), [p.detach().clone() for p in model.parameters()]))
    (loss_a, params_a), (loss_b, params_b) = runs
    assert torch.equal(loss_a, loss_b)
    for a, b in zip(params_a, params_b, strict=True):
        assert torch.equal(a, b)


def test_a_parameter_updated_twice_in_one_step_is_an_error():
    p = torch.nn.Parameter(torch.ones(3))
    opt = AdamW([p], lr=1e-2, weight_decay=0.0)
    opt.update(p, torch.ones(3))
    with pytest.raises(RuntimeError, match="twice"):
        opt.update(p, torch.ones(3))
    opt.step()                                 # p.grad is None: nothing more to do
    opt.update(p, torch.ones(3))               # a new step
    assert int(opt.steps[0]) == 2
