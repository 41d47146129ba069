"""``source: files``: join echo clips, ECG and labels on subject_id; input errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rightsize.cohort.build import build_manifest
from rightsize.cohort.config import CohortConfig
from rightsize.cohort.load_manifest import load_arrays
from rightsize.errors import DataError, InputError
from rightsize.params import parse

ECHO_DIM, ECG_DIM = 6, 5
IDS = [f"P{i:02d}" for i in range(1, 11)]                       # 10 labelled subjects
CLIPS = {"P01": [7, 2, 9, 0, 4], "P02": [3], "P04": [1, 0], "P05": [5, 6, 8],
         "P06": [0], "P07": [2, 1], "P08": [0], "P09": [4, 3, 2, 1], "P10": [0],
         "X99": [0, 1]}                                          # P03: no echo; X99: no label
ECG_IDS = [s for s in IDS if s != "P04"] + ["X98"]                # P04: no ECG
SPLIT = ["train"] * 6 + ["val"] * 2 + ["test"] * 2


def echo_vec(sid: str, clip: int) -> np.ndarray:
    return (int(sid[1:]) * 100 + clip + np.arange(ECHO_DIM) / 10).astype(np.float64)


def ecg_vec(sid: str) -> np.ndarray:
    return (int(sid[1:]) * 10 + np.arange(ECG_DIM) / 10).astype(np.float32)


def write_inputs(tmp: Path, echo_rows: list[tuple[str, int, list[float]]] | None = None,
                 ecg: dict[str, list[float]] | None = None,
                 labels: str | None = None) -> dict[str, str]:
    if echo_rows is None:
        echo_rows = [(s, c, list(echo_vec(s, c))) for s, cs in CLIPS.items() for c in cs]
        echo_rows = echo_rows[::-1]                              # not sorted by subject
    pq.write_table(pa.table({
        "subject_id": [r[0] for r in echo_rows], "clip": [r[1] for r in echo_rows],
        "embedding": pa.array([r[2] for r in echo_rows], pa.list_(pa.float64()))}),
        tmp / "echo.parquet", row_group_size=4)
    if ecg is None:
        ecg = {s: list(ecg_vec(s)) for s in ECG_IDS}
    pq.write_table(pa.table({
        "subject_id": list(ecg),
        "embedding": pa.array(list(ecg.values()), pa.list_(pa.float32(), ECG_DIM))}),
        tmp / "ecg.parquet")
    if labels is None:
        lines = ["subject_id,lvef,split,site"] + [
            f"{s},{30 + 4 * i},{SPLIT[i]},x" for i, s in enumerate(IDS)]
        labels = "\n".join(lines[:1] + lines[1:][::-1]) + "\n"
    (tmp / "labels.csv").write_text(labels, encoding="utf-8")
    return {"echo": str(tmp / "echo.parquet"), "ecg": str(tmp / "ecg.parquet"),
            "labels": str(tmp / "labels.csv")}


def files_config(files: dict[str, str], **overrides: Any) -> CohortConfig:
    block = {"source": "files", "n_subjects": 10, "splits": {"train": 6, "val": 2, "test": 2},
             "echo_dim": ECHO_DIM, "ecg_dim": ECG_DIM, "max_clips": 3, "row_group_size": 4,
             "files": files, **overrides}
    return parse(CohortConfig, block, "cohort")


def test_join_keeps_lowest_clips_and_flags_missing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "manifest.parquet"
    report = build_manifest(files_config(write_inputs(tmp_path)), out)
    x = load_arrays(out)
    assert list(x.subject_id) == IDS
    assert [x.split[i] for i in range(10)] == [0] * 6 + [1] * 2 + [2] * 2
    np.testing.assert_allclose(x.lvef, [30 + 4 * i for i in range(10)])
    assert np.array_equal(x.ef_le_40, x.lvef <= 40)
    expected_clips = {s: sorted(CLIPS.get(s, []))[:3] for s in IDS}
    assert list(x.n_clips) == [len(expected_clips[s]) for s in IDS]
    for i, sid in enumerate(IDS):
        for slot, clip in enumerate(expected_clips[sid]):
            np.testing.assert_allclose(x.echo[i, slot], echo_vec(sid, clip).astype(np.float32))
        assert not x.echo[i, len(expected_clips[sid]):].any()
        if sid == "P04":
            assert not x.has_ecg[i] and not x.ecg[i].any()
        else:
            np.testing.assert_allclose(x.ecg[i], ecg_vec(sid))
    assert not x.has_echo[IDS.index("P03")] and x.has_ecg[IDS.index("P03")]
    assert report.metadata["perfect_model_mae"] is None
    assert report.metadata["clips_dropped"] == 2 + 1         # P01 loses 7, 9; P09 loses 4
    err = capsys.readouterr().err
    assert "echo.parquet: 2 clip rows of subjects without labels ignored" in err
    assert "ecg.parquet: 1 ECG rows of subjects without labels ignored" in err


def test_splits_assigned_by_seed_without_split_column(tmp_path: Path) -> None:
    labels = "subject_id,lvef\n" + "".join(f"{s},{50 + i}\n" for i, s in enumerate(IDS))
    out = tmp_path / "m.parquet"
    build_manifest(files_config(write_inputs(tmp_path, labels=labels)), out)
    x = load_arrays(out)
    assert np.bincount(x.split, minlength=3).tolist() == [6, 2, 2]


def _labels(rows: list[str]) -> str:
    return "subject_id,lvef,split\n" + "\n".join(rows) + "\n"


GOOD = [f"{s},{50},{SPLIT[i]}" for i, s in enumerate(IDS)]


@pytest.mark.parametrize(("kind", "needle"), [
    ("echo_dim", "echo.parquet: column embedding: wrong dimension 4 for subject P05, clip 6"),
    ("echo_nan", "echo.parquet: column embedding: non-finite value for subject P02, clip 3"),
    ("echo_dup", "echo.parquet: duplicate clip 0 for subject P06"),
    ("ecg_nan", "ecg.parquet: column embedding: non-finite value for subject P07"),
    ("ecg_dup", "ecg.parquet: column subject_id: duplicate subject P01"),
    ("bad_split", "labels.csv: column split: 'holdout' for subject P10 is not one of"),
    ("two_splits", "labels.csv: column split: subject P01 in two splits"),
    ("dup_label", "labels.csv: column subject_id: duplicate subject P01"),
    ("lvef_nan", "labels.csv: column lvef: nan for subject P03"),
    ("count", "labels.csv: column split: train has 5 subjects but cohort.splits.train = 6"),
    ("no_clip_col", "echo.parquet: missing column clip"),
])
def test_input_errors_name_file_column_and_subject(tmp_path: Path, kind: str,
                                                   needle: str) -> None:
    echo_rows = [(s, c, list(echo_vec(s, c))) for s, cs in CLIPS.items() for c in cs]
    ecg = {s: list(ecg_vec(s)) for s in ECG_IDS}
    labels = _labels(GOOD)
    n_subjects, splits = 10, {"train": 6, "val": 2, "test": 2}
    if kind == "echo_dim":
        echo_rows = [(s, c, v[:4] if (s, c) == ("P05", 6) else v) for s, c, v in echo_rows]
    elif kind == "echo_nan":
        echo_rows = [(s, c, [np.nan] * ECHO_DIM if s == "P02" else v) for s, c, v in echo_rows]
    elif kind == "echo_dup":
        echo_rows.append(("P06", 0, list(echo_vec("P06", 0))))
    elif kind == "ecg_nan":
        ecg["P07"] = [np.inf] * ECG_DIM
    elif kind == "ecg_dup":
        ecg = None
    elif kind == "bad_split":
        labels = _labels(GOOD[:-1] + ["P10,50,holdout"])
    elif kind == "two_splits":
        labels = _labels(GOOD + ["P01,50,test"])
        n_subjects, splits = 11, {"train": 6, "val": 2, "test": 3}
    elif kind == "dup_label":
        labels = _labels(GOOD + ["P01,50,train"])
        n_subjects, splits = 11, {"train": 7, "val": 2, "test": 2}
    elif kind == "lvef_nan":
        labels = _labels([r.replace("P03,50", "P03,") for r in GOOD])
    elif kind == "count":
        labels = _labels(GOOD[:5] + GOOD[6:] + ["P11,50,val"])
    files = write_inputs(tmp_path, echo_rows=echo_rows, ecg=ecg, labels=labels)
    if kind == "ecg_dup":
        table = pq.read_table(files["ecg"])
        pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), files["ecg"])
    if kind == "no_clip_col":
        pq.write_table(pq.read_table(files["echo"]).drop_columns(["clip"]), files["echo"])
    out = tmp_path / "manifest.parquet"
    cfg = files_config(files, n_subjects=n_subjects, splits=splits)
    with pytest.raises(DataError) as err:
        build_manifest(cfg, out)
    msg = str(err.value)
    assert needle in msg and "\n" not in msg, msg
    assert not out.exists()
    assert not list(tmp_path.glob(".manifest.parquet.*"))   # no temp file left behind


def test_missing_input_file_is_input_error(tmp_path: Path) -> None:
    files = write_inputs(tmp_path)
    files["ecg"] = str(tmp_path / "nope.parquet")
    with pytest.raises(InputError, match="nope.parquet: input file not found"):
        build_manifest(files_config(files), tmp_path / "m.parquet")
