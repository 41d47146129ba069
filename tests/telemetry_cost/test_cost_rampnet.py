"""Internal consistency of the cost report on the rescued RampNet run (skips without ../shared)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from rightsize.cli import main
from rightsize.telemetry.cost_report import cost_report
from rightsize.telemetry.report_config import CostReportConfig

GEOMETRY = {"train_records": 150063, "global_batch": 16, "gpus": 16, "drop_last": True}


@pytest.fixture(scope="module")
def report(rampnet_table):
    return cost_report(rampnet_table, CostReportConfig(**GEOMETRY))


def test_launches_segments_header_only(report, rampnet):
    files = sorted(p.name for p in rampnet.glob("events.out.tfevents.*"))
    assert report["launches"] == len(files) == 18
    assert report["header_only_files"] == 3
    assert sum(1 for p in rampnet.glob("events.out.tfevents.*") if p.stat().st_size == 88) == 3
    assert report["segments"] == 15
    assert [r["file"] for r in report["segment_table"]] == sorted(
        files, key=lambda n: int(n.split(".")[3]))


def test_epochs_from_val_agree_with_records(report):
    spe = report["steps_per_epoch"]
    assert spe == report["steps_per_epoch_from_val"] == report["steps_per_epoch_from_records"]
    assert spe == 150063 // 16
    assert report["val_tag"] == "Loss/val_epoch" and report["step_tag"] == "Loss/train_step"
    steps = [p["step"] for p in report["val_curve"]]
    assert all(s % spe == 0 for s in steps)
    assert [p["epoch"] for p in report["val_curve"]] == [s // spe for s in steps]
    assert report["val_epochs"] == len(steps) == math.floor(report["epochs_run"])
    assert report["epochs_run"] == pytest.approx(report["max_step"] / spe)
    assert report["warnings"] == []


def test_deltas_add_up(report, rampnet_table):
    st = report["step_time_s"]
    segs = [r for r in report["segment_table"] if r["steps"]]
    assert st["n"] + st["dropped"] == st["logged"] == sum(r["steps"] - 1 for r in segs)
    assert sum(r["deltas_kept"] for r in segs) == st["n"]
    assert st["p25"] <= st["median"] <= st["p75"]
    # re-logged: every step 1..max_step was logged at least once, the rest are re-logs
    col = rampnet_table.columns
    tag = np.asarray(col.column("tag").to_pylist())
    steps = col.column("step").to_numpy()[tag == report["step_tag"]]
    assert np.array_equal(np.unique(steps), np.arange(1, report["max_step"] + 1))
    assert report["relogged_steps"] == sum(r["steps"] for r in segs) - report["max_step"]


def test_hours(report, rampnet_table):
    assert report["epoch_hours"] == pytest.approx(
        report["steps_per_epoch"] * report["step_time_s"]["median"] / 3600)
    assert report["gpu_hours_per_epoch"] == pytest.approx(16 * report["epoch_hours"])
    # active = per segment, last logged training step - first (the RampNet write-up's count)
    col = rampnet_table.columns
    tag = np.asarray(col.column("tag").to_pylist())
    is_step = tag == report["step_tag"]
    wall, file = col.column("wall_time").to_numpy()[is_step], col.column("file").to_numpy()[is_step]
    spans = [wall[file == f][-1] - wall[file == f][0] for f in np.unique(file)]
    assert report["active_hours"] == pytest.approx(sum(spans) / 3600)
    assert round(report["active_hours"], 1) == 44.7          # published: 44.7 h active
    assert round(report["calendar_hours"], 1) == 74.6        # over 74.6 h of calendar
    assert round(report["calendar_overhead"], 2) == 1.67     # x1.67
    starts = [r["start_time"] for r in report["segment_table"]]
    ends = [r["end_time"] for r in report["segment_table"]]
    assert report["calendar_hours"] == pytest.approx((max(ends) - min(starts)) / 3600)
    assert 1 < report["calendar_overhead"] == pytest.approx(
        report["calendar_hours"] / report["active_hours"])
    assert min(p["value"] for p in report["val_curve"]) == report["best_val"]


def test_cli_json_is_scalar_numbers(rampnet, tmp_path):
    out = tmp_path / "r.json"
    args = ["telemetry", str(rampnet), "--train-records", "150063", "--global-batch", "16",
            "--gpus", "16", "--drop-last", "--strict", "--json", str(out),
            "--base-records", "150063", "--base-units", "150063", "--records", "300000",
            "--epochs", "1,12"]
    assert main(args) == 0
    doc = json.loads(out.read_text())
    for key in ("steps_per_epoch", "epoch_hours", "gpu_hours_per_epoch", "max_step",
                "epochs_run", "active_hours", "calendar_hours", "calendar_overhead", "launches",
                "segments", "header_only_files", "best_epoch", "best_val", "relogged_steps",
                "damaged_records"):
        assert isinstance(doc[key], int | float) and not isinstance(doc[key], bool), key
    for key in ("median", "p25", "p75", "n"):
        assert isinstance(doc["step_time_s"][key], int | float)
    p = doc["projection"]
    assert p["steps_per_epoch"] == 300000 // 16
    assert p["e12_gpu_hours"] == pytest.approx(12 * 16 * p["hours_per_epoch"])
