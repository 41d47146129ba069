"""The ``ecg`` probe: scikit-learn linear models on the ECG vector.

Ridge regresses the standardized LVEF; LogisticRegression scores EF<=40. Features are
standardized with train-split moments over rows that have an ECG; a row without an ECG
becomes the all-zero standardized vector (mean imputation), so it gets the intercepts.
Fitted models are reduced to plain arrays (:class:`LinearEcgProbe`) that predict with
numpy and save to ``weights.npz`` without pickles.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.atomic import atomic_path
from rightsize.errors import DataError
from rightsize.probes.config import EcgConfig
from rightsize.probes.data import SplitData, Standardizer

WEIGHTS = "weights.npz"


@dataclass(frozen=True)
class LinearEcgProbe:
    """Arrays of a fitted ECG probe (float64)."""

    x_mean: np.ndarray        # (ecg_dim,)
    x_sd: np.ndarray          # (ecg_dim,)
    coef_lvef: np.ndarray     # (ecg_dim,) on standardized features -> standardized LVEF
    intercept_lvef: np.ndarray  # (1,)
    coef_ef40: np.ndarray     # (ecg_dim,) logit of EF<=40
    intercept_ef40: np.ndarray  # (1,)

    def features(self, data: SplitData) -> np.ndarray:
        """Standardized ECG features; rows without an ECG are zeros."""
        z = (data.ecg.astype(np.float64) - self.x_mean) / self.x_sd
        z[~data.has_ecg] = 0.0
        return z

    def predict_z(self, data: SplitData) -> np.ndarray:
        """Standardized LVEF predictions (m,)."""
        return self.features(data) @ self.coef_lvef + self.intercept_lvef[0]

    def ef_score(self, data: SplitData) -> np.ndarray:
        """EF<=40 logits (m,): higher means more likely EF<=40."""
        return self.features(data) @ self.coef_ef40 + self.intercept_ef40[0]

    @property
    def n_params(self) -> int:
        """Fitted coefficients and intercepts (standardization constants excluded)."""
        return int(self.coef_lvef.size + self.intercept_lvef.size + self.coef_ef40.size
                   + self.intercept_ef40.size)

    def save(self, out_dir: str | os.PathLike[str]) -> Path:
        """Write ``<out_dir>/weights.npz`` atomically (plain arrays, no pickle)."""
        path = Path(out_dir) / WEIGHTS
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, **{f.name: getattr(self, f.name) for f in fields(self)})
        return path

    @classmethod
    def load(cls, out_dir: str | os.PathLike[str]) -> LinearEcgProbe:
        """Read ``<out_dir>/weights.npz`` with ``allow_pickle=False``."""
        path = Path(out_dir) / WEIGHTS
        try:
            with np.load(path, allow_pickle=False) as npz:
                return cls(**{f.name: npz[f.name] for f in fields(cls)})
        except (KeyError, ValueError) as exc:
            raise DataError(f"{path}: not an ecg probe checkpoint ({exc})") from None


def _logloss(labels: np.ndarray, logits: np.ndarray) -> float:
    sign = np.where(labels, 1.0, -1.0)
    return float(np.mean(np.logaddexp(0.0, -sign * logits)))


def fit_linear(train: SplitData, val: SplitData, std: Standardizer, cfg: EcgConfig,
               threads: int = 1) -> tuple[LinearEcgProbe, dict[str, Any]]:
    """Fit Ridge (standardized LVEF) and LogisticRegression (EF<=40) on train rows with ECG.

    Every ``cfg.alphas`` / ``cfg.Cs`` value is fitted; the one with the lowest validation
    MSE / log-loss is kept. Returns the probe and ``{"alpha", "C", "val_mse", "val_logloss"}``
    (the chosen values and the per-grid validation losses).
    """
    from sklearn.linear_model import LogisticRegression, Ridge
    from threadpoolctl import threadpool_limits

    rows = train.has_ecg
    if rows.sum() < 2:
        raise DataError("ecg probe: fewer than 2 train rows have an ECG")
    x = train.ecg[rows].astype(np.float64)
    mean = x.mean(axis=0)
    sd = x.std(axis=0)
    sd = np.where(sd > 1e-8, sd, 1.0)
    z = (x - mean) / sd
    y = std.forward(train.lvef[rows])
    labels = train.ef_le_40[rows]
    zv = (val.ecg.astype(np.float64) - mean) / sd
    zv[~val.has_ecg] = 0.0
    yv = std.forward(val.lvef)
    val_mse: list[float] = []
    val_ll: list[float] = []
    best_r: tuple[float, Any] = (np.inf, None)
    best_c: tuple[float, np.ndarray, np.ndarray] = (np.inf, np.zeros(z.shape[1]), np.zeros(1))
    with threadpool_limits(limits=threads):
        for alpha in cfg.alphas:
            ridge = Ridge(alpha=alpha).fit(z, y)
            val_mse.append(float(np.mean((ridge.predict(zv) - yv) ** 2)))
            if val_mse[-1] < best_r[0]:
                best_r = (val_mse[-1], ridge)
        if labels.any() and not labels.all():
            for c in cfg.Cs:
                logit = LogisticRegression(C=c, max_iter=cfg.max_iter).fit(z, labels)
                val_ll.append(_logloss(val.ef_le_40, logit.decision_function(zv)))
                if val_ll[-1] < best_c[0]:
                    best_c = (val_ll[-1], logit.coef_[0].astype(np.float64),
                              logit.intercept_.astype(np.float64))
    ridge = best_r[1]
    probe = LinearEcgProbe(
        x_mean=mean, x_sd=sd,
        coef_lvef=np.asarray(ridge.coef_, np.float64).reshape(-1),
        intercept_lvef=np.atleast_1d(np.asarray(ridge.intercept_, np.float64)),
        coef_ef40=best_c[1], intercept_ef40=best_c[2],
    )
    info = {"alpha": float(cfg.alphas[int(np.argmin(val_mse))]),
            "C": float(cfg.Cs[int(np.argmin(val_ll))]) if val_ll else None,
            "val_mse": val_mse, "val_logloss": val_ll}
    return probe, info
