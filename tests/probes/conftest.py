"""A tiny planted cohort for the probe tests (small n, small dims, few clips).

Mirrors the shape of the project's synthetic generator: LVEF depends on a subject-level
echo latent, an ECG latent and the detail ``s`` of the one clip whose view key matches a
query carried by the ECG, so only a probe that lets the ECG pick a clip can use that term.
"""

from __future__ import annotations

import pytest

from rightsize.cohort.arrays import CohortArrays
from rightsize.probe_names import PROBES
from rightsize.probes.engine.config import EvaluateConfig, TrainConfig

from .probe_fixtures import make_cohort, small_train_config


@pytest.fixture(scope="session")
def cohort() -> CohortArrays:
    """The default tiny cohort (4 clips)."""
    return make_cohort()


@pytest.fixture(scope="session")
def train_cfg() -> TrainConfig:
    """Default small train config."""
    return small_train_config()


@pytest.fixture(scope="session")
def eval_cfg() -> EvaluateConfig:
    """Default evaluate config with fewer resamples."""
    return EvaluateConfig(seed=0, n_bootstrap=500, n_bootstrap_missing=300, ci=0.95)


@pytest.fixture(scope="session")
def fits(cohort, train_cfg, tmp_path_factory):
    """All four probes trained once on the tiny cohort, with their run logs on disk.

    Returns ``{probe: (FitResult, run_dir)}``; ``run_dir`` holds ``events/`` and
    ``curve.csv``.
    """
    import time

    from rightsize.probes.engine.runlog import RunLog
    from rightsize.probes.engine.train import train_probe
    from rightsize.probes.registry import spec as probe_spec

    out = {}
    for name in PROBES:
        run = tmp_path_factory.mktemp(f"run_{name}")
        with RunLog(run / "events", run / "curve.csv", time.time()) as log:
            fit = train_probe(probe_spec(name), cohort, train_cfg, "cpu", log)
        out[name] = (fit, run)
    return out
