"""``cohort.target``: a files cohort whose label column has another name, range and threshold
builds, records its target and trains a probe end to end; bad keys are one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from rightsize.cli import main
from rightsize.cohort.build import build_manifest
from rightsize.cohort.config import CohortConfig
from rightsize.cohort.load_manifest import load_arrays
from rightsize.cohort.manifest import metadata_of, open_manifest
from rightsize.cohort.target import TargetConfig
from rightsize.errors import DataError, ParamsError
from rightsize.params import parse

N, ECHO_DIM, ECG_DIM = 60, 8, 6
SPLITS = {"train": 40, "val": 10, "test": 10}
BNP = {"column": "nt_probnp", "name": "NT-proBNP", "unit": "pg/mL", "range": [0, 35000],
       "threshold": 400}


def _values() -> np.ndarray:
    """NT-proBNP-like values, half of every split at or below 400 (both classes in each)."""
    rng = np.random.default_rng(0)
    low, high = rng.uniform(20, 400, N), rng.uniform(401, 30000, N)
    return np.where(np.arange(N) % 2 == 0, low, high).round(1)


def write_cohort(folder: Path, column: str = "nt_probnp") -> dict[str, str]:
    """Three files: one echo clip and one ECG vector per subject, both carrying log(value)."""
    rng = np.random.default_rng(1)
    ids = [f"B{i:03d}" for i in range(N)]
    signal = np.log(_values())
    echo = rng.standard_normal((N, ECHO_DIM)) + signal[:, None]
    ecg = rng.standard_normal((N, ECG_DIM)) - signal[:, None]
    pq.write_table(pa.table({"subject_id": ids, "clip": [0] * N,
                             "embedding": pa.array(echo.tolist(), pa.list_(pa.float32()))}),
                   folder / "echo.parquet")
    pq.write_table(pa.table({"subject_id": ids,
                             "embedding": pa.array(ecg.tolist(), pa.list_(pa.float32()))}),
                   folder / "ecg.parquet")
    split = ["train"] * 40 + ["val"] * 10 + ["test"] * 10
    rows = [f"{s},{v},{p}" for s, v, p in zip(ids, _values(), split, strict=True)]
    (folder / "labels.csv").write_text(f"subject_id,{column},split\n" + "\n".join(rows) + "\n")
    return {"echo": str(folder / "echo.parquet"), "ecg": str(folder / "ecg.parquet"),
            "labels": str(folder / "labels.csv")}


def cohort_block(files: dict[str, str], **target: Any) -> dict[str, Any]:
    return {"source": "files", "n_subjects": N, "splits": dict(SPLITS), "echo_dim": ECHO_DIM,
            "ecg_dim": ECG_DIM, "max_clips": 1, "row_group_size": 16, "files": files,
            "target": {**BNP, **target}}


TRAIN = {"probes": ["ecg", "fused"], "telemetry_probes": ["fused"], "seed": 0, "seeds": 1,
         "threads": 1, "device": "cpu", "batch_size": 16, "lr": 0.003, "pca_rank": 4,
         "ecg": {"alphas": [10.0, 1000.0], "Cs": [1.0]},
         "fused": {"epochs": 2, "fusion_dim": 8, "heads": 2, "hidden": 8}}
EVALUATE = {"seed": 0, "n_bootstrap": 50, "n_bootstrap_missing": 20, "ci": 0.9}


def test_another_label_column_range_and_threshold_build_and_train_end_to_end(
        tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    files = write_cohort(tmp_path)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(
        {"cohort": cohort_block(files), "train": TRAIN, "evaluate": EVALUATE}))
    assert main(["cohort", "--out", "m.parquet", "--json", "cohort.json", "-q"]) == 0
    x = load_arrays(tmp_path / "m.parquet")         # validated against the target's range
    np.testing.assert_allclose(x.lvef, _values().astype(np.float32))
    assert np.array_equal(x.ef_le_40, x.lvef <= 400) and 0 < x.ef_le_40.mean() < 1
    meta = metadata_of(open_manifest(tmp_path / "m.parquet").schema_arrow, "m")
    recorded = {**BNP, "range": [0.0, 35000.0], "threshold": 400.0}
    assert meta["target"] == recorded and meta["ef_threshold"] == 400.0
    assert json.loads((tmp_path / "cohort.json").read_text())["target"] == recorded
    for probe in ("ecg", "fused"):
        assert main(["train", probe, "--manifest", "m.parquet", "--out", f"models/{probe}",
                     "--eval-json", f"{probe}.json", "-q"]) == 0
        test = json.loads((tmp_path / f"{probe}.json").read_text())["test"]
        assert np.isfinite(test["mae"]) and 0.0 <= test["auroc"] <= 1.0, (probe, test)
    assert main(["cohort", "--check", "m.parquet", "-q"]) == 0


def test_the_label_column_and_range_are_checked_naming_the_key(tmp_path: Path) -> None:
    files = write_cohort(tmp_path, column="bnp")          # the column the target does not name
    cfg = parse(CohortConfig, cohort_block(files), "cohort")
    with pytest.raises(DataError, match=r"labels.csv: missing column nt_probnp "
                                        r"\(cohort.target.column\)"):
        build_manifest(cfg, tmp_path / "m.parquet")
    cfg = parse(CohortConfig, cohort_block(files, column="bnp", range=[0, 5000],
                                           threshold=125), "cohort")
    with pytest.raises(DataError, match=r"column bnp: [\d.]+ for subject B\d+ is not a finite "
                                        r"NT-proBNP in cohort.target.range \[0, 5000\]"):
        build_manifest(cfg, tmp_path / "m.parquet")


def test_a_joined_file_reads_the_named_column(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    ids = [f"J{i}" for i in range(N)]
    pq.write_table(pa.table({
        "subject_id": ids, "gls": -rng.uniform(5, 25, N), "split": ["train"] * 40 + ["val"] * 10
        + ["test"] * 10,
        "echo_embedding": pa.array(rng.standard_normal((N, ECHO_DIM)).tolist()),
        "ecg_embedding": pa.array(rng.standard_normal((N, ECG_DIM)).tolist())}),
        tmp_path / "j.parquet")
    block = cohort_block({"joined": str(tmp_path / "j.parquet")}, column="gls", name="GLS",
                         range=[-40, 0], threshold=-16)
    build_manifest(parse(CohortConfig, block, "cohort"), tmp_path / "m.parquet")
    x = load_arrays(tmp_path / "m.parquet")
    assert (x.lvef < 0).all() and np.array_equal(x.ef_le_40, x.lvef <= -16)


@pytest.mark.parametrize(("block", "key"), [
    ({"target": {"range": [10, 5]}}, "cohort.target.range"),
    ({"target": {"range": [0, 1, 2]}}, "cohort.target.range"),
    ({"target": {"range": "0-100"}}, "cohort.target.range"),
    ({"target": {"threshold": 120}}, "cohort.target.threshold"),
    ({"target": {"column": "split"}}, "cohort.target.column"),
    ({"target": {"name": ""}}, "cohort.target.name"),
    ({"target": {"unit": "a\nb"}}, "cohort.target.unit"),
    ({"target": {"bogus": 1}}, "cohort.target.bogus"),
    ({"target": {"column": "bnp"}}, "cohort.target.column"),         # synthetic: LVEF only
    ({"target": {"name": "NT-proBNP"}}, "cohort.target"),
    ({"ef_threshold": 35.0}, "cohort.ef_threshold"),                  # moved to the target
])
def test_bad_target_keys_are_one_line_errors_naming_the_key(block: dict, key: str) -> None:
    with pytest.raises(ParamsError) as err:
        parse(CohortConfig, block, "cohort")
    msg = str(err.value)
    assert msg.startswith(f"{key}:") and "\n" not in msg, msg


def test_a_bad_target_stops_the_verb_on_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(
        {"cohort": cohort_block({"echo": "e", "ecg": "g", "labels": "l"}, threshold=40000)}))
    assert main(["cohort", "--params", str(tmp_path / "p.yaml"), "--out",
                 str(tmp_path / "m.parquet")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "rightsize: error: cohort.target.threshold: must lie strictly inside range [0, 35000], "
        "got 40000"]


def test_the_default_target_is_lvef_and_the_synthetic_threshold_still_moves() -> None:
    cfg = parse(CohortConfig, {"target": {"threshold": 35}}, "cohort")
    assert cfg.target.is_default and cfg.target.threshold == 35.0
    assert TargetConfig().as_dict() == {"column": "lvef", "name": "LVEF", "unit": "%",
                                        "range": [0.0, 100.0], "threshold": 40.0}
