"""The analyzer recovers the demo run's planted truth (through the real CLI and reader)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rightsize.cli import main
from rightsize.telemetry.cost_report import cost_report
from rightsize.telemetry.demo import DemoConfig
from rightsize.telemetry.report_config import CostReportConfig

REPO = Path(__file__).resolve().parents[2]
EXACT = ("step_tag", "val_tag", "steps_per_epoch", "max_step", "val_epochs", "launches",
         "segments", "header_only_files", "relogged_steps", "best_epoch", "best_val")
CLOSE = ("epochs_run", "active_hours", "calendar_hours")


def check_truth(report: dict, truth: dict) -> None:
    for key in EXACT:
        assert report[key] == truth[key], key
    for key in CLOSE:
        assert report[key] == pytest.approx(truth[key], rel=1e-12), key
    for key in ("median", "p25", "p75"):
        assert report["step_time_s"][key] == pytest.approx(truth["step_time_s"][key], rel=1e-12)
    assert report["step_time_s"]["n"] == truth["step_time_s"]["n"]
    assert report["val_curve"] == truth["val_curve"]
    assert report["steps_per_epoch_from_val"] == report["steps_per_epoch_from_records"] == 3000


@pytest.mark.parametrize(("seed", "log_every"), [(0, 1), (1, 1), (2, 10), (7, 10)])
def test_cli_recovers_planted_truth(seed, log_every, demo_factory, read_scalars, tmp_path,
                                    capsys):
    run, truth = demo_factory(seed, log_every)
    assert truth["relogged_steps"] > 0 and truth["relogged_val_steps"] == 1
    assert truth["header_only_files"] >= 2
    assert any("." in h for h in truth["hosts"])
    out = tmp_path / "r.json"
    rc = main(["telemetry", str(run), "--params", str(REPO / "params.yaml"), "--run", "demo",
               "--json", str(out)])
    assert rc == 0
    report = json.loads(out.read_text())
    check_truth(report, truth)
    assert report["warnings"] == [] and report["damaged_records"] == 0
    assert sorted({r["host"] for r in report["segment_table"]}) == truth["hosts"]
    assert "rightsize: warning" not in capsys.readouterr().err


def test_engine_recovers_truth_from_tensorboard_reader(demo_factory, tb_table):
    run, truth = demo_factory(3, 10)
    cfg = CostReportConfig(train_records=96000, global_batch=32, gpus=8, drop_last=True)
    check_truth(cost_report(tb_table(run), cfg), truth)


def test_demo_geometry_matches_params():
    runs = yaml.safe_load((REPO / "params.yaml").read_text())["telemetry"]["runs"]
    demo, cfg = runs["demo"], DemoConfig()
    assert (demo["train_records"], demo["global_batch"], demo["gpus"]) == (
        cfg.train_records, cfg.global_batch, cfg.gpus)
    assert demo["drop_last"] and cfg.steps_per_epoch == demo["train_records"] // demo[
        "global_batch"]


def test_demo_is_deterministic_small_and_verifies(tmp_path, demo_factory):
    run0, truth0 = demo_factory(0, 1)
    assert main(["demo-run", str(tmp_path / "again"), "--seed", "0", "--truth",
                 str(tmp_path / "t.json")]) == 0
    assert (tmp_path / "again" / "SHA256SUMS").read_text() == (run0 / "SHA256SUMS").read_text()
    assert json.loads((tmp_path / "t.json").read_text()) == json.loads(json.dumps(truth0))
    assert sum(p.stat().st_size for p in run0.iterdir()) < 3_000_000
    assert main(["verify", str(run0)]) == 0
    run1, truth1 = demo_factory(1, 1)
    assert (run1 / "SHA256SUMS").read_text() != (run0 / "SHA256SUMS").read_text()
    # re-running into an existing folder replaces it whole
    assert main(["demo-run", str(tmp_path / "again"), "--seed", "1"]) == 0
    assert (tmp_path / "again" / "SHA256SUMS").read_text() == (run1 / "SHA256SUMS").read_text()
