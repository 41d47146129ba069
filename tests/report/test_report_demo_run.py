"""End to end on a real synthetic run: demo-run -> telemetry -> report (the verbs' real output)."""

from __future__ import annotations

import json

import yaml
from report_fixtures import REPO, run_report

from rightsize import cli, fmt


def test_report_on_real_telemetry_output(tmp_path):
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(
        {"telemetry": params["telemetry"], "train": {"probes": ["ecg", "echo"]}}))
    run_dir = tmp_path / "data/telemetry/demo"
    tel_json = tmp_path / "metrics/telemetry/demo.json"
    assert cli.main(["-q", "demo-run", str(run_dir), "--seed", "0"]) == 0
    assert cli.main(["-q", "telemetry", str(run_dir), "--params", str(tmp_path / "params.yaml"),
                     "--run", "demo", "--json", str(tel_json), "--val-csv",
                     str(tmp_path / "metrics/telemetry/demo_val.csv")]) == 0
    tel = json.loads(tel_json.read_text())

    built = run_report(tmp_path)
    assert built.code == 0, built.stderr
    verdict = next(v for v in json.loads(built.stdout)["verdicts"] if v["key"] == "run:demo")
    assert f"One epoch costs {fmt.number(tel['gpu_hours_per_epoch'])} GPU-hours" \
        in verdict["text"]
    assert f"across {tel['launches']} launches" in verdict["text"]
    last = tel["projection"]["schedules"][-1]
    assert f"{last['epochs']} epochs: {fmt.number(last['compute_hours'])} h compute" \
        in verdict["text"]
    for name in ("demo_val_curve", "demo_step_time", "demo_timeline"):
        assert (built.out / "figures" / f"{name}.png").is_file(), name
    md = built.md
    assert md.count("| none (header only) |") == tel["header_only_files"]
    for row in tel["segment_table"]:
        assert f"| {row['host']} | {row['pid']} |" in md
    assert "https://" not in built.html and "http://" not in built.html
