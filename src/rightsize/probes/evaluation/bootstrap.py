"""Vectorized bootstrap confidence intervals for MAE and AUROC.

One ``(B, n)`` index matrix is drawn per evaluation; every statistic is computed for all
``B`` resamples at once with numpy. AUROC uses the Mann-Whitney form with tied scores
counted half: a resample is a vector of per-row multiplicities, rows are grouped by
distinct score once, and ``U = sum_g pos_g * (neg_below_g + neg_g / 2)`` for each
resample. Resamples that contain a single class have no AUROC (NaN) and are skipped by
the percentile interval.
"""

from __future__ import annotations

import numpy as np


def bootstrap_indices(n: int, n_boot: int, seed: int) -> np.ndarray:
    """``(n_boot, n)`` row indices drawn with replacement from a seeded generator."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(n_boot, n), dtype=np.int64)


def resample_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """``(B, n)`` multiplicity of each row in each resample."""
    b = idx.shape[0]
    flat = (idx + (np.arange(b, dtype=np.int64) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n)


def abs_errors(lvef_true: np.ndarray, lvef_pred: np.ndarray) -> np.ndarray:
    """``|pred - true|`` per row, float64."""
    return np.abs(np.asarray(lvef_pred, np.float64) - np.asarray(lvef_true, np.float64))


def mae_samples(abs_err: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """MAE of each resample: ``(B,)``."""
    return np.asarray(abs_err, np.float64)[idx].mean(axis=1)


def auroc_weighted(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """AUROC for each row of ``weights`` ``(B, n)`` (multiplicities); NaN if one class."""
    labels = np.asarray(labels, bool)
    scores = np.asarray(scores, np.float64)
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])     # first row of each tie group
    w = np.asarray(weights, np.float64)[:, order]
    y = labels[order]
    pos = np.add.reduceat(w * y, starts, axis=1)               # (B, G)
    neg = np.add.reduceat(w * ~y, starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    u = (pos * (below + 0.5 * neg)).sum(axis=1)
    n_pos, n_neg = pos.sum(axis=1), neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = u / (n_pos * n_neg)
    auc[(n_pos == 0) | (n_neg == 0)] = np.nan
    return auc


def auroc(labels: np.ndarray, scores: np.ndarray) -> float:
    """AUROC of ``scores`` for boolean ``labels`` (ties count half); NaN if one class."""
    n = len(labels)
    if n == 0:
        return float("nan")
    return float(auroc_weighted(labels, scores, np.ones((1, n)))[0])


def auroc_samples(labels: np.ndarray, scores: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """AUROC of each resample ``(B,)``; NaN where a resample holds one class."""
    return auroc_weighted(labels, scores, resample_counts(idx, len(labels)))


def percentile_ci(samples: np.ndarray, ci: float) -> tuple[float, float]:
    """Equal-tailed percentile interval of the finite ``samples`` (NaNs if none)."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return float("nan"), float("nan")
    tail = 100.0 * (1.0 - ci) / 2.0
    lo, hi = np.percentile(finite, [tail, 100.0 - tail])
    return float(lo), float(hi)


def summarize(lvef_true: np.ndarray, lvef_pred: np.ndarray, labels: np.ndarray,
              scores: np.ndarray, idx: np.ndarray, ci: float,
              mae_boot: np.ndarray | None = None) -> dict[str, float | int]:
    """Point MAE/AUROC on all rows plus bootstrap intervals over ``idx`` resamples.

    ``mae_boot``: the MAE of each resample, when the caller has already computed it
    (:func:`mae_samples` of the same errors and ``idx``). Keys: ``mae, mae_lo, mae_hi,
    auroc, auroc_lo, auroc_hi, n, n_pos, n_bootstrap, n_bootstrap_auroc`` (resamples with
    both classes). Undefined values are NaN.
    """
    err = abs_errors(lvef_true, lvef_pred)
    n = len(err)
    mae = float(err.mean()) if n else float("nan")
    if n and mae_boot is None:
        mae_boot = mae_samples(err, idx)
    mae_lo, mae_hi = percentile_ci(mae_boot, ci) if n else (np.nan, np.nan)
    aucs = auroc_samples(labels, scores, idx) if n else np.zeros(0)
    auc_lo, auc_hi = percentile_ci(aucs, ci)
    return {
        "mae": mae, "mae_lo": mae_lo, "mae_hi": mae_hi,
        "auroc": auroc(labels, scores), "auroc_lo": auc_lo, "auroc_hi": auc_hi,
        "n": int(n), "n_pos": int(np.asarray(labels, bool).sum()),
        "n_bootstrap": int(idx.shape[0]), "n_bootstrap_auroc": int(np.isfinite(aucs).sum()),
    }
