"""Accelerator ``concat_stacked`` equals autograd of each replica's textbook forward, and the
concat textbook forward (in PCA coordinates) equals the MLP on full-width inputs.

Float64, random moments and bases, masked clips, absent ECGs, pooled and token-level ECGs;
head dropout on with the same masks on both sides.
"""

from __future__ import annotations

import pytest
import torch

from rightsize.probes.models.concat.stacked import concat_forward, join_params, split_params
from rightsize.probes.models.featurenorm import masked_mean

from .probe_fixtures import makers, probe_inputs, randomized

P_DROP = 0.3


def _masks(k: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Replica r's keep-mask as ``F.dropout`` draws it after ``torch.manual_seed(100 + r)``."""
    draws = [torch.empty(shape, dtype=torch.float64).bernoulli_(
        1 - P_DROP, generator=torch.Generator().manual_seed(100 + r)) for r in range(k)]
    return torch.stack(draws).div_(1 - P_DROP)


@pytest.mark.parametrize("rank", [0, 8])
@pytest.mark.parametrize("tokens", [0, 4])
def test_stacked_forward_and_gradients_equal_each_replicas_textbook_autograd(rank, tokens):
    models = [randomized(makers(dropout=P_DROP)["concat"], rank, seed=s).train()
              for s in range(3)]
    for m in models[1:]:                       # one set of fixed buffers, as in training
        m.load_state_dict({**m.state_dict(), **{k: v for k, v in models[0].state_dict().items()
                                                if k.startswith("norm_")}})
    enc = models[0].encode(*probe_inputs(5, 42, tokens=tokens))
    rows = [torch.arange(0, 14), torch.arange(14, 28), torch.arange(28, 42)]
    batch = {k: torch.stack([v[r] for r in rows]) for k, v in enc.items()}
    y = torch.linspace(-1, 1, 14, dtype=torch.float64)
    whole = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
             for n, _ in models[0].named_parameters()}
    stacked = {k: v.contiguous().requires_grad_()
               for k, v in split_params(models[0], whole).items()}
    pred = concat_forward(models[0], stacked, **batch, drop=lambda shape: _masks(3, shape[1:]))
    ((pred - y) ** 2).mean(1).sum().backward()
    grads = join_params({k: v.grad for k, v in stacked.items()})
    for i, m in enumerate(models):
        torch.manual_seed(100 + i)               # the textbook's dropout draws these masks
        own = m.forward_encoded(**{k: v[rows[i]] for k, v in enc.items()})
        torch.nn.functional.mse_loss(own, y).backward()
        torch.testing.assert_close(pred[i], own, rtol=1e-12, atol=1e-12)
        for n, p in m.named_parameters():
            torch.testing.assert_close(grads[n][i], p.grad, rtol=1e-10, atol=1e-12, msg=n)


@pytest.mark.parametrize("rank", [0, 8])
@pytest.mark.parametrize("tokens", [0, 3])
def test_textbook_forward_is_the_mlp_on_full_width_inputs(rank, tokens):
    model = randomized(makers()["concat"], rank).eval()
    echo, mask, ecg, has_ecg = probe_inputs(5, 14, tokens=tokens)
    pooled = masked_mean(model.norm_echo(echo, mask), mask)                  # (B, dim)
    x_g = model.norm_ecg(ecg, has_ecg)
    x_g = x_g if tokens == 0 else x_g.mean(dim=1)                            # mean ECG token
    expect = model.mlp(torch.cat([pooled, x_g], dim=1)).squeeze(-1)
    torch.testing.assert_close(model(echo, mask, ecg, has_ecg), expect, rtol=1e-10, atol=1e-12)


def test_encoded_batches_equal_raw_batches():
    model = randomized(makers()["concat"], 8)
    x = probe_inputs(5)
    enc = model.encode(*x)
    assert enc["echo"].shape == (7, 1, 8)                  # clips pooled before batching
    rows = torch.tensor([6, 2, 3])
    part = {k: t[rows] for k, t in enc.items()}
    torch.testing.assert_close(model.forward_encoded(**part), model(*x)[rows])
