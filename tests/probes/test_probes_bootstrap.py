"""Vectorized bootstrap: AUROC via ranks and MAE, against scikit-learn and plain loops."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from rightsize.probes.evaluation.bootstrap import (
    auroc,
    auroc_samples,
    bootstrap_indices,
    mae_samples,
    percentile_ci,
    resample_counts,
    summarize,
)


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.2
    scores = np.round(rng.standard_normal(n) + labels, 1)      # many ties
    return labels, scores


def test_auroc_matches_sklearn_with_ties():
    labels, scores = _data()
    assert auroc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-3, 3)), min_size=2, max_size=40))
def test_auroc_property_matches_sklearn(rows):
    labels = np.array([r[0] for r in rows])
    scores = np.array([r[1] for r in rows], dtype=float)
    if labels.all() or not labels.any():
        assert np.isnan(auroc(labels, scores))
    else:
        assert auroc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


def test_resampled_auroc_and_mae_match_a_loop():
    labels, scores = _data(n=60, seed=1)
    err = np.abs(scores)
    idx = bootstrap_indices(60, 300, seed=5)
    fast = auroc_samples(labels, scores, idx)
    slow = np.array([roc_auc_score(labels[i], scores[i])
                     if labels[i].any() and not labels[i].all() else np.nan for i in idx])
    np.testing.assert_allclose(fast, slow, atol=1e-12)
    np.testing.assert_allclose(mae_samples(err, idx), [err[i].mean() for i in idx])


def test_counts_sum_to_n_and_match_bincount():
    idx = bootstrap_indices(17, 50, seed=2)
    counts = resample_counts(idx, 17)
    assert counts.shape == (50, 17)
    assert (counts.sum(axis=1) == 17).all()
    np.testing.assert_array_equal(counts[7], np.bincount(idx[7], minlength=17))


def test_single_class_resamples_are_nan_and_skipped():
    labels = np.zeros(30, bool)
    labels[0] = True                       # one positive: many resamples miss it
    scores = np.linspace(0, 1, 30)
    idx = bootstrap_indices(30, 400, seed=0)
    aucs = auroc_samples(labels, scores, idx)
    missing = ~(idx == 0).any(axis=1)
    assert missing.any() and np.isnan(aucs[missing]).all()
    assert np.isfinite(aucs[~missing]).all()
    out = summarize(scores, scores + 1, labels, scores, idx, 0.95)
    assert out["n_bootstrap_auroc"] == int((~missing).sum())
    assert np.isfinite(out["auroc_lo"]) and np.isfinite(out["auroc_hi"])


def test_percentile_ci_matches_numpy_and_ignores_nan():
    x = np.r_[np.arange(100.0), np.nan]
    lo, hi = percentile_ci(x, 0.9)
    assert (lo, hi) == pytest.approx(tuple(np.percentile(np.arange(100.0), [5, 95])))
    assert all(np.isnan(percentile_ci(np.array([np.nan]), 0.95)))


def test_summarize_intervals_bracket_point_estimates_and_are_seeded():
    labels, scores = _data(n=200, seed=3)
    truth = 50 + 10 * scores
    pred = truth + np.random.default_rng(0).normal(0, 3, 200)
    a = summarize(truth, pred, labels, scores, bootstrap_indices(200, 500, 9), 0.95)
    b = summarize(truth, pred, labels, scores, bootstrap_indices(200, 500, 9), 0.95)
    c = summarize(truth, pred, labels, scores, bootstrap_indices(200, 500, 10), 0.95)
    assert a == b
    assert a["mae_lo"] != c["mae_lo"]
    assert a["mae_lo"] < a["mae"] < a["mae_hi"]
    assert a["auroc_lo"] < a["auroc"] < a["auroc_hi"]
    assert a["n"] == 200 and a["n_bootstrap"] == 500
