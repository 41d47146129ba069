"""Training: quality bars on the planted cohort, determinism, curves and event files."""

from __future__ import annotations

import csv
import dataclasses

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from rightsize.probe_names import PROBES
from rightsize.probes.engine.data import split_data
from rightsize.probes.engine.train import train_probe
from rightsize.probes.evaluation.bootstrap import bootstrap_indices, summarize
from rightsize.probes.evaluation.evaluate import mean_predictor_mae
from rightsize.probes.registry import spec as probe_spec

from .probe_fixtures import GRADIENT_TRAINED, make_cohort, small_train_config


def _test_scores(fit, cohort):
    test = split_data(cohort, "test")
    lvef, score = fit.probe.predict(test)
    idx = bootstrap_indices(len(test), 400, 0)
    return summarize(test.lvef, lvef, test.ef_le_40, score, idx, 0.95)


@pytest.mark.parametrize("name", PROBES)
def test_every_probe_clearly_beats_the_train_mean(fits, cohort, name):
    m = _test_scores(fits[name][0], cohort)
    baseline = mean_predictor_mae(cohort)
    assert m["mae"] < 0.92 * baseline
    assert m["auroc"] > 0.5 and m["auroc_lo"] > 0.5


def test_fused_beats_concat_with_clip_tokens(fits, cohort):
    fused = _test_scores(fits["fused"][0], cohort)
    concat = _test_scores(fits["concat"][0], cohort)
    assert fused["mae"] < 0.85 * concat["mae"]
    assert fused["mae_hi"] < concat["mae"]


def test_best_epoch_is_the_lowest_validation_loss(fits):
    for name in GRADIENT_TRAINED:
        fit = fits[name][0]
        assert fit.best_epoch == int(np.argmin(fit.val_loss)) + 1
        assert len(fit.train_loss) == len(fit.val_loss) == fit.epochs


def test_same_seed_identical_other_seed_close(cohort):
    cfg = small_train_config(seed=0, epochs=12)
    a = train_probe(probe_spec("fused"), cohort, cfg)
    b = train_probe(probe_spec("fused"), cohort, cfg)
    c = train_probe(probe_spec("fused"), cohort, small_train_config(seed=1, epochs=12))
    ma, mb, mc = (_test_scores(f, cohort) for f in (a, b, c))
    assert ma == mb
    assert a.val_loss == b.val_loss
    assert ma["mae"] != mc["mae"]
    assert abs(ma["mae"] - mc["mae"]) < 0.25 * ma["mae"]


def test_ecg_probe_is_deterministic_and_selects_on_val(cohort, train_cfg):
    a = train_probe(probe_spec("ecg"), cohort, train_cfg)
    b = train_probe(probe_spec("ecg"), cohort, dataclasses.replace(train_cfg, seed=7))
    np.testing.assert_array_equal(a.probe.model.coef_lvef, b.probe.model.coef_lvef)
    grid = a.extra["val_mse_by_alpha"]
    assert a.arch["alpha"] == train_cfg.ecg.alphas[int(np.argmin(grid))]


def test_pooled_single_clip_cohort_trains_every_torch_probe():
    pooled = make_cohort(n=300, clips=1, splits=(200, 50, 50))
    cfg = small_train_config(epochs=3)
    cfg = dataclasses.replace(cfg, echo=dataclasses.replace(cfg.echo, epochs=3),
                              concat=dataclasses.replace(cfg.concat, epochs=3))
    for name in GRADIENT_TRAINED:
        fit = train_probe(probe_spec(name), pooled, cfg)
        lvef, _ = fit.probe.predict(split_data(pooled, "test"))
        assert np.isfinite(lvef).all()


def test_curve_csv_has_one_row_per_epoch(fits):
    for name in PROBES:
        fit, run = fits[name]
        with open(run / "curve.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert list(rows[0]) == ["epoch", "train_loss", "val_loss"]
        assert [int(r["epoch"]) for r in rows] == list(range(1, fit.epochs + 1))
        np.testing.assert_allclose([float(r["val_loss"]) for r in rows], fit.val_loss)


@pytest.mark.parametrize("name", PROBES)
def test_event_file_read_by_tensorboard(fits, cohort, train_cfg, name):
    fit, run = fits[name]
    files = list((run / "events").glob("events.out.tfevents.*"))
    assert len(files) == 1
    assert not [p for p in (run / "events").iterdir() if p.name.startswith(".")]
    acc = EventAccumulator(str(run / "events"))
    acc.Reload()
    steps = acc.Scalars("Loss/train_step")
    val = acc.Scalars("Loss/val_epoch")
    epoch = acc.Scalars("Loss/train_epoch")
    per_epoch = 1 if name == "ecg" else -(-int(cohort.index("train").size) // train_cfg.batch_size)
    assert [e.step for e in steps] == list(range(1, fit.epochs * per_epoch + 1))
    walls = np.array([e.wall_time for e in steps])
    assert (np.diff(walls) >= 0).all() and walls[0] > 1e9
    assert [e.step for e in val] == [per_epoch * k for k in range(1, fit.epochs + 1)]
    np.testing.assert_allclose([e.value for e in val], fit.val_loss, rtol=1e-6)
    np.testing.assert_allclose([e.value for e in epoch], fit.train_loss, rtol=1e-6)


def test_moments_without_ecg_keep_the_echo_moments_and_neutral_ecg():
    from rightsize.probes.engine.data import Moments, split_data

    train = split_data(make_cohort(n=300, splits=(200, 40, 60)), "train")
    full, echo_only = Moments.fit(train, 8), Moments.fit(train, 8, ecg=False)
    for name in ("echo_mean", "echo_sd", "echo_basis"):
        np.testing.assert_array_equal(getattr(echo_only, name), getattr(full, name))
    assert echo_only.ecg_basis is None and full.ecg_basis.shape == (48, 8)
    assert not echo_only.ecg_mean.any() and (echo_only.ecg_sd == 1).all()


@pytest.mark.parametrize(("n", "dim"), [(80, 120), (200, 120)])
def test_principal_basis_is_the_same_from_either_gram_matrix(n, dim):
    """n < dim decomposes z z^T (the smaller matrix); n >= dim z^T z: same top vectors."""
    import torch

    from rightsize.probes.engine.data import principal_basis

    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, dim)) * np.linspace(3.0, 0.5, dim)
    z = (x - x.mean(0)) / x.std(0)
    basis = principal_basis(z, 16)
    _, vecs = torch.linalg.eigh(torch.mm(torch.from_numpy(z).t(), torch.from_numpy(z)))
    ref = vecs[:, -16:].flip(1).numpy()
    ref *= np.where(ref[np.abs(ref).argmax(0), np.arange(16)] < 0, -1.0, 1.0)
    assert basis.shape == (dim, 16) and basis.dtype == np.float32
    np.testing.assert_allclose(basis, ref, atol=1e-6)
    np.testing.assert_allclose(basis.T @ basis, np.eye(16), atol=1e-5)
