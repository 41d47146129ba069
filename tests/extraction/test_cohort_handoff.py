"""cohort.source: files reads an extraction only when complete and verified."""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from extract_fixtures import extract, make_corpus, write_params

from rightsize.errors import DataError


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two complete extractions of one corpus: layers [8] (``a``) and [4] (``b``)."""
    import os

    folder = tmp_path_factory.mktemp("handoff")
    old = Path.cwd()
    os.chdir(folder)
    try:
        make_corpus(folder, 6)
        write_params(folder)
        assert extract(folder, out="a") == 0
        write_params(folder, layers=[4])
        assert extract(folder, out="b") == 0
    finally:
        os.chdir(old)
    ids = [str(10_000_000 + i) for i in range(6)]
    with open(folder / "labels.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["subject_id", "lvef", "split"])
        w.writerows([s, 40 + i, (["train"] * 4 + ["val", "test"])[i]]
                    for i, s in enumerate(ids))
    pq.write_table(pa.table({"subject_id": ids, "clip": [0] * 6,
                             "embedding": [[0.5] * 8] * 6}), folder / "echo.parquet")
    return folder


def _cohort(root: Path, ecg: Path):
    from rightsize.cohort.config import CohortConfig
    from rightsize.cohort.files_source import FilesCohort
    from rightsize.params import parse

    cfg = parse(CohortConfig, {"source": "files", "n_subjects": 6, "echo_dim": 8,
                               "ecg_dim": 512, "max_clips": 1, "ecg_tokens": None,
                               "splits": {"train": 4, "val": 1, "test": 1},
                               "files": {"echo": str(root / "echo.parquet"), "ecg": str(ecg),
                                         "labels": str(root / "labels.csv")}}, "cohort")
    return FilesCohort(cfg)


def _copy(runs: Path, name: str, tmp_path: Path) -> Path:
    out = tmp_path / name
    shutil.copytree(runs / name, out)
    return out


@pytest.mark.parametrize("which", ["folder", "shards"])
def test_a_complete_extraction_is_verified_and_read(runs: Path, which: str) -> None:
    ecg = runs / "a" if which == "folder" else runs / "a" / "shards"
    cohort = _cohort(runs, ecg)
    assert cohort.ecg_tokens == 93 and cohort.has_ecg.all()
    meta = cohort.metadata()["ecg_extraction"]
    assert meta["shards"] == 3 and meta["files_verified"] == 9
    assert meta["folder"] == str(runs / "a")


def test_a_killed_extraction_is_refused_naming_the_folder(runs: Path, tmp_path: Path) -> None:
    out = _copy(runs, "a", tmp_path)
    (out / "SHA256SUMS").unlink()
    for p in list((out / "shards").glob("shard-0000[12].*")):
        p.unlink()
    with pytest.raises(DataError, match=f"{out}: not a complete extraction: no SHA256SUMS"):
        _cohort(runs, out / "shards")


def test_a_shard_changed_after_the_run_is_refused(runs: Path, tmp_path: Path) -> None:
    out = _copy(runs, "a", tmp_path)
    shutil.copy(runs / "b/shards/shard-00001.parquet", out / "shards/shard-00001.parquet")
    with pytest.raises(DataError, match="shards/shard-00001.parquet does not match its SHA-256"):
        _cohort(runs, out)


def test_shards_of_two_settings_are_refused_even_with_matching_sums(
        runs: Path, tmp_path: Path) -> None:
    out = _copy(runs, "a", tmp_path)
    for ext in ("parquet", "json"):
        shutil.copy(runs / f"b/shards/shard-00001.{ext}", out / f"shards/shard-00001.{ext}")
    lines = []
    for line in (out / "SHA256SUMS").read_text().splitlines():
        rel = line.split("  ", 1)[1]
        lines.append(f"{hashlib.sha256((out / rel).read_bytes()).hexdigest()}  {rel}")
    (out / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="shards written under different settings: "
                       "shard-00000.json and shard-00001.json differ in layers"):
        _cohort(runs, out)


def test_a_leftover_shard_is_refused(runs: Path, tmp_path: Path) -> None:
    out = _copy(runs, "a", tmp_path)
    shutil.copy(out / "shards/shard-00002.parquet", out / "shards/shard-00003.parquet")
    with pytest.raises(DataError, match="shards/shard-00003.parquet is not in SHA256SUMS"):
        _cohort(runs, out)
