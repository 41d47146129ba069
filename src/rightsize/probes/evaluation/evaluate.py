"""Test-split evaluation of a trained probe: MAE and AUROC with bootstrap intervals.

The metric dict has stable keys (scalars and nested dicts only, as DVC wants):
``test.{mae,mae_lo,mae_hi,auroc,auroc_lo,auroc_hi,n,n_pos,...}``, ``val.mae``,
``best_epoch``, ``mean_predictor_mae`` (train-mean LVEF on test), ``params``,
``checkpoint_bytes``, ``wall_clock_s.{train,eval,total}``, ``peak_rss_mb``,
``peak_rss_mb_train``, ``hardware.*``, ``bootstrap.test_mae`` (the MAE of each resample,
a list, which DVC's metrics listing skips), ``ecg_tokens`` and ``ecg_pooling`` (how the
probe reads a subject's ECG tokens, from the checkpoint's arch) and, for the fused probe,
``attention_entropy.{echo_to_ecg,ecg_to_echo}`` (+ ``*_max`` = mean log(n_keys) and
``*_null`` = mean weight on the null token). The seed replicas' keys and, with a truth file
of planted ECG tokens, ``attention.echo_to_ecg`` come from
:func:`rightsize.probes.evaluation.replicas.evaluate_replicas`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from rightsize.cohort.arrays import CohortArrays
from rightsize.probes.engine.config import EvaluateConfig
from rightsize.probes.engine.data import SplitData, split_data
from rightsize.probes.engine.predict import Probe
from rightsize.probes.evaluation.bootstrap import (
    abs_errors,
    bootstrap_indices,
    mae_samples,
    summarize,
)


def score_split(probe: Probe, test: SplitData, n_boot: int, seed: int,
                ci: float) -> tuple[dict[str, Any], float, np.ndarray]:
    """``summarize`` of ``probe`` on ``test``, the seconds the bootstrap took, and the MAE of
    each bootstrap resample."""
    lvef, score = probe.predict(test)
    t0 = time.perf_counter()
    idx = bootstrap_indices(len(test), n_boot, seed)
    samples = mae_samples(abs_errors(test.lvef, lvef), idx)
    out = summarize(test.lvef, lvef, test.ef_le_40, score, idx, ci, mae_boot=samples)
    return out, time.perf_counter() - t0, samples


def mean_predictor_mae(arrays: CohortArrays, split: str = "test") -> float:
    """MAE on ``split`` of always predicting the train-split mean LVEF."""
    train_mean = float(np.mean(arrays.lvef[arrays.index("train")], dtype=np.float64))
    y = arrays.lvef[arrays.index(split)].astype(np.float64)
    return float(np.mean(np.abs(y - train_mean)))


def evaluate_probe(probe: Probe, sidecar: dict[str, Any], arrays: CohortArrays,
                   cfg: EvaluateConfig) -> dict[str, Any]:
    """Metrics of ``probe`` (with its checkpoint ``sidecar``) on the test split.

    Wall clock, peak RSS, hardware and checkpoint size are added by the caller (the verb),
    which knows the whole process; this returns the model-quality part plus
    ``bootstrap_s``.
    """
    test = split_data(arrays, "test")
    val = split_data(arrays, "val")
    arch = sidecar.get("arch") or {}
    metrics, boot_s, samples = score_split(probe, test, cfg.n_bootstrap, cfg.seed, cfg.ci)
    out: dict[str, Any] = {
        "probe": probe.name,
        "test": metrics,
        "val": {"mae": probe.mae(val)},
        "best_epoch": int(sidecar.get("best_epoch", 0)),
        "epochs": int(sidecar.get("epochs", 0)),
        "mean_predictor_mae": mean_predictor_mae(arrays),
        "params": probe.n_params,
        "ef_score": sidecar.get("ef_score", "neg_lvef"),
        "ecg_tokens": int(arch.get("ecg_tokens", 1)),
        "ecg_pooling": str(arch.get("ecg_pooling", "mean")),
        "ci": cfg.ci,
        "bootstrap_s": boot_s,
    }
    # MAE of each bootstrap resample (the same resamples for every probe: same test split,
    # n_bootstrap and seed), so the report can form paired intervals between probes.
    out["bootstrap"] = {"test_mae": np.round(samples, 6).tolist()}
    entropy = probe.attention_entropy(test)
    if entropy is not None:
        out["attention_entropy"] = entropy
    return out
