"""``rightsize bench-encoder`` and ``rightsize sizing`` end to end, and their one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sizing_fixtures import SIZING_BLOCK, bench_dict, write_manifest, write_params

from rightsize.cli import main

REPO = Path(__file__).resolve().parents[2]
BENCH = {"device": "cpu", "repeats": 3, "warmup": 0, "threads": 1,
         "models": {"ecg": {"family": "hubert_ecg", "size": "small", "batch_sizes": [1],
                            "cpu_timing_layers": 1, "preprocess_records": 3}}}


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("rightsize: error: ")
    return err[0]


def _bench_params(tmp_path: Path, **model: object) -> Path:
    block = json.loads(json.dumps(BENCH))
    block["models"]["ecg"].update(model)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"encoder_bench": block}))
    return path


def test_bench_encoder_writes_the_measurements(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "enc" / "ecg.json"
    assert main(["bench-encoder", "ecg", "--params", str(_bench_params(tmp_path)),
                 "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["model"] == "ecg" and data["size"] == "small" and data["device"] == "cpu"
    assert data["tokens_per_record"] == 186 and data["hidden_size"] == 512
    assert data["hardware"]["threads"] == 1 and data["hardware"]["cpu"]
    assert data["preprocess"]["records"] == 3
    assert data["throughput"]["batch_1"]["status"] == "ok"
    assert "extrapolated" not in data["measured"] and "1-of-8-layer" in data["not_measured"]
    err = capsys.readouterr().err
    assert "93 per input x 2 = 186 per record" in err and "not measured:" in err
    assert sorted(p.name for p in out.parent.iterdir()) == ["ecg.json"]


@pytest.mark.parametrize(("argv", "needle"), [
    (["--size", "huge"], "encoder_bench.models.ecg.size: unknown hubert_ecg size 'huge' "
                         "(known: small, base, large)"),
    (["--compute-dtype", "int8"], "encoder_bench.compute_dtype: unknown dtype 'int8' "
                                  "(known: float32, bfloat16, float16)"),
    (["--batch-sizes", "0,4"], "encoder_bench.models.ecg.batch_sizes: must be positive"),
    (["--device", "tpu"], "encoder_bench.device: must be cpu or cuda"),
    (["--repeats", "2"], "encoder_bench.repeats: must be an integer >= 3"),
    (["--repeats", ""], "encoder_bench.repeats (--repeats): expected one integer"),
])
def test_bench_encoder_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                 argv: list[str], needle: str) -> None:
    out = tmp_path / "e.json"
    assert main(["bench-encoder", "ecg", "--params", str(_bench_params(tmp_path)),
                 "--json", str(out), *argv]) == 2
    assert needle in _one_error_line(capsys)
    assert not out.exists()


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a GPU is present")
def test_bench_encoder_cuda_without_a_gpu_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench-encoder", "ecg", "--params", str(_bench_params(tmp_path)),
                 "--device", "cuda", "--json", str(tmp_path / "g.json")]) == 2
    assert "cuda requested but torch sees no CUDA device" in _one_error_line(capsys)


def _sizing_tree(tmp_path: Path, **over: object) -> list[str]:
    enc = tmp_path / "encoders"
    enc.mkdir(exist_ok=True)
    (enc / "ecg.json").write_text(json.dumps(bench_dict()))
    (enc / "echo.json").write_text(json.dumps(bench_dict("echojepa", "vitl",
                                                          preprocess_rate=None)))
    gpu = tmp_path / "gpu"
    gpu.mkdir(exist_ok=True)
    manifest = write_manifest(tmp_path / "m.parquet", [True, True, False, True], [2, 0, 3, 1])
    return ["sizing", "--params", str(write_params(tmp_path / "params.yaml", **over)),
            "--manifest", str(manifest), "--bench-dir", str(enc), "--gpu-dir", str(gpu)]


def test_sizing_from_bench_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "metrics" / "sizing.json"
    assert main([*_sizing_tree(tmp_path), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    paired = data["scenarios"]["paired_cohort"]["models"]
    assert paired["ecg"]["records"] == 3 and paired["echo"]["records"] == 6
    assert data["ask"]["storage_bytes"] == 3 * 186 * 768 * 4 * 2
    assert data["ask"]["gpu_measured"] is False and data["gpu_files"]["ecg"] == "none"
    assert data["disk"]["free_bytes"] > 0 and data["disk"]["writable"] is True
    assert "asserted before vs measured" in capsys.readouterr().out
    capsys.readouterr()
    assert main([*_sizing_tree(tmp_path), "--json", "-"]) == 0      # stdout instead of table
    dash = json.loads(capsys.readouterr().out)
    assert dash["ask"]["storage_bytes"] == data["ask"]["storage_bytes"]
    assert dash["scenarios"] == data["scenarios"]


def test_committed_gpu_file_is_used(tmp_path: Path) -> None:
    argv = _sizing_tree(tmp_path)
    gpu = bench_dict(device="cuda", records_per_s=400.0, gpu="NVIDIA H200")
    (tmp_path / "gpu" / "ecg-h200.json").write_text(json.dumps(gpu))
    out = tmp_path / "s.json"
    assert main([*argv, "--json", str(out), "-q"]) == 0
    ask = json.loads(out.read_text())["ask"]
    assert ask["gpu_measured"] is True and "measured on NVIDIA H200" in ask["gpu_source"]
    assert ask["gpu_hours_low"] == pytest.approx(3 / 400 / 3600)


@pytest.mark.parametrize(("over", "needle"), [
    ({"tokens_per_second": 50.0}, "sizing.tokens_per_second: retired (it was an asserted "
                                  "figure); tokens per record are measured"),
    ({"records_per_s_per_gpu": 40.0}, "sizing.records_per_s_per_gpu: retired"),
    ({"dtype": "fp8"}, "sizing.dtype: unknown dtype 'fp8' (known: bfloat16, float16, float32)"),
    ({"scenarios": {"expansion": {"ecg": 0}}}, "sizing.scenarios.expansion.ecg: records must "
                                               "be a positive integer, got 0"),
    ({"typo": 1}, "sizing.typo: unknown key"),
    ({"disk": {"path": "no/such/dir", "quota": "2TB"}}, "sizing.disk.path: no/such/dir is not "
                                                        "a directory"),
])
def test_sizing_bad_params_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  over: dict, needle: str) -> None:
    assert main([*_sizing_tree(tmp_path, **over), "-q"]) == 2
    assert needle in _one_error_line(capsys)


def test_sizing_missing_bench_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _sizing_tree(tmp_path)
    (tmp_path / "encoders" / "echo.json").unlink()
    assert main([*argv, "-q"]) == 2
    assert "echo.json: bench file not found" in _one_error_line(capsys)


def test_repo_params_blocks_parse() -> None:
    """The real params.yaml sizing and encoder_bench blocks parse (guards against drift)."""
    from rightsize.params import load_params, parse
    from rightsize.sizing.config import EncoderBenchConfig, SizingConfig

    raw = load_params(REPO / "params.yaml")
    assert set(parse(SizingConfig, raw["sizing"], "sizing").models) == {"ecg", "echo"}
    assert parse(EncoderBenchConfig, raw["encoder_bench"], "encoder_bench").repeats >= 3
    assert set(SIZING_BLOCK) <= set(raw["sizing"])


def test_console_script_exit_code(tmp_path: Path) -> None:
    """A real process: a retired key -> exit 2 and exactly one stderr line naming it."""
    argv = _sizing_tree(tmp_path, records_per_s_per_gpu=40.0)
    proc = subprocess.run([sys.executable, "-m", "rightsize.cli", *argv], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("rightsize: error: sizing.records_per_s_per_gpu: retired")
