"""``rightsize cohort`` on inputs that would give a cohort without a modality (``source:
files``: an embedding file with no rows, or none of whose subjects is labelled) is exit 4
naming the file, and nothing is written (issue 35, item 6); on a full disk it is exit 2
naming the output that did not fit, and the previous manifest, truth file and metrics stay
as they were (item 12)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from fault_helpers import rightsize
from test_full_disk import PAGE, disk, fill  # noqa: F401 - disk: the tmpfs fixture

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


# -- a full disk (issue 35, item 12): exit 2 naming the output, the old set left whole ------

def _cohort(params: Path, out: Path) -> list:
    return ["cohort", "--params", params, "--out", out / "manifest.parquet",
            "--truth", out / "truth.parquet", "--metrics", out / "cohort.json", "-q"]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _pages(path: Path) -> int:
    return -(-path.stat().st_size // PAGE)


@pytest.mark.parametrize("fails", ["manifest.parquet", "truth.parquet", "cohort.json"])
def test_cohort_on_a_full_disk_is_exit_2_and_keeps_the_old_set(disk, project, tmp_path,  # noqa: F811
                                                               fails):
    """The old manifest, truth and metrics are on the disk; the new build finds room for
    the outputs before ``fails`` only: exit 2 naming it, and the old three as they were."""
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["cohort"]["seed"] = 1
    old_params = tmp_path / "old.yaml"
    old_params.write_text(yaml.safe_dump(params))
    ref = tmp_path / "ref"                               # the new set's sizes, off the disk
    assert rightsize(_cohort(project / "params.yaml", ref)).rc == 0
    out = disk / "cohort"
    assert rightsize(_cohort(old_params, out)).rc == 0
    old = _files(out)
    before = {"manifest.parquet": 0, "truth.parquet": _pages(ref / "manifest.parquet"),
              "cohort.json": _pages(ref / "manifest.parquet") + _pages(ref / "truth.parquet")}
    fill(disk, leave_pages=before[fails])
    res = rightsize(_cohort(project / "params.yaml", out))
    assert res.rc == 2, res.err
    assert res.error_line() == f"rightsize: error: no space left writing {out / fails}"
    assert _files(out) == old                            # old set whole, nothing staged left
    (disk / "filler").unlink()
    assert rightsize(_cohort(project / "params.yaml", out)).rc == 0
    new = _files(out)
    assert set(new) == set(old) and new["manifest.parquet"] == \
        (ref / "manifest.parquet").read_bytes() != old["manifest.parquet"]
