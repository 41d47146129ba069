"""The record list (MIMIC-IV-ECG's ``record_list.csv`` layout) and its cut into shards.

A record list has one row per ECG record: ``subject_id``, ``study_id`` and ``path`` (the
WFDB record without extension, relative to the root folder and staying under it: an
absolute path or one with ``..`` is refused naming its row), as MIMIC-IV-ECG's
``record_list.csv`` does; other columns (``file_name``, ``ecg_time``) are ignored. A parquet
file with the same columns works too. ``study_id`` is the record id and must be unique.

The list is cut, in its order, into ``ceil(records / shard_records)`` shards of equal size
(sizes differ by at most one record, the larger first), so no shard is a short tail that leaves
workers idle at the end of a run: 200 records at ``shard_records: 64`` are 4 shards of 50.
A shard is the unit of work, of resumption and of the Slurm array's task ranges.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from rightsize.errors import DataError, InputError

COLUMNS = ("subject_id", "study_id", "path")


@dataclass(frozen=True)
class RecordList:
    """The records, in list order: ids as strings, paths relative to ``root``."""

    subject_id: tuple[str, ...]
    study_id: tuple[str, ...]
    path: tuple[str, ...]
    root: Path
    source: Path

    def __len__(self) -> int:
        return len(self.study_id)

    def file(self, i: int) -> Path:
        """Record ``i``'s WFDB path (no extension) under the root."""
        return self.root / self.path[i]


def _cell(value: object) -> str:
    """An id cell as text: integers without a decimal point (pandas may read them as floats)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def read_record_list(path: Path, root: Path) -> RecordList:
    """Read ``path`` (CSV or parquet); errors name the file, the column and the row."""
    import pandas as pd

    if not path.is_file():
        raise InputError(f"{path}: record list not found")
    try:
        if path.suffix == ".parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the record list "
                         f"({exc.strerror or exc})") from None
    except ValueError as exc:
        raise DataError(f"{path}: cannot read the record list "
                        f"({str(exc).splitlines()[0]})") from None
    for col in COLUMNS:
        if col not in frame.columns:
            raise DataError(f"{path}: missing column {col} (a record list has "
                            f"{', '.join(COLUMNS)}, as MIMIC-IV-ECG's record_list.csv)")
    cols = {c: tuple(_cell(v) for v in frame[c].tolist()) for c in COLUMNS}
    for c in COLUMNS:
        empty = next((i for i, v in enumerate(cols[c]) if v in ("", "nan", "None")), None)
        if empty is not None:
            raise DataError(f"{path}: column {c}: empty value in row {empty + 1}")
    for i, rel in enumerate(cols["path"]):
        pure = PurePosixPath(rel.replace("\\", "/"))
        if pure.is_absolute() or ".." in pure.parts or PureWindowsPath(rel).drive:
            raise DataError(f"{path}: column path: row {i + 1}: {rel!r} "
                            f"{'leaves the root (..)' if '..' in pure.parts else 'is absolute'}"
                            f"; paths are relative to extract.root and stay under it")
    seen: dict[str, int] = {}
    for i, sid in enumerate(cols["study_id"]):
        if sid in seen:
            raise DataError(f"{path}: column study_id: duplicate record {sid} "
                            f"(rows {seen[sid] + 1} and {i + 1})")
        seen[sid] = i
    if not cols["study_id"]:
        raise DataError(f"{path}: the record list has no rows")
    if not root.is_dir():
        raise InputError(f"{root}: record root folder not found")
    return RecordList(cols["subject_id"], cols["study_id"], cols["path"], root, path)


def shard_count(records: int, shard_records: int) -> int:
    """Shards of at most ``shard_records`` records each."""
    return -(-records // shard_records)


def shard_rows(shard: int, records: int, shard_records: int) -> range:
    """List rows of ``shard`` (module docstring: equal shards, the larger first; empty past
    the last)."""
    n = shard_count(records, shard_records)
    if not 0 <= shard < n:
        return range(0)
    base, extra = divmod(records, n)
    start = shard * base + min(shard, extra)
    return range(start, start + base + (1 if shard < extra else 0))


def shard_sizes(records: int, shard_records: int) -> tuple[int, ...]:
    """Records in each shard of ``records`` records."""
    return tuple(len(shard_rows(s, records, shard_records))
                 for s in range(shard_count(records, shard_records)))


def parse_task(text: str) -> tuple[int, int]:
    """``"I/N"`` -> ``(I, N)`` with ``0 <= I < N``; InputError otherwise."""
    try:
        i_text, n_text = text.split("/")
        i, n = int(i_text), int(n_text)
    except ValueError:
        raise InputError(f"--task: expected I/N (task I of N, 0-based), got {text!r}") from None
    if n <= 0 or not 0 <= i < n:
        raise InputError(f"--task: need 0 <= I < N, got {text!r}")
    return i, n


def task_shards(task: int, tasks: int, shards: int) -> range:
    """The contiguous shard range of task ``task`` of ``tasks``: sizes differ by at most one."""
    base, extra = divmod(shards, tasks)
    start = task * base + min(task, extra)
    return range(start, start + base + (1 if task < extra else 0))
