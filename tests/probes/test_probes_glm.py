"""The ECG probe's numpy ridge and logistic fits against scikit-learn as the oracle."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge

from rightsize.probes.models.glm import GTOL, logistic_fit, ridge_path


def _data(seed: int, n: int = 300, dim: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)) * rng.uniform(0.5, 3.0, dim) + rng.normal(0, 2, dim)
    w = rng.standard_normal(dim)
    y = x @ w * 0.3 + rng.standard_normal(n)
    labels = (x @ w + rng.logistic(size=n) * 2) > np.quantile(x @ w, 0.8)
    return x, y, labels


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ridge_matches_sklearn(seed):
    x, y, _ = _data(seed)
    alphas = [0.01, 1.0, 100.0, 1e4]
    for (coef, icpt), alpha in zip(ridge_path(x, y, alphas), alphas, strict=True):
        ref = Ridge(alpha=alpha, solver="cholesky").fit(x, y)
        np.testing.assert_allclose(coef, ref.coef_, rtol=1e-9, atol=1e-11)
        assert icpt == pytest.approx(ref.intercept_, rel=1e-9, abs=1e-11)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("c", [1e-3, 0.1, 10.0])
def test_logistic_matches_sklearn_at_tight_tolerance(seed, c):
    x, _, labels = _data(seed)
    x = (x - x.mean(0)) / x.std(0)
    coef, icpt, iters = logistic_fit(x, labels, c, max_iter=5000)
    assert 0 < iters < 5000
    ref = LogisticRegression(C=c, tol=1e-12, max_iter=100_000).fit(x, labels)
    scale = max(1.0, float(np.abs(ref.coef_).max()))
    np.testing.assert_allclose(coef, ref.coef_[0], atol=1e-4 * scale)
    assert icpt == pytest.approx(ref.intercept_[0], abs=1e-4 * scale)
    # the stopping rule held: the mean-scaled objective's gradient is <= GTOL there
    sign = np.where(labels, 1.0, -1.0)
    margin = -sign * (x @ coef + icpt)
    d_f = -sign * np.exp(margin - np.logaddexp(0.0, margin)) / len(x)
    grad = np.append(x.T @ d_f + coef / (c * len(x)), d_f.sum())
    assert np.abs(grad).max() <= GTOL


def test_logistic_warm_start_reaches_the_same_optimum():
    x, _, labels = _data(3)
    x = (x - x.mean(0)) / x.std(0)
    cold = logistic_fit(x, labels, 1.0, max_iter=5000)
    prev = logistic_fit(x, labels, 0.01, max_iter=5000)
    warm = logistic_fit(x, labels, 1.0, max_iter=5000, start=np.append(prev[0], prev[1]))
    np.testing.assert_allclose(warm[0], cold[0], atol=1e-5)
    assert warm[2] < cold[2]


def test_logistic_stops_at_max_iter():
    x, _, labels = _data(4)
    _, _, iters = logistic_fit(x, labels, 10.0, max_iter=3)
    assert iters == 3
