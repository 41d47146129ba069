"""Missing-modality evaluation: the same test rows with echo, or ECG, taken away.

Rows of the test split that have both modalities are scored three ways: as they are
(``both_present``), with the echo absent (clips zeroed and masked) and with the ECG absent
(vector zeroed and masked). All three share one bootstrap index matrix (paired
resamples), so their intervals are comparable. A probe that ignores a modality scores the
same with it absent; the fused probe falls back on its null tokens, which it met in
training through modality dropout. A test split with no such row gets ``n_rows`` 0 and a
``note`` instead of the three conditions (the test runs inside each probe's training
process, which should not fail for want of paired rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rightsize.cohort.arrays import CohortArrays
from rightsize.probes.engine.config import EvaluateConfig
from rightsize.probes.engine.data import split_data
from rightsize.probes.engine.predict import Probe
from rightsize.probes.evaluation.bootstrap import bootstrap_indices, summarize

CONDITIONS = ("both_present", "echo_absent", "ecg_absent")
NO_PAIRED_ROWS = "no test row has both echo and ECG: nothing to take away"


def missing_modality(probe: Probe, arrays: CohortArrays, cfg: EvaluateConfig) -> dict[str, Any]:
    """``{condition: summarize(...)}`` for the three conditions plus row counts."""
    test = split_data(arrays, "test")
    both = test.has_echo & test.has_ecg
    if not both.any():
        return {"probe": probe.name, "n_test": len(test), "n_rows": 0, "ci": cfg.ci,
                "note": NO_PAIRED_ROWS}
    rows = test.subset(both)
    idx = bootstrap_indices(len(rows), cfg.n_bootstrap_missing, cfg.seed)
    variants = {"both_present": rows, "echo_absent": rows.drop(echo=True),
                "ecg_absent": rows.drop(ecg=True)}
    out: dict[str, Any] = {"probe": probe.name, "n_test": len(test), "n_rows": len(rows)}
    for name in CONDITIONS:
        lvef, score = probe.predict(variants[name])
        out[name] = summarize(rows.lvef, lvef, rows.ef_le_40, score, idx, cfg.ci)
    train_mean = float(np.mean(arrays.lvef[arrays.index("train")], dtype=np.float64))
    out["mean_predictor_mae"] = float(np.mean(np.abs(rows.lvef - train_mean)))
    out["ci"] = cfg.ci
    return out
