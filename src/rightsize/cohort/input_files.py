"""Parquet inputs of the ``files`` source: open them, and read chosen rows group by group.

An embedding file can be far larger than memory allows to hold twice (1,208 records x
186 tokens x 768 float32 is ~690 MB), so only its key columns are read whole; the
embedding column is read one parquet row group at a time, for the rows one manifest row
group needs (:class:`RowFetcher`). A file sorted by subject keeps that to about one input
row group per manifest row group; a shuffled one re-reads row groups.

A folder of parquet files with one schema (the shards ``rightsize extract`` writes) reads as
one file whose row groups are the files' row groups in file-name order (:class:`FolderParquet`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rightsize.errors import DataError, InputError


@dataclass(frozen=True)
class _Group:
    num_rows: int


@dataclass(frozen=True)
class _Groups:
    """``metadata.row_group(g).num_rows`` over a folder's files."""

    sizes: tuple[int, ...]

    def row_group(self, g: int) -> _Group:
        return _Group(self.sizes[g])


class FolderParquet:
    """The ``*.parquet`` files of a folder, in name order, read as one parquet file (the
    part of :class:`pyarrow.parquet.ParquetFile` the ``files`` source uses). Footers are read
    up front; a file is opened when one of its row groups is read (the last one stays open),
    so a folder of thousands of shards holds one file open."""

    def __init__(self, folder: Path) -> None:
        self.paths = sorted(folder.glob("*.parquet"))
        if not self.paths:
            raise DataError(f"{folder}: no *.parquet files in the folder")
        metas = []
        for path in self.paths:
            try:
                metas.append(pq.read_metadata(path))
            except (pa.ArrowInvalid, OSError) as exc:
                raise DataError(f"{path}: not a parquet file "
                                f"({str(exc).splitlines()[0]})") from None
        self.schema_arrow = metas[0].schema.to_arrow_schema().remove_metadata()
        for path, meta in zip(self.paths, metas, strict=True):
            if not meta.schema.to_arrow_schema().remove_metadata().equals(self.schema_arrow):
                raise DataError(f"{path}: schema differs from the folder's first file")
        self._groups = [(i, g) for i, m in enumerate(metas) for g in range(m.num_row_groups)]
        self.num_row_groups = len(self._groups)
        self.metadata = _Groups(tuple(metas[i].row_group(g).num_rows for i, g in self._groups))
        self._open: tuple[int, pq.ParquetFile] | None = None

    def _file(self, i: int) -> pq.ParquetFile:
        if self._open is None or self._open[0] != i:
            self._open = (i, _open_one(self.paths[i]))
        return self._open[1]

    def read(self, columns: list[str]) -> pa.Table:
        """The columns of every file, concatenated."""
        return pa.concat_tables([pq.read_table(p, columns=columns) for p in self.paths])

    def read_row_group(self, g: int, columns: list[str]) -> pa.Table:
        """Row group ``g`` of the folder (a row group of one of its files)."""
        i, local = self._groups[g]
        return self._file(i).read_row_group(local, columns=columns)


def _open_one(path: Path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{path}: not a parquet file ({str(exc).splitlines()[0]})") from None


def open_parquet(path: Path, columns: tuple[str, ...], what: str = "input file"
                 ) -> pq.ParquetFile | FolderParquet:
    """Open ``path``, a parquet file or a folder of them (InputError "<what> not found" when
    missing), and check it has ``columns`` (DataError naming the first missing one)."""
    if path.is_dir():
        pf: pq.ParquetFile | FolderParquet = FolderParquet(path)
    elif not path.is_file():
        raise InputError(f"{path}: {what} not found")
    else:
        pf = _open_one(path)
    for col in columns:
        if col not in pf.schema_arrow.names:
            raise DataError(f"{path}: missing column {col}")
    return pf


class RowFetcher:
    """Rows of one column of a parquet file by file row index, reading row groups on demand."""

    def __init__(self, pf: pq.ParquetFile | FolderParquet, column: str) -> None:
        self.pf = pf
        self.column = column
        sizes = [pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)]
        self._bounds = np.cumsum([0, *sizes])
        self._cache: tuple[int, pa.Array] | None = None

    def group(self, g: int) -> pa.Array:
        """The column's values in row group ``g`` (the last group read is kept)."""
        if self._cache is None or self._cache[0] != g:
            col = self.pf.read_row_group(g, columns=[self.column]).column(self.column)
            self._cache = (g, col.combine_chunks())
        return self._cache[1]

    def take(self, file_rows: np.ndarray) -> list[tuple[np.ndarray, pa.Array]]:
        """``[(positions, values)]``: ``values[j]`` is file row ``file_rows[positions[j]]``.

        One entry per input row group touched, each group read once per call.
        """
        file_rows = np.asarray(file_rows, dtype=np.int64)
        groups = np.searchsorted(self._bounds, file_rows, side="right") - 1
        out = []
        for g in np.unique(groups):
            pos = np.flatnonzero(groups == g)
            local = file_rows[pos] - self._bounds[g]
            out.append((pos, self.group(int(g)).take(pa.array(local))))
        return out
