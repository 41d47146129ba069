"""``rightsize footprint`` on a small but real setup: torch state_dict, npz, parquet, JSONs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import yaml

import no_dac
from rightsize.cli import main
from rightsize.probes.measurements.footprint import is_writable, payload_bytes

N, MAX_CLIPS, ECHO_DIM, ECG_DIM = 10, 2, 8, 4
RSS = {"cohort": 101.5, "train_ecg": 202.0, "train_fused": 303.25, "eval_ecg": 150.0,
       "eval_fused": 175.0}


def _fused_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 3), torch.nn.LayerNorm(3),
                               torch.nn.Linear(3, 1))


def _write_json(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj))


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A finished cohort/train/evaluate run in tmp_path (cwd), probes ecg (npz) and fused (pt)."""
    monkeypatch.chdir(tmp_path)
    params = {
        "cohort": {"source": "synthetic", "seed": 0, "n_subjects": N, "max_clips": MAX_CLIPS,
                   "echo_dim": ECHO_DIM, "ecg_dim": ECG_DIM, "splits": {"train": 8}},
        "train": {"probes": ["ecg", "fused"], "seed": 0},
        "footprint": {"clips": [1, 2, 4]},
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    rng = np.random.default_rng(0)
    echo = rng.standard_normal((N, MAX_CLIPS * ECHO_DIM), dtype=np.float32).ravel()
    ecg = rng.standard_normal((N, ECG_DIM), dtype=np.float32).ravel()
    table = pa.table({
        "subject_id": pa.array([f"s{i}" for i in range(N)]),
        "echo": pa.FixedSizeListArray.from_arrays(pa.array(echo), MAX_CLIPS * ECHO_DIM),
        "ecg": pa.FixedSizeListArray.from_arrays(pa.array(ecg), ECG_DIM),
    })
    (tmp_path / "data").mkdir()
    pq.write_table(table, tmp_path / "data" / "manifest.parquet")

    fused = tmp_path / "models" / "fused"
    fused.mkdir(parents=True)
    torch.save(_fused_model().state_dict(), fused / "weights.pt")
    _write_json(fused / "checkpoint.json", {"params": 37, "peak_rss_mb": 300.0})
    ecg_dir = tmp_path / "models" / "ecg"
    ecg_dir.mkdir(parents=True)
    np.savez(ecg_dir / "weights.npz", coef=np.ones((1, ECG_DIM)), intercept=np.zeros(1))
    _write_json(ecg_dir / "checkpoint.json", {"params": 5})

    _write_json(tmp_path / "metrics" / "cohort.json",
                {"peak_rss_mb": RSS["cohort"], "manifest_bytes": 123})
    for stage in ("train", "eval"):
        for probe in ("ecg", "fused"):
            _write_json(tmp_path / "metrics" / stage / f"{probe}.json",
                        {"peak_rss_mb": RSS[f"{stage}_{probe}"], "wall_s": 1.0})
    return tmp_path


ARGV = ["footprint", "--params", "params.yaml", "--manifest", "data/manifest.parquet",
        "--models", "models", "--metrics-dir", "metrics", "--json", "metrics/footprint.json"]


def _run(capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert main([*ARGV, *extra]) == 0, capsys.readouterr().err
    return json.loads(Path("metrics/footprint.json").read_text())


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir())


def test_footprint_report(setup: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = _run(capsys)
    manifest = setup / "data" / "manifest.parquet"
    assert r["manifest_bytes"] == manifest.stat().st_size
    assert r["manifest_rows"] == N
    # Linear(8,3) 27 + LayerNorm(3) 6 + Linear(3,1) 4 = 37; npz 1x4 + 1 = 5
    assert sum(p.numel() for p in _fused_model().parameters()) == 37
    assert r["checkpoints"]["fused"] == {"params": 37, "bytes": _dir_bytes(setup / "models/fused"),
                                         "replicas": 1}
    assert r["checkpoints"]["ecg"] == {"params": 5, "bytes": _dir_bytes(setup / "models/ecg"),
                                       "replicas": 1}
    assert r["checkpoint_bytes_total"] == (_dir_bytes(setup / "models/fused")
                                           + _dir_bytes(setup / "models/ecg"))
    # n x k x 8 x 4 + n x 4 x 4 with n = 10: 480, 800, 1440
    assert r["payload_table"] == [{"max_clips": 1, "ecg_tokens": 1, "payload_bytes": 480},
                                  {"max_clips": 2, "ecg_tokens": 1, "payload_bytes": 800},
                                  {"max_clips": 4, "ecg_tokens": 1, "payload_bytes": 1440}]
    assert r["ecg_tokens"] == 1
    assert r["payload_bytes"] == {"clips_1": 480, "clips_2": 800, "clips_4": 1440}
    assert r["payload_expected_bytes"] == 800
    assert r["payload_measured_bytes"] == manifest.stat().st_size
    assert r["payload_measured_ratio"] == pytest.approx(manifest.stat().st_size / 800)
    assert r["peak_rss_mb"] == {**RSS, "max": 303.25}
    assert r["writable"] == {"data": True, "models": True, "metrics": True, "reports": True}
    assert r["free_disk_bytes"] > 0
    assert not (setup / "reports").exists()  # the check creates no directory
    assert not list(setup.rglob(".rightsize-write-check.*"))
    assert "checkpoint fused" in capsys.readouterr().out


def test_configured_clips_added_to_table(setup: Path, capsys: pytest.CaptureFixture[str]) -> None:
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["footprint"]["clips"] = [16, 1]
    Path("params.yaml").write_text(yaml.safe_dump(params))
    r = _run(capsys, "-q")
    assert [row["max_clips"] for row in r["payload_table"]] == [1, 2, 16]
    # 10 x 16 x 8 x 4 + 10 x 4 x 4
    assert r["payload_bytes"]["clips_16"] == payload_bytes(N, 16, ECHO_DIM, ECG_DIM) == 5_280


@pytest.mark.parametrize("configured", [3, None])
def test_payload_counts_every_ecg_token(setup: Path, capsys: pytest.CaptureFixture[str],
                                        configured: int | None) -> None:
    """cohort.ecg_tokens N > 1: every subject carries N ECG vectors (null: the manifest's
    ECG width says how many)."""
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["cohort"]["ecg_tokens"] = configured
    Path("params.yaml").write_text(yaml.safe_dump(params))
    table = pq.read_table("data/manifest.parquet")
    ecg = np.zeros((N, 3 * ECG_DIM), np.float32).ravel()
    table = table.set_column(2, "ecg", pa.FixedSizeListArray.from_arrays(pa.array(ecg),
                                                                         3 * ECG_DIM))
    pq.write_table(table, "data/manifest.parquet")
    r = _run(capsys, "-q")
    # n x k x 8 x 4 + n x 3 x 4 x 4 with n = 10, k = 2 (configured)
    assert r["ecg_tokens"] == 3 and r["payload_expected_bytes"] == 640 + 480 == payload_bytes(
        N, MAX_CLIPS, ECHO_DIM, ECG_DIM, 3)
    assert r["payload_bytes"]["clips_1"] == 320 + 480


def test_buffers_counted_and_sidecar_mismatch_warned(
        setup: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(8, 3), torch.nn.BatchNorm1d(3))
    torch.save(model.state_dict(), setup / "models" / "fused" / "weights.pt")
    r = _run(capsys)
    # 27 weights + 6 affine + running_mean 3 + running_var 3 + num_batches_tracked 1
    assert r["checkpoints"]["fused"]["params"] == 40
    assert "warning" not in capsys.readouterr().err  # sidecar's 37 trainable <= 40 stored
    _write_json(setup / "models" / "fused" / "checkpoint.json", {"n_params": 100})
    r = _run(capsys)
    assert r["checkpoints"]["fused"]["params"] == 40
    assert "says 100 params but the weights hold only 40" in capsys.readouterr().err


def test_unwritable_path_reported(setup: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("blocker").write_text("a regular file, not a directory\n")
    r = _run(capsys, "--reports", "blocker/reports")  # unwritable even for root
    assert r["writable"]["reports"] is False
    assert r["writable"]["metrics"] is True
    assert is_writable(Path("blocker")) is False
    assert is_writable(Path("not/yet/there")) is True


def test_read_only_dir_not_writable(tmp_path: Path) -> None:
    # checked in a subprocess with permissions enforced, root included (tests/no_dac.py)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        proc = no_dac.run_python(
            "import sys; from pathlib import Path; "
            "from rightsize.probes.measurements.footprint import is_writable; "
            "ro = Path(sys.argv[1]); print(is_writable(ro), is_writable(ro / 'child'))", ro)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == ["False", "False"]
    finally:
        ro.chmod(0o700)


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("rightsize: error: ")
    return err[0]


@pytest.mark.parametrize(("remove", "needle"), [
    ("data/manifest.parquet", "data/manifest.parquet: manifest not found"),
    ("metrics/eval/fused.json", "metrics/eval/fused.json: metrics file not found"),
    ("metrics/cohort.json", "metrics/cohort.json"),
    ("models/ecg/weights.npz", "models/ecg: no weights.safetensors, weights.npz or weights.pt"),
])
def test_missing_input_one_line(setup: Path, capsys: pytest.CaptureFixture[str],
                                remove: str, needle: str) -> None:
    Path(remove).unlink()
    assert main(ARGV) == 2
    assert needle in _error_line(capsys)
    assert not Path("metrics/footprint.json").exists()


def test_missing_rss_key_and_bad_weights(setup: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write_json(setup / "metrics" / "train" / "ecg.json", {"wall_s": 1.0})
    assert main(ARGV) == 2
    assert "metrics/train/ecg.json: missing numeric key peak_rss_mb" in _error_line(capsys)
    _write_json(setup / "metrics" / "train" / "ecg.json", {"peak_rss_mb": 1.0})
    (setup / "models" / "fused" / "weights.pt").write_bytes(b"not a torch file")
    assert main(ARGV) == 4
    assert "models/fused/weights.pt: refused: not a file of tensors only" in _error_line(capsys)


@pytest.mark.parametrize(("block", "key", "value", "needle"), [
    ("footprint", "clips", [0, 8], "footprint.clips[0]"),
    ("footprint", "clips", [], "footprint.clips"),
    ("footprint", "bogus", 1, "footprint.bogus"),
    ("cohort", "n_subjects", None, "cohort.n_subjects: missing key"),
    ("cohort", "echo_dim", -1, "cohort.echo_dim"),
    ("train", "probes", "ecg", "train.probes"),
])
def test_bad_params_name_the_key(setup: Path, capsys: pytest.CaptureFixture[str], block: str,
                                 key: str, value: object, needle: str) -> None:
    params = yaml.safe_load(Path("params.yaml").read_text())
    if value is None:
        del params[block][key]
    else:
        params[block][key] = value
    Path("params.yaml").write_text(yaml.safe_dump(params))
    assert main(ARGV) == 2
    assert needle in _error_line(capsys)
