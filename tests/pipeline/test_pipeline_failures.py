"""Failure behaviour: a killed `dvc repro`, bad params values, a missing manifest."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from pipeline_helpers import dvc, dvc_status, git, repro_stages, run, set_params
from safetensors.torch import load_file

pytestmark = pytest.mark.slow

TRAIN_FUSED = [
    "rightsize", "train", "fused", "--params", "params.yaml", "--manifest",
    "data/manifest.parquet", "--out", "models/fused", "--events", "data/probe_runs/fused",
    "--curve", "metrics/curves/fused.csv", "--metrics", "metrics/train/fused.json",
]


def _walk_files(root: Path) -> list[Path]:
    """Every file under ``root``, hidden folders included (glob('**') skips them)."""
    out = []
    for dirpath, _dirs, files in os.walk(root):
        out += [Path(dirpath, f) for f in files]
    return sorted(out)


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


def _check_complete(path: Path) -> None:
    """Raise if ``path`` is not a complete file of its kind."""
    if path.suffix == ".json":
        json.loads(path.read_text())
    elif path.suffix == ".safetensors":
        load_file(path)
    elif path.suffix == ".pt":
        torch.load(path, weights_only=True)
    elif path.suffix == ".npz":
        with np.load(path) as z:
            for name in z.files:
                z[name]  # noqa: B018 - decompress every member
    elif path.suffix == ".csv":
        rows = list(csv.reader(path.read_text().splitlines()))
        assert rows and all(len(r) == len(rows[0]) for r in rows), path


def _error_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("rightsize: error:")]


def test_killed_repro_leaves_no_partial_outputs_and_recovers(project, pipeline_env):
    # Long enough that training is surely still running when we kill it.
    set_params(project, {"train.fused.epochs": 3000})
    log_path = project.parent / "repro.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["dvc", "repro"], cwd=project, env=pipeline_env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        started = None
        while time.monotonic() < deadline and proc.poll() is None:
            if started is None and "Running stage 'train@fused'" in log_path.read_text():
                started = time.time() - 1.0
            if started is not None and any(
                "tfevents" in f.name and f.stat().st_mtime >= started
                for f in _walk_files(project / "data" / "probe_runs" / "fused")
            ):
                break
            time.sleep(0.1)
        time.sleep(1.0)  # a few epochs into training
        assert proc.poll() is None, f"dvc repro ended before the kill:\n{log_path.read_text()}"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert "Running stage 'train@fused'" in log_path.read_text()
    assert "Running stage 'probe_telemetry@fused'" not in log_path.read_text()

    leftovers = []
    for top in ("models", "metrics"):
        for f in _walk_files(project / top):
            if _hidden(f, project / top):
                leftovers.append(str(f.relative_to(project)))  # staging area, never final
                continue
            try:
                _check_complete(f)
            except Exception as exc:  # noqa: BLE001 - report which file is partial
                pytest.fail(f"{f.relative_to(project)} is partial after the kill: {exc}")
    yaml.safe_load((project / "dvc.lock").read_text())

    # What a user does next: fix the params and run again. DVC drops the dead process
    # from .dvc/tmp/rwlock by itself (it warns "had been killed. Auto removed ...").
    set_params(project, {"train.fused.epochs": 4})
    out = dvc(project, pipeline_env, "repro").stdout
    ran = set(repro_stages(out))
    assert {"train@fused", "probe_telemetry@fused", "footprint"} <= ran
    assert not ran & {"cohort", "demo_run", "telemetry@demo", "train@ecg", "train@echo",
                      "train@concat"}
    assert dvc_status(project, pipeline_env) == {}
    assert json.loads((project / "metrics/train/fused.json").read_text())["epochs"] == 4
    # the evaluation written by the same stage describes the new model, not the killed one
    assert json.loads((project / "metrics/eval/fused.json").read_text())["epochs"] == 4
    assert load_file(project / "models/fused/weights.safetensors")
    untracked = [ln for ln in git(project, pipeline_env, "status", "--porcelain").stdout
                 .splitlines() if ln.startswith("??")]
    assert untracked == [], f"left behind after kill + rerun: {untracked} (staging: {leftovers})"


def test_negative_epochs_fail_the_stage_naming_the_key(project, pipeline_env):
    # metrics/eval/fused.json is an output of train@fused (DVC clears a stage's outputs
    # before running it); the downstream probe_telemetry@fused output must survive untouched.
    before = (project / "metrics/telemetry/probe_fused.json").read_text()
    set_params(project, {"train.fused.epochs": -1})
    proc = dvc(project, pipeline_env, "repro", check=False)
    assert proc.returncode != 0
    errors = _error_lines(proc.stdout + proc.stderr)
    assert len(errors) == 1, proc.stdout + proc.stderr
    assert "train.fused.epochs" in errors[0]
    assert "Traceback" not in proc.stdout + proc.stderr
    assert "probe_telemetry@fused" not in repro_stages(proc.stdout)
    assert (project / "metrics/telemetry/probe_fused.json").read_text() == before


def test_unknown_probe_fails_the_stage_naming_the_key(project, pipeline_env):
    data = yaml.safe_load((project / "params.yaml").read_text())
    data["train"]["probes"].append("bogus")
    data["train"]["bogus"] = {"epochs": 2}  # as if the user meant to add a new probe
    (project / "params.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    proc = dvc(project, pipeline_env, "repro", "train@bogus", check=False)
    assert proc.returncode != 0
    errors = _error_lines(proc.stdout + proc.stderr)
    assert len(errors) == 1, proc.stdout + proc.stderr
    assert "bogus" in errors[0]
    assert "train.probes" in errors[0] or "train.bogus" in errors[0], errors[0]


def test_unknown_probe_without_its_block_stops_the_first_stage(project, pipeline_env):
    # The stage_values check runs first and names the key; DVC alone would stop later, at
    # train@fuzed ("'train.fuzed' are missing from 'params.yaml'").
    set_params(project, {"train.probes": ["ecg", "echo", "concat", "fused", "fuzed"]})
    proc = dvc(project, pipeline_env, "repro", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "train.probes[4]: unknown probe 'fuzed'" in out
    assert "Running stage 'stage_values'" in out and "Running stage 'train@" not in out


def test_missing_manifest_is_one_line_naming_the_file(project, pipeline_env):
    cmd = [("data/nope.parquet" if a == "data/manifest.parquet" else a) for a in TRAIN_FUSED]
    proc = run(cmd, project, pipeline_env, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == _error_lines(proc.stderr)
    assert len(_error_lines(proc.stderr)) == 1
    assert "data/nope.parquet" in proc.stderr
