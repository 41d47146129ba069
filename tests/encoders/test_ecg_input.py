"""rightsize ecg-input: the model input extract feeds the model, held against HuBERT-ECG's own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

from rightsize.cli import main

GOLDEN = Path(__file__).resolve().parent / "golden"
REPO = Path(__file__).resolve().parents[2]


def test_a_1000_hz_record_matches_hubert_ecgs_function(tmp_path: Path) -> None:
    out = tmp_path / "x.npy"
    assert main(["ecg-input", str(GOLDEN / "rec1000"), "-o", str(out), "--crops", "2",
                 "-q"]) == 0
    x = np.load(out)
    golden = np.load(GOLDEN / "rec1000.npz")["inputs"]
    assert x.dtype == np.float32 and x.shape == golden.shape == (2, 6000)
    assert np.abs(x - golden).max() <= 1e-6


def test_crops_come_from_params_and_a_bad_record_exits_4_naming_it(
        tmp_path: Path, capsys) -> None:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["extract"]["crops_per_record"] = 2
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(params))
    out = tmp_path / "x.npy"
    assert main(["ecg-input", str(GOLDEN / "rec500.hea"), "-o", str(out), "--params",
                 str(tmp_path / "p.yaml"), "-q"]) == 0
    assert np.load(out).shape == (2, 6000)
    assert main(["ecg-input", str(GOLDEN / "rec250"), "-o", str(out), "--crops", "3"]) == 4
    assert "rec250: too short" in capsys.readouterr().err
    assert main(["ecg-input", str(tmp_path / "absent"), "-o", str(out)]) == 4
    assert "absent: unreadable" in capsys.readouterr().err
    assert main(["ecg-input", str(GOLDEN / "rec250"), "-o", str(out), "--crops", "0"]) == 2
