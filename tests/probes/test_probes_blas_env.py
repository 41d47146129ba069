"""Probe training gives the same bits whatever BLAS kernel or thread count the machine picks.

numpy's OpenBLAS chooses its kernels per CPU (``OPENBLAS_CORETYPE`` overrides the choice) and
its own thread count (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``), outside
``train.threads``; both are read when the library loads, so each variant trains in a fresh
process. Before the input moments moved to torch float64 these variants gave different
curves (val MAE 2.5673 / 2.5679 / 2.5671 here for the first three).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

SCRIPT = """
import dataclasses, hashlib, json, sys
sys.path.insert(0, sys.argv[1])
from probes.conftest import make_cohort, small_train_config
from rightsize.probes.data import split_data
from rightsize.probes.train import train_probe
cohort = make_cohort(n=600, clips=4, echo_dim=256, ecg_dim=192, splits=(400, 100, 100))
cfg = dataclasses.replace(small_train_config(epochs=8), pca_rank=16)
fit = train_probe(sys.argv[2], cohort, cfg)
lvef, _ = fit.probe.predict(split_data(cohort, "test"))
print(json.dumps({"epochs": cfg.epochs(sys.argv[2]), "val_loss": fit.val_loss,
                  "train_loss": fit.train_loss, "val_mae": fit.val_mae,
                  "best_epoch": fit.best_epoch,
                  "test_pred": hashlib.sha256(lvef.tobytes()).hexdigest()}))
"""

ENVS = (
    {},
    {"OPENBLAS_CORETYPE": "Haswell"},
    {"OPENBLAS_NUM_THREADS": "1"},
    {"OPENBLAS_CORETYPE": "SkylakeX", "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"},
)
_BLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _train_in(env_extra: dict[str, str], probe: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _BLAS_VARS}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(TESTS), probe], env=env,
                         capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("probe", ["fused", "concat"])
def test_training_is_bit_identical_under_blas_kernels_and_thread_counts(probe):
    results = [_train_in(env, probe) for env in ENVS]
    assert len(results[0]["val_loss"]) == results[0]["epochs"] > 1
    for env, res in zip(ENVS[1:], results[1:], strict=True):
        assert res == results[0], f"{probe} differs under {env}"


# The ECG probe's ridge and logistic fits are numpy linear algebra: they do call
# OpenBLAS, so the `rightsize` command pins OpenBLAS's kernel set before numpy loads
# (rightsize.blas_kernel). Sandybridge kernels gave other weights than the default here
# before the pin.
CLI_ENVS = (*ENVS, {"OPENBLAS_CORETYPE": "Sandybridge"},
            {"OPENBLAS_CORETYPE": "Zen", "OPENBLAS_NUM_THREADS": "2"})
CLI = ("import sys; from rightsize.cli import main; rc = main(sys.argv[1:]); "
       "import numpy as np, hashlib, json; d = np.load(sys.argv[sys.argv.index('--out') + 1]"
       " + '/weights.npz'); "
       "print(json.dumps({'rc': rc, 'weights': hashlib.sha256(b''.join(d[k].tobytes() "
       "for k in sorted(d.files))).hexdigest(), 'eval': json.load(open(sys.argv[-1]))['test']}))")


def test_ecg_probe_weights_are_bit_identical_under_blas_kernels(tmp_path):
    import yaml

    from rightsize.blas_kernel import PINNED, REQUIRED_FLAGS
    from rightsize.cohort.build import build_manifest
    from rightsize.cohort.config import CohortConfig, SplitsConfig
    from rightsize.measure import cpu_flags

    if not REQUIRED_FLAGS <= cpu_flags():
        pytest.skip(f"this CPU lacks {sorted(REQUIRED_FLAGS)}: the {PINNED} kernels cannot run")
    cfg = CohortConfig(n_subjects=400, splits=SplitsConfig(280, 40, 80), echo_dim=32,
                       ecg_dim=96, max_clips=1, row_group_size=128)
    build_manifest(cfg, tmp_path / "manifest.parquet")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({
        "train": {"probes": ["ecg"], "seed": 0, "threads": 1, "device": "cpu",
                  "ecg": {"alphas": [1.0, 100.0], "Cs": [0.1, 1.0]}},
        "evaluate": {"seed": 0, "n_bootstrap": 200, "n_bootstrap_missing": 100, "ci": 0.95}}))
    results = []
    for i, extra in enumerate(CLI_ENVS):
        env = {k: v for k, v in os.environ.items() if k not in _BLAS_VARS}
        env.update(extra)
        argv = ["train", "ecg", "--params", str(tmp_path / "params.yaml"), "--manifest",
                str(tmp_path / "manifest.parquet"), "--out", str(tmp_path / f"m{i}"), "-q",
                "--eval-json", str(tmp_path / f"e{i}.json")]
        out = subprocess.run([sys.executable, "-c", CLI, *argv], env=env, capture_output=True,
                             text=True, timeout=600, check=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        stamp = json.loads((tmp_path / f"e{i}.json").read_text())["hardware"]["numerics"]
        assert stamp["env"]["OPENBLAS_CORETYPE"] == PINNED, extra
    assert results[0]["rc"] == 0
    for extra, res in zip(CLI_ENVS[1:], results[1:], strict=True):
        assert res == results[0], f"ecg differs under {extra}"
