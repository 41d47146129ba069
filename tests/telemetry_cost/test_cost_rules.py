"""The cost report's rules on small hand-built tables (each number derivable by hand)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rightsize.errors import DataError, InputError, ParamsError
from rightsize.telemetry import cost
from rightsize.telemetry.cost_report import cost_report, cost_reports
from rightsize.telemetry.report_config import CostReportConfig

T, V = "loss/train", "loss/val"


def cfg(**kw) -> CostReportConfig:
    base = {"train_records": 40, "global_batch": 10, "gpus": 2, "drop_last": True, "gap_s": 600}
    return CostReportConfig(**{**base, **kw})


def seg(steps, walls, tag=T, **kw) -> dict:
    return {"points": [(tag, s, w, float(s)) for s, w in zip(steps, walls, strict=True)], **kw}


def test_gap_rule_and_first_point_dropped_per_segment(make_table):
    # segment A: deltas 2, 2, 700 (pause), 4; segment B: deltas 3, 3 (its start is not a delta)
    a = seg([1, 2, 3, 4, 5], [100.0, 102.0, 104.0, 804.0, 808.0])
    b = seg([4, 5, 6], [5000.0, 5003.0, 5006.0])
    r = cost_report(make_table([a, b]), cfg())
    times = r["step_time_s"]
    assert (times["n"], times["dropped"], times["logged"]) == (5, 1, 6)
    assert times["median"] == 3.0 and times["p25"] == 2.0 and times["p75"] == 3.0
    assert r["relogged_steps"] == 2          # steps 4 and 5 logged twice
    assert r["segments"] == 2 and r["launches"] == 2
    assert r["active_hours"] == pytest.approx((708.0 + 6.0) / 3600)
    assert r["calendar_hours"] == pytest.approx((5006.0 - 100.0) / 3600)
    assert r["segment_table"][0]["median_step_s"] == 2.0
    assert r["segment_table"][1]["first_step"] == 4


def test_delta_at_exactly_gap_s_is_a_pause(make_table):
    a = seg([1, 2, 3, 4], [0.0, 600.0, 601.0, 602.0])
    r = cost_report(make_table([a]), cfg())
    assert r["step_time_s"]["n"] == 2 and r["step_time_s"]["dropped"] == 1


def test_sparse_logging_gives_per_step_time(make_table):
    a = seg([10, 20, 30, 40], [0.0, 5.0, 10.0, 15.0])       # every 10 steps, 0.5 s/step
    r = cost_report(make_table([a]), cfg())
    assert r["step_time_s"]["median"] == 0.5 and r["step_time_s"]["n"] == 3


def test_backwards_time_and_repeated_steps_are_dropped(make_table):
    a = seg([1, 2, 2, 3, 4], [0.0, 1.0, 1.5, 1.2, 2.2])
    times = cost.step_times(cost.run_series(make_table([a]), ".")[T], 600)
    assert times.logged == 4 and times.n == 2          # 1->2 (1 s), 3->4 (1 s)
    assert np.allclose(times.per_step[times.kept], [1.0, 1.0])


def test_later_value_wins_on_the_curve(make_table):
    a = {"points": [(T, s, float(s), 1.0) for s in range(1, 9)] + [(V, 4, 4.5, 0.9),
                                                                  (V, 8, 8.5, 0.7)]}
    b = {"points": [(T, s, 100.0 + s, 1.0) for s in range(5, 13)] + [(V, 8, 108.5, 0.8),
                                                                    (V, 12, 112.5, 0.75)]}
    r = cost_report(make_table([a, b]), cfg(train_records=40, global_batch=10))
    assert r["val_tag"] == V and r["steps_per_epoch_from_val"] == 4
    assert [(p["epoch"], p["step"], p["value"]) for p in r["val_curve"]] == [
        (1, 4, 0.9), (2, 8, 0.8), (3, 12, 0.75)]
    assert (r["best_epoch"], r["best_val"]) == (3, 0.75)
    assert r["val_epochs"] == 3 and r["epochs_run"] == 3.0


def test_best_max_picks_highest(make_table):
    a = {"points": [(T, s, float(s), 1.0) for s in range(1, 9)]
         + [(V, 4, 4.0, 0.9), (V, 8, 8.0, 0.7)]}
    r = cost_report(make_table([a]), cfg(best="max"))
    assert (r["best_epoch"], r["best_val"]) == (1, 0.9)


def test_records_fallback_and_disagreement_warning(make_table):
    a = seg(list(range(1, 11)), [float(s) for s in range(1, 11)])
    r = cost_report(make_table([a]), cfg(train_records=45, drop_last=False))
    assert r["val_tag"] is None and r["steps_per_epoch_from_val"] is None
    assert r["steps_per_epoch"] == r["steps_per_epoch_from_records"] == 5
    b = {"points": a["points"] + [(V, 3, 3.5, 1.0), (V, 6, 6.5, 1.0), (V, 9, 9.5, 1.0)]}
    r = cost_report(make_table([b]), cfg(train_records=45, drop_last=True))
    assert r["steps_per_epoch"] == 3 and r["steps_per_epoch_from_records"] == 4
    assert len(r["warnings"]) == 1 and "gives 3 steps/epoch" in r["warnings"][0]


@pytest.mark.parametrize(("n", "b", "drop", "want"),
                         [(150063, 16, True, 9378), (150063, 16, False, 9379),
                          (96000, 32, True, 3000), (96000, 32, False, 3000), (829, 64, False, 13)])
def test_steps_per_epoch_from_records(n, b, drop, want):
    assert cost.steps_per_epoch_from_records(n, b, drop) == want


def test_epoch_spacing_zero_based_and_offset():
    assert cost.epoch_spacing(np.array([9378, 18756, 28134]), base=1) == 9378
    assert cost.epoch_spacing(np.array([2999, 5999]), base=0) == 3000
    assert cost.epoch_spacing(np.array([9378, 28134]), base=1) == 9378        # epoch 2 lost
    assert cost.epoch_spacing(np.array([1005, 2005, 3005]), base=1) == 1000   # via gaps
    assert cost.epoch_spacing(np.array([1, 2, 3]), base=1) is None            # epoch-indexed
    assert cost.epoch_spacing(np.array([7]), base=1) == 7


def test_val_tag_detection_prefers_val_names(make_table):
    pts = [(T, s, float(s), 1.0) for s in range(1, 101)]
    pts += [("lr", s, float(s), 0.1) for s in range(25, 101, 25)]
    pts += [("metrics/val_acc", s, float(s), 0.5) for s in (50, 100)]
    pts += [("final", 100, 100.0, 3.0)]
    series = cost.run_series(make_table([{"points": pts}]), ".")
    assert cost.pick_step_tag(series) == T
    assert cost.pick_val_tag(series, T) == "metrics/val_acc"
    del series["metrics/val_acc"]
    assert cost.pick_val_tag(series, T) == "lr"       # a lone point ("final") is no epoch tag


def test_wrong_tag_flags_name_the_tag(make_table):
    table = make_table([seg([1, 2, 3], [0.0, 1.0, 2.0])])
    with pytest.raises(InputError, match="--step-tag nope: not a scalar tag"):
        cost_report(table, cfg(step_tag="nope"))
    with pytest.raises(InputError, match="--val-tag nope"):
        cost_report(table, cfg(val_tag="nope"))


def test_header_only_and_empty_runs(make_table):
    table = make_table([seg([1, 2], [10.0, 11.0], start=5.0), {"start": 20.0}])
    r = cost_report(table, cfg())
    assert r["launches"] == 2 and r["segments"] == 1 and r["header_only_files"] == 1
    assert r["calendar_hours"] == pytest.approx(15.0 / 3600)
    # active runs from the first logged step (10) to the last (11); the header at 5 is start-up
    assert r["active_hours"] == pytest.approx(1.0 / 3600)
    assert r["startup_hours"] == pytest.approx(5.0 / 3600)
    acc = r["account"]
    assert acc["useful_steps"] * 3600 == pytest.approx(1.0)
    assert acc["waiting"] * 3600 == pytest.approx(9.0)      # 11 -> the dead launch at 20
    assert acc["total"] == pytest.approx(r["calendar_hours"])
    assert r["calendar_overhead"] == pytest.approx(15.0)
    with pytest.raises(DataError, match="no scalar points"):
        cost_reports(make_table([{"start": 1.0}]), cfg())


def test_multi_run_reports_are_separate(make_table):
    a = seg([1, 2, 3], [0.0, 1.0, 2.0], run="a")
    b = seg([1, 2, 3], [0.0, 2.0, 4.0], run="b")
    reports = cost_reports(make_table([a, b]), cfg())
    assert sorted(reports) == ["a", "b"]
    assert reports["a"]["step_time_s"]["median"] == 1.0
    assert reports["b"]["step_time_s"]["median"] == 2.0
    with pytest.raises(InputError, match="expected one run"):
        cost_report(make_table([a, b]), cfg())


def test_damage_is_listed_and_counted(make_table):
    from rightsize.telemetry.table import Problem

    table = make_table([seg([1, 2, 3], [0.0, 1.0, 2.0])],
                       problems=(Problem("x.tfevents", 96, "payload_crc", 40),))
    r = cost_report(table, cfg())
    assert r["damaged_records"] == 1 and r["damaged_bytes"] == 40
    assert r["damage"] == [{"file": "x.tfevents", "offset": 96, "kind": "payload_crc",
                            "bytes_skipped": 40}]
    assert any("payload_crc at byte 96" in w for w in r["warnings"])


def test_config_validation_names_the_flag():
    with pytest.raises(ParamsError, match="--global-batch"):
        cfg(global_batch=0).validate()
    with pytest.raises(ParamsError, match="--flops-per-unit"):
        cfg(flops_per_unit=1e9).validate()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), st.floats(-5, 900)), max_size=12),
                min_size=1, max_size=4),
       st.floats(1, 800))
def test_step_times_match_a_plain_loop(segments, gap_s):
    """Vectorised deltas equal a per-point loop over each segment (the rules, spelled out)."""
    steps, walls, files = [], [], []
    for f, seg_pts in enumerate(segments):
        s, w = 0, 1000.0 * f
        for dstep, dwall in seg_pts:
            s, w = s + dstep, w + dwall
            steps.append(s)
            walls.append(w)
            files.append(f)
    series = cost.Series(np.array(steps, np.int64), np.array(walls), np.zeros(len(steps)),
                         np.array(files, np.int32))
    times = cost.step_times(series, gap_s)
    want = []
    logged = 0
    for i in range(1, len(steps)):
        if files[i] != files[i - 1]:
            continue
        logged += 1
        ds, dw = steps[i] - steps[i - 1], walls[i] - walls[i - 1]
        if ds > 0 and 0 <= dw < gap_s:
            want.append(dw / ds)
    assert times.logged == logged and times.n == len(want)
    assert np.array_equal(times.per_step[times.kept], np.array(want))
    if want:
        assert times.quantiles()["median"] == pytest.approx(float(np.median(want)))
