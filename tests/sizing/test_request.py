"""The Slurm request per scenario (issue 41): array, cores, memory, time with the margin,
GPUs where they win, scratch against the measured free space; every #SBATCH value checked."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from sizing_fixtures import (
    SIZING_BLOCK,
    SOURCES,
    bench_dict,
    disk_dict,
    write_manifest,
    write_params,
)

from rightsize.cli import main
from rightsize.errors import ParamsError
from rightsize.params import parse
from rightsize.sizing.config import ScenarioCount, SizingConfig
from rightsize.sizing.plan import size_all
from rightsize.sizing.request import directive, slurm_time


def _size(records: int, rate: float, free: int = 10**12, **over: object) -> dict:
    block = {**SIZING_BLOCK, "scenarios": {"big": {"ecg": {"records": records,
                                                           "source": SOURCES["ecg"]}}},
             "ask": {"scenario": "big", "models": ["ecg"]}, **over}
    cfg = parse(SizingConfig, block, "sizing")
    ecg = {**bench_dict(records_per_s=rate, preprocess_rate=None),
           "workers": {"workers": 2, "threads_per_worker": 1, "startup_s": 10.0,
                       "startup_s_min": 10.0, "startup_s_max": 10.0,
                       "peak_rss_mb_per_worker": 1000.0,
                       "throughput": {"batch_4": {"batch": 4,
                                                  "records_per_s_per_worker": rate / 2,
                                                  "records_per_s": rate}}}}
    benches = {"ecg": ecg, "echo": bench_dict("echojepa", "vitl", preprocess_rate=None)}
    return size_all(cfg, benches, {}, {"ecg": ScenarioCount(10, "test")},
                    disk_dict(write_bps=1e12, read_bps=None, free=free, path="data"))


def test_a_cpu_job_over_the_deadline_becomes_an_array_that_meets_it() -> None:
    """100,000 records at 1 record/s = 100,000 s on this machine; the deadline with its
    margin is 24 h / 1.5 = 57,600 s, less 10 s start-up: 2 tasks of 50,010 s, and --time is
    that times 1.5 (75,015 s, 20 h 51 min rounded up to the minute)."""
    r = _size(100_000, 1.0, gpus=1, estimate={"gpu": "L4", "utilisation": [0.0001, 0.0001]})
    req = r["requests"]["big"]
    assert req["option"] == "cpu" and req["array"] == 2 and req["cpus_per_task"] == 2
    assert req["time_s"] == pytest.approx((10 + 100_000 / 2) * 1.5)
    assert "#SBATCH --array=0-1" in req["lines"] and "#SBATCH --cpus-per-task=2" in req["lines"]
    assert "#SBATCH --time=0-20:51:00" in req["lines"]
    assert "#SBATCH --mem=4G" in req["lines"]        # 2 workers x 1000 MiB x 1.5 = 3.1 GB
    assert not any("gres" in line for line in req["lines"])


def test_gpus_that_win_get_one_task_each_with_gres() -> None:
    r = _size(800_000, 1.0)
    req = r["requests"]["big"]
    assert req["option"] == "gpu" and "#SBATCH --gres=gpu:1" in req["lines"]
    assert f"#SBATCH --array=0-{req['array'] - 1}" in req["lines"]
    assert "#SBATCH --cpus-per-task=8" in req["lines"]


def test_shards_over_the_free_space_ask_for_scratch() -> None:
    r = _size(800_000, 1.0, free=66 * 10**9)
    assert r["requests"]["big"]["scratch"] == ("needs 457 GB of shards; data has 66 GB free: "
                                               "request scratch of 457 GB")
    assert r["text"]["answer"] == "Request scratch: needs 457 GB of shards"


@pytest.mark.parametrize("value", ["debug\ntouch /tmp/PWN", "a#b", "x\x07", ""])
def test_a_directive_value_with_newline_hash_or_control_is_refused(value: str) -> None:
    with pytest.raises(ParamsError, match="^sizing.x: .* cannot go on an #SBATCH line"):
        directive("partition", value, "sizing.x")


def test_a_directive_value_with_spaces_is_quoted_and_reads_back() -> None:
    line = directive("job-name", "a b'c", "k")
    assert shlex.split(line.split("=", 1)[1]) == ["a b'c"]
    assert slurm_time(61) == "0-00:02:00" and slurm_time(86_400) == "1-00:00:00"


def test_a_scenario_name_with_a_newline_is_exit_2_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    enc = tmp_path / "encoders"
    enc.mkdir()
    (enc / "ecg.json").write_text(json.dumps(bench_dict()))
    (enc / "echo.json").write_text(json.dumps(bench_dict("echojepa", "vitl",
                                                          preprocess_rate=None)))
    params = write_params(tmp_path / "params.yaml", scenarios={
        "x\ntouch PWN": {"ecg": {"records": 5, "source": "s"}}},
        disk={**SIZING_BLOCK["disk"], "path": str(tmp_path)})
    manifest = write_manifest(tmp_path / "m.parquet", [True], [1])
    assert main(["sizing", "--params", str(params), "--manifest", str(manifest),
                 "--bench-dir", str(enc), "--gpu-dir", str(tmp_path / "none"), "--json",
                 str(tmp_path / "o.json"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sizing.scenarios.'x\\ntouch PWN'" in err[0]
    assert not (tmp_path / "o.json").exists()
