"""``rightsize bench-encoder`` and ``rightsize sizing`` end to end, and their one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sizing_fixtures import SIZING_BLOCK, SOURCES, bench_dict, write_manifest, write_params

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
    assert data["tokens_per_record"] == 93 and data["hidden_size"] == 512  # first 5 s only
    assert data["hardware"]["threads"] == 1 and data["hardware"]["cpu"]
    assert data["preprocess"]["records"] == 3
    assert data["throughput"]["batch_1"]["status"] == "ok"
    assert "extrapolated" not in data["measured"] and "1-of-8-layer" in data["not_measured"]
    err = capsys.readouterr().err
    assert "93 per input x 1 = 93 per record" in err and "not measured:" in err
    assert sorted(p.name for p in out.parent.iterdir()) == ["ecg.json"]
    assert "flatten lead after lead, then decimate" in data["preprocess"]["steps"]


def test_bench_encoder_echo_at_the_published_geometry(tmp_path: Path) -> None:
    """EchoJEPA's ViT-L evaluation geometry by default: 1,568 tokens per clip, 2 clips."""
    block = {"device": "cpu", "repeats": 3, "warmup": 0, "threads": 1,
             "models": {"echo": {"family": "echojepa", "size": "vitl", "batch_sizes": [1],
                                 "cpu_timing_layers": 1}}}
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"encoder_bench": block}))
    out = tmp_path / "echo.json"
    assert main(["bench-encoder", "echo", "--params", str(params), "--json", str(out),
                 "-q"]) == 0
    data = json.loads(out.read_text())
    assert data["input_shape"] == "16x3x224x224" and data["tokens_per_input"] == 1568
    assert data["tokens_per_input_arithmetic"] == 1568
    assert data["inputs_per_record"] == 2 and data["tokens_per_record"] == 3136
    assert data["geometry"] == {"frames": 16, "resolution": 224, "clips_per_record": 2,
                                "patch": 16, "tubelet": 2}


