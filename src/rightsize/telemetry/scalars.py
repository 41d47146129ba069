"""Read every scalar under a root into one columnar :class:`ScalarTable`, and write it out.

Pipeline per file: :func:`~rightsize.telemetry.tfrecord.scan_records` (framing, CRCs, damage)
-> :func:`~rightsize.telemetry.fastpath.decode_simple` (vectorised one-scalar events)
-> :func:`~rightsize.telemetry.events.decode_generic` (everything else). Per run, each tag's
plugin is the own plugin of its first value that has one (TensorBoard's rule), and the
numeric single-element values of ``scalars`` tags become rows. Columns are numpy arrays
concatenated once into a ``pyarrow.Table``; no Python object per point survives.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from rightsize.atomic import atomic_path
from rightsize.errors import InputError, IntegrityError
from rightsize.ground.regular_file import open_regular
from rightsize.telemetry.events import SCALARS, FileEvents, TagIndex, decode_generic
from rightsize.telemetry.fastpath import decode_simple
from rightsize.telemetry.runs import CannotRead, EventFile, Unreadable, scan
from rightsize.telemetry.table import SCHEMA, FileInfo, Problem, ScalarTable, string_array
from rightsize.telemetry.tfrecord import Buffer, scan_segments

log = logging.getLogger(__name__)


MMAP_BYTES = 1 << 24          # files at least this big are mapped, not read
COMBINE_ROWS = 1 << 21      # up to this many rows, columns are one chunk; beyond, one per file
_MIN_RECORD = 36             # bytes of the smallest scalar record (16 framing + 20 payload)


@dataclass
class _Decoded:
    """One file after decoding, before the run-level plugin decision."""

    file: EventFile
    size: int
    records: int
    events: FileEvents
    problems: list[Problem]


def decode_file(data: Buffer, file: str, tags: TagIndex, *, strict: bool = False
                ) -> tuple[FileEvents, int, list[Problem]]:
    """Decode one event file's bytes: ``(events, good record count, problems by offset)``.

    With ``strict`` the first problem (framing or undecodable, lowest offset) raises
    :class:`~rightsize.errors.IntegrityError`.
    """
    out = FileEvents(capacity=len(data) // _MIN_RECORD + 1)
    arr = np.frombuffer(data, dtype=np.uint8) if len(data) else np.empty(0, np.uint8)
    records = 0
    problems: list[Problem] = []
    for seg in scan_segments(data, file):
        problems.extend(seg.problems)
        if len(seg):
            handled = decode_simple(out, data, arr, seg.starts, seg.lengths, tags, records)
            rest = np.flatnonzero(~handled)
            if rest.size:
                decode_generic(out, data, rest, seg.starts, seg.lengths, tags, file, records)
        records += len(seg)
        if strict and (problems or out.problems):
            first = min([*problems, *out.problems], key=lambda p: p.offset)
            raise IntegrityError(first.message())
    problems = sorted([*problems, *out.problems], key=lambda p: p.offset)
    return out, records, problems


@contextlib.contextmanager
def _opened(f: EventFile) -> Iterator[Buffer]:
    """The file's bytes: read for small files, memory-mapped for big ones.

    An ``OSError`` opening or reading the file, or a path that is not a regular file (a
    FIFO is never opened), is raised as :class:`CannotRead`.
    """
    try:
        with open_regular(f.path) as fh:
            size = os.fstat(fh.fileno()).st_size
            data = fh.read() if size < MMAP_BYTES else None
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if data is None else None
    except OSError as exc:
        raise CannotRead.file(f.path, exc) from None
    if data is not None:
        yield data
        return
    try:
        yield mm
    finally:
        with contextlib.suppress(BufferError):   # numpy views may still hold it; GC closes
            mm.close()


class NothingReadable(InputError):
    """No event file under the root could be read (``unreadable`` lists why): exit 2, or
    :func:`unreadable_error` where the caller is strict."""

    def __init__(self, message: str, details: list[str], unreadable: tuple[Unreadable, ...]
                 ) -> None:
        super().__init__(message, details)
        self.unreadable = unreadable


def unreadable_error(root: str | os.PathLike[str], unreadable: tuple[Unreadable, ...],
                     ) -> IntegrityError:
    """The ``--strict`` error for paths under ``root`` that could not be read: the first
    named, every one listed in ``details``."""
    lines = [u.message() for u in unreadable]
    what = "1 path" if len(lines) == 1 else f"{len(lines)} paths"
    return IntegrityError(f"{what} under {root} could not be read (first: {lines[0]})",
                          details=lines)


def _run_plugins(decoded: list[_Decoded]) -> dict[int, str]:
    """Tag id -> plugin for one run: the first own plugin in file, record, value order."""
    plugins: dict[int, str] = {}
    for d in decoded:
        for tag, (_, _, plugin) in d.events.first_plugin.items():
            plugins.setdefault(tag, plugin)
    return plugins


def read_scalars(root: str | os.PathLike[str], tags: str | None = None,
                 strict: bool = False,
                 on_file: Callable[[str], None] | None = None) -> ScalarTable:
    """Read all scalar points of every run under ``root`` (a directory or one event file).

    ``tags`` is an optional glob (``fnmatch``, case-sensitive) selecting tags; values of other
    tags are skipped before decoding. Damage is reported in :attr:`ScalarTable.problems`, and
    directories and files that could not be read in :attr:`ScalarTable.unreadable`; with
    ``strict`` the first damaged record, or (after the walk) any unreadable path, raises
    :class:`~rightsize.errors.IntegrityError`. Raises :class:`~rightsize.errors.InputError`
    for a missing root, one without event files, or one where no event file could be read.
    ``on_file``, if given, is called with each file's relative path once it has been decoded.
    """
    found = scan(root)
    runs = found.runs
    unreadable = list(found.unreadable)
    index = TagIndex(tags)
    run_names = list(runs)
    infos: list[FileInfo] = []
    problems: list[Problem] = []
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("run", "tag", "step", "wall", "value",
                                                         "file")}
    for run_id, (run, files) in enumerate(runs.items()):
        decoded = []
        for f in files:
            try:
                with _opened(f) as data:
                    events, records, probs = decode_file(data, f.relpath, index, strict=strict)
                    decoded.append(_Decoded(f, len(data), records, events, probs))
            except CannotRead as exc:
                unreadable.append(exc.what)
                log.debug("cannot read %s", f.path)
            if on_file is not None:
                on_file(f.relpath)
        plugins = _run_plugins(decoded)
        is_scalar = np.zeros(len(index.names) + 1, dtype=bool)
        for tag, plugin in plugins.items():
            is_scalar[tag] = plugin == SCALARS
        for d in decoded:
            ev = d.events
            tag, step, wall, value = ev.points()
            keep = is_scalar[tag]
            kinds = Counter(ev.kinds)
            if not keep.all():
                for t, n in Counter(tag[~keep].tolist()).items():
                    kinds[plugins.get(t) or "tensor"] += n
                tag, step, wall, value = tag[keep], step[keep], wall[keep], value[keep]
            for t, n in ev.untyped.items():
                kinds[plugins.get(t) or "tensor"] += n
            file_id = len(infos)
            infos.append(FileInfo(
                path=d.file.relpath, run=run, timestamp=d.file.name.timestamp,
                host=d.file.name.host, pid=d.file.name.pid, size=d.size, records=d.records,
                events=ev.events, first_wall_time=ev.wall_min, last_wall_time=ev.wall_max,
                scalar_points=int(tag.size), kinds=dict(sorted(kinds.items())),
                summary_values=ev.summary_values,
            ))
            problems.extend(d.problems)
            if tag.size:
                cols["run"].append(np.full(tag.size, run_id, np.int32))
                cols["tag"].append(tag)
                cols["step"].append(step)
                cols["wall"].append(wall)
                cols["value"].append(value)
                cols["file"].append(np.full(tag.size, file_id, np.int32))
            d.events = None                      # free the per-file buffers early
        log.debug("run %s: %d file(s)", run, len(files))
    if unreadable and strict:
        raise unreadable_error(root, tuple(unreadable))
    if not infos:
        lines = [u.message() for u in unreadable]
        raise NothingReadable(f"no event file under {root} could be read (first: {lines[0]})",
                              details=lines[1:], unreadable=tuple(unreadable))
    table = _build(cols, run_names, index.names)
    return ScalarTable(table, tuple(infos), tuple(problems), tuple(unreadable))


def _chunks(parts: list[np.ndarray], dtype: str) -> list[np.ndarray]:
    """Per-file parts as column chunks: one chunk unless the table is big (then no copy)."""
    if not parts:
        return [np.empty(0, dtype)]
    if len(parts) == 1 or sum(p.size for p in parts) <= COMBINE_ROWS:
        return [parts[0] if len(parts) == 1 else np.concatenate(parts)]
    return parts


def _numeric(values: np.ndarray, typ: pa.DataType) -> pa.Array:
    """Zero-copy Arrow array over a contiguous numpy array (``pa.array`` would import pandas)."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(typ, len(values), [None, pa.py_buffer(values)])


