"""A pilot extraction calibrates the ask (issue 41): each scenario re-predicted from the
pilot's measured seconds per record and start-up, with its machine named; a file that is
not a pilot is exit 4 before anything is measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sizing_fixtures import SIZING_BLOCK, bench_dict, write_manifest, write_params

from rightsize.cli import main
from rightsize.sizing.pilot import pilot_startup, pilot_wall

PILOT = {"records": 200, "workers": 2, "wall_s": 30.0, "model": "HuBERT-ECG base",
         "parts_worker_s": {"preprocessing": 4.0, "compute": 34.0, "writing": 2.0},
         "startup_and_other_s": 10.0, "shard_records": 64, "shard_sizes": [64, 64, 64, 8],
         "crops_per_record": 1, "peak_rss_mb_max_worker": 1000.0,
         "hardware": {"cpu": "Some CPU", "threads": 2}}


def test_the_pilot_start_up_is_its_rest_less_its_own_schedule_idle() -> None:
    """0.2 s per record per worker: the pilot's schedule (an older cut, a short last shard)
    gave one worker 128 records (25.6 s), so the start-up is 30 - 25.6 = 4.4 s, and 2,000
    records at shard_records 64 (32 equal shards: 16 of 63, 16 of 62) on 2 workers take
    4.4 s + 1,000 x 0.2 s (each worker 8 + 8 shards)."""
    start, how = pilot_startup(PILOT)
    assert start == pytest.approx(4.4) and "idle" in how
    p = pilot_wall(PILOT, 2000, 1)
    assert p["seconds_per_record_per_worker"] == pytest.approx(0.2)
    assert p["wall_s"] == pytest.approx(4.4 + 1000 * 0.2)
    assert pilot_wall(PILOT, 2000, 2)["scaled"] == "x2: 2 crops per record from the pilot's 1"


def _tree(tmp_path: Path, pilot: object) -> list[str]:
    enc = tmp_path / "encoders"
    enc.mkdir(exist_ok=True)
    (enc / "ecg.json").write_text(json.dumps(bench_dict()))
    (enc / "echo.json").write_text(json.dumps(bench_dict("echojepa", "vitl",
                                                          preprocess_rate=None)))
    (tmp_path / "pilot.json").write_text(json.dumps(pilot))
    manifest = write_manifest(tmp_path / "m.parquet", [True, True, False, True], [2, 0, 3, 1])
    params = write_params(tmp_path / "params.yaml",
                          disk={**SIZING_BLOCK["disk"], "path": str(tmp_path)})
    return ["sizing", "--params", str(params), "--manifest", str(manifest), "--bench-dir",
            str(enc), "--gpu-dir", str(tmp_path / "none"), "--json", str(tmp_path / "o.json"),
            "--pilot", str(tmp_path / "pilot.json")]


def test_sizing_with_a_pilot_re_predicts_each_ecg_scenario_and_prints_its_request(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_tree(tmp_path, PILOT)) == 0
    out = json.loads((tmp_path / "o.json").read_text())
    corpus = out["pilot"]["scenarios"]["ecg_corpus"]["ecg"]
    assert corpus["wall_s"] == pytest.approx(pilot_wall(PILOT, 800_000, 1)["wall_s"])
    assert out["pilot"]["machine"].startswith("Some CPU (not this machine")
    assert "echo_corpus/echo" in out["pilot"]["not_covered"]
    assert out["text"]["pilot"][0].startswith("pilot: 200 records in 30 s on 2 workers of "
                                              "Some CPU (not this machine")
    assert any(s.startswith("ecg_corpus/ecg: 800,000 records in ") and
               ", the bench predicts " in s for s in out["text"]["pilot"])
    req = out["pilot"]["requests"]["ecg_corpus"]
    assert req["option"] == "cpu" and req["array"] >= 2 and req["cpus_per_task"] == 2
    printed = capsys.readouterr().out
    assert "# ecg_corpus from the pilot (200 records on Some CPU" in printed
    assert f"#SBATCH --array=0-{req['array'] - 1}" in printed
    assert "# scratch: needs 457 GB of shards; " in printed


@pytest.mark.parametrize("pilot, words", [
    ([], "not an extract metrics file (a JSON object is expected, got list)"),
    ({**PILOT, "workers": 0}, "workers must be a positive integer, got 0"),
    ({**PILOT, "parts_worker_s": {"compute": 1.0}}, "parts_worker_s must hold"),
    ({**PILOT, "wall_s": float("nan")}, "wall_s must be a finite number of seconds"),
])
def test_a_pilot_that_is_not_one_is_exit_4_before_the_disk_is_measured(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], pilot: object, words: str) -> None:
    assert main(_tree(tmp_path, pilot)) == 4
    assert f"pilot.json: {words}" in capsys.readouterr().err
    assert not list(tmp_path.glob(".rightsize-disk-*")) and not (tmp_path / "o.json").exists()
