"""Issue 33 item 7: the load average around each CPU timing, said when above half the cores;
``--require-quiet`` waits for quiet or exits 5. The load reading is injected."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from sizing_fixtures import SIZING_BLOCK, bench_dict, disk_dict

from rightsize.cli import main
from rightsize.errors import MachineBusy
from rightsize.params import parse
from rightsize.sizing import load_average as cpu_load
from rightsize.sizing.config import ScenarioCount, SizingConfig
from rightsize.sizing.plan import size_all

BENCH = {"device": "cpu", "repeats": 3, "warmup": 0, "threads": 1,
         "models": {"ecg": {"family": "hubert_ecg", "size": "small", "batch_sizes": [1],
                            "cpu_timing_layers": 1, "preprocess_records": 2}}}


def _readings(*values: float):                      # noqa: ANN202 - a reader
    it = iter(values)
    return lambda: next(it)


def test_wait_for_quiet_returns_once_the_load_falls() -> None:
    slept: list[float] = []
    got = cpu_load.wait_for_quiet(2, 60, reader=_readings(3.0, 2.5, 0.8), poll_s=5,
                                  sleep=slept.append)
    assert got == 0.8 and slept == [5, 5]


def test_wait_for_quiet_fails_with_exit_5_naming_the_load() -> None:
    with pytest.raises(MachineBusy, match=r"^--require-quiet: load average 2\.20 stayed above "
                                          r"1 \(half of 2 cores\) for 10 s") as err:
        cpu_load.wait_for_quiet(2, 10, reader=lambda: 2.2, poll_s=5, sleep=lambda s: None)
    assert err.value.exit_code == 5


def test_load_log_records_before_and_after_each_timing() -> None:
    log = cpu_load.LoadLog(2, reader=_readings(0.5, 0.7, 0.9, 1.6))
    assert log.around("a", lambda: 41) == 41 and log.around("b", lambda: 42) == 42
    d = log.as_dict()
    assert d["timings"] == [{"what": "a", "before": 0.5, "after": 0.7},
                            {"what": "b", "before": 0.9, "after": 1.6}]
    assert d["loaded"] is True and d["max"] == 1.6 and d["limit"] == 1.0
    with pytest.raises(MachineBusy, match=r"rose to 1\.60 .* during b"):
        log.require_quiet()


def test_the_ask_says_a_loaded_timing_may_be_slow() -> None:
    cfg = parse(SizingConfig, SIZING_BLOCK, "sizing")
    paired = {"ecg": ScenarioCount(1000, "m"), "echo": ScenarioCount(10, "m")}
    echo = bench_dict("echojepa", "vitl", preprocess_rate=None)
    quiet = bench_dict() | {"load": {"cores": 2, "readings": [0.4, 0.9]}}
    loaded = bench_dict() | {"load": {"cores": 2, "readings": [0.4, 2.2]}}
    said = size_all(cfg, {"ecg": loaded, "echo": echo}, {}, paired, disk_dict())["text"]["ask"]
    assert "CPU timing measured under load 2.20 (load average over 2 cores): may be slow." \
        in said
    calm = size_all(cfg, {"ecg": quiet, "echo": echo}, {}, paired, disk_dict())["text"]["ask"]
    assert "under load" not in calm


def _params(tmp_path: Path) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"encoder_bench": BENCH}))
    return path


def test_bench_under_load_exits_0_and_records_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cpu_load, "read_load", lambda: 64.0)
    out = tmp_path / "ecg.json"
    assert main(["bench-encoder", "ecg", "--params", str(_params(tmp_path)),
                 "--json", str(out)]) == 0
    load = json.loads(out.read_text())["load"]
    assert load["loaded"] is True and load["max"] == 64.0
    assert [t["what"] for t in load["timings"]] == ["the encoder timing",
                                                    "the preprocessing timing"]
    assert "measured under load 64.00" in capsys.readouterr().err


def test_require_quiet_on_a_busy_machine_exits_5_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cpu_load, "read_load", lambda: 64.0)
    out = tmp_path / "ecg.json"
    assert main(["bench-encoder", "ecg", "--params", str(_params(tmp_path)), "--json", str(out),
                 "--require-quiet", "0"]) == 5
    assert not out.exists()
    assert "--require-quiet: load average 64.00 stayed above" in capsys.readouterr().err
