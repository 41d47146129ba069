"""Every verb that reports has machine-readable output; ``-`` sends it to stdout."""

from __future__ import annotations

import argparse
import json

import pytest

from rightsize.cli import ALIASES, build_parser, main

# verb -> the option giving its report as JSON. A new verb must be added here (or to
# NO_REPORT) deliberately, so a verb that prints a table without JSON cannot slip in.
JSON_OPTION = {
    "scalars": "--json", "telemetry": "--json", "rescue": "--json", "verify": "--json",
    "cohort": "--metrics", "train": "--metrics", "evaluate": "--json",
    "missing-modality": "--json", "footprint": "--json", "sizing": "--json",
    "bench-encoder": "--json", "token-cost": "--json",
    "spread": "--json", "sweep": "--json", "report": "--json", "extract": "--metrics",
    "planted-ceiling": "--json", "compare-probes": "--json", "check-params": "--json",
    "machine": "--json",
}
NO_REPORT = {"demo-run",     # writes files and its truth JSON (--truth); prints no report
             "ecg-demo",     # writes a corpus; prints no report
             "ecg-input"}    # writes one record's model input (.npy); prints no report


def test_every_reporting_verb_has_a_json_option():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) - set(ALIASES) == set(JSON_OPTION) | NO_REPORT
    for verb, option in JSON_OPTION.items():
        flags = {s for a in sub.choices[verb]._actions for s in a.option_strings}
        assert option in flags, verb
    telemetry = {s for a in sub.choices["telemetry"]._actions for s in a.option_strings}
    assert "--format" in telemetry


def _stdout_json(capsys, args: list[str]) -> dict:
    capsys.readouterr()
    assert main(args) == 0
    out = capsys.readouterr().out
    return json.loads(out)


def test_verify_and_rescue_json_on_stdout_match_the_file(demo_dir, tmp_path, capsys):
    doc = _stdout_json(capsys, ["verify", str(demo_dir), "--json", "-"])
    assert main(["verify", str(demo_dir), "--json", str(tmp_path / "v.json"), "-q"]) == 0
    assert doc == json.loads((tmp_path / "v.json").read_text())
    assert doc["ok"] is True and doc["files"] == 8

    doc = _stdout_json(capsys, ["rescue", str(demo_dir), str(tmp_path / "c"), "--json", "-"])
    assert (doc["copied"], doc["unchanged"], doc["files"]) == (8, 0, 8)
    assert doc["bytes"] == sum(f.stat().st_size for f in demo_dir.glob("events.*"))
    doc = _stdout_json(capsys, ["rescue", str(demo_dir), str(tmp_path / "c"), "--json", "-",
                                "--into-existing"])
    assert (doc["copied"], doc["updated"], doc["unchanged"]) == (0, 0, 8)


def test_telemetry_json_dash_equals_format_json_and_the_file(demo_dir, tmp_path, capsys):
    base = ["telemetry", str(demo_dir), "--train-records", "48000", "--global-batch", "16"]
    dash = _stdout_json(capsys, [*base, "--json", "-"])
    fmt = _stdout_json(capsys, [*base, "--format", "json", "--json", str(tmp_path / "t.json")])
    assert dash == fmt == json.loads((tmp_path / "t.json").read_text())
    assert dash["step_tag"] == "Loss/train_step"


def test_cohort_metrics_dash_and_scalars_json(work, demo_dir, tmp_path, capsys):
    doc = _stdout_json(capsys, ["cohort", "--params", str(work / "params.yaml"),
                                "--out", str(tmp_path / "m.parquet"), "--metrics", "-", "-q"])
    assert (doc["n_subjects"], doc["n_train"], doc["echo_dim"]) == (120, 80, 16)
    assert doc["manifest_bytes"] == (tmp_path / "m.parquet").stat().st_size
    doc = _stdout_json(capsys, ["scalars", str(demo_dir), "-o", str(tmp_path / "s.csv"),
                                "--json"])
    assert (doc["files"], doc["points"], doc["problems"]) == (8, 13026, 0)


@pytest.mark.parametrize("verb", ["evaluate", "missing-modality"])
def test_probe_json_dash(work, capsys, verb):
    doc = _stdout_json(capsys, [verb, "fused", "--params", str(work / "params.yaml"),
                                "--manifest", str(work / "manifest.parquet"),
                                "--model", str(work / "fused"), "--json", "-", "-q"])
    part = doc["test"] if verb == "evaluate" else doc["both_present"]
    assert part["mae_lo"] <= part["mae"] <= part["mae_hi"]


def test_train_metrics_dash(work, tmp_path, capsys):
    doc = _stdout_json(capsys, ["train", "echo", "--params", str(work / "params.yaml"),
                                "--manifest", str(work / "manifest.parquet"),
                                "--out", str(tmp_path / "echo"), "--metrics", "-", "-q"])
    assert doc["probe"] == "echo" and doc["epochs"] == 2 and doc["steps"] == 2 * 3
