"""Issue 43 items 6, 7, 8 and 17: wrong answers the sizing gave with exit 0, now refused.

A model named twice in the ask, an ask model with no count in its scenario, a rate field in a
CPU bench or a GPU file that is negative, NaN, infinite or with min above max (exit 4 naming
the file and field), and a quota given as a number of bytes (accepted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sizing_fixtures import SIZING_BLOCK, bench_dict, write_manifest, write_params

from rightsize.cli import main


def _tree(tmp_path: Path, ecg: dict | None = None, gpu: dict | None = None,
          **over: object) -> list[str]:
    enc = tmp_path / "encoders"
    enc.mkdir(exist_ok=True)
    (enc / "ecg.json").write_text(json.dumps(ecg or bench_dict()))
    (enc / "echo.json").write_text(json.dumps(bench_dict("echojepa", "vitl",
                                                          preprocess_rate=None)))
    (tmp_path / "gpu").mkdir(exist_ok=True)
    if gpu is not None:
        (tmp_path / "gpu" / "ecg-h100.json").write_text(json.dumps(gpu))
    manifest = write_manifest(tmp_path / "m.parquet", [True, True, False, True], [2, 0, 3, 1])
    over.setdefault("disk", {**SIZING_BLOCK["disk"], "path": str(tmp_path)})
    return ["sizing", "--params", str(write_params(tmp_path / "params.yaml", **over)),
            "--manifest", str(manifest), "--bench-dir", str(enc), "--gpu-dir",
            str(tmp_path / "gpu"), "--json", str(tmp_path / "out.json"), "-q"]


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rightsize: error: "), lines
    return lines[0]


def test_a_model_named_twice_in_the_ask_is_exit_2(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    argv = _tree(tmp_path, ask={"scenario": "paired_cohort", "models": ["ecg", "ecg"]})
    assert main(argv) == 2
    assert "sizing.ask.models: names ecg more than once" in _error(capsys)
    assert not (tmp_path / "out.json").exists()


def test_an_ask_model_without_a_count_in_its_scenario_is_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _tree(tmp_path, ask={"scenario": "ecg_corpus", "models": ["ecg", "echo"]})
    assert main(argv) == 2
    assert ("sizing.ask.models: echo has no count in scenario ecg_corpus "
            "(sizing.scenarios.ecg_corpus counts ecg)") in _error(capsys)


def test_a_paired_ask_model_without_records_is_said_left_out(tmp_path: Path) -> None:
    """The paired cohort's counts come from the manifest: a model with none is named."""
    argv = _tree(tmp_path, ask={"scenario": "paired_cohort", "models": ["ecg", "echo"]})
    (tmp_path / "m.parquet").unlink()
    argv[argv.index("--manifest") + 1] = str(write_manifest(tmp_path / "m.parquet",
                                                            [True, True], [0, 0]))
    assert main(argv) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["ask"]["models"] == ["ecg"] and out["ask"]["omitted"] == ["echo"]
    assert "left out: echo (no records in paired_cohort)" in out["text"]["ask"]


@pytest.mark.parametrize("field, value, words", [
    ("records_per_s_min", -5, "records_per_s_min must be a positive rate, got -5"),
    ("records_per_s_min", float("nan"), "records_per_s_min must be a positive rate, got nan"),
    ("records_per_s", float("inf"), "records_per_s must be a positive rate, got inf"),
    ("records_per_s_max", 0.5, "records_per_s_min 0.8 > records_per_s_max 0.5"),
])
def test_a_cpu_bench_rate_field_out_of_range_is_exit_4_naming_file_and_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: float,
        words: str) -> None:
    bench = {**bench_dict(), "records_per_s_min": 0.8, field: value}
    assert main(_tree(tmp_path, ecg=bench)) == 4
    assert f"ecg.json: {words}" in _error(capsys)


def test_a_cpu_bench_preprocessing_rate_that_is_nan_is_exit_4(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = bench_dict()
    bench["preprocess"]["records_per_s_per_core_min"] = float("nan")
    assert main(_tree(tmp_path, ecg=bench)) == 4
    assert "ecg.json: preprocess: records_per_s_per_core_min must be a positive rate" in \
        _error(capsys)


@pytest.mark.parametrize("field, value", [("records_per_s_min", -1),
                                          ("records_per_s_max", float("nan"))])
def test_a_gpu_file_rate_field_out_of_range_is_exit_4(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: float) -> None:
    gpu = {**bench_dict(device="cuda", gpu="NVIDIA H100 80GB HBM3", records_per_s=500.0),
           field: value}
    assert main(_tree(tmp_path, gpu=gpu)) == 4
    assert f"ecg-h100.json: {field} must be a positive rate, got {value!r}" in _error(capsys)


def test_a_quota_given_in_bytes_is_accepted(tmp_path: Path) -> None:
    disk = {**SIZING_BLOCK["disk"], "path": str(tmp_path), "quota": 2_000_000_000_000}
    assert main(_tree(tmp_path, disk=disk)) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["disk"]["quota_bytes"] == 2_000_000_000_000


def test_a_quota_that_is_not_a_size_is_exit_2(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    disk = {**SIZING_BLOCK["disk"], "path": str(tmp_path), "quota": [1]}
    assert main(_tree(tmp_path, disk=disk)) == 2
    assert "sizing.disk.quota: expected a size" in _error(capsys)
