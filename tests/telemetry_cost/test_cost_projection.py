"""Projection and MFU arithmetic, and how flags and params resolve into one config."""

from __future__ import annotations

import pytest

from rightsize.errors import InputError, ParamsError
from rightsize.params import load_block, parse
from rightsize.telemetry.projection import mfu, projection
from rightsize.telemetry.report_config import (
    ProjectionConfig,
    RunParams,
    TelemetryParams,
    resolve,
)


def test_projection_demo_geometry():
    # 12,000 records became 120,000 units; 96,000 units are trained per epoch (80 %).
    # 48,000 records -> 480,000 units -> 384,000 training units -> 12,000 steps of 32.
    p = projection(ProjectionConfig(12000, 120000, 48000, (1, 5, 12)), train_records=96000,
                   global_batch=32, gpus=8, drop_last=True, median_step_s=0.45,
                   calendar_overhead=3.0)
    assert p["train_share"] == 0.8 and p["units_per_record"] == 10.0
    assert p["units_per_epoch"] == 384000 and p["steps_per_epoch"] == 12000
    assert p["hours_per_epoch"] == pytest.approx(12000 * 0.45 / 3600)   # 1.5 h
    assert p["gpu_hours_per_epoch"] == pytest.approx(12.0)
    assert [s["epochs"] for s in p["schedules"]] == [1, 5, 12]
    s12 = p["schedules"][2]
    assert s12["compute_hours"] == pytest.approx(18.0) == p["e12_compute_hours"]
    assert s12["gpu_hours"] == pytest.approx(144.0) == p["e12_gpu_hours"]
    assert s12["calendar_hours"] == pytest.approx(54.0) == p["e12_calendar_hours"]


@pytest.mark.parametrize(("drop", "steps"), [(True, 3), (False, 4)])
def test_projection_partial_batch(drop, steps):
    # 7 records x 10 units/record x 0.5 share = 35 units; batch 10 -> 3 full + 1 partial
    p = projection(ProjectionConfig(2, 20, 7), train_records=10, global_batch=10, gpus=1,
                   drop_last=drop, median_step_s=2.0, calendar_overhead=None)
    assert p["units_per_epoch"] == 35 and p["steps_per_epoch"] == steps
    assert p["e1_compute_hours"] == pytest.approx(steps * 2 / 3600)
    assert p["e1_calendar_hours"] is None


def test_projection_without_step_time_has_no_hours():
    p = projection(ProjectionConfig(1, 1, 10), train_records=1, global_batch=1, gpus=2,
                   drop_last=False, median_step_s=None, calendar_overhead=2.0)
    assert p["steps_per_epoch"] == 10 and p["hours_per_epoch"] is None
    assert p["e1_gpu_hours"] is None


def test_mfu_formula():
    m = mfu(global_batch=32, gpus=8, median_step_s=0.5, flops_per_unit=1.2e10, peak_tflops=312)
    assert m["units_per_s"] == 64
    assert m["achieved_tflops_per_gpu"] == pytest.approx(64 * 1.2e10 / 8 / 1e12)   # 0.096
    assert m["mfu"] == pytest.approx(0.096 / 312)
    assert mfu(global_batch=1, gpus=1, median_step_s=None, flops_per_unit=1,
               peak_tflops=1)["mfu"] is None


def test_resolve_flags_win_and_defaults():
    rp = RunParams(train_records=96000, global_batch=32, gpus=8, drop_last=True,
                   base_records=12000, base_units=120000, records=48000, epochs=(1, 5),
                   val_tag="Loss/val_epoch")
    cfg = resolve({"gpus": 4, "drop_last": False, "epochs": (3,)}, rp, gap_s=300.0)
    assert (cfg.train_records, cfg.global_batch, cfg.gpus, cfg.drop_last) == (96000, 32, 4, False)
    assert cfg.gap_s == 300.0 and cfg.val_tag == "Loss/val_epoch" and cfg.step_tag is None
    assert cfg.projection == ProjectionConfig(12000, 120000, 48000, (3,))
    assert resolve({"gap_s": 50.0}, rp, gap_s=300.0).gap_s == 50.0
    bare = resolve({"train_records": 10, "global_batch": 2})
    assert (bare.gpus, bare.drop_last, bare.gap_s, bare.projection) == (1, False, 600.0, None)
    with pytest.raises(InputError, match="--global-batch is required"):
        resolve({"train_records": 10})


def test_params_block_errors_name_dotted_keys(tmp_path):
    with pytest.raises(ParamsError, match=r"telemetry\.runs\.demo\.foo: unknown key"):
        parse(TelemetryParams, {"runs": {"demo": {"train_records": 1, "global_batch": 1,
                                                  "foo": 2}}}, "telemetry")
    with pytest.raises(ParamsError, match=r"telemetry\.runs\.x\.base_records"):
        parse(TelemetryParams, {"runs": {"x": {"train_records": 1, "global_batch": 1,
                                               "records": 5}}}, "telemetry")
    with pytest.raises(ParamsError, match=r"telemetry\.runs\.x\.epochs\[1\]"):
        parse(TelemetryParams, {"runs": {"x": {"train_records": 1, "global_batch": 1,
                                               "epochs": [1, 0]}}}, "telemetry")
    with pytest.raises(ParamsError, match=r"telemetry\.gap_s"):
        parse(TelemetryParams, {"gap_s": 0}, "telemetry")


def test_repo_params_parse():
    from pathlib import Path

    block = load_block(Path(__file__).resolve().parents[2] / "params.yaml", "telemetry",
                       TelemetryParams)
    demo = block.runs["demo"]
    assert block.gap_s == 600 and demo.epochs == (1, 5, 12) and demo.peak_tflops == 312.0
    cfg = resolve({}, demo, block.gap_s)
    assert cfg.flops_per_unit == 1.2e10 and cfg.projection.records == 48000
