"""The telemetry verb: params merging, outputs, multi-run roots, damage, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rightsize.cli import main

REPO = Path(__file__).resolve().parents[2]
PARAMS = REPO / "params.yaml"


def err_lines(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln]


@pytest.fixture()
def demo(demo_factory, read_scalars):
    return demo_factory(2, 10)


def test_outputs_json_csv_and_stdout(demo, tmp_path, capsys):
    run, truth = demo
    out, csv = tmp_path / "m" / "r.json", tmp_path / "m" / "val.csv"
    assert main(["telemetry", str(run), "--params", str(PARAMS), "--run", "demo",
                 "--json", str(out), "--val-csv", str(csv)]) == 0
    text = capsys.readouterr().out
    assert "cost report" in text and "Loss/val_epoch" in text and "projection" in text
    doc = json.loads(out.read_text())
    assert doc["projection"]["steps_per_epoch"] == 48000 * 96000 // 12000 // 32
    assert set(doc["projection"]) >= {"e1_calendar_hours", "e5_gpu_hours", "e12_compute_hours"}
    assert doc["mfu"] == pytest.approx(
        32 / doc["step_time_s"]["median"] * 1.2e10 / (8 * 312e12))
    lines = csv.read_text().splitlines()
    assert lines[0] == "epoch,step,value"
    assert [tuple(map(float, ln.split(","))) for ln in lines[1:]] == [
        (p["epoch"], p["step"], p["value"]) for p in truth["val_curve"]]
    assert main(["telemetry", str(run), "--params", str(PARAMS), "--run", "demo",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == doc


def test_explicit_flags_win_over_params(demo, tmp_path, capsys):
    run, _ = demo
    out = tmp_path / "r.json"
    args = ["telemetry", str(run), "--params", str(PARAMS), "--run", "demo",
            "--global-batch", "64", "--gap-s", "1e9", "--json", str(out)]
    assert main(args) == 4                         # 3 val points 3000 apart; records say 1500
    err = err_lines(capsys)
    assert len(err) == 1 and "gives 3000 steps/epoch, but 96000 records / batch 64" in err[0]
    assert "give 1500" in err[0] and not out.exists()
    assert main([*args, "--epoch-from", "val"]) == 0
    doc = json.loads(out.read_text())
    assert doc["global_batch"] == 64 and doc["gpus"] == 8 and doc["gap_s"] == 1e9
    assert doc["steps_per_epoch_from_records"] == 1500 and doc["steps_per_epoch"] == 3000
    assert doc["step_time_s"]["dropped"] == 0
    assert err_lines(capsys) == []


def test_params_errors_name_the_key(demo, tmp_path, capsys):
    run, _ = demo
    bad = tmp_path / "params.yaml"
    bad.write_text("telemetry:\n  gap_s: 600\n  runs:\n    demo: {train_records: 96000, "
                   "global_batch: 32, foo: 1}\n")
    assert main(["telemetry", str(run), "--params", str(bad), "--run", "demo"]) == 2
    assert main(["telemetry", str(run), "--params", str(PARAMS), "--run", "nope"]) == 2
    assert main(["telemetry", str(run), "--params", str(PARAMS)]) == 2
    assert main(["telemetry", str(run)]) == 2
    err = err_lines(capsys)
    assert len(err) == 4 and all(ln.startswith("rightsize: error:") for ln in err)
    assert "telemetry.runs.demo.foo" in err[0]
    assert "telemetry.runs.nope" in err[1]
    assert "--run" in err[2] and "--train-records" in err[3]


def test_multi_run_root(demo_factory, read_scalars, tmp_path, capsys):
    root = tmp_path / "root"
    truths = {}
    for name, seed in (("a", 1), ("b", 2)):
        run, truths[name] = demo_factory(seed, 10)
        shutil.copytree(run, root / name)
    out = tmp_path / "all.json"
    assert main(["telemetry", str(root), "--train-records", "96000", "--global-batch", "32",
                 "--drop-last", "--json", str(out), "--val-csv", str(tmp_path / "v.csv")]) == 0
    text = capsys.readouterr().out
    assert "2 runs" in text and "\na " in text and "\nb " in text
    doc = json.loads(out.read_text())
    assert sorted(doc["runs"]) == ["a", "b"]
    for name, t in truths.items():
        assert doc["runs"][name]["max_step"] == t["max_step"]
        assert doc["runs"][name]["launches"] == t["launches"]
    header, *rows = (tmp_path / "v.csv").read_text().splitlines()
    assert header == "run,epoch,step,value" and len(rows) == sum(
        len(t["val_curve"]) for t in truths.values())


def test_damage_warns_and_strict_exits_3(demo, tmp_path, capsys):
    run, truth = demo
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    victim = max(copy.glob("events.*"), key=lambda p: p.stat().st_size)
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    out = tmp_path / "r.json"
    args = ["telemetry", str(copy), "--params", str(PARAMS), "--run", "demo"]
    assert main([*args, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["damaged_records"] >= 1 and doc["damage"][0]["file"] == victim.name
    warns = [ln for ln in err_lines(capsys) if ln.startswith("rightsize: warning:")]
    assert len(warns) == doc["damaged_records"] and victim.name in warns[0]
    assert doc["max_step"] == truth["max_step"]          # one record lost, the run still reads
    assert main([*args, "--strict"]) == 3
    err = err_lines(capsys)
    assert err[-1].startswith("rightsize: error:") and victim.name in err[-1]


@pytest.mark.parametrize("case", ["missing", "empty", "header_only"])
def test_bad_run_dirs(case, tmp_path, capsys, read_scalars):
    d = tmp_path / "d"
    if case != "missing":
        d.mkdir()
    if case == "header_only":
        from rightsize.ground.event_writer import EventWriter

        EventWriter(d, wall_time=1.7e9, host="h", pid=1).close()
    rc = main(["telemetry", str(d), "--train-records", "10", "--global-batch", "2"])
    assert rc == (4 if case == "header_only" else 2)
    err = err_lines(capsys)
    assert len(err) == 1 and err[0].startswith("rightsize: error:")
    assert ("no scalar points" in err[0]) if case == "header_only" else (str(d) in err[0])
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("flags", [["--train-records", "ten", "--global-batch", "2"],
                                   ["--train-records", "10", "--global-batch", "0"],
                                   ["--train-records", "10", "--global-batch", "2",
                                    "--gap-s", "x"],
                                   ["--train-records", "10", "--global-batch", "2",
                                    "--epochs", "1,x"]])
def test_non_numeric_flags_exit_2(flags, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["telemetry", str(tmp_path), *flags])
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_partial_projection_flags(demo, capsys):
    run, _ = demo
    assert main(["telemetry", str(run), "--train-records", "96000", "--global-batch", "32",
                 "--records", "5"]) == 2
    err = err_lines(capsys)
    assert len(err) == 1 and "--base-records" in err[0]


def test_help_has_example(capsys):
    for verb in ("telemetry", "rescue", "verify", "demo-run"):
        with pytest.raises(SystemExit):
            main([verb, "--help"])
        assert "example:" in capsys.readouterr().out
