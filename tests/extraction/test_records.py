"""The record list (MIMIC-IV-ECG layout, CSV or parquet), shards and task ranges."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rightsize.errors import DataError, InputError
from rightsize.extraction.record_list import (
    parse_task,
    read_record_list,
    shard_count,
    shard_rows,
    shard_sizes,
    task_shards,
)

MIMIC = ("subject_id,study_id,file_name,ecg_time,path\n"
         "10000032,40689238,40689238,2180-07-23 08:44:00,"
         "files/p1000/p10000032/s40689238/40689238\n"
         "10000032,44458630,44458630,2180-07-23 09:54:00,"
         "files/p1000/p10000032/s44458630/44458630\n")


def test_reads_mimic_record_list_csv_and_parquet(tmp_path: Path) -> None:
    (tmp_path / "record_list.csv").write_text(MIMIC)
    a = read_record_list(tmp_path / "record_list.csv", tmp_path)
    assert a.study_id == ("40689238", "44458630") and a.subject_id == ("10000032",) * 2
    assert a.file(1) == tmp_path / "files/p1000/p10000032/s44458630/44458630"
    frame = pd.read_csv(tmp_path / "record_list.csv")            # integer ids in parquet
    frame.to_parquet(tmp_path / "list.parquet")
    b = read_record_list(tmp_path / "list.parquet", tmp_path)
    assert (b.study_id, b.subject_id, b.path) == (a.study_id, a.subject_id, a.path)


@pytest.mark.parametrize("text,match", [
    ("subject_id,path\n1,a\n", "missing column study_id"),
    ("subject_id,study_id,path\n1,7,a\n2,7,b\n", r"duplicate record 7 \(rows 1 and 2\)"),
    ("subject_id,study_id,path\n1,7,\n", "column path: empty value in row 1"),
])
def test_bad_lists_name_column_and_row(tmp_path: Path, text: str, match: str) -> None:
    (tmp_path / "l.csv").write_text(text)
    with pytest.raises(DataError, match=match):
        read_record_list(tmp_path / "l.csv", tmp_path)


def test_missing_list_or_root(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="record list not found"):
        read_record_list(tmp_path / "absent.csv", tmp_path)
    (tmp_path / "l.csv").write_text(MIMIC)
    with pytest.raises(InputError, match="record root folder not found"):
        read_record_list(tmp_path / "l.csv", tmp_path / "nowhere")


def test_shards_are_equal_contiguous_and_cover_every_record() -> None:
    assert shard_count(10, 4) == 3 and list(shard_rows(2, 10, 4)) == [7, 8, 9]
    assert shard_sizes(200, 64) == (50, 50, 50, 50) and shard_sizes(10, 4) == (4, 3, 3)
    assert shard_rows(3, 10, 4) == range(0)
    for records in (1, 7, 64, 65, 200, 1000):
        for per in (1, 3, 64, 100):
            rows = [r for s in range(shard_count(records, per))
                    for r in shard_rows(s, records, per)]
            sizes = shard_sizes(records, per)
            assert rows == list(range(records)), (records, per)
            assert max(sizes) <= per and max(sizes) - min(sizes) <= 1
            assert list(sizes) == sorted(sizes, reverse=True)


def test_task_ranges_are_contiguous_and_cover_every_shard() -> None:
    for shards in (1, 5, 12, 13):
        for tasks in (1, 3, 5):
            ranges = [task_shards(i, tasks, shards) for i in range(tasks)]
            assert [s for r in ranges for s in r] == list(range(shards))
            assert max(map(len, ranges)) - min(map(len, ranges)) <= 1
    assert parse_task("3/16") == (3, 16)
    for bad in ("16/16", "-1/4", "a/b", "3"):
        with pytest.raises(InputError, match="--task"):
            parse_task(bad)
