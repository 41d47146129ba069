"""Ridge and L2-penalized logistic regression in numpy, for the ``ecg`` probe.

Why not scikit-learn: importing ``sklearn.linear_model`` loads scipy.stats and pandas (through
``sklearn.utils.fixes``), ~0.8 s of a ~1.0 s ``train@ecg`` process, for two fits that are a
linear solve and a smooth convex minimization. scikit-learn stays the test oracle: the tests
fit the same data with ``Ridge`` and ``LogisticRegression`` and require the same coefficients
(``tests/probes/test_probes_glm.py``).

Definitions (scikit-learn's, with an unpenalized intercept):

* ridge: ``min_w,b ||y - X w - b||^2 + alpha ||w||^2``, solved exactly as
  ``(Xc^T Xc + alpha I) w = Xc^T yc`` on centered ``X`` and ``y`` (scikit-learn's
  ``cholesky`` solver), ``b = mean(y) - mean(X) w``;
* logistic: ``min_w,b C sum_i log(1 + exp(-s_i (x_i w + b))) + ||w||^2 / 2`` with
  ``s_i = +-1``. Minimized by L-BFGS (10 pairs, backtracking Armijo line search) on the
  objective divided by ``C n``, until the largest gradient entry is <= :data:`GTOL` or
  ``max_iter`` iterations. At that tolerance the coefficients agree with scikit-learn's
  at ``tol=1e-12`` to ~1e-5 (scikit-learn's default ``tol=1e-4`` stops further away:
  up to ~2e-2 at ``C=1`` on the cohort's ECGs).
"""

from __future__ import annotations

import numpy as np

GTOL = 1e-8          # largest |gradient| entry of the mean-scaled logistic objective
HISTORY = 10         # L-BFGS correction pairs
ARMIJO = 1e-4        # sufficient-decrease constant of the line search


def ridge_path(x: np.ndarray, y: np.ndarray,
               alphas: list[float]) -> list[tuple[np.ndarray, float]]:
    """``(coef, intercept)`` of a ridge fit of ``y`` on ``x`` (float64) for each alpha."""
    x_mean, y_mean = x.mean(axis=0), float(y.mean())
    xc = x - x_mean
    gram = xc.T @ xc
    rhs = xc.T @ (y - y_mean)
    eye = np.eye(x.shape[1])
    out = []
    for alpha in alphas:
        coef = np.linalg.solve(gram + alpha * eye, rhs)
        out.append((coef, y_mean - float(x_mean @ coef)))
    return out


def logistic_fit(x: np.ndarray, labels: np.ndarray, c: float, max_iter: int,
                 start: np.ndarray | None = None) -> tuple[np.ndarray, float, int]:
    """``(coef, intercept, iterations)`` of the L2 logistic regression above.

    ``labels`` are booleans (True = positive class); ``start`` is a ``(dim + 1,)`` warm
    start ``[coef, intercept]`` (zeros when None).
    """
    n, dim = x.shape
    sign = np.where(labels, 1.0, -1.0)
    lam = 1.0 / (c * n)

    def loss_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        margin = -sign * (x @ theta[:-1] + theta[-1])
        soft = np.logaddexp(0.0, margin)
        d_f = -sign * np.exp(margin - soft) / n         # d(mean loss) / d(logit)
        grad = np.empty_like(theta)
        grad[:-1] = x.T @ d_f + lam * theta[:-1]
        grad[-1] = d_f.sum()
        return float(soft.mean() + 0.5 * lam * theta[:-1] @ theta[:-1]), grad

    theta = np.zeros(dim + 1) if start is None else np.array(start, dtype=np.float64)
    f, g = loss_grad(theta)
    pairs: list[tuple[np.ndarray, np.ndarray, float]] = []   # (s, y, 1 / y.s)
    it = 0
    while it < max_iter and np.abs(g).max() > GTOL:
        it += 1
        direction = -_two_loop(g, pairs)
        slope = float(g @ direction)
        step = 1.0 if pairs else min(1.0, 1.0 / float(np.abs(g).sum()))
        while True:
            trial = theta + step * direction
            f_new, g_new = loss_grad(trial)
            if f_new <= f + ARMIJO * step * slope or step < 1e-20:
                break
            step *= 0.5
        s, y = trial - theta, g_new - g
        sy = float(s @ y)
        if sy > 1e-12 * float(y @ y):                   # keep curvature pairs only
            pairs = [*pairs[-(HISTORY - 1):], (s, y, 1.0 / sy)]
        theta, f, g = trial, f_new, g_new
    return theta[:-1].copy(), float(theta[-1]), it


def _two_loop(g: np.ndarray, pairs: list[tuple[np.ndarray, np.ndarray, float]]) -> np.ndarray:
    """L-BFGS inverse-Hessian approximation applied to ``g`` (Nocedal & Wright, Alg. 7.4)."""
    q = g.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        a = rho * float(s @ q)
        alphas.append(a)
        q -= a * y
    if pairs:
        s, y, _ = pairs[-1]
        q *= float(s @ y) / float(y @ y)
    for (s, y, rho), a in zip(pairs, reversed(alphas), strict=True):
        q += s * (a - rho * float(y @ q))
    return q
