"""What a shard was made from, record by record: its list row and its files' identity.

A shard's JSON record keeps, for every list row of the shard (good or bad), the row itself
(``subject_id``, ``study_id``, ``path``) and each file of the WFDB record
(:func:`~rightsize.encoders.ecg_files.record_files`: the ``.hea`` and the signal files it
names) as ``[name, size, mtime_ns, sha256]`` (``name`` relative to the record's folder; size,
time and hash ``null`` when the file is missing). The identity is taken *before* the record
is read, so a file replaced while it was read makes the next run redo the shard, never the
other way round. A rerun compares size and ``mtime_ns`` (a ``stat``), or with
``--verify-inputs`` the SHA-256 too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rightsize.encoders.ecg_files import record_files
from rightsize.extraction.record_list import RecordList
from rightsize.ground.sha256 import sha256_file


def list_row(records: RecordList, row: int) -> list[str]:
    """Row ``row`` of the record list as ``[subject_id, study_id, path]``."""
    return [records.subject_id[row], records.study_id[row], records.path[row]]


def file_identity(path: Path, folder: Path, digest: bool = True) -> list[Any]:
    """``[name, size, mtime_ns, sha256]`` of ``path`` (``None`` for each when missing; the
    hash ``None`` when the file cannot be read, e.g. a permission: the bad record it makes is
    tried again on every run anyway)."""
    name = os.path.relpath(path, folder)
    try:
        st = path.stat()
    except OSError:
        return [name, None, None, None]
    try:
        sha = sha256_file(path)[0] if digest else None
    except OSError:
        sha = None
    return [name, st.st_size, st.st_mtime_ns, sha]


def record_inputs(records: RecordList, row: int) -> dict[str, Any]:
    """What list row ``row`` is made of: the row and its files' identity."""
    path = records.file(row)
    return {"row": list_row(records, row),
            "files": [file_identity(f, path.parent) for f in record_files(path)]}


def inputs_changed(stored: Any, records: RecordList, rows: range, verify: bool) -> str | None:
    """Why ``stored`` (a shard's ``inputs``) is not what list ``rows`` are made of now, or
    None when they are the same: a list row edited, a file changed (size or ``mtime_ns``;
    with ``verify`` its SHA-256), appeared or went missing."""
    if not isinstance(stored, list) or len(stored) != len(rows):
        return "the shard's inputs are not recorded for its list rows"
    for rec, row in zip(stored, rows, strict=True):
        if not isinstance(rec, dict) or rec.get("row") != list_row(records, row):
            return f"list row {row + 1} changed"
        folder = records.file(row).parent
        files = rec.get("files")
        if not isinstance(files, list) or not files:
            return f"list row {row + 1}: no file identity recorded"
        for entry in files:
            if not (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], str)):
                return f"list row {row + 1}: damaged file identity"
            now = file_identity(folder / entry[0], folder, digest=verify)
            if now[1:3] != entry[1:3] or (verify and now[3] != entry[3]):
                return f"{records.path[row]}: {entry[0]} changed"
    return None
