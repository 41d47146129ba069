"""Accelerator ``echo_numpy`` equals the echo probe's textbook forward: forward, gradients,
optimizer, fit.

The oracle is torch: the textbook :class:`rightsize.probes.models.echo.model.EchoAttnProbe` with its
parameters copied into :class:`AttentiveEchoProbe`, in float64 (predictions and the loss to
1e-12, gradients to autograd of the textbook forward; the probe has no dropout), and
``torch.optim.AdamW`` for the update rule (float32).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rightsize.errors import DataError
from rightsize.probes.engine.data import Moments, SplitData, split_data
from rightsize.probes.engine.estimator import Estimator
from rightsize.probes.models.echo.model import EchoAttnProbe
from rightsize.probes.models.echo.numpy_model import (
    PARAMS,
    AdamWMoments,
    AttentiveEchoProbe,
    adamw_step,
    init_probe,
    loss_and_grads,
)
from rightsize.probes.registry import spec as probe_spec

from .probe_fixtures import DE, DG, small_train_config
from .probe_fixtures import probe_inputs as _inputs
from .probe_fixtures import randomized as _model

TORCH_NAMES = {"query_weight": "query.weight", "query_bias": "query.bias", "null": "null",
               "head_weight": "head.weight", "head_bias": "head.bias"}


def _numpy_twin(model: EchoAttnProbe) -> AttentiveEchoProbe:
    """The torch probe's buffers and parameters as an AttentiveEchoProbe (float64)."""
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    dim = state["norm_echo.mean"].shape[0]
    basis = state.get("norm_echo.basis", np.zeros((dim, 0)))
    return AttentiveEchoProbe(mean=state["norm_echo.mean"], inv_sd=state["norm_echo.inv_sd"],
                              basis=basis, **{k: state[v].reshape(-1)
                                              for k, v in TORCH_NAMES.items()})


def _split(x: tuple[torch.Tensor, ...]) -> SplitData:
    echo, mask, ecg, has_ecg = (t.numpy() for t in x)
    n = echo.shape[0]
    return SplitData(echo=echo, clip_mask=mask, ecg=ecg, has_ecg=has_ecg,
                     lvef=np.linspace(20, 70, n), ef_le_40=np.arange(n) % 3 == 0)


@pytest.mark.parametrize("rank", [0, 8])
@pytest.mark.parametrize("clips", [1, 5])
def test_predictions_equal_the_torch_probe(rank, clips):
    model = _model(lambda r: EchoAttnProbe(DE, DG, pca_rank=r), rank).eval()
    x = _inputs(clips, 21)
    with torch.no_grad():
        want = model(*x).numpy()
    got = _numpy_twin(model).predict_z(_split(x))
    assert got.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("rank", [0, 8])
@pytest.mark.parametrize("clips", [1, 5])
def test_loss_and_gradients_equal_autograd_of_the_textbook_forward(rank, clips):
    model = _model(lambda r: EchoAttnProbe(DE, DG, pca_rank=r), rank)
    x = _inputs(clips, 42)
    y = torch.linspace(-2, 2, 42, dtype=torch.float64)
    loss = torch.nn.functional.mse_loss(model(*x), y)
    ref = dict(zip([n for n, _ in model.named_parameters()],
                   torch.autograd.grad(loss, list(model.parameters())), strict=True))
    twin = _numpy_twin(model)
    got_loss, grads = loss_and_grads(twin, *twin.coords(_split(x)), y.numpy())
    ref_loss = float(loss.detach())
    assert abs(got_loss - ref_loss) <= 1e-12 * ref_loss
    assert set(grads) == set(PARAMS)
    for name, tname in TORCH_NAMES.items():
        np.testing.assert_allclose(grads[name], ref[tname].numpy().reshape(-1), rtol=1e-9,
                                   atol=1e-12, err_msg=name)
    assert not grads["query_bias"].any()                  # cancels in the softmax


def test_adamw_follows_torch_adamw():
    rng = np.random.default_rng(0)
    start = {"a": rng.standard_normal(50).astype(np.float32),
             "b": rng.standard_normal(3).astype(np.float32)}
    params = {k: v.copy() for k, v in start.items()}
    tparams = [torch.nn.Parameter(torch.from_numpy(v.copy())) for v in start.values()]
    topt = torch.optim.AdamW(tparams, lr=1e-2, weight_decay=1e-2)
    opt = AdamWMoments(lr=1e-2, weight_decay=1e-2)
    for _ in range(25):
        grads = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in start.items()}
        for tp, g in zip(tparams, grads.values(), strict=True):
            tp.grad = torch.from_numpy(g.copy())
        topt.step()
        adamw_step(opt, params, grads)
    for tp, (k, v) in zip(tparams, params.items(), strict=True):
        assert v.dtype == np.float32
        np.testing.assert_allclose(v, tp.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
        assert not np.allclose(v, start[k])               # it did move


def test_initial_weights_are_drawn_like_nn_linear(cohort):
    train = split_data(cohort, "train")
    moments = Moments.fit(train, 8, ecg=False)
    dim = train.echo.shape[-1]
    a, b = init_probe(moments, 0)[0], init_probe(moments, 1)[0]
    bound = 1 / np.sqrt(dim)
    for probe in (a, b):
        assert probe.basis.shape == (dim, 8) and not probe.null.any()
        for name in ("query_weight", "query_bias", "head_weight", "head_bias"):
            w = getattr(probe, name)
            assert w.dtype == np.float32 and np.abs(w).max() <= bound
    assert a.n_params == 3 * dim + 2 == EchoAttnProbe(dim, 8).query.weight.numel() * 3 + 2
    assert not np.array_equal(a.query_weight, b.query_weight)
    np.testing.assert_array_equal(init_probe(moments, 1)[0].head_weight, b.head_weight)


def test_replicas_repeat_single_runs_and_learn(cohort):
    est = Estimator(probe_spec("echo"), small_train_config())
    train, val = split_data(cohort, "train"), split_data(cohort, "val")
    both = est.fit(train, val, [0, 1])
    alone = est.fit(train, val, [1])
    assert both[0].extra["accelerator"] == "echo_numpy"
    for name in PARAMS:
        np.testing.assert_array_equal(getattr(both[1].probe.model, name),
                                      getattr(alone[0].probe.model, name))
    assert both[1].val_loss == alone[0].val_loss
    assert not np.array_equal(both[0].probe.model.head_weight, both[1].probe.model.head_weight)
    for fit in both:
        best = fit.best_epoch - 1
        assert fit.val_loss[best] == min(fit.val_loss) < fit.val_loss[0]
        assert fit.probe.mae(val) < np.mean(np.abs(val.lvef - np.mean(train.lvef)))


def test_checkpoint_round_trip_and_wrong_file(cohort, tmp_path):
    train, val = split_data(cohort, "train"), split_data(cohort, "val")
    fit = Estimator(probe_spec("echo"), small_train_config()).fit(train, val, [0])[0]
    path = fit.probe.model.save(tmp_path)
    back = AttentiveEchoProbe.load(tmp_path)
    np.testing.assert_array_equal(back.predict_z(val), fit.probe.model.predict_z(val))
    with np.load(path, allow_pickle=False) as npz:
        assert all(npz[name].dtype != object for name in npz.files)
    np.savez(path, mean=np.zeros(3))
    with pytest.raises(DataError, match="not an echo probe checkpoint"):
        AttentiveEchoProbe.load(tmp_path)
