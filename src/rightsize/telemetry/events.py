"""Decode ``Event`` / ``Summary`` protobufs straight from the wire format (no generated classes).

Two paths share one result (:class:`FileEvents`):

* a vectorised fast path (:mod:`rightsize.telemetry.fastpath`) for the overwhelmingly common
  record ``Event{wall_time, step, summary{value{tag, simple_value}}}`` written by
  ``SummaryWriter.add_scalar``;
* :func:`decode_event`, a small pure-Python decoder for everything else (headers, TF2 tensor
  scalars, histograms, images, hparams, graphs, ...).

Scalar semantics follow TensorBoard (``data_compat`` + ``EventAccumulator``): a value's
*own* plugin is ``scalars`` for ``simple_value`` (``histograms``/``images``/``audio`` for
the legacy kinds), else the ``plugin_name`` of its metadata when it carries metadata. A
tag's plugin for a whole run is the own plugin of its first value that has one; every
numeric single-element value of a tag whose run plugin is ``scalars`` is a point. The run
level decision is made in :mod:`rightsize.telemetry.scalars`; this module records the
candidates and the first own plugin per tag.
"""

from __future__ import annotations

import struct
from collections import Counter
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

import numpy as np

from rightsize.telemetry.table import Problem
from rightsize.telemetry.tfrecord import Buffer
from rightsize.telemetry.wire import Malformed, fields, plugin_name, signed, tensor_scalar

SCALARS = "scalars"
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
# Event fields (length-delimited) that are counted, not decoded.
EVENT_KINDS = {4: "graph", 6: "log_message", 7: "session_log", 8: "run_metadata",
               9: "meta_graph"}
# Summary.Value oneof fields other than simple_value/tensor: field -> kind (= TB plugin).
VALUE_KINDS = {3: "histograms", 4: "images", 5: "histograms", 6: "audio"}
# Migrated by TensorBoard's data_compat, so they carry their plugin as metadata.
_MIGRATED = {4: "images", 5: "histograms", 6: "audio"}


class TagIndex:
    """Tag names seen so far (ids shared across files) and the ``--tags`` glob filter."""

    def __init__(self, pattern: str | None = None) -> None:
        self.pattern = pattern
        self.names: list[str] = []
        self._by_raw: dict[bytes, int] = {}
        self._by_name: dict[str, int] = {}

    def lookup(self, raw: bytes) -> int:
        """Id of the tag whose UTF-8 bytes are ``raw``; -1 when the glob rejects it."""
        i = self._by_raw.get(raw)
        if i is None:
            name = raw.decode("utf-8", "replace")
            if self.pattern is not None and not fnmatchcase(name, self.pattern):
                i = -1
            else:
                i = self._by_name.get(name)
                if i is None:
                    i = self._by_name[name] = len(self.names)
                    self.names.append(name)
            self._by_raw[raw] = i
        return i


class PointBuffer:
    """Growable parallel numpy columns of candidate points, filled in record order."""

    FIELDS = (("record", np.int32), ("tag", np.int32), ("step", np.int64),
              ("wall_time", np.float64), ("value", np.float64))

    def __init__(self, capacity: int = 0) -> None:
        self.n = 0
        self._cols = {name: np.empty(capacity, dt) for name, dt in self.FIELDS}

    def extend(self, record: np.ndarray, tag: np.ndarray, step: np.ndarray,
               wall_time: np.ndarray, value: np.ndarray) -> None:
        """Append equally long arrays (grows by doubling when full)."""
        k = len(record)
        need = self.n + k
        cap = len(self._cols["record"])
        if need > cap:
            cap = max(need, 2 * cap)
            for name, col in self._cols.items():
                grown = np.empty(cap, col.dtype)
                grown[:self.n] = col[:self.n]
                self._cols[name] = grown
        for name, arr in zip(self._cols, (record, tag, step, wall_time, value), strict=True):
            self._cols[name][self.n:need] = arr
        self.n = need

    def __getitem__(self, name: str) -> np.ndarray:
        return self._cols[name][:self.n]


