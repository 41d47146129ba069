"""The naive baseline the probe benchmark compares against: textbook model, tutorial loop.

Same architectures and parameters as the engine
(:func:`rightsize.probes.engine.estimator.build_module` with the same seed, input moments, PCA
basis, target standardization, learning rate, weight
decay, epochs and best-validation-epoch selection; the echo probe, which the engine trains
in numpy, starts from the numpy accelerator's initial weights), with the probe's textbook
forward (the module's own ``forward`` on raw inputs, every batch normalized and projected
again; no accelerator). The engine's accelerators compute the same function from the same
parameters with fewer FLOPs (``tests/probes/test_probes_accel_*.py`` check outputs and
gradients). Trained the way a tutorial does it:

* a per-row ``torch.utils.data.Dataset`` (``__getitem__`` returns one row's raw tensors;
  the fused probe's modality dropout is drawn per row there) and
  ``DataLoader(batch_size=32, shuffle=True)`` with the default collate;
* the default ``torch.optim.AdamW(params, lr=..., weight_decay=...)``;
* per-batch ``loss.item()`` appended to a Python list (the usual loss log);
* validation and test predictions through a ``DataLoader(batch_size=32)``; the best
  epoch's ``state_dict`` kept with ``copy.deepcopy``;
* the ``ecg`` probe: a scikit-learn ``Pipeline(StandardScaler, Ridge)`` per alpha and a
  ``Pipeline(StandardScaler, LogisticRegression)`` per C, selected on validation;
* evaluation: a Python loop of 2,000 bootstrap resamples calling
  ``sklearn.metrics.mean_absolute_error`` and ``roc_auc_score`` on each.

Run as a child of ``probes_bench.py``; prints one JSON line::

    python benchmarks/naive_probes.py MANIFEST fused --fusion-dim 256 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.probe_names import PROBES

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
BATCH_SIZE = 32


def naive_bootstrap(y_true: np.ndarray, y_pred: np.ndarray, labels: np.ndarray,
                    scores: np.ndarray, n_boot: int = 2000, seed: int = 0,
                    ci: float = 0.95) -> dict[str, float]:
    """Percentile CIs of MAE and AUROC from a per-resample scikit-learn loop."""
    from sklearn.metrics import mean_absolute_error, roc_auc_score

    rng = np.random.default_rng(seed)
    n = len(y_true)
    maes, aucs = [], []
    for _ in range(n_boot):
        idx = rng.integers(0, n, n)
        maes.append(mean_absolute_error(y_true[idx], y_pred[idx]))
        if len(np.unique(labels[idx])) == 2:
            aucs.append(roc_auc_score(labels[idx], scores[idx]))
    tail = 100 * (1 - ci) / 2
    return {"mae_lo": float(np.percentile(maes, tail)),
            "mae_hi": float(np.percentile(maes, 100 - tail)),
            "auroc_lo": float(np.percentile(aucs, tail)) if aucs else float("nan"),
            "auroc_hi": float(np.percentile(aucs, 100 - tail)) if aucs else float("nan")}


def _row_dataset(data: Any, z: np.ndarray, p_drop: float, seed: int) -> Any:
    """A map-style Dataset yielding one row at a time (per-row modality dropout)."""
    import torch
    from torch.utils.data import Dataset

    class RowDataset(Dataset):
        def __init__(self) -> None:
            self.rng = np.random.default_rng(seed)

        def __len__(self) -> int:
            return len(z)

        def __getitem__(self, i: int) -> tuple[torch.Tensor, ...]:
            mask = torch.tensor(data.clip_mask[i])
            has_ecg = torch.tensor(bool(data.has_ecg[i]))
            if p_drop > 0:
                u = self.rng.random()
                if u < p_drop:
                    mask = torch.zeros_like(mask)
                elif u < 2 * p_drop:
                    has_ecg = torch.tensor(False)
            return (torch.tensor(data.echo[i]), mask, torch.tensor(data.ecg[i]), has_ecg,
                    torch.tensor(z[i], dtype=torch.float32))

    return RowDataset()


def _predict(model: Any, loader: Any) -> np.ndarray:
    import torch

    model.eval()
    out = []
    with torch.no_grad():
        for echo, mask, ecg, has_ecg, _ in loader:
            out.append(model(echo, mask, ecg, has_ecg))
    return torch.cat(out).double().numpy()


def _numpy_echo_init(probe: Any, moments: Any, cfg: Any) -> None:
    """The engine's echo probe is numpy (:mod:`rightsize.probes.models.echo.numpy_model`): start the
    torch module from the same initial weights it draws for ``cfg.seed``."""
    import torch

    from rightsize.probes.models.echo.numpy_model import init_probe

    init = init_probe(moments, cfg.seed)[0]
    with torch.no_grad():
        for name in ("query.weight", "query.bias", "null", "head.weight", "head.bias"):
            target = probe.get_parameter(name)
            target.copy_(torch.from_numpy(getattr(init, name.replace(".", "_"))).view_as(target))


def train_torch(name: str, train: Any, val: Any, std: Any, cfg: Any) -> tuple[Any, dict]:
    """Tutorial-style training of torch probe ``name`` computed the textbook way.

    Returns the best-validation textbook module (the engine's probe class) and run info.
    """
    import copy

    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader

    from rightsize.probes.engine.data import Moments
    from rightsize.probes.engine.estimator import Estimator
    from rightsize.probes.registry import spec as probe_spec

    torch.manual_seed(cfg.seed)
    est = Estimator(probe_spec(name), cfg)
    arch = est.arch(train)
    probe = est.build(arch)
    moments = Moments.fit(train, cfg.pca_rank, ecg=est.spec.uses_ecg, threads=cfg.threads)
    probe.set_moments(moments)
    if name == "echo":
        _numpy_echo_init(probe, moments, cfg)
    model = probe                           # forward = the textbook computation
    p_drop = cfg.fused.modality_dropout if name == "fused" else 0.0
    train_loader = DataLoader(_row_dataset(train, std.forward(train.lvef), p_drop, cfg.seed),
                              batch_size=BATCH_SIZE, shuffle=True)
    val_loader = DataLoader(_row_dataset(val, std.forward(val.lvef), 0.0, cfg.seed),
                            batch_size=BATCH_SIZE)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    epochs = cfg.epochs(name)
    history: list[float] = []
    best_loss, best_state, best_epoch = float("inf"), None, 0
    for epoch in range(1, epochs + 1):
        model.train()
        for echo, mask, ecg, has_ecg, y in train_loader:
            loss = F.mse_loss(model(echo, mask, ecg, has_ecg), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            history.append(loss.item())
        val_loss = float(np.mean((_predict(model, val_loader) - std.forward(val.lvef)) ** 2))
        if val_loss < best_loss:
            best_loss, best_state, best_epoch = val_loss, copy.deepcopy(model.state_dict()), epoch
    model.load_state_dict(best_state)
    return model, {"epochs": epochs, "best_epoch": best_epoch, "steps": len(history),
                   "arch": arch}


def train_ecg(train: Any, val: Any, std: Any, cfg: Any) -> tuple[Any, Any, dict]:
    """Ridge and LogisticRegression pipelines over the grids, selected on validation."""
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.metrics import log_loss, mean_squared_error
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rows = train.has_ecg
    x, y, lab = train.ecg[rows].astype(np.float64), std.forward(train.lvef[rows]), \
        train.ef_le_40[rows]
    best_r, best_c = (np.inf, None), (np.inf, None)
    for alpha in cfg.ecg.alphas:
        pipe = make_pipeline(StandardScaler(), Ridge(alpha=alpha)).fit(x, y)
        mse = mean_squared_error(std.forward(val.lvef), _ecg_apply(pipe, val, "predict"))
        best_r = min(best_r, (mse, pipe), key=lambda t: t[0])
    for c in cfg.ecg.Cs:
        pipe = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=cfg.ecg.max_iter))
        pipe.fit(x, lab)
        ll = log_loss(val.ef_le_40, _sigmoid(_ecg_apply(pipe, val, "decision_function")),
                      labels=[False, True])
        best_c = min(best_c, (ll, pipe), key=lambda t: t[0])
    return best_r[1], best_c[1], {"epochs": 1, "best_epoch": 1, "steps": 1}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _ecg_apply(pipe: Any, data: Any, method: str) -> np.ndarray:
    """Pipeline output where rows without an ECG get the mean (standardized zeros) input."""
    x = data.ecg.astype(np.float64).copy()
    scaler = pipe[0]
    x[~data.has_ecg] = scaler.mean_
    return getattr(pipe, method)(x)


def run(manifest: str, probe: str, fusion_dim: int, threads: int,
        params: str) -> dict[str, Any]:
    """Load, train, evaluate ``probe``; timings (wall and CPU) and test metrics."""
    t_start = time.perf_counter()
    import dataclasses

    import torch
    from sklearn.metrics import mean_absolute_error, roc_auc_score

    from probes_bench import import_heavy
    from rightsize.cohort.load_manifest import load_arrays
    from rightsize.params import load_block
    from rightsize.probes.engine.config import EvaluateConfig, TrainConfig
    from rightsize.probes.engine.data import Standardizer, split_data

    torch.set_num_threads(threads)
    cfg = load_block(params, "train", TrainConfig)
    cfg = dataclasses.replace(cfg, threads=threads,
                              fused=dataclasses.replace(cfg.fused, fusion_dim=fusion_dim))
    ecfg = load_block(params, "evaluate", EvaluateConfig)
    import_heavy()
    arrays = load_arrays(manifest)
    load_s = time.perf_counter() - t_start

    t0, c0 = time.perf_counter(), time.process_time()
    train, val, test = (split_data(arrays, s) for s in ("train", "val", "test"))
    std = Standardizer.fit(train.lvef)
    if probe == "ecg":
        ridge, logit, info = train_ecg(train, val, std, cfg)
    else:
        model, info = train_torch(probe, train, val, std, cfg)
    fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    if probe == "ecg":
        pred = std.inverse(_ecg_apply(ridge, test, "predict"))
        score = _ecg_apply(logit, test, "decision_function")
    else:
        from torch.utils.data import DataLoader

        loader = DataLoader(_row_dataset(test, std.forward(test.lvef), 0.0, 0),
                            batch_size=BATCH_SIZE)
        pred = std.inverse(_predict(model, loader))
        score = -pred
    mae = float(mean_absolute_error(test.lvef, pred))
    auc = float(roc_auc_score(test.ef_le_40, score))
    tb = time.perf_counter()
    ci = naive_bootstrap(test.lvef, pred, test.ef_le_40, score, ecfg.n_bootstrap, ecfg.seed,
                         ecfg.ci)
    boot_s = time.perf_counter() - tb
    eval_s, eval_cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"contender": "baseline", "probe": probe, "fusion_dim": fusion_dim,
            "load_s": load_s, "fit_s": fit_s, "fit_cpu_s": fit_cpu, "eval_s": eval_s,
            "eval_cpu_s": eval_cpu, "boot_s": boot_s, "epochs": info["epochs"],
            "best_epoch": info["best_epoch"], "steps": info["steps"],
            "n_train": len(train), "n_val": len(val), "n_test": len(test),
            "test_mae": mae, "test_auroc": auc, **{f"test_{k}": v for k, v in ci.items()},
            "test_pred": [float(x) for x in pred],
            "load_avg_1min": os.getloadavg()[0]}


def main() -> int:
    """Child entry point: one probe, one JSON line on stdout."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest")
    ap.add_argument("probe", choices=PROBES)
    ap.add_argument("--fusion-dim", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--params", default=str(REPO / "params.yaml"))
    args = ap.parse_args()
    out = run(args.manifest, args.probe, args.fusion_dim, args.threads, args.params)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
