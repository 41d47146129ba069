"""The calendar account, checkpoints, epochs after best and the ETA (issue 14).

Truth comes from three places: the demo generator's plan (planted start-up, waits, redone
steps, checkpoint writes, validation pauses and close events), hand-built tables whose every
number is derivable by hand, and the rescued RampNet run against its published write-up
(44.7 h active over 74.6 h calendar, x1.67).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rightsize.cli import main
from rightsize.errors import ParamsError
from rightsize.telemetry.account import PARTS
from rightsize.telemetry.cost_report import cost_report, cost_reports
from rightsize.telemetry.report_config import CostReportConfig, RunParams

DEMO = {"train_records": 96000, "global_batch": 32, "gpus": 8, "drop_last": True}
RAMPNET = {"train_records": 150063, "global_batch": 16, "gpus": 16, "drop_last": True}
T, V = "loss/train", "loss/val"


def assert_adds_up(r: dict) -> None:
    """The six parts sum to the calendar within 1 s, and none is negative."""
    acc = r["account"]
    assert abs(sum(acc[k] for k in PARTS) - r["calendar_hours"]) * 3600 <= 1.0
    assert acc["total"] == pytest.approx(sum(acc[k] for k in PARTS))
    assert all(acc[k] >= -1e-9 for k in PARTS), acc
    assert acc["useful_steps"] + acc["redone_steps"] + acc["in_segment_pauses"] == pytest.approx(
        r["active_hours"], abs=1e-9)


@pytest.mark.parametrize(("seed", "log_every"), [(0, 1), (1, 1), (4, 1), (2, 10), (7, 10)])
def test_demo_account_and_checkpoints_match_the_plan(seed, log_every, demo_factory,
                                                     read_scalars):
    run, truth = demo_factory(seed, log_every)
    r = cost_report(read_scalars(run), CostReportConfig(**DEMO))
    assert_adds_up(r)
    for part in PARTS:
        assert r["account"][part] == pytest.approx(truth["account"][part], rel=1e-9,
                                                   abs=1e-12), part
    # every planted kind of lost time is there
    for part in ("redone_steps", "in_segment_pauses", "startup", "tail", "waiting"):
        assert truth["account"][part] > 0, part
    assert r["startup_hours"] == pytest.approx(truth["startup_hours"], rel=1e-9)
    assert r["tail_hours"] == pytest.approx(truth["tail_hours"], rel=1e-9)
    c = r["checkpoints"]
    assert c["restarts"] == truth["restarts"] > 0
    assert c["lost_steps_per_restart"] == pytest.approx(truth["lost_steps_per_restart"])
    assert c["checkpoint_interval_steps"] == truth["checkpoint_interval_steps"] == 500
    assert c["checkpoint_interval_from_step_times"] == 500
    assert c["checkpoint_interval_from_resumes"] % 500 == 0
    assert c["checkpoint_writes_seen"] == truth["checkpoint_writes"]
    assert c["checkpoint_write_s"] == pytest.approx(truth["checkpoint_write_s"], rel=1e-9)
    assert c["young_daly_steps"] > 0 and "Young/Daly" in c["advice"]


def test_demo_truth_survives_tensorboards_reader(demo_factory, tb_table):
    run, truth = demo_factory(3, 10)
    r = cost_report(tb_table(run), CostReportConfig(**DEMO))
    for part in PARTS:
        assert r["account"][part] == pytest.approx(truth["account"][part], rel=1e-9), part
    assert r["checkpoints"]["checkpoint_write_s"] == pytest.approx(truth["checkpoint_write_s"],
                                                                   rel=1e-9)


def seg(steps, walls, tag=T, **kw) -> dict:
    return {"points": [(tag, s, w, 1.0) for s, w in zip(steps, walls, strict=True)], **kw}


def test_hand_built_account(make_table):
    # launch A: header at 0, steps 1..6 at 10..15 with a 700 s pause before step 5, close at 720
    a = seg([1, 2, 3, 4, 5, 6], [10.0, 11.0, 12.0, 13.0, 713.0, 714.0], start=0.0, end=720.0)
    # a dead launch at 800; launch B: header 1000, resumes at 5 (from checkpoint 4), 1100..1103
    dead = {"start": 800.0}
    b = seg([5, 6, 7, 8], [1100.0, 1102.0, 1104.0, 1106.0], start=1000.0, end=1106.0)
    r = cost_report(make_table([a, dead, b]), CostReportConfig(train_records=40, global_batch=10))
    acc = {k: v * 3600 for k, v in r["account"].items()}
    assert acc["in_segment_pauses"] == pytest.approx(700.0)
    assert acc["useful_steps"] == pytest.approx(3.0 + 1.0 + 2.0 + 2.0)  # A: 1->4, 5->6; B: 6->8
    assert acc["redone_steps"] == pytest.approx(2.0)                   # B: 5->6 ran before
    assert acc["startup"] == pytest.approx(10.0 + 100.0)
    assert acc["tail"] == pytest.approx(6.0)
    assert acc["waiting"] == pytest.approx(1000.0 - 720.0)
    assert_adds_up(r)
    assert r["active_hours"] * 3600 == pytest.approx(704.0 + 6.0)
    c = r["checkpoints"]
    assert c["restarts"] == 1 and c["lost_steps_per_restart"] == 2      # steps 5, 6 again
    assert c["checkpoint_interval_from_resumes"] == 4
    assert c["mean_hours_between_interruptions"] == pytest.approx(r["active_hours"])


def test_one_segment_adds_up_and_says_no_interruptions(make_table):
    a = seg(list(range(1, 21)), [5.0 + i for i in range(20)], start=0.0, end=30.0)
    r = cost_report(make_table([a]), CostReportConfig(train_records=40, global_batch=10))
    assert_adds_up(r)
    assert r["account"]["waiting"] == 0 and r["account"]["redone_steps"] == 0
    c = r["checkpoints"]
    assert c["restarts"] == 0 and c["mean_hours_between_interruptions"] is None
    assert c["advice"].startswith("no interruptions observed")
    assert c["young_daly_steps"] is None


def test_overlapping_segments_are_reported_not_hidden(make_table):
    a = seg([1, 2, 3], [0.0, 10.0, 20.0])
    b = seg([1, 2, 3], [15.0, 25.0, 35.0], host="other")
    r = cost_report(make_table([a, b]), CostReportConfig(train_records=40, global_batch=10))
    assert r["account"]["overlap_hours"] * 3600 == pytest.approx(5.0)
    assert any("overlap" in w for w in r["warnings"])


def test_epochs_after_best(make_table):
    pts = [(T, s, float(s), 1.0) for s in range(1, 21)]
    pts += [(V, 4, 4.5, 0.9), (V, 8, 8.5, 0.5), (V, 12, 12.5, 0.6), (V, 16, 16.5, 0.7),
            (V, 20, 20.5, 0.8)]
    r = cost_report(make_table([{"points": pts}]),
                    CostReportConfig(train_records=40, global_batch=10))
    assert r["best_epoch"] == 2 and r["epochs_after_best"] == 3.0
    assert r["compute_hours_after_best"] == pytest.approx(12 * 1.0 / 3600)


def test_eta_from_the_last_segment(make_table):
    a = seg([1, 2, 3, 4], [0.0, 2.0, 4.0, 6.0])                    # 2 s/step
    b = seg([5, 6, 7, 8, 9, 10], [100.0, 101.0, 102.0, 103.0, 104.0, 105.0], end=110.0)
    r = cost_report(make_table([a, b]),
                    CostReportConfig(train_records=40, global_batch=10, target_epochs=5))
    e = r["eta"]
    assert e["target_step"] == 20 and e["remaining_steps"] == 10
    assert e["step_time_s"] == 1.0 and e["step_time_from"] == "last segment's median"
    assert e["remaining_compute_hours"] == pytest.approx(10 / 3600)
    assert e["remaining_calendar_hours"] == pytest.approx(10 / 3600 * r["calendar_overhead"])
    assert e["as_of_wall_time"] == 110.0
    assert e["finish_wall_time"] == pytest.approx(110.0 + 10 * r["calendar_overhead"])
    done = cost_report(make_table([a, b]),
                       CostReportConfig(train_records=40, global_batch=10, target_epochs=2))
    assert done["eta"]["remaining_steps"] == 0 and done["eta"]["remaining_compute_hours"] == 0


@pytest.mark.parametrize("bad", ["0", "-3", "x"])
def test_target_epochs_must_be_positive(bad, demo_factory, capsys):
    run, _ = demo_factory(0, 1)
    with pytest.raises(SystemExit) as exc:
        main(["telemetry", str(run), "--train-records", "96000", "--global-batch", "32",
              "--target-epochs", bad])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--target-epochs" in err and "positive integer" in err


def test_target_epochs_param_is_checked():
    with pytest.raises(ParamsError, match=r"telemetry\.runs\.x\.target_epochs"):
        RunParams(train_records=1, global_batch=1, target_epochs=0).validate("telemetry.runs.x")


def _newest(run: Path) -> Path:
    return sorted(run.glob("events.out.tfevents.*"), key=lambda p: int(p.name.split(".")[3]))[-1]


def test_live_file_tail_is_not_damage(demo_factory, read_scalars, tmp_path, capsys):
    src, _ = demo_factory(0, 1)
    run = tmp_path / "live"
    shutil.copytree(src, run)
    newest = _newest(run)
    data = newest.read_bytes()
    cut = data[:30]          # the first record's framing (12 bytes) and 18 bytes of its payload
    newest.write_bytes(data + cut)
    out = tmp_path / "r.json"
    assert main(["telemetry", str(run), "--train-records", "96000", "--global-batch", "32",
                 "--drop-last", "--strict", "--json", str(out), "--target-epochs", "5"]) == 0
    r = json.loads(out.read_text())
    assert r["damaged_records"] == 0 and r["partial_tail_bytes"] == 30
    assert r["warnings"] == [] and r["eta"]["remaining_steps"] > 0
    assert "still being written" in capsys.readouterr().err
    # the same cut in an older file is damage
    older = sorted(run.glob("events.out.tfevents.*"))[0]
    newest.write_bytes(data)
    older.write_bytes(older.read_bytes() + cut)
    r = cost_reports(read_scalars(run), CostReportConfig(**DEMO))["."]
    assert r["damaged_records"] == 1 and r["partial_tail_bytes"] == 0


@pytest.fixture(scope="module")
def rampnet_report(rampnet_table):
    from rightsize.telemetry.report_config import ProjectionConfig

    proj = ProjectionConfig(150063, 150063, 600000, (1, 5, 12))
    return cost_report(rampnet_table, CostReportConfig(**RAMPNET, projection=proj))


def test_rampnet_matches_the_published_write_up(rampnet_report):
    r = rampnet_report
    assert round(r["active_hours"], 1) == 44.7 and round(r["calendar_hours"], 1) == 74.6
    assert round(r["calendar_overhead"], 2) == 1.67
    assert_adds_up(r)
    # the projection's calendar is compute x the new overhead (it was x1.58 before)
    p = r["projection"]
    for e in (1, 5, 12):
        assert p[f"e{e}_calendar_hours"] == pytest.approx(
            p[f"e{e}_compute_hours"] * r["calendar_overhead"])


def test_rampnet_checkpoints(rampnet_report):
    c = rampnet_report["checkpoints"]
    assert c["restarts"] == 14
    assert c["checkpoint_interval_from_resumes"] == 1000
    assert c["checkpoint_interval_from_step_times"] == 1000 == c["checkpoint_interval_steps"]
    assert c["checkpoint_slow_share"] >= 0.9 and c["checkpoint_writes_seen"] >= 100
    assert 0.5 < c["checkpoint_write_s"] < 2.0          # about one step's time extra
    assert c["young_daly_steps"] < 1000
    assert c["overhead_hours_at_young_daly"] < c["overhead_hours_at_interval"]


def test_every_new_key_is_a_scalar(rampnet_report):
    r = rampnet_report
    for key in ("startup_hours", "tail_hours", "epochs_after_best", "compute_hours_after_best",
                "partial_tail_bytes"):
        assert isinstance(r[key], int | float) and not isinstance(r[key], bool), key
    for block in ("account", "checkpoints"):
        for k, v in r[block].items():
            if k != "notes":
                assert isinstance(v, int | float | str) and not isinstance(v, bool), (block, k)


def test_account_adds_up_on_every_corpus_run(read_scalars, rampnet):
    corpus = rampnet.parent / "corpus"
    if not corpus.is_dir():
        pytest.skip("../shared/telemetry/corpus not present")
    n = 0
    for sub in sorted(p for p in corpus.iterdir() if p.is_dir()):
        for name, r in cost_reports(read_scalars(sub),
                                    CostReportConfig(train_records=100, global_batch=10)).items():
            assert_adds_up(r)
            assert r["account"]["overlap_hours"] == 0, (sub.name, name)
            n += 1
    assert n >= 30
