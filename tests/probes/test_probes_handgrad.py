"""Hand-written training steps equal autograd through the textbook forward.

``loss_backward`` is what the training loop calls: the concat and fused probes compute
their gradients by hand (``ConcatMLPProbe.loss_backward``, :mod:`rightsize.probes.fused_step`;
the numpy echo probe's hand-written gradient is held to autograd in test_probes_attentive).
Held here, in float64 and in train mode with head dropout on, to autograd of the MSE of
:func:`reference_forward`, the same random draws, every parameter.
"""

from __future__ import annotations

import pytest
import torch

from rightsize.probes.fused_step import manual_step_applies
from rightsize.probes.reference import reference_forward

from .probe_fixtures import DROPOUT_MAKERS as MAKERS
from .probe_fixtures import model_inputs, random_model


def _reference_grads(model, x, y, seed):
    torch.manual_seed(seed)
    loss = torch.nn.functional.mse_loss(reference_forward(model, *x), y)
    return loss, torch.autograd.grad(loss, list(model.parameters()))


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("rank, rows", [(0, 7), (8, 7), (8, 42), (8, 84)])
@pytest.mark.parametrize("clips", [1, 5])
@pytest.mark.parametrize("train", [True, False])
def test_loss_backward_equals_autograd_of_the_textbook_forward(name, rank, rows, clips, train):
    model = random_model(MAKERS[name], rank)
    model.train(train)
    x = model_inputs(clips, rows)
    y = torch.linspace(-2, 2, rows, dtype=torch.float64)
    enc = model.encode(*x)
    ref_loss, ref_grads = _reference_grads(model, x, y, seed=3)
    for _ in range(2):                       # the second call replaces, not adds
        torch.manual_seed(3)
        loss = model.loss_backward(enc, y)
        assert loss.grad_fn is None
        torch.testing.assert_close(loss, ref_loss.detach(), rtol=1e-12, atol=0)
        for (pname, p), g in zip(model.named_parameters(), ref_grads, strict=True):
            torch.testing.assert_close(p.grad, g, rtol=1e-9, atol=1e-11, msg=pname)


def test_the_fused_hand_written_step_is_the_one_tested():
    model = random_model(MAKERS["fused"], 8)
    assert manual_step_applies(model, 42) and manual_step_applies(model, 84)
    assert not manual_step_applies(model, 7)                   # falls back to autograd
    assert not manual_step_applies(random_model(MAKERS["fused"], 0), 84)


def test_hand_written_dropout_is_live_in_train_mode():
    model = random_model(MAKERS["fused"], 8)
    x, y = model_inputs(5, 42), torch.zeros(42, dtype=torch.float64)
    enc = model.encode(*x)
    losses = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        losses.append(model.loss_backward(enc, y))
    assert losses[0] != losses[1]
    model.eval()
    assert model.loss_backward(enc, y) == model.loss_backward(enc, y)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_a_step_after_the_gradients_were_dropped_fills_fresh_ones(name):
    model = random_model(MAKERS[name], 8)
    x, y = model_inputs(5, 42), torch.linspace(-1, 1, 42, dtype=torch.float64)
    enc = model.encode(*x)
    torch.manual_seed(0)
    model.loss_backward(enc, y)
    first = {n: p.grad.clone() for n, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = None                          # what zero_grad(set_to_none=True) does
    torch.manual_seed(0)
    model.loss_backward(enc, y)
    for n, p in model.named_parameters():
        assert p.grad is not None, n
        torch.testing.assert_close(p.grad, first[n], rtol=0, atol=0, msg=n)
