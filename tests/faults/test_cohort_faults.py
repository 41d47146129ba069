"""``rightsize cohort`` (``source: files``) on inputs that would give a cohort without a
modality: an embedding file with no rows, or none of whose subjects is labelled, is exit 4
naming the file, and nothing is written (issue 35, item 6)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from fault_helpers import rightsize

IDS = [f"P{i}" for i in range(10)]
SPLITS = ["train"] * 6 + ["val"] * 2 + ["test"] * 2
DIM = 4


def _inputs(root: Path, ecg_ids: list[str], echo_ids: list[str]) -> Path:
    """Echo, ECG and labels files for ``IDS`` and the params file reading them."""
    pq.write_table(pa.table({
        "subject_id": pa.array(echo_ids, pa.string()),
        "clip": pa.array([0] * len(echo_ids), pa.int64()),
        "embedding": pa.array([[1.0 + i] * DIM for i in range(len(echo_ids))],
                              pa.list_(pa.float32()))}), root / "echo.parquet")
    pq.write_table(pa.table({
        "subject_id": pa.array(ecg_ids, pa.string()),
        "embedding": pa.array([[1.0 + i] * DIM for i in range(len(ecg_ids))],
                              pa.list_(pa.float32(), DIM))}), root / "ecg.parquet")
    (root / "labels.csv").write_text("subject_id,lvef,split\n" + "".join(
        f"{s},{30 + 3 * i},{SPLITS[i]}\n" for i, s in enumerate(IDS)))
    block = {"source": "files", "n_subjects": len(IDS),
             "splits": {"train": 6, "val": 2, "test": 2}, "echo_dim": DIM, "ecg_dim": DIM,
             "max_clips": 1,
             "files": {k: str(root / f) for k, f in
                       (("echo", "echo.parquet"), ("ecg", "ecg.parquet"),
                        ("labels", "labels.csv"))}}
    params = root / "params.yaml"
    params.write_text(yaml.safe_dump({"cohort": block}))
    return params


@pytest.mark.parametrize(("case", "needle"), [
    ("ecg_no_rows", "ecg.parquet: no rows (every subject would lack"),
    ("echo_no_rows", "echo.parquet: no rows (every subject would lack"),
    ("ecg_unlabelled", "ecg.parquet: none of its 3 ECG rows belongs to a subject in"),
])
def test_an_embedding_file_that_gives_no_subject_a_modality_is_exit_4(tmp_path, case, needle):
    ecg_ids = [] if case == "ecg_no_rows" else ["X1", "X2", "X3"] if \
        case == "ecg_unlabelled" else IDS
    params = _inputs(tmp_path, ecg_ids, [] if case == "echo_no_rows" else IDS)
    out = tmp_path / "out"
    res = rightsize(["cohort", "--params", params, "--out", out / "manifest.parquet",
                     "--truth", out / "truth.parquet", "--metrics", out / "cohort.json"])
    assert res.rc == 4, (res.rc, res.err)
    line = res.error_line()
    assert needle in line and str(tmp_path) in line, line
    if case == "ecg_unlabelled":
        assert str(tmp_path / "labels.csv") in line
    assert not out.exists() or not list(out.iterdir())


def test_the_same_files_with_their_rows_build(tmp_path):
    """The control: the inputs above, every file with its rows, build with both modalities."""
    import json

    params = _inputs(tmp_path, IDS, IDS)
    res = rightsize(["cohort", "--params", params, "--out", tmp_path / "m.parquet",
                     "--metrics", tmp_path / "c.json", "-q"])
    assert res.rc == 0, res.err
    metrics = json.loads((tmp_path / "c.json").read_text())
    assert metrics["n_has_ecg"] == metrics["n_has_echo"] == len(IDS)
