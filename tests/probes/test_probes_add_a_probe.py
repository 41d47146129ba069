"""Adding a probe touches two files (docs/probes.md, "Add a probe"): its home
``rightsize/probes/models/<name>.py`` and its name in ``rightsize.probe_names.PROBES``.

Done here for real on a scratch copy of the package: ``fifth_probe.py`` becomes the home
``echo_linear.py``, its name is appended to ``PROBES``, and the files that differ from the
original are counted. A fresh process on the copy then sees the probe everywhere the
registry reaches: the spec, ``TrainConfig``'s ``train.echo_linear`` block (parsed and
range-checked like the others), the ``train.probes`` check, and the textbook module;
importing all that loads no torch until the module is built. The copy then trains the probe
through :func:`rightsize.probes.run.train_and_evaluate` (saved, evaluated) and the probe
passes :func:`rightsize.probes.checks.check_probe`."""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import rightsize

PACKAGE = Path(rightsize.__file__).parent
FIFTH = Path(__file__).with_name("fifth_probe.py")

CHECK = r"""
import json, sys
import rightsize
from rightsize.errors import ParamsError
from rightsize.params import parse
from rightsize.probe_names import PROBES, check_train_probes
from rightsize.probes.engine.config import TrainConfig
from rightsize.probes.registry import spec

cfg = parse(TrainConfig, {"probes": list(PROBES), "echo_linear": {"epochs": 2}}, "train")
check_train_probes({"train": {"probes": ["echo", "echo_linear"]}})
try:
    parse(TrainConfig, {"echo_linear": {"epochs": 0}}, "train")
    bad = None
except ParamsError as e:
    bad = str(e)
torch_before = "torch" in sys.modules
model = spec("echo_linear").model()(echo_dim=8, ecg_dim=4)

# trained from the copy through the library call of `rightsize train`, then checked
from rightsize.cohort.build import build_manifest
from rightsize.cohort.config import CohortConfig, SplitsConfig
from rightsize.output_set import OutputSet
from rightsize.probes.checks import check_probe
from rightsize.probes.engine.config import EvaluateConfig
from rightsize.probes.run import RunFiles, train_and_evaluate

build_manifest(CohortConfig(n_subjects=120, splits=SplitsConfig(80, 16, 24), echo_dim=16,
                            ecg_dim=12, max_clips=3, row_group_size=32), "manifest.parquet")
small = parse(TrainConfig, {"seeds": 2, "threads": 1, "batch_size": 32, "lr": 0.003,
                            "pca_rank": 8, "echo_linear": {"epochs": 3}}, "train")
with OutputSet(anchor="model") as outputs:
    run = train_and_evaluate("echo_linear", "manifest.parquet", small, "cpu", outputs,
                             RunFiles("model"), EvaluateConfig(n_bootstrap=50), evaluate=True)
check_probe(spec("echo_linear"))
print(json.dumps({"package": rightsize.__file__, "probes": list(PROBES),
                  "epochs": cfg.echo_linear.epochs, "bad": bad, "torch_before": torch_before,
                  "params": sum(p.numel() for p in model.parameters()),
                  "trained": run.train["probe"], "trained_params": run.train["params"],
                  "replicas": len(run.fits), "test_mae": run.eval["test"]["mae"]}))
"""


def _changed(a: Path, b: Path) -> list[str]:
    """Files of tree ``b`` that are new or differ from tree ``a`` (relative paths)."""
    out = []
    for path in sorted(b.rglob("*.py")):
        rel = path.relative_to(b)
        if not (a / rel).exists() or not filecmp.cmp(a / rel, path, shallow=False):
            out.append(str(rel))
    return out


def test_a_fifth_probe_is_two_files_and_reaches_the_whole_registry(tmp_path):
    copy = tmp_path / "src" / "rightsize"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    # the documented steps: the home, and its name in the one list
    shutil.copy(FIFTH, copy / "probes" / "models" / "echo_linear.py")
    names = copy / "probe_names.py"
    text, n = re.subn(r'^(PROBES = \(.*?)\)', r'\1, "echo_linear")', names.read_text(),
                      count=1, flags=re.M)
    assert n == 1
    names.write_text(text)

    assert _changed(PACKAGE, copy) == ["probe_names.py", "probes/models/echo_linear.py"]
    env = {**os.environ, "PYTHONPATH": str(copy.parent)}
    run = subprocess.run([sys.executable, "-c", CHECK], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert Path(got["package"]).parent == copy
    assert got["probes"][-1] == "echo_linear" and got["epochs"] == 2
    assert got["bad"].startswith("train.echo_linear.epochs")
    assert got["torch_before"] is False
    assert got["params"] == 8 + 1
    # trained from the copy (train_and_evaluate), saved, evaluated, and check_probe passed
    assert got["trained"] == "echo_linear" and got["replicas"] == 2
    assert got["trained_params"] == 16 + 1 and 0 < got["test_mae"] < 100
    sidecar = json.loads((tmp_path / "model" / "checkpoint.json").read_text())
    assert sidecar["arch"]["probe"] == "echo_linear"
