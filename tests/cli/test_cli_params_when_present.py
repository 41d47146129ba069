"""``--params`` left out of the verbs that also run without params (compare-probes, ecg-input,
telemetry, demo-run): ``params.yaml`` when the working directory has one, else none.

Each verb runs in a scratch folder twice, with and without a ``params.yaml``; telemetry reads
it only with ``--run`` (its one-line error names the missing file otherwise).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from rightsize.cli import main

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "encoders" / "golden"
DEMO_RUN = {"train_records": 96000, "global_batch": 32, "gpus": 8, "drop_last": True}


def _params(folder: Path, **blocks: object) -> None:
    (folder / "params.yaml").write_text(yaml.safe_dump(blocks))


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err


def test_demo_run_takes_demo_seed_of_params_yaml_when_present(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["demo-run", "plain", "--truth", "plain.json", "-q"]) == 0      # seed 0
    assert main(["demo-run", "s3", "--seed", "3", "--truth", "s3.json", "-q"]) == 0
    _params(tmp_path, demo={"seed": 3})
    assert main(["demo-run", "auto", "--truth", "auto.json", "-q"]) == 0
    auto = json.loads((tmp_path / "auto.json").read_text())
    assert auto == json.loads((tmp_path / "s3.json").read_text())
    assert auto != json.loads((tmp_path / "plain.json").read_text())
    assert main(["demo-run", "flag", "--seed", "0", "--truth", "flag.json", "-q"]) == 0
    assert (json.loads((tmp_path / "flag.json").read_text())
            == json.loads((tmp_path / "plain.json").read_text()))   # --seed wins


def test_ecg_input_takes_crops_of_params_yaml_when_present(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    record = str(GOLDEN / "rec500")
    assert main(["ecg-input", record, "-o", "a.npy", "-q"]) == 0
    assert np.load(tmp_path / "a.npy").shape == (1, 6000)
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["extract"]["crops_per_record"] = 2
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    assert main(["ecg-input", record, "-o", "b.npy", "-q"]) == 0
    assert np.load(tmp_path / "b.npy").shape == (2, 6000)
    assert main(["ecg-input", record, "-o", "c.npy", "--crops", "1", "-q"]) == 0
    assert np.load(tmp_path / "c.npy").shape == (1, 6000)


def _eval(maes: list[float]) -> dict:
    return {"test": {"n": 10, "mae": maes[0]},
            "seeds": {f"r{k}": {"seed": k, "test_mae": m, "val_mae": 1.0}
                      for k, m in enumerate(maes)}}


def test_compare_probes_filters_on_train_probes_of_params_yaml_when_present(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "fused.json").write_text(json.dumps(_eval([5.0, 6.0, 5.5])))
    (tmp_path / "eval" / "concat.json").write_text(json.dumps(_eval([6.0, 7.0, 6.0])))
    argv = ["compare-probes", "fused", "concat", "--eval-dir", "eval", "--json", "c.json", "-q"]
    assert main(argv) == 0
    assert json.loads((tmp_path / "c.json").read_text())["n_pairs"] == 3
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    for key in ("probes", "telemetry_probes"):
        params["train"][key] = [p for p in params["train"][key] if p != "concat"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    assert main(argv) == 0
    note = json.loads((tmp_path / "c.json").read_text())["note"]
    assert "concat (not in params.yaml: train.probes)" in note


def test_telemetry_reads_params_yaml_only_with_run(tmp_path, monkeypatch, capsys, demo_dir):
    monkeypatch.chdir(tmp_path)
    flags = ["--train-records", "96000", "--global-batch", "32", "--gpus", "8", "--drop-last"]
    assert main(["telemetry", str(demo_dir), *flags, "--json", "a.json", "-q"]) == 0
    assert main(["telemetry", str(demo_dir), "--run", "demo", "-q"]) == 2
    assert _err(capsys).splitlines() == [
        "rightsize: error: --run demo: no params file to read telemetry.runs from "
        "(no params.yaml here; give --params YAML)"]
    (tmp_path / "params.yaml").write_text("not_a_block: 1\n")    # unread without --run
    assert main(["telemetry", str(demo_dir), *flags, "--json", "b.json", "-q"]) == 0
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    _params(tmp_path, telemetry={"gap_s": 600, "runs": {"demo": DEMO_RUN}})
    assert main(["telemetry", str(demo_dir), "--run", "demo", "--json", "c.json", "-q"]) == 0
    assert (tmp_path / "a.json").read_text() == (tmp_path / "c.json").read_text()
    assert main(["telemetry", str(demo_dir), "--run", "other", "-q"]) == 2
    assert "params.yaml: missing key telemetry.runs.other" in _err(capsys)
    assert main(["telemetry", str(demo_dir), "--params", "params.yaml", "-q"]) == 2
    assert _err(capsys).splitlines() == [
        "rightsize: error: --params params.yaml: give --run NAME (an entry of telemetry.runs) "
        "too"]
