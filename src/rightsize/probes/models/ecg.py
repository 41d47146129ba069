"""The ``ecg`` probe: linear models on the ECG vector.

Ridge regresses the standardized LVEF; L2 logistic regression scores EF<=40 (both fitted
by :mod:`rightsize.probes.models.glm`, numpy only; scikit-learn is their test oracle). The features
are the subject's ECG vector, or the mean of its ECG tokens (:func:`ecg_features`),
standardized with train-split moments over rows that have an ECG; a row without an ECG
becomes the all-zero standardized vector (mean imputation), so it gets the intercepts.
Fitted models are reduced to plain arrays (:class:`LinearEcgProbe`) that predict with
numpy and save to ``weights.npz`` without pickles. The probe is closed-form: no training
loop, no random numbers (:func:`fit_probe`; its seed replicas coincide).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rightsize.errors import DataError
from rightsize.params import require
from rightsize.probes.engine.data import SplitData, Standardizer, ecg_tokens
from rightsize.probes.engine.npzfile import load_npz, save_npz
from rightsize.probes.spec import ProbeSpec

if TYPE_CHECKING:
    from rightsize.probes.engine.runlog import RunLog


@dataclass(frozen=True)
class EcgConfig:
    """``train.ecg``: ridge (LVEF) and L2 logistic regression (EF<=40) on the ECG vector.

    Each model is fitted for every value of its grid on the train split; the value with
    the lowest validation loss (MSE; log-loss) is kept, like the best epoch of a torch probe.
    """

    alphas: tuple[float, ...] = (1.0, 10.0, 100.0, 1e3, 1e4, 1e5)   # Ridge L2 strengths
    Cs: tuple[float, ...] = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)           # inverse L2 strengths
    max_iter: int = 1000    # logistic regression L-BFGS iterations (rightsize.probes.models.glm)

    def validate(self, key: str) -> None:
        """Check ranges (message names the dotted key)."""
        for name in ("alphas", "Cs"):
            grid = getattr(self, name)
            require(len(grid) >= 1, f"{key}.{name}", "needs at least one value")
            for i, v in enumerate(grid):
                require(v > 0, f"{key}.{name}[{i}]", f"must be > 0, got {v}")
        require(self.max_iter >= 1, f"{key}.max_iter", f"must be >= 1, got {self.max_iter}")


def ecg_features(ecg: np.ndarray) -> np.ndarray:
    """The ECG vector per subject (m, ecg_dim) float64: token-level ECGs are mean-pooled."""
    return ecg.astype(np.float64) if ecg.ndim == 2 else ecg.mean(axis=1, dtype=np.float64)

log = logging.getLogger(__name__)


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
        z = (ecg_features(data.ecg) - self.x_mean) / self.x_sd
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
        return save_npz(self, out_dir)

    @classmethod
    def load(cls, out_dir: str | os.PathLike[str]) -> LinearEcgProbe:
        """Read ``<out_dir>/weights.npz`` with ``allow_pickle=False``."""
        return load_npz(cls, out_dir, "ecg")


def _logloss(labels: np.ndarray, logits: np.ndarray) -> float:
    sign = np.where(labels, 1.0, -1.0)
    return float(np.mean(np.logaddexp(0.0, -sign * logits)))


def fit_linear(train: SplitData, val: SplitData, std: Standardizer, cfg: EcgConfig,
               threads: int = 1) -> tuple[LinearEcgProbe, dict[str, Any]]:
    """Fit ridge (standardized LVEF) and L2 logistic regression (EF<=40) on train rows with ECG.

    Every ``cfg.alphas`` / ``cfg.Cs`` value is fitted; the one with the lowest validation
    MSE / log-loss is kept. Returns the probe and ``{"alpha", "C", "val_mse", "val_logloss"}``
    (the chosen values and the per-grid validation losses).
    """
    from threadpoolctl import threadpool_limits

    from rightsize.probes.models.glm import logistic_fit, ridge_path

    rows = train.has_ecg
    if rows.sum() < 2:
        raise DataError("ecg probe: fewer than 2 train rows have an ECG")
    x = ecg_features(train.ecg[rows])
    mean = x.mean(axis=0)
    sd = x.std(axis=0)
    sd = np.where(sd > 1e-8, sd, 1.0)
    z = (x - mean) / sd
    y = std.forward(train.lvef[rows])
    labels = train.ef_le_40[rows]
    zv = (ecg_features(val.ecg) - mean) / sd
    zv[~val.has_ecg] = 0.0
    yv = std.forward(val.lvef)
    val_mse: list[float] = []
    val_ll: list[float] = []
    iters: list[int] = []
    best_c: tuple[float, np.ndarray, np.ndarray] = (np.inf, np.zeros(z.shape[1]), np.zeros(1))
    with threadpool_limits(limits=threads):
        ridges = ridge_path(z, y, list(cfg.alphas))
        for coef, icpt in ridges:
            val_mse.append(float(np.mean((zv @ coef + icpt - yv) ** 2)))
        if labels.any() and not labels.all():
            start = None            # warm start: each C from the previous C's solution
            for c in cfg.Cs:
                coef, icpt, n_it = logistic_fit(z, labels, c, cfg.max_iter, start)
                start = np.append(coef, icpt)
                iters.append(n_it)
                val_ll.append(_logloss(val.ef_le_40, zv @ coef + icpt))
                if val_ll[-1] < best_c[0]:
                    best_c = (val_ll[-1], coef, np.array([icpt]))
    coef_r, icpt_r = ridges[int(np.argmin(val_mse))]
    probe = LinearEcgProbe(
        x_mean=mean, x_sd=sd, coef_lvef=coef_r, intercept_lvef=np.array([icpt_r]),
        coef_ef40=best_c[1], intercept_ef40=best_c[2],
    )
    if iters and max(iters) >= cfg.max_iter:
        log.warning("ecg probe: logistic fit stopped at train.ecg.max_iter=%d before "
                    "converging (iterations per C: %s)", cfg.max_iter, iters)
    info = {"alpha": float(cfg.alphas[int(np.argmin(val_mse))]),
            "C": float(cfg.Cs[int(np.argmin(val_ll))]) if val_ll else None,
            "val_mse": val_mse, "val_logloss": val_ll}
    return probe, info


def fit_probe(est: Any, train: SplitData, val: SplitData, std: Standardizer,
              runlog: RunLog | None = None) -> Any:
    """The ECG probe as a :class:`~rightsize.probes.engine.estimator.FitResult` (one "epoch");
    ``est`` is its :class:`~rightsize.probes.engine.estimator.Estimator`."""
    from rightsize.probes.engine.fitted import FitResult
    from rightsize.probes.engine.predict import Probe

    model, grid = fit_linear(train, val, std, est.probe_config, threads=est.cfg.threads)
    t1 = time.time()
    probe = Probe(est.name, model, std)
    train_loss = float(np.mean((model.predict_z(train) - std.forward(train.lvef)) ** 2))
    val_loss = float(np.mean((model.predict_z(val) - std.forward(val.lvef)) ** 2))
    if runlog is not None:
        runlog.epoch(1, 1, [train_loss], [t1], train_loss, val_loss, time.time())
    arch = {"probe": est.name, "echo_dim": int(train.echo.shape[-1]),
            "ecg_dim": int(train.ecg.shape[-1]), "alpha": grid["alpha"], "C": grid["C"],
            "ecg_tokens": ecg_tokens(train.ecg),
            "ecg_pooling": est.spec.ecg_pooling}
    return FitResult(probe=probe, arch=arch, best_epoch=1, epochs=1, steps=1,
                     train_loss=[train_loss], val_loss=[val_loss], val_mae=probe.mae(val),
                     train_mae=probe.mae(train),
                     extra={"val_mse_by_alpha": grid["val_mse"],
                            "val_logloss_by_C": grid["val_logloss"]})


SPEC = ProbeSpec("ecg", EcgConfig, closed_form=lambda: fit_probe,
                 numpy_model=lambda: LinearEcgProbe, ef_score="logit")
