"""``files.joined``: a team's one-file manifest (one row per subject) read without conversion."""

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
from rightsize.cohort.truth import load_truth
from rightsize.errors import DataError
from rightsize.params import parse

from .test_cohort_files import (
    CLIPS,
    ECG_DIM,
    ECG_IDS,
    ECHO_DIM,
    IDS,
    SPLIT,
    ecg_vec,
    echo_vec,
    files_config,
    write_inputs,
)

LIST = pa.list_(pa.float64())
CLIP_LIST = pa.list_(pa.list_(pa.float32()))


def joined_rows(padded_to: int | None = None) -> dict[str, list[Any]]:
    """The three-file test cohort as one row per labelled subject (clips lowest first)."""
    echo, ecg = [], []
    for sid in IDS:
        clips = [echo_vec(sid, c).tolist() for c in sorted(CLIPS.get(sid, []))]
        if padded_to is not None:                              # a zero-padded clip tensor
            clips += [[0.0] * ECHO_DIM] * (padded_to - len(clips))
        echo.append(clips)
        ecg.append(ecg_vec(sid).tolist() if sid in ECG_IDS else None)
    return {"subject_id": list(IDS), "lvef": [30.0 + 4 * i for i in range(10)],
            "split": list(SPLIT), "echo_embedding": echo, "ecg_embedding": ecg}


def write_joined(path: Path, rows: dict[str, list[Any]], echo_type: pa.DataType = CLIP_LIST,
                 ecg_type: pa.DataType = LIST, row_group_size: int = 3) -> Path:
    cols = {k: v for k, v in rows.items() if k not in ("echo_embedding", "ecg_embedding")}
    table = pa.table({**cols, "echo_embedding": pa.array(rows["echo_embedding"], echo_type),
                      "ecg_embedding": pa.array(rows["ecg_embedding"], ecg_type)})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def joined_config(path: Path, **overrides: Any) -> CohortConfig:
    block = {"source": "files", "n_subjects": 10, "splits": {"train": 6, "val": 2, "test": 2},
             "echo_dim": ECHO_DIM, "ecg_dim": ECG_DIM, "max_clips": 3, "row_group_size": 4,
             "files": {"joined": str(path)}, **overrides}
    return parse(CohortConfig, block, "cohort")


def _three_file_arrays(tmp_path: Path):
    d = tmp_path / "three"
    d.mkdir()
    out = d / "m.parquet"
    build_manifest(files_config(write_inputs(d)), out)
    return load_arrays(out)


@pytest.mark.parametrize("layout", ["clips", "padded", "flags"])
def test_joined_file_equals_the_three_file_build(tmp_path: Path, layout: str) -> None:
    rows = joined_rows(padded_to=5 if layout == "padded" else None)
    if layout == "flags":        # explicit flags: absent rows may hold anything (zeros here)
        rows["has_echo_embedding"] = [bool(c) for c in rows["echo_embedding"]]
        rows["has_ecg_embedding"] = [v is not None for v in rows["ecg_embedding"]]
        rows["ecg_embedding"] = [v or [0.0] * ECG_DIM for v in rows["ecg_embedding"]]
    path = write_joined(tmp_path / "team.parquet", rows)
    out, truth = tmp_path / "m.parquet", tmp_path / "truth.parquet"
    report = build_manifest(joined_config(path), out, truth=truth)
    x, ref = load_arrays(out), _three_file_arrays(tmp_path)
    for name in ("subject_id", "split", "lvef", "ef_le_40", "echo", "n_clips", "ecg",
                 "has_echo", "has_ecg"):
        assert np.array_equal(getattr(x, name), getattr(ref, name)), name
    assert report.metadata["clips_dropped"] == 3               # P01 loses 7, 9; P09 loses 4
    assert report.metadata["inputs"] == {"joined": str(path)}
    assert load_truth(truth) is None


def test_pooled_echo_vector_is_one_clip_and_tokens_are_inferred(tmp_path: Path) -> None:
    rows = joined_rows()
    rows["echo_embedding"] = [c[0] if c else None for c in rows["echo_embedding"]]
    rows["ecg_embedding"] = [None if v is None else [v, [x + 1 for x in v]]
                             for v in rows["ecg_embedding"]]
    path = write_joined(tmp_path / "team.parquet", rows, echo_type=LIST,
                        ecg_type=pa.list_(pa.list_(pa.float32(), ECG_DIM), 2))
    out = tmp_path / "m.parquet"
    report = build_manifest(joined_config(path, ecg_tokens=None), out)
    assert report.metadata["geometry"]["ecg_tokens"] == 2
    x = load_arrays(out)
    assert list(x.n_clips) == [0 if not CLIPS.get(s) else 1 for s in IDS]
    i = IDS.index("P05")
    np.testing.assert_allclose(x.echo[i, 0], echo_vec("P05", 5).astype(np.float32))
    np.testing.assert_allclose(x.ecg[i], [ecg_vec("P05"), ecg_vec("P05") + 1])
    assert not x.has_ecg[IDS.index("P04")] and x.ecg.shape == (10, 2, ECG_DIM)