@pytest.mark.parametrize(("argv", "needle"), [
    (["--size", "huge"], "encoder_bench.models.ecg.size: unknown hubert_ecg size 'huge' "
                         "(known: small, base, large)"),
    (["--compute-dtype", "int8"], "encoder_bench.compute_dtype: unknown dtype 'int8' "
                                  "(known: auto, float32, bfloat16, float16)"),
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


@pytest.mark.parametrize(("model", "needle"), [
    ({"clips_per_record": 2}, "encoder_bench.models.ecg.clips_per_record: does not apply to "
                              "hubert_ecg (its geometry keys: crops_per_record)"),
    ({"crops_per_record": 0}, "encoder_bench.models.ecg.crops_per_record: must be a positive "
                              "integer, got 0"),
])
def test_bench_encoder_geometry_keys_belong_to_their_family(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], model: dict, needle: str) -> None:
    out = tmp_path / "e.json"
    assert main(["bench-encoder", "ecg", "--params", str(_bench_params(tmp_path, **model)),
                 "--json", str(out)]) == 2
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
    over.setdefault("disk", {**SIZING_BLOCK["disk"], "path": str(tmp_path)})
    return ["sizing", "--params", str(write_params(tmp_path / "params.yaml", **over)),
            "--manifest", str(manifest), "--bench-dir", str(enc), "--gpu-dir", str(gpu)]


def test_sizing_from_bench_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "metrics" / "sizing.json"
    assert main([*_sizing_tree(tmp_path), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    paired = data["scenarios"]["paired_cohort"]["models"]
    assert paired["ecg"]["records"] == 3 and paired["echo"]["records"] == 6
    assert paired["ecg"]["source"].startswith("synthetic cohort: rows of ")
    assert data["ask"]["storage_bytes"] == 3 * 93 * 768 * 4 * 2
    assert data["ask"]["choice"] == "cpu" and data["text"]["answer"] == "No GPU needed"
    # 3 records at 1 record/s + preprocessing 3 / (200 x 2 cores)
    assert data["text"]["ask"].startswith("No GPU needed: 3.01 s on this machine's 2 cores")
    assert data["gpu_files"] == []
    disk = data["disk"]                                   # measured here, real fsync'd writes
    assert disk["path"] == str(tmp_path) and disk["free_bytes"] > 0
    assert disk["write"]["format"] == "npy" and disk["write"]["array_bytes"] > 3 * 10**6
    assert disk["write"]["record_shape"] == [4, 93, 768]
    assert disk["read"]["files"] == 5 and disk["read"]["file_bytes"] == 120_000
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "encoders", "gpu", "m.parquet", "metrics", "params.yaml"]   # test files removed
    table = capsys.readouterr().out
    assert "No GPU needed" in table and "MIMIC-IV-ECG" in table
    assert main([*_sizing_tree(tmp_path), "--json", "-"]) == 0      # stdout instead of table
    dash = json.loads(capsys.readouterr().out)
    assert dash["ask"]["storage_bytes"] == data["ask"]["storage_bytes"]
    assert dash["scenarios"]["ecg_corpus"]["models"]["ecg"]["source"] == SOURCES["ecg"]


def test_manifest_from_files_is_not_called_synthetic(tmp_path: Path) -> None:
    argv = _sizing_tree(tmp_path)
    write_manifest(tmp_path / "m.parquet", [True, False], [1, 1], source="files")
    out = tmp_path / "s.json"
    assert main([*argv, "--json", str(out), "-q"]) == 0
    source = json.loads(out.read_text())["scenarios"]["paired_cohort"]["models"]["ecg"]["source"]
    assert source.startswith("cohort source files: ") and "synthetic" not in source


def test_parquet_shards_are_measured_when_asked(tmp_path: Path) -> None:
    disk = {**SIZING_BLOCK["disk"], "path": str(tmp_path), "format": "parquet"}
    out = tmp_path / "s.json"
    assert main([*_sizing_tree(tmp_path, disk=disk), "--json", str(out), "-q"]) == 0
    data = json.loads(out.read_text())
    assert data["disk"]["write"]["format"] == "parquet"
    assert "parquet float16 shards" in \
        data["scenarios"]["paired_cohort"]["models"]["ecg"]["cpu"]["parts"]["writing"]["note"]


def test_committed_gpu_file_is_used(tmp_path: Path) -> None:
    argv = _sizing_tree(tmp_path)
    gpu = bench_dict(device="cuda", records_per_s=400.0, gpu="NVIDIA H200")
    (tmp_path / "gpu" / "ecg-h200.json").write_text(json.dumps(gpu))
    out = tmp_path / "s.json"
    assert main([*argv, "--json", str(out), "-q"]) == 0
    data = json.loads(out.read_text())
    assert data["ask"]["gpu_measured"] is True
    compute = data["ask"]["gpu"]
    assert compute["gpus"] == 8
    assert data["gpu_files"][0]["status"] == "used for ecg"


def test_gpu_file_of_the_old_256px_geometry_is_reported_not_used(tmp_path: Path) -> None:
    argv = _sizing_tree(tmp_path)
    old = bench_dict("echojepa", "vitl", device="cuda", records_per_s=80.0, gpu="NVIDIA H100",
                     resolution=256, inputs=1)
    del old["geometry"]["clips_per_record"], old["geometry"]["patch"], old["geometry"]["tubelet"]
    (tmp_path / "gpu" / "echo-h100.json").write_text(json.dumps(old))
    out = tmp_path / "s.json"
    assert main([*argv, "--json", str(out), "-q"]) == 0
    data = json.loads(out.read_text())
    (entry,) = data["gpu_files"]
    assert entry["used_for"] is None and entry["status"].startswith("not matching, not used: "
                                                                    "echo: geometry differs")
    assert "resolution 256 (file) vs 224 (bench)" in entry["status"]
    echo = data["scenarios"]["echo_corpus"]["models"]["echo"]
    assert echo["gpu_measured"] is False and echo["gpu"]["parts"]["compute"]["how"] == "estimated"


def _count(**c: object) -> dict:
    return {"scenarios": {"x": {"ecg": c}}}


@pytest.mark.parametrize(("over", "needle"), [
    ({"tokens_per_second": 50.0}, "sizing.tokens_per_second: retired (it was an asserted "
                                  "figure); tokens per record are measured"),
    ({"records_per_s_per_gpu": 40.0}, "sizing.records_per_s_per_gpu: retired"),
    ({"scenarios": {"expansion": {"ecg": 12000, "echo": 96000}}},
     "sizing.scenarios.expansion: retired; its 12,000 ECG / 96,000 echo records had no source; "
     "use sizing.scenarios.recovered_cohort"),
    ({"scenarios": {"full_corpus": {"ecg": 1000000}}}, "sizing.scenarios.full_corpus: retired; "),
    ({"scenarios": {"grown": {"ecg": 12000}}}, "sizing.scenarios.grown.ecg.source: missing (a "
                                               "count needs its source"),
    ({"dtype": "fp8"}, "sizing.dtype: unknown dtype 'fp8' (known: bfloat16, float16, float32)"),
    (_count(records=0, source="s"), "sizing.scenarios.x.ecg.records: must be a positive "
                                    "integer, got 0"),
    (_count(records=5), "sizing.scenarios.x.ecg.source: missing key"),
    ({"scenarios": {"x": {"ekg": {"records": 5, "source": "s"}}}},
     "sizing.scenarios.x.ekg: unknown model (known: ecg, echo)"),
    ({"deadline_h": 0}, "sizing.deadline_h: must be a positive number of hours, got 0"),
    ({"prices": {"gpu_hour": -2.0, "cpu_core_hour": None}},
     "sizing.prices.gpu_hour: must be >= 0, null or a price per GPU type, got -2.0"),
    ({"typo": 1}, "sizing.typo: unknown key"),
    ({"disk": {"path": "no/such/dir", "quota": "2TB"}}, "sizing.disk.path: no/such/dir is not "
                                                        "a directory"),
    ({"disk": {"path": "/proc/self", "write_mb": 1, "shard_mb": 1}},
     "sizing.disk.path: /proc/self is not writable"),
])
def test_sizing_bad_params_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  over: dict, needle: str) -> None:
    out = tmp_path / "s.json"
    assert main([*_sizing_tree(tmp_path, **over), "--json", str(out), "-q"]) == 2
    assert needle in _one_error_line(capsys)
    assert not out.exists()


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
    sizing = parse(SizingConfig, raw["sizing"], "sizing")
    assert set(sizing.models) == {"ecg", "echo"}
    assert set(sizing.scenarios) == {"recovered_cohort", "recovered_cohort_all_ecgs",
                                      "recovered_cohort_10s", "ecg_corpus", "echo_corpus"}
    assert sizing.scenarios["recovered_cohort"]["ecg"].records == 4103
    assert sizing.deadline_h == 24 and not sizing.prices.any_set
    bench = parse(EncoderBenchConfig, raw["encoder_bench"], "encoder_bench")
    assert bench.repeats >= 3
    assert bench.models["ecg"].geometry().crops_per_record == 1
    echo = bench.models["echo"].geometry()
    assert (echo.resolution, echo.frames, echo.clips_per_record) == (224, 16, 2)
    assert set(SIZING_BLOCK) <= set(raw["sizing"])


def test_console_script_exit_code(tmp_path: Path) -> None:
    """A real process: a retired key -> exit 2 and exactly one stderr line naming it."""
    argv = _sizing_tree(tmp_path, records_per_s_per_gpu=40.0)
    proc = subprocess.run([sys.executable, "-m", "rightsize.cli", *argv], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("rightsize: error: sizing.records_per_s_per_gpu: retired")


def test_sizing_gpu_naming_no_file_exits_2_and_a_zero_rate_file_exits_4(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 33 item 2, end to end: nothing written, one error line each."""
    out = tmp_path / "sizing.json"
    argv = _sizing_tree(tmp_path, gpu="H100")
    good = bench_dict(device="cuda", gpu="NVIDIA A100-SXM4-80GB", records_per_s=500.0)
    (tmp_path / "gpu" / "ecg-a100.json").write_text(json.dumps(good))
    assert main([*argv, "--json", str(out)]) == 2
    assert _one_error_line(capsys) == (
        "rightsize: error: sizing.gpu: 'H100' names no committed GPU file (files seen: "
        "ecg-a100.json (NVIDIA A100-SXM4-80GB)); set it to part of one's GPU name, or null")
    argv = _sizing_tree(tmp_path)
    zero = bench_dict(device="cuda", gpu="NVIDIA H100 80GB HBM3", records_per_s=0.0)
    (tmp_path / "gpu" / "ecg-h100.json").write_text(json.dumps(zero))
    assert main([*argv, "--json", str(out)]) == 4
    assert "/ecg-h100.json: records_per_s must be a positive rate, got 0.0" \
        in _one_error_line(capsys)
    assert not out.exists()
