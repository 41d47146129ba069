"""``rightsize sizing`` end to end: params, flag overrides, JSON output, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rightsize.cli import main

REPO = Path(__file__).resolve().parents[2]

SIZING_BLOCK = {
    "records": 1_000_000, "seconds_per_record": 10.0, "tokens_per_second": 50.0,
    "hidden_dim": 768, "layers_kept": 4, "dtype": "float16",
    "records_per_s_per_gpu": 40.0, "gpus": 8, "disk_bytes": 2.0e12,
}
ALL_FLAGS = ["--records", "2000", "--seconds-per-record", "2.5", "--tokens-per-second", "100",
             "--hidden-dim", "1024", "--layers-kept", "13", "--dtype", "float32",
             "--records-per-s-per-gpu", "5", "--gpus", "3"]


def _params(tmp_path: Path, **overrides: object) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"other": {"x": 1}, "sizing": {**SIZING_BLOCK, **overrides}}))
    return path


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("rightsize: error: ")
    return err[0]


def test_params_json_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "metrics" / "sizing.json"
    assert main(["sizing", "--params", str(_params(tmp_path)), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["storage_bytes"] == 3_072_000_000_000
    assert data["fits_disk"] is False and data["max_layers_on_disk"] == 2
    # flat scalars only (DVC compares these)
    assert all(not isinstance(v, dict | list) for v in data.values())
    for key in ("storage_tb", "bytes_per_record", "pooled_storage_bytes", "gpu_hours",
                "wall_clock_hours", "disk_bytes", "max_records_on_disk", "records", "gpus"):
        assert key in data
    assert sorted(p.name for p in out.parent.iterdir()) == ["sizing.json"]  # no temp leftovers
    assert "token-level storage" in capsys.readouterr().out


def test_flags_override_params(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    argv = ["sizing", "--params", str(_params(tmp_path)), "--json", str(out), "-q",
            "--layers-kept", "1", "--disk-bytes", "1TB"]
    assert main(argv) == 0
    data = json.loads(out.read_text())
    assert data["layers_kept"] == 1
    assert data["storage_bytes"] == 768_000_000_000   # a quarter of 3.072 TB
    assert data["disk_bytes"] == 10**12 and data["fits_disk"] is True


def test_pure_flags_without_params(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.json"
    assert main(["sizing", *ALL_FLAGS, "--disk-bytes", "500GiB", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["storage_bytes"] == 26_624_000_000
    assert data["disk_bytes"] == 500 * 2**30 and data["max_records_on_disk"] == 40_329
    assert data["fits_disk"] is True
    assert "max records on disk" in capsys.readouterr().out


def test_human_disk_size_in_params(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    assert main(["sizing", "--params", str(_params(tmp_path, disk_bytes="4TB")),
                 "--json", str(out), "-q"]) == 0
    assert json.loads(out.read_text())["fits_disk"] is True


@pytest.mark.parametrize(("argv_tail", "needle"), [
    (["--records", "abc"], "sizing.records (--records)"),
    (["--records", "2.5"], "sizing.records (--records)"),
    (["--gpus", "0"], "sizing.gpus"),
    (["--dtype", "int8"], "sizing.dtype"),
    (["--tokens-per-second", "-3"], "sizing.tokens_per_second"),
    (["--disk-bytes", "2XB"], "sizing.disk_bytes (--disk-bytes)"),
])
def test_bad_flags_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                          argv_tail: list[str], needle: str) -> None:
    out = tmp_path / "s.json"
    argv = ["sizing", "--params", str(_params(tmp_path)), "--json", str(out), *argv_tail]
    assert main(argv) == 2
    assert needle in _one_error_line(capsys)
    assert not out.exists()


@pytest.mark.parametrize(("overrides", "needle"), [
    ({"layers_kept": 0}, "sizing.layers_kept"),
    ({"dtype": "fp8"}, "sizing.dtype"),
    ({"gpus": "eight"}, "sizing.gpus"),
    ({"typo_key": 1}, "sizing.typo_key"),
    ({"disk_bytes": "lots"}, "sizing.disk_bytes"),
])
def test_bad_params_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                           overrides: dict, needle: str) -> None:
    argv = ["sizing", "--params", str(_params(tmp_path, **overrides)), "-q"]
    assert main(argv) == 2
    assert needle in _one_error_line(capsys)


def test_missing_inputs_without_params(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sizing", "--records", "10"]) == 2
    assert "sizing.seconds_per_record" in _one_error_line(capsys)


def test_repo_params_block_runs(tmp_path: Path) -> None:
    """The real params.yaml sizing block parses and sizes (guards against drift)."""
    out = tmp_path / "s.json"
    assert main(["sizing", "--params", str(REPO / "params.yaml"), "--json", str(out), "-q"]) == 0
    data = json.loads(out.read_text())
    assert data["storage_bytes"] == (data["records"] * data["bytes_per_record"])


def test_console_script_exit_code(tmp_path: Path) -> None:
    """A real process: bad flag -> exit 2 and exactly one stderr line naming the key."""
    proc = subprocess.run([sys.executable, "-m", "rightsize.cli", "sizing", *ALL_FLAGS,
                           "--gpus", "-1"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "rightsize: error: sizing.gpus: must be a positive integer, got -1"]
