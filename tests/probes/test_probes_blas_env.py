"""Probe training gives the same bits whatever BLAS kernel or thread count the machine picks.

numpy's OpenBLAS chooses its kernels per CPU (``OPENBLAS_CORETYPE`` overrides the choice) and
its own thread count (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``); both are read when the
library loads, so each variant trains in a fresh process. numpy computes the PCA basis every
probe shares, the ECG probe's linear fits and the echo probe's steps, so the ``rightsize``
command pins OpenBLAS's kernel set before numpy loads (:mod:`rightsize.blas_kernel`), and the
fits run under ``threadpool_limits(train.threads)``. Before the pin, Sandybridge kernels gave
the ECG probe other weights than the default here; before the input moments were computed
in one fixed library, the torch probes' curves differed by kernel (val MAE 2.5673 / 2.5679 /
2.5671).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rightsize.probe_names import PROBES

ENVS = (
    {},
    {"OPENBLAS_CORETYPE": "Haswell"},
    {"OPENBLAS_NUM_THREADS": "1"},
    {"OPENBLAS_CORETYPE": "SkylakeX", "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2"},
    {"OPENBLAS_CORETYPE": "Sandybridge"},
    {"OPENBLAS_CORETYPE": "Zen", "OPENBLAS_NUM_THREADS": "2"},
)
_BLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

# Runs `rightsize train` as the console script does, then prints a digest of every stored
# number of the checkpoint (array bytes, not the zip file, whose entries carry timestamps)
# and the evaluation's test block.
CLI = """
import hashlib, json, os, sys
from rightsize.cli import main
rc = main(sys.argv[1:])
out = sys.argv[sys.argv.index('--out') + 1]
if os.path.exists(out + '/weights.npz'):
    import numpy as np
    with np.load(out + '/weights.npz', allow_pickle=False) as d:
        arrays = [d[k] for k in sorted(d.files)]
else:
    from safetensors.torch import load_file
    state = load_file(out + '/weights.safetensors')
    arrays = [state[k].numpy() for k in sorted(state)]
digest = hashlib.sha256(b''.join(a.tobytes() for a in arrays)).hexdigest()
curve = open(sys.argv[sys.argv.index('--curve') + 1]).read()
print(json.dumps({'rc': rc, 'weights': digest, 'curve': curve,
                  'eval': json.load(open(sys.argv[-1]))['test']}))
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A small manifest (4 clips, 64-d echo, 96-d ECG) and params with PCA on and few epochs."""
    import yaml

    from rightsize.cohort.build import build_manifest
    from rightsize.cohort.config import CohortConfig, SplitsConfig

    root = tmp_path_factory.mktemp("blas")
    cfg = CohortConfig(n_subjects=400, splits=SplitsConfig(280, 40, 80), echo_dim=64,
                       ecg_dim=96, max_clips=4, row_group_size=128)
    build_manifest(cfg, root / "manifest.parquet")
    (root / "params.yaml").write_text(yaml.safe_dump({
        "train": {"probes": list(PROBES), "seed": 0, "seeds": 1,
                  "threads": 1, "device": "cpu", "pca_rank": 16,
                  "ecg": {"alphas": [1.0, 100.0], "Cs": [0.1, 1.0]}, "echo": {"epochs": 6},
                  "concat": {"epochs": 6, "hidden": 32},
                  "fused": {"epochs": 4, "fusion_dim": 32, "heads": 2, "hidden": 32}},
        "evaluate": {"seed": 0, "n_bootstrap": 200, "n_bootstrap_missing": 100, "ci": 0.95}}))
    return root


@pytest.mark.parametrize("probe", PROBES)
def test_training_is_bit_identical_under_blas_kernels_and_thread_counts(project, probe):
    from rightsize.blas_kernel import PINNED, REQUIRED_FLAGS
    from rightsize.measure import cpu_flags

    if not REQUIRED_FLAGS <= cpu_flags():
        pytest.skip(f"this CPU lacks {sorted(REQUIRED_FLAGS)}: the {PINNED} kernels cannot run")
    results = []
    for i, extra in enumerate(ENVS):
        env = {k: v for k, v in os.environ.items() if k not in _BLAS_VARS}
        env.update(extra)
        out = project / f"{probe}{i}"
        argv = ["train", probe, "--params", str(project / "params.yaml"), "--manifest",
                str(project / "manifest.parquet"), "--out", str(out), "-q",
                "--curve", str(out) + ".csv", "--eval-json", str(out) + ".json"]
        proc = subprocess.run([sys.executable, "-c", CLI, *argv], env=env, capture_output=True,
                              text=True, timeout=600, check=True)
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        stamp = json.loads((project / f"{probe}{i}.json").read_text())["hardware"]["numerics"]
        assert stamp["env"]["OPENBLAS_CORETYPE"] == PINNED, extra
    assert results[0]["rc"] == 0
    assert results[0]["curve"].count("\n") > (1 if probe == "ecg" else 4)
    for extra, res in zip(ENVS[1:], results[1:], strict=True):
        assert res == results[0], f"{probe} differs under {extra}"
