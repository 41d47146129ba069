"""Parquet inputs of the ``files`` source: open them, and read chosen rows group by group.

An embedding file can be far larger than memory allows to hold twice (1,208 records x
186 tokens x 768 float32 is ~690 MB), so only its key columns are read whole; the
embedding column is read one parquet row group at a time, for the rows one manifest row
group needs (:class:`RowFetcher`). A file sorted by subject keeps that to about one input
row group per manifest row group; a shuffled one re-reads row groups.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rightsize.errors import DataError, InputError


def open_parquet(path: Path, columns: tuple[str, ...], what: str = "input file"
                 ) -> pq.ParquetFile:
    """Open ``path`` (InputError "<what> not found" when missing) and check it has ``columns``
    (DataError naming the first missing one)."""
    if not path.is_file():
        raise InputError(f"{path}: {what} not found")
    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{path}: not a parquet file ({str(exc).splitlines()[0]})") from None
    for col in columns:
        if col not in pf.schema_arrow.names:
            raise DataError(f"{path}: missing column {col}")
    return pf


class RowFetcher:
    """Rows of one column of a parquet file by file row index, reading row groups on demand."""

    def __init__(self, pf: pq.ParquetFile, column: str) -> None:
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
