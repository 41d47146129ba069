"""Vectorised decoding of the common one-scalar event, for all of a file's records at once.

``SummaryWriter.add_scalar`` (torch, Lightning, TF2 Keras ``simple_value``) writes each point
as exactly these bytes (protobuf fields in field-number order)::

    09 <wall_time f64>  [10 <step varint>]  2a S  0a V  0a T <tag: T bytes>  15 <value f32>

with ``S = V + 2``, ``V = T + 7`` (all one-byte lengths) and the payload ending right after
the value. Every record is tested against that template with numpy gathers (no per-record
Python work); records that do not match go to the generic
decoder in :mod:`rightsize.telemetry.events`. A match is a complete, well-formed parse.
"""

from __future__ import annotations

import numpy as np

from rightsize.telemetry.events import SCALARS, FileEvents, TagIndex
from rightsize.telemetry.tfrecord import Buffer

_MIN_PAYLOAD = 20      # 9 (wall) + 2 (summary key+len) + 2 (value) + 2 (tag) + 5 (float)
_FNV_PRIME = np.uint64(1099511628211)
# _BYTE_MASKS[r] keeps the low r bytes of a little-endian uint64 word
_BYTE_MASKS = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)
BATCH = 1 << 16


class Views:
    """Unaligned views of a file's bytes: ``u64[i]`` / ``f64[i]`` / ``f32[i]`` read at byte ``i``.

    Gathering one of these at many offsets replaces an ``(n, width)`` byte matrix.
    """

    def __init__(self, arr: np.ndarray) -> None:
        self.u8 = arr
        self.u64 = self._window(arr, "<u8")
        self.f64 = self._window(arr, "<f8")
        self.f32 = self._window(arr, "<f4")

    @staticmethod
    def _window(arr: np.ndarray, dtype: str) -> np.ndarray:
        dt = np.dtype(dtype)
        return np.ndarray((max(arr.size - dt.itemsize + 1, 0),), dtype=dt, buffer=arr,
                          strides=(1,))


def _at(view: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Values of ``view`` at ``pos``, clipped to the view (rows read past it fail later).

    Plain fancy indexing: ``np.take`` would first copy a strided view whole.
    """
    return view[np.minimum(pos, view.size - 1)]


def _varints(u64: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode a varint of at most 8 bytes at each ``pos``: ``(int64 value, bytes, valid)``.

    Longer varints (steps >= 2**56, negative steps) are left to the generic decoder.
    """
    word = _at(u64, pos)
    value = np.zeros(pos.size, dtype=np.uint64)
    count = np.zeros(pos.size, dtype=np.int64)
    alive = np.ones(pos.size, dtype=bool)
    for j in range(8):
        b = (word >> np.uint64(8 * j)) & np.uint64(0xFF)
        value |= np.where(alive, (b & np.uint64(0x7F)) << np.uint64(7 * j), np.uint64(0))
        count += alive
        alive &= b >= 0x80
    return value.view(np.int64), count, ~alive


def _tag_ids(data: Buffer, views: Views, start: np.ndarray, length: np.ndarray,
             tags: TagIndex) -> np.ndarray:
    """Tag id of each tag ``data[start:start+length]``, grouping equal tags with numpy.

    Tags are read as 8-byte words (masked past their length), fingerprinted with a
    multiply-xor hash and grouped with ``np.unique``; every row's words are then compared
    with its group representative's, so a collision only costs speed (such rows are looked
    up one by one).
    """
    n_words = -(-int(length.max()) // 8) if length.size else 0
    if n_words == 0:
        return np.full(length.size, tags.lookup(b""), dtype=np.int32)
    fp = length.astype(np.uint64)
    words = []
    for k in range(n_words):
        w = _at(views.u64, start + 8 * k) & _BYTE_MASKS[np.clip(length - 8 * k, 0, 8)]
        words.append(w)
        fp = (fp * _FNV_PRIME) ^ w
    _, first, inverse = np.unique(fp, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    lookup = tags.lookup
    group_ids = np.array([lookup(data[a:a + n]) for a, n in
                          zip(start[first].tolist(), length[first].tolist(), strict=True)],
                         dtype=np.int32)
    ids = group_ids[inverse]
    rep = first[inverse]
    differs = length != length[rep]
    for w in words:
        differs |= w != w[rep]
    odd = np.flatnonzero(differs)
    for i, a, n in zip(odd.tolist(), start[odd].tolist(), length[odd].tolist(), strict=True):
        ids[i] = lookup(data[a:a + n])
    return ids


def decode_simple(out: FileEvents, data: Buffer, arr: np.ndarray, starts: np.ndarray,
                  lengths: np.ndarray, tags: TagIndex, base: int = 0) -> np.ndarray:
    """Decode every record matching the template into ``out``; return the handled mask.

    ``starts``/``lengths`` describe good records (header offsets, payload lengths) whose
    file-wide indices start at ``base``; the mask has one entry per record. Work is done
    in batches of :data:`BATCH` records to bound the temporaries.
    """
    handled = np.zeros(starts.size, dtype=bool)
    views = Views(arr)
    for lo in range(0, starts.size, BATCH):
        hi = min(starts.size, lo + BATCH)
        handled[lo:hi] = _batch(out, data, views, starts[lo:hi], lengths[lo:hi], tags, base + lo)
    return handled


def _batch(out: FileEvents, data: Buffer, views: Views, starts: np.ndarray,
           lengths: np.ndarray, tags: TagIndex, base: int) -> np.ndarray:
    handled = np.zeros(starts.size, dtype=bool)
    idx = np.flatnonzero(lengths >= _MIN_PAYLOAD)
    if idx.size == 0:
        return handled
    u8 = views.u8
    p = starts[idx] + 12
    end = p + lengths[idx]
    ok = _at(u8, p) == 0x09
    has_step = _at(u8, p + 9) == 0x10
    step, count, valid = _varints(views.u64, p + 10)
    ok &= valid | ~has_step
    step[~has_step] = 0
    q = np.where(has_step, p + 10 + count, p + 9)
    s_len = _at(u8, q + 1).astype(np.int64)
    v_len = _at(u8, q + 3).astype(np.int64)
    t_len = _at(u8, q + 5).astype(np.int64)
    ok &= (_at(u8, q) == 0x2A) & (s_len < 0x80) & (_at(u8, q + 2) == 0x0A)
    ok &= (v_len == s_len - 2) & (_at(u8, q + 4) == 0x0A) & (t_len == v_len - 7)
    ok &= (_at(u8, q + 6 + t_len) == 0x15) & (q + 11 + t_len == end)
    if not ok.any():
        return handled
    idx, p, q, t_len, step = idx[ok], p[ok], q[ok], t_len[ok], step[ok]
    wall = _at(views.f64, p + 1)
    value = _at(views.f32, q + 7 + t_len).astype(np.float64)
    tag = _tag_ids(data, views, q + 6, t_len, tags)
    handled[idx] = True
    out.events += int(idx.size)
    out.summary_values += int(idx.size)
    out.note_walls(float(wall.min()), float(wall.max()))
    keep = tag >= 0
    if not keep.all():
        idx, tag, step, wall, value = idx[keep], tag[keep], step[keep], wall[keep], value[keep]
    if idx.size:
        record = idx + base
        first_tags, first = np.unique(tag, return_index=True)
        for t, r in zip(first_tags.tolist(), record[first].tolist(), strict=True):
            out.note_plugin(t, r, 0, SCALARS)
        out.fast.extend(record, tag, step, wall, value)
    return handled
