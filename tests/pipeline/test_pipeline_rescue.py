"""Rescued telemetry in the pipeline: rescue -> dvc add -> verify -> telemetry, and tampering."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from pipeline_helpers import (
    RAMPNET,
    commit_all,
    copy_project,
    dvc,
    dvc_status,
    metrics_show,
    repro_stages,
    run,
)

from rightsize.experiments import flatten

pytestmark = pytest.mark.slow

RAMPNET_RUN = {  # RampNet 1.0 stage 2: 16 GPUs, global batch 16, 150,063 panoramas per epoch
    "train_records": 150063,
    "global_batch": 16,
    "gpus": 16,
    "drop_last": False,
    "base_records": 150063,
    "base_units": 150063,
    "records": 300000,
    "epochs": [1, 10],
}


def _add_run(project: Path, env: dict, src: Path, name: str, run_params: dict) -> None:
    """What a user does: rescue SRC into data/telemetry/NAME, dvc add it, describe it."""
    run(["rightsize", "rescue", str(src), f"data/telemetry/{name}"], project, env)
    dvc(project, env, "add", f"data/telemetry/{name}")
    data = yaml.safe_load((project / "params.yaml").read_text())
    data["telemetry"]["runs"][name] = run_params
    (project / "params.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture(scope="module")
def rescued(tmp_path_factory, built_project, pipeline_env):
    """The built project plus the rescued RampNet run, reproduced; (project, repro output)."""
    if not RAMPNET.is_dir():
        pytest.skip(f"shared telemetry not present: {RAMPNET}")
    proj = copy_project(built_project, tmp_path_factory.mktemp("rescued") / "proj")
    _add_run(proj, pipeline_env, RAMPNET, "rampnet", RAMPNET_RUN)
    out = dvc(proj, pipeline_env, "repro").stdout
    commit_all(proj, pipeline_env, "rescued rampnet")
    return proj, out


def test_rescued_run_gets_verified_and_costed(rescued, pipeline_env):
    proj, out = rescued
    ran = repro_stages(out)
    assert ran.index("verify@rampnet") < ran.index("telemetry@rampnet")
    assert not [s for s in ran if s.startswith(("train@", "evaluate@", "cohort"))]
    assert (proj / "data/telemetry/rampnet.dvc").is_file()
    verify = json.loads((proj / "metrics/verify/rampnet.json").read_text())
    assert verify["ok"] is True
    assert verify["files"] == len([f for f in RAMPNET.iterdir() if "tfevents" in f.name])
    cost = flatten(json.loads((proj / "metrics/telemetry/rampnet.json").read_text()))
    head = metrics_show(proj, pipeline_env)["metrics/headline/telemetry/rampnet.json"]
    assert head["rampnet"]["epoch_hours"] == cost["epoch_hours"]
    assert "eta_hours" not in head["rampnet"]                 # no target_epochs: no ETA
    assert (cost["train_records"], cost["global_batch"], cost["gpus"]) == (150063, 16, 16)
    assert cost["steps_per_epoch_from_records"] == math.ceil(150063 / 16)
    assert cost["step_time_s.median"] > 0
    assert cost["epoch_hours"] > 0
    assert cost["gpu_hours_per_epoch"] == pytest.approx(16 * cost["epoch_hours"])
    assert {"projection.e1_gpu_hours", "projection.e10_gpu_hours"} <= set(cost)
    assert dvc_status(proj, pipeline_env) == {}


def test_tampered_rescued_file_fails_verify_and_stops_downstream(project, pipeline_env):
    # A rescued copy of the demo run (no shared data needed), added but not yet reproduced.
    demo_run = yaml.safe_load((project / "params.yaml").read_text())["telemetry"]["runs"]["demo"]
    _add_run(project, pipeline_env, project / "data/telemetry/demo", "copy", demo_run)
    commit_all(project, pipeline_env, "rescued copy")
    victim = sorted((project / "data/telemetry/copy").glob("*tfevents*"))[1]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.unlink()  # replace, never edit in place: the workspace file may share the cache
    victim.write_bytes(bytes(data))
    before = (project / "metrics/telemetry/demo.json").read_text()

    proc = dvc(project, pipeline_env, "repro", check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "Running stage 'verify@copy'" in output
    assert victim.name in output
    assert "telemetry@copy" not in repro_stages(proc.stdout)
    assert not (project / "metrics/telemetry/copy.json").exists()
    assert (project / "metrics/telemetry/demo.json").read_text() == before


ACCOUNT_KEYS = ("useful_steps", "redone_steps", "in_segment_pauses", "startup", "tail",
                "waiting")


def test_account_keys_are_detail_and_move_with_params_the_headline_with_them(rescued,
                                                                             pipeline_env):
    proj, _ = rescued
    detail = proj / "metrics/telemetry/rampnet.json"
    cost = flatten(json.loads(detail.read_text()))
    for key in (*(f"account.{k}" for k in ACCOUNT_KEYS), "startup_hours", "tail_hours",
                "checkpoints.restarts", "checkpoints.checkpoint_interval_steps",
                "checkpoints.checkpoint_write_s", "checkpoints.young_daly_steps",
                "epochs_after_best", "compute_hours_after_best"):
        assert isinstance(cost[key], int | float), key
    assert sum(cost[f"account.{k}"] for k in ACCOUNT_KEYS) == pytest.approx(
        cost["calendar_hours"], abs=1 / 3600)
    assert cost["checkpoints.checkpoint_interval_steps"] == 1000
    # a validation pass (~970 s) stops being a pause at gap_s 1200: the account moves
    data = yaml.safe_load((proj / "params.yaml").read_text())
    data["telemetry"]["gap_s"] = 1200
    data["telemetry"]["runs"]["rampnet"]["target_epochs"] = 20
    (proj / "params.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    dvc(proj, pipeline_env, "repro", "telemetry@rampnet")
    moved = flatten(json.loads(detail.read_text()))
    assert moved["account.in_segment_pauses"] < cost["account.in_segment_pauses"]
    assert moved["account.useful_steps"] != cost["account.useful_steps"]
    assert moved["eta.remaining_steps"] > 0
    # dvc metrics diff lists the headline numbers: the ETA the target brought
    diff = json.loads(dvc(proj, pipeline_env, "metrics", "diff", "--json").stdout)
    head = diff["metrics/headline/telemetry/rampnet.json"]
    assert head["rampnet.eta_hours"]["old"] is None
    assert head["rampnet.eta_hours"]["new"] == pytest.approx(
        moved["eta.remaining_calendar_hours"])
