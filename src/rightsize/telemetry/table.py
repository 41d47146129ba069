"""The columnar result of reading event files: the contract between reader and cost report.

One tidy long table, never one Python object per point:

============  ==========  =================================================
column        type        meaning
============  ==========  =================================================
run           dictionary  run name: directory path relative to the root given
tag           dictionary  scalar tag
step          int64       global step
wall_time     float64     event wall time, seconds since the epoch
value         float64     scalar value (float32 simple_value widened exactly)
file          int32       index into :attr:`ScalarTable.files`
============  ==========  =================================================

(``columns`` holds ``file`` as that index; every table a user gets -- :meth:`to_arrow`,
:meth:`to_pandas`, the file ``rightsize scalars -o`` writes -- holds the path instead.)

Rows are in file order (files ordered as in :mod:`rightsize.telemetry.runs`), then record
order; re-logged steps are kept as separate rows. :meth:`ScalarTable.to_arrow` and
:meth:`ScalarTable.to_pandas` give the same rows with ``file`` as the event file's path
(relative to the root read), the tidy long table tbparse's readers get.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    import pandas as pd

SCHEMA = pa.schema([
    ("run", pa.dictionary(pa.int32(), pa.string())),
    ("tag", pa.dictionary(pa.int32(), pa.string())),
    ("step", pa.int64()),
    ("wall_time", pa.float64()),
    ("value", pa.float64()),
    ("file", pa.int32()),
])


def string_array(items: list[str]) -> pa.Array:
    """An Arrow string array built from buffers (``pa.array`` would import pandas, which the
    ``rightsize`` command must not)."""
    import numpy as np

    encoded = [s.encode("utf-8") for s in items]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(encoded),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


@dataclass(frozen=True)
class Problem:
    """One damaged region of an event file.

    ``kind`` is one of ``payload_crc``, ``length_crc``, ``bad_length`` (a valid header whose
    length runs past the end of the file, valid records after it), ``truncated_header``,
    ``truncated_payload``, ``undecodable`` (CRC fine, protobuf not). ``offset`` is where the
    damaged record starts; ``bytes_skipped`` how many bytes were not read as records.
    """

    file: str
    offset: int
    kind: str
    bytes_skipped: int

    def message(self) -> str:
        """One-line human description (used for warnings and ``--strict`` errors)."""
        return (f"{self.file}: {self.kind} at byte {self.offset} "
                f"({self.bytes_skipped} bytes skipped)")


@dataclass(frozen=True)
class FileInfo:
    """One event file (a *launch*): identity parsed from its name and what it held."""

    path: str                 # relative to the root given
    run: str                  # run name (its directory relative to the root)
    timestamp: int            # from the file name
    host: str | None          # from the file name (may contain dots)
    pid: int | None           # from the file name, when present
    size: int                 # bytes on disk
    records: int              # good records read
    events: int               # decoded events (records minus undecodable)
    first_wall_time: float | None   # min over all events, header included
    last_wall_time: float | None    # max over all events
    scalar_points: int        # rows this file contributed to the table
    kinds: dict[str, int] = field(default_factory=dict)  # non-scalar values counted per kind
    summary_values: int = 0   # every Summary.Value read, including tags left out by --tags

    @property
    def header_only(self) -> bool:
        """True for a file with no summary values at all (zero bytes or just file_version)."""
        return self.scalar_points == 0 and not self.kinds and self.summary_values == 0


@dataclass(frozen=True)
class ScalarTable:
    """All scalar points under a root, the files they came from, every problem met, and
    every directory or file that could not be read (``runs.Unreadable``)."""

    columns: pa.Table          # schema SCHEMA
    files: tuple[FileInfo, ...]
    problems: tuple[Problem, ...]
    unreadable: tuple[Any, ...] = ()

    @property
    def runs(self) -> list[str]:
        """Run names in order."""
        return sorted({f.run for f in self.files})

    @property
    def tags(self) -> list[str]:
        """Names of the tags that have points, sorted.

        Reads the index buffers directly: ``Array.to_numpy`` and ``pyarrow.compute`` would
        import pandas, which the CLI must not.
        """
        import numpy as np

        names: set[str] = set()
        for chunk in self.columns.column("tag").chunks:
            if len(chunk):
                idx = chunk.indices
                dtype = np.dtype(f"<i{idx.type.bit_width // 8}")
                codes = np.frombuffer(idx.buffers()[1], dtype=dtype)
                codes = codes[idx.offset:idx.offset + len(idx)]
                used = np.flatnonzero(np.bincount(codes))
                values = chunk.dictionary.to_pylist()
                names.update(values[i] for i in used.tolist())
        return sorted(names)

    def to_arrow(self) -> pa.Table:
        """The tidy table: run, tag, step, wall_time, value, and ``file`` as the event file's
        path relative to the root read (run, tag and file dictionary-encoded)."""
        paths = string_array([f.path for f in self.files])
        file_type = pa.dictionary(pa.int32(), pa.string())
        files = pa.chunked_array(
            [pa.DictionaryArray.from_arrays(chunk, paths)
             for chunk in self.columns.column("file").chunks], file_type)
        index = self.columns.schema.get_field_index("file")
        return self.columns.set_column(index, pa.field("file", file_type), files)

    def to_pandas(self) -> pd.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame (run, tag and file as categoricals)."""
        return self.to_arrow().to_pandas()