def _strings(items: list[str]) -> pa.Array:
    """Arrow string array built from buffers (without ``pa.array``, which imports pandas)."""
    return string_array(items)


def _remap(codes: np.ndarray, remap: np.ndarray) -> np.ndarray:
    """``remap[codes]``, written over ``codes`` (our own per-file array) to save a copy."""
    np.take(remap, codes, out=codes, mode="clip")   # 'clip' is unbuffered: element-wise
    return codes


def _build(cols: dict[str, list[np.ndarray]], runs: list[str], names: list[str]) -> pa.Table:
    seen = np.zeros(len(names) + 1, dtype=bool)   # (np.unique here would import numpy.ma)
    for t in cols["tag"]:
        seen[np.flatnonzero(np.bincount(t, minlength=seen.size))] = True
    used = np.flatnonzero(seen)
    remap = np.zeros(len(names) + 1, dtype=np.int32)
    remap[used] = np.arange(len(used), dtype=np.int32)
    run_dict = _strings(runs)
    tag_dict = _strings([names[i] for i in used.tolist()])
    int32 = pa.int32()
    arrays = [
        pa.chunked_array([pa.DictionaryArray.from_arrays(_numeric(c, int32), run_dict)
                          for c in _chunks(cols["run"], "int32")], SCHEMA.field("run").type),
        pa.chunked_array([pa.DictionaryArray.from_arrays(_numeric(_remap(c, remap), int32),
                                                         tag_dict)
                          for c in _chunks(cols["tag"], "int32")], SCHEMA.field("tag").type),
    ]
    for key, name, dtype in (("step", "step", "int64"), ("wall", "wall_time", "float64"),
                             ("value", "value", "float64"), ("file", "file", "int32")):
        typ = SCHEMA.field(name).type
        arrays.append(pa.chunked_array([_numeric(c, typ) for c in _chunks(cols[key], dtype)],
                                       typ))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def write_table(table: ScalarTable | pa.Table, path: str | os.PathLike[str]) -> Path:
    """Write the scalar table atomically to ``path`` (``.parquet`` or ``.csv``).

    ``file`` is the event file's path relative to the root read (:meth:`ScalarTable.to_arrow`),
    dictionary-encoded in parquet like run and tag; CSV holds all three as plain strings.
    Raises :class:`~rightsize.errors.InputError` for any other suffix.
    """
    cols = table.to_arrow() if isinstance(table, ScalarTable) else table
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        with atomic_path(target) as tmp:   # dictionary-encode only run/tag/file: less memory
            pq.write_table(cols, str(tmp), use_dictionary=["run", "tag", "file"])
    elif suffix == ".csv":
        import pyarrow.csv as pacsv

        plain = cols.cast(pa.schema([
            pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type)
            for f in cols.schema
        ]))
        with atomic_path(target) as tmp:
            pacsv.write_csv(plain, str(tmp))
    else:
        raise InputError(f"{path}: output must end in .parquet or .csv")
    return target
