"""``--headline JSON``: the few numbers dvc.yaml declares as metrics, beside the detail JSON."""

from __future__ import annotations

import json
import shutil

import pytest

from rightsize.cli import main

HEADLINE_VERBS = {"telemetry", "cohort", "train", "footprint", "sizing", "bench-encoder"}


def test_the_verbs_dvc_yaml_runs_take_a_headline_flag():
    import argparse

    from rightsize.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for verb in HEADLINE_VERBS:
        flags = {s for a in sub.choices[verb]._actions for s in a.option_strings}
        assert "--headline" in flags, verb


def test_a_run_is_named_after_run_else_after_the_file(demo_dir, tmp_path):
    base = ["telemetry", str(demo_dir), "--train-records", "48000", "--global-batch", "16",
            "--target-epochs", "5", "--json", str(tmp_path / "detail.json"), "-q"]
    assert main([*base, "--headline", str(tmp_path / "mine.json")]) == 0
    detail = json.loads((tmp_path / "detail.json").read_text())
    head = json.loads((tmp_path / "mine.json").read_text())
    assert list(head) == ["mine"]
    assert head["mine"]["epoch_hours"] == detail["epoch_hours"]
    assert head["mine"]["eta_hours"] == detail["eta"]["remaining_calendar_hours"]
    assert main([*base, "--headline", str(tmp_path / "s.json"), "--headline-unit", "seconds"]) == 0
    secs = json.loads((tmp_path / "s.json").read_text())["s"]
    assert secs["active_s"] == detail["active_hours"] * 3600
    assert secs["step_time_s"] == detail["step_time_s"]["median"]
    assert "active_hours" not in secs


def test_a_folder_of_runs_gets_one_entry_per_run(demo_dir, tmp_path):
    runs = tmp_path / "runs"
    for name in ("a", "b"):
        shutil.copytree(demo_dir, runs / name)
    assert main(["telemetry", str(runs), "--train-records", "48000", "--global-batch", "16",
                 "--json", str(tmp_path / "d.json"), "--headline", str(tmp_path / "h.json"),
                 "-q"]) == 0
    head = json.loads((tmp_path / "h.json").read_text())
    assert list(head) == ["h"] and sorted(head["h"]) == ["a", "b"]
    assert head["h"]["a"]["epochs_run"] == head["h"]["b"]["epochs_run"] > 0


def test_train_headline_comes_from_evaluate_and_missing(work, tmp_path):
    args = ["train", "echo", "--params", str(work / "params.yaml"),
            "--manifest", str(work / "manifest.parquet"), "--out", str(tmp_path / "echo"), "-q"]
    assert main([*args, "--eval-json", str(tmp_path / "e.json"),
                 "--missing-json", str(tmp_path / "m.json"),
                 "--headline", str(tmp_path / "h.json")]) == 0
    ev = json.loads((tmp_path / "e.json").read_text())
    miss = json.loads((tmp_path / "m.json").read_text())
    head = json.loads((tmp_path / "h.json").read_text())["echo"]
    assert head["test_mae"] == ev["test"]["mae"]
    assert head["test_mae_sd"] == ev["test"]["mae_sd"]
    assert head["train_eval_s"] == ev["wall_clock_s"]["total"]
    if miss["n_rows"]:
        assert head["mae_no_ecg"] == miss["ecg_absent"]["mae"]
    else:
        assert "mae_no_ecg" not in head


@pytest.mark.parametrize(("args", "message"), [
    (["train", "echo", "--eval-json", "e.json"],
     "--headline: needs --eval-json and --missing-json"),
    (["cohort", "--check", "m.parquet"], "drop --out/--metrics/--truth/--headline"),
])
def test_headline_flag_misuse_is_a_one_line_error(work, tmp_path, capsys, args, message):
    common = ["--params", str(work / "params.yaml")]
    if args[0] == "train":
        common += ["--manifest", str(work / "manifest.parquet"), "--out", str(tmp_path / "x")]
    assert main([*args, *common, "--headline", str(tmp_path / "h.json"), "-q"]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "h.json").exists()