def test_without_flags_null_empty_and_zero_mean_absent(tmp_path: Path) -> None:
    rows = joined_rows()
    rows["echo_embedding"][IDS.index("P02")] = []
    rows["echo_embedding"][IDS.index("P06")] = None
    rows["ecg_embedding"][IDS.index("P07")] = [0.0] * ECG_DIM
    rows["ecg_embedding"][IDS.index("P08")] = []
    x = load_arrays(build_manifest(joined_config(write_joined(tmp_path / "t.parquet", rows)),
                                   tmp_path / "m.parquet").path)
    for sid in ("P02", "P03", "P06"):
        assert not x.has_echo[IDS.index(sid)], sid
    for sid in ("P04", "P07", "P08"):
        assert not x.has_ecg[IDS.index(sid)] and not x.ecg[IDS.index(sid)].any(), sid
    assert x.has_ecg.sum() == 7 and x.has_echo.sum() == 7


def _bad(rows: dict[str, list[Any]], kind: str) -> tuple[dict, dict[str, Any]]:
    types: dict[str, Any] = {}
    if kind == "flat_clips":
        rows["echo_embedding"] = [sum(c, []) if c else None for c in rows["echo_embedding"]]
        types["echo_type"] = LIST
    elif kind == "clip_dim":
        rows["echo_embedding"][IDS.index("P05")][1] = [1.0] * 4
    elif kind == "ragged_tokens":
        rows["ecg_embedding"] = [None if v is None else [v] * (3 if s != "P07" else 2)
                                 for s, v in zip(IDS, rows["ecg_embedding"], strict=True)]
        types["ecg_type"] = CLIP_LIST
    elif kind == "nan_ecg":
        rows["ecg_embedding"][IDS.index("P09")][2] = float("nan")
    elif kind == "flag_null":
        rows["has_ecg_embedding"] = [True] * 10
    elif kind == "lvef":
        rows["lvef"][IDS.index("P03")] = 140.0
    elif kind == "deep":
        rows["ecg_embedding"] = [None if v is None else [[v]] for v in rows["ecg_embedding"]]
        types["ecg_type"] = pa.list_(pa.list_(pa.list_(pa.float32())))
    return rows, types


@pytest.mark.parametrize(("kind", "needle"), [
    ("flat_clips", "column echo_embedding: 30 floats for row 0 (subject P01) = 5 x 6: store "
                   "several clip vectors as a list of lists, one list per clip"),
    ("clip_dim", "column echo_embedding: wrong dimension 4 for row 4 (subject P05), clip 1, "
                 "expected 6"),
    ("ragged_tokens", "column ecg_embedding: 2 tokens for row 6 (subject P07), expected 3 "
                      "(as row 0 (subject P01): token counts must agree)"),
    ("nan_ecg", "column ecg_embedding: non-finite value for row 8 (subject P09)"),
    ("flag_null", "column ecg_embedding: null or empty for row 3 (subject P04) but "
                  "has_ecg_embedding is true"),
    ("lvef", "column lvef: 140.0 for subject P03 is not a finite percentage"),
    ("deep", "column ecg_embedding: expected a list of floats or a list of lists of floats"),
])
def test_joined_errors_name_row_and_column(tmp_path: Path, kind: str, needle: str) -> None:
    rows, types = _bad(joined_rows(), kind)
    path = write_joined(tmp_path / "team.parquet", rows, **types)
    out = tmp_path / "m.parquet"
    with pytest.raises(DataError) as err:
        build_manifest(joined_config(path, ecg_tokens=None), out)
    msg = str(err.value)
    assert msg.startswith(f"{path}: ") and needle in msg and "\n" not in msg, msg
    assert not out.exists()


def test_token_count_must_match_params(tmp_path: Path) -> None:
    rows = joined_rows()
    rows["ecg_embedding"] = [None if v is None else [v] * 4 for v in rows["ecg_embedding"]]
    path = write_joined(tmp_path / "team.parquet", rows, ecg_type=CLIP_LIST)
    with pytest.raises(DataError, match=r"column ecg_embedding: 4 tokens per record \(row 0 "
                                        r"\(subject P01\)\) but cohort.ecg_tokens = 16"):
        build_manifest(joined_config(path, ecg_tokens=16), tmp_path / "m.parquet")


def test_joined_and_three_files_are_exclusive() -> None:
    from rightsize.errors import ParamsError

    with pytest.raises(ParamsError, match="^cohort.files.echo: give either files.joined"):
        parse(CohortConfig, {"source": "files", "files": {"joined": "t.parquet",
                                                          "echo": "e.parquet"}}, "cohort")