@dataclass
class FileEvents:
    """What one file's records held: scalar candidates plus counts (filled by the decoders).

    Candidates from the fast path go to :attr:`fast` (record order by construction);
    the generic decoder's go to the ``generic`` lists with their position in the event.
    """

    capacity: int = 0
    events: int = 0
    summary_values: int = 0
    wall_min: float | None = None
    wall_max: float | None = None
    problems: list[Problem] = field(default_factory=list)
    # tag id -> (record, ordinal, own plugin) of its first value that has an own plugin
    first_plugin: dict[int, tuple[int, int, str]] = field(default_factory=dict)
    kinds: Counter = field(default_factory=Counter)     # non-scalar values by known kind
    untyped: Counter = field(default_factory=Counter)   # tag id -> values with no own plugin
    generic: list[tuple[int, int, int, int, float, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.fast = PointBuffer(self.capacity)

    def note_plugin(self, tag: int, record: int, ordinal: int, plugin: str) -> None:
        """Remember ``plugin`` for ``tag`` if this is its earliest value with an own plugin."""
        old = self.first_plugin.get(tag)
        if old is None or (record, ordinal) < old[:2]:
            self.first_plugin[tag] = (record, ordinal, plugin)

    def note_walls(self, lo: float, hi: float) -> None:
        """Widen the file's wall-time range."""
        self.wall_min = lo if self.wall_min is None else min(self.wall_min, lo)
        self.wall_max = hi if self.wall_max is None else max(self.wall_max, hi)

    def points(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All candidates in (record, value) order: ``(tag, step, wall_time, value)``."""
        f = self.fast
        if not self.generic:
            return f["tag"], f["step"], f["wall_time"], f["value"]
        rec, ordinal, tag, step, wall, value = (np.asarray(c) for c in zip(*self.generic,
                                                                             strict=True))
        order = np.lexsort((np.concatenate([np.zeros(f.n, np.int64), ordinal]),
                            np.concatenate([f["record"], rec])))
        return tuple(np.concatenate([f[k], np.asarray(g, f[k].dtype)])[order]
                     for k, g in (("tag", tag), ("step", step), ("wall_time", wall),
                                  ("value", value)))


# --------------------------------------------------------------------------- generic decoder


ValueInfo = tuple[int, str | None, float | None, str | None]   # tag, own plugin, scalar, kind


def decode_value(buf: Buffer, a: int, b: int, tags: TagIndex) -> ValueInfo | None:
    """Decode one ``Summary.Value``: ``None`` when its tag is filtered out, else
    ``(tag_id, own_plugin | None, scalar | None, kind | None)``."""
    tag_raw = b""
    node_raw = b""
    has_meta = False
    plugin = ""
    which = 0          # field number of the value oneof (last one wins, like protobuf)
    span = (0, 0)
    simple = 0.0
    first = True
    for f, w, _, s, t in fields(buf, a, b):
        if f == 1 and w == 2:
            tag_raw = buf[s:t]
            if first and tags.lookup(tag_raw) < 0:
                return None            # cheap skip: the tag is the first field in practice
        elif f == 2 and w == 5:
            which, simple = 2, _F32.unpack_from(buf, s)[0]
        elif f == 9 and w == 2:
            has_meta = True
            plugin = plugin_name(buf, s, t) or plugin
        elif f == 7 and w == 2:
            node_raw = buf[s:t]
        elif w == 2 and (f == 8 or f in VALUE_KINDS):
            which, span = f, (s, t)
        first = False
    tag = tags.lookup(tag_raw or node_raw)
    if tag < 0:
        return None
    if which == 2:
        return tag, SCALARS, simple, None
    own = _MIGRATED.get(which) or (plugin if has_meta else None)
    if which == 8:
        scalar = tensor_scalar(buf, span[0], span[1])
        if scalar is not None:
            return tag, own, scalar, None
    return tag, own, None, VALUE_KINDS.get(which) or own or None


def decode_event(buf: Buffer, a: int, b: int, tags: TagIndex
                 ) -> tuple[float | None, int, list[ValueInfo], list[str], int]:
    """Decode one ``Event`` in ``buf[a:b]``: ``(wall_time | None, step, values, kinds, n)``.

    ``values`` holds the :func:`decode_value` results of tags the filter keeps, ``kinds``
    the counted non-summary parts (graph, session_log, ...), ``n`` the number of summary
    values of any tag. Raises :class:`Malformed` for a broken protobuf.
    """
    wall = None
    step = 0
    values = []
    kinds = []
    n_values = 0
    for f, w, v, s, t in fields(buf, a, b):
        if f == 1 and w == 1:
            wall = _F64.unpack_from(buf, s)[0]
        elif f == 2 and w == 0:
            step = signed(v)
        elif f == 5 and w == 2:
            for g, x, _, s2, t2 in fields(buf, s, t):
                if g == 1 and x == 2:
                    n_values += 1
                    decoded = decode_value(buf, s2, t2, tags)
                    if decoded is not None:
                        values.append(decoded)
        elif w == 2 and f in EVENT_KINDS:
            kinds.append(EVENT_KINDS[f])
    return wall, step, values, kinds, n_values


def decode_generic(out: FileEvents, buf: Buffer, records: np.ndarray, starts: np.ndarray,
                   lengths: np.ndarray, tags: TagIndex, file: str, base: int = 0) -> None:
    """Decode records ``records`` (indices into ``starts``/``lengths``) into ``out``.

    ``base`` is the file-wide index of record 0 of ``starts`` (segments of one file).
    """
    walls: list[float] = []
    for r, start, length in zip(records.tolist(), starts[records].tolist(),
                                lengths[records].tolist(), strict=True):
        p = start + 12
        try:
            wall, step, values, kinds, n_values = decode_event(buf, p, p + length, tags)
        except (Malformed, struct.error, ValueError, OverflowError):
            out.problems.append(Problem(file, start, "undecodable", length + 16))
            continue
        r += base
        out.events += 1
        out.summary_values += n_values
        if wall is not None:
            walls.append(wall)
        out.kinds.update(kinds)
        for i, (tag, own, scalar, kind) in enumerate(values):
            if own is not None:
                out.note_plugin(tag, r, i, own)
            if scalar is not None:
                out.generic.append((r, i, tag, step, 0.0 if wall is None else wall, scalar))
            elif kind is not None:
                out.kinds[kind] += 1
            else:
                out.untyped[tag] += 1
    if walls:
        out.note_walls(min(walls), max(walls))
