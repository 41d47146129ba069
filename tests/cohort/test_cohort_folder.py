"""A folder of parquet files (extract's shards) reads as one file, in file-name order."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rightsize.cohort.input_files import RowFetcher, open_parquet
from rightsize.errors import DataError


def _write(path: Path, ids: list[str], value: float) -> None:
    pq.write_table(pa.table({"subject_id": ids, "embedding": [[value, value]] * len(ids)}),
                   path, row_group_size=2)


def test_folder_reads_as_one_file_in_name_order(tmp_path: Path) -> None:
    _write(tmp_path / "shard-00001.parquet", ["c"], 3.0)
    _write(tmp_path / "shard-00000.parquet", ["a", "b", "x"], 1.0)
    (tmp_path / ".shard-00002.parquet.abc.tmp").write_bytes(b"half-written")
    pf = open_parquet(tmp_path, ("subject_id", "embedding"))
    assert pf.read(columns=["subject_id"]).column("subject_id").to_pylist() == \
        ["a", "b", "x", "c"]
    assert pf.num_row_groups == 3                        # 2 + 1 in shard 0, 1 in shard 1
    taken = RowFetcher(pf, "embedding").take([3, 0])
    got = {int(p): v.as_py() for pos, vals in taken for p, v in zip(pos, vals, strict=True)}
    assert got == {0: [3.0, 3.0], 1: [1.0, 1.0]}


def test_a_file_of_another_schema_or_an_empty_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no \\*.parquet files"):
        open_parquet(tmp_path, ("subject_id",))
    _write(tmp_path / "a.parquet", ["a"], 1.0)
    pq.write_table(pa.table({"subject_id": ["b"], "embedding": [[1, 2]]}), tmp_path / "b.parquet")
    with pytest.raises(DataError, match="b.parquet: schema differs"):
        open_parquet(tmp_path, ("subject_id",))
