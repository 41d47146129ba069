"""TFRecord framing: split an event file's bytes into good records and reported damage.

Reading never raises on damage (unless ``strict``). Every byte of the input ends up either
inside a good record or inside exactly one reported :class:`~rightsize.telemetry.table.Problem`:

* ``payload_crc``: the header is fine but the payload CRC is not: the whole record
  (``length + 16`` bytes) is skipped and reading goes on with the next record;
* ``length_crc``: the 12-byte header does not validate, so its length cannot be trusted;
  the reader resynchronises at the next offset whose header *and* payload CRC validate
  (``bytes_skipped`` is the distance; to the end of the file when there is none);
* ``bad_length``: the header validates but its length runs past the end of the file while
  valid records follow it (a flipped length bit whose CRC happens to hold, or a forged one):
  damage, resynchronised like ``length_crc``;
* ``truncated_header`` / ``truncated_payload``: the file ends inside a header, or inside a
  payload or footer (nothing valid after the header: the unfinished last record of a file
  still being written); the remaining bytes are reported.

Speed: the walk is one tight loop (header checks cached per distinct header) that, once it
has seen a few clean records, predicts that their size pattern repeats and accepts runs of
records whose header bytes match, checked with numpy; payload CRCs are computed in C-level
``map`` chains and compared with the footers vectorised; resynchronisation filters candidate
offsets with numpy before computing any CRC. Huge (memory-mapped) files are scanned in
segments whose pages are released as reading moves on.
"""

from __future__ import annotations

import logging
import mmap
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import google_crc32c
import numpy as np

from rightsize.errors import IntegrityError
from rightsize.ground.crc import (
    CRC,
    FOOTER_BYTES,
    HEADER_BYTES,
    LENGTH,
    MASK_DELTA,
    masked_crc32c,
)
from rightsize.telemetry.table import Problem

log = logging.getLogger(__name__)

FRAME_BYTES = HEADER_BYTES + FOOTER_BYTES
_RESYNC_CHUNK = 1 << 14
_RESYNC_CHUNK_MAX = 1 << 22
SEGMENT_BYTES = 1 << 23            # 8 MiB of file per segment
_LEARN = 8                         # clean records walked before predicting the next ones
_AHEAD_MIN = 64                    # records predicted per try (grows x4 while it works)
_AHEAD_MAX = 1 << 16
_CRC_BATCH = 1 << 16
Buffer = bytes | mmap.mmap


@dataclass(frozen=True)
class RecordScan:
    """Good records of one file (parallel arrays, in file order) and the problems met.

    ``starts[i]`` is the offset of record ``i``'s header; its payload is
    ``data[starts[i] + 12 : starts[i] + 12 + lengths[i]]``.
    """

    starts: np.ndarray      # int64
    lengths: np.ndarray     # int64
    problems: tuple[Problem, ...]

    def __len__(self) -> int:
        return int(self.starts.size)


def _u32_at(arr: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Little-endian uint32 at each (unaligned) offset in ``pos``."""
    out = arr[pos].astype(np.uint32)
    out |= arr[pos + 1].astype(np.uint32) << 8
    out |= arr[pos + 2].astype(np.uint32) << 16
    out |= arr[pos + 3].astype(np.uint32) << 24
    return out


def _mask(crcs: np.ndarray) -> np.ndarray:
    """Vectorised CRC masking (``rotate right 15, add MASK_DELTA``), uint32 in and out."""
    c = crcs.astype(np.uint64)
    rot = ((c >> np.uint64(15)) | (c << np.uint64(17))) & np.uint64(0xFFFFFFFF)
    return ((rot + np.uint64(MASK_DELTA)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def _header_length(header: bytes) -> int:
    """Length stored in a 12-byte header, or -1 when its CRC does not validate."""
    if masked_crc32c(header[:8]) != CRC.unpack_from(header, 8)[0]:
        return -1
    return LENGTH.unpack_from(header)[0]


def _payload_ok(data: Buffer, start: int, length: int) -> bool:
    p = start + HEADER_BYTES
    return masked_crc32c(data[p:p + length]) == CRC.unpack_from(data, p + length)[0]


def resync(data: Buffer, arr: np.ndarray, start: int) -> int:
    """First offset ``q >= start`` holding a fully valid record, or ``len(data)`` if none.

    Candidates are filtered with numpy: the 8-byte length must fit in the rest of the file
    (upper four bytes zero), then the header CRC is checked once per distinct length value
    (so long runs of zeros or repeated garbage cost one CRC), and only offsets whose header
    validates have their payload CRC computed.
    """
    n = len(data)
    last = n - FRAME_BYTES          # last offset where even an empty record fits
    pos = start
    chunk = _RESYNC_CHUNK
    known: dict[int, int] = {}
    while pos <= last:
        end = min(last, pos + chunk - 1)
        qs = np.arange(pos, end + 1, dtype=np.int64)
        ok = (arr[pos + 4:end + 5] == 0) & (arr[pos + 5:end + 6] == 0)
        ok &= (arr[pos + 6:end + 7] == 0) & (arr[pos + 7:end + 8] == 0)
        qs = qs[ok]
        if qs.size:
            lengths = _u32_at(arr, qs).astype(np.int64)
            fit = lengths <= (last - qs)
            qs, lengths = qs[fit], lengths[fit]
        if qs.size:
            uniq, inverse = np.unique(lengths, return_inverse=True)
            expect = np.empty(uniq.size, dtype=np.uint32)
            for i, length in enumerate(uniq.tolist()):
                crc = known.get(length)
                if crc is None:
                    crc = known[length] = masked_crc32c(LENGTH.pack(length))
                expect[i] = crc
            hit = expect[inverse.reshape(-1)] == _u32_at(arr, qs + 8)
            for q, length in zip(qs[hit].tolist(), lengths[hit].tolist(), strict=True):
                if _payload_ok(data, q, length):
                    return q
        pos = end + 1
        chunk = min(chunk * 2, _RESYNC_CHUNK_MAX)
    return n


def scan_segments(data: Buffer, file: str = "", *, strict: bool = False,
                  segment_bytes: int = SEGMENT_BYTES) -> Iterator[RecordScan]:
    """Scan ``data`` in segments of about ``segment_bytes``, yielding each one's records.

    Segments are consecutive and in file order; each holds the records whose header starts
    in it and the problems found there. When ``data`` is an ``mmap``, the pages of finished
    segments are handed back to the OS when the next segment is asked for, so reading a
    huge file keeps only about one segment resident. With ``strict`` the first problem
    raises :class:`~rightsize.errors.IntegrityError` carrying :meth:`Problem.message`.

    Records are walked one by one; after every :data:`_LEARN` clean records the walker
    tries to run ahead (:func:`_run_ahead`) by predicting that the recent pattern of record
    sizes repeats, checking the predicted headers with numpy.
    """
    n = len(data)
    arr = np.frombuffer(data, dtype=np.uint8) if n else np.empty(0, np.uint8)
    u64 = _window(arr, "<u8")
    release = _releaser(data)
    headers: dict[bytes, int] = {}     # valid 12-byte header -> payload length
    get = headers.get
    want = _AHEAD_MIN
    o = 0
    while o < n:
        limit = min(n, o + segment_bytes)
        starts = array("q")
        add_start = starts.append
        problems: list[Problem] = []
        walked = 0
        while o < limit:
            h = data[o:o + 12]
            length = get(h)
            if length is None:                      # new header, short tail or damage
                if len(h) < HEADER_BYTES:
                    problems.append(Problem(file, o, "truncated_header", n - o))
                    o = n
                    break
                length = _header_length(h)
                if length < 0:
                    q = resync(data, arr, o + 1)
                    problems.append(Problem(file, o, "length_crc", q - o))
                    o = q
                    walked = 0
                    continue
                headers[h] = length
            end = o + 16 + length
            if end > n:
                q = resync(data, arr, o + 1)
                if q < n:               # whole records follow: the length lies, not a live tail
                    problems.append(Problem(file, o, "bad_length", q - o))
                    o = q
                    walked = 0
                    continue
                problems.append(Problem(file, o, "truncated_payload", n - o))
                o = n
                break
            add_start(o)
            o = end
            walked += 1
            if walked == _LEARN:
                walked = 0
                o, want = _run_ahead(u64, starts, o, limit, n, want)
        scan = _verify(data, arr, starts, problems, file)
        if scan.problems:
            log.debug("%s: %d framing problem(s)", file, len(scan.problems))
            if strict:
                raise IntegrityError(scan.problems[0].message())
        yield scan
        release(o)


def _window(arr: np.ndarray, dtype: str) -> np.ndarray:
    """Unaligned view: element ``i`` is the ``dtype`` value stored at byte ``i`` of ``arr``."""
    dt = np.dtype(dtype)
    return np.ndarray((max(arr.size - dt.itemsize + 1, 0),), dtype=dt, buffer=arr, strides=(1,))


def _run_ahead(u64: np.ndarray, starts: array, o: int, limit: int, n: int,
               want: int) -> tuple[int, int]:
    """Accept the records that continue the recent pattern of record sizes, from ``o``.

    The last :data:`_LEARN` records (all clean and adjacent) are checked for a period ``p``;
    the next records are predicted by repeating the last ``p`` strides and accepted up to
    the first whose 12 header bytes differ from the header of its pattern twin. Identical
    header bytes mean a valid header with the same length, so acceptance is exact; payload
    CRCs are still checked for every record. Returns the new offset and the next batch size.
    """
    tail = starts[-_LEARN:].tolist() + [o]
    d = [b - a for a, b in zip(tail, tail[1:], strict=False)]
    for p in range(1, _LEARN // 2 + 1):
        if all(d[i] == d[i - p] for i in range(p, _LEARN)):
            break
    else:
        return o, want
    twins = np.array(tail[_LEARN - p:_LEARN], dtype=np.int64)
    strides = np.array(d[_LEARN - p:], dtype=np.int64)
    head = u64[twins]
    crc = u64[twins + 4] >> np.uint64(32)          # bytes 8..11 of each twin's header
    while True:
        reps = -(-want // p)
        step = np.tile(strides, reps)
        pos = o + np.cumsum(step) - step
        fits = (pos < limit) & (pos + step <= n)
        cut = step.size if fits.all() else int(np.argmin(fits))
        if cut == 0:
            return o, want
        pos, step = pos[:cut], step[:cut]
        ok = (u64[pos] == np.tile(head, reps)[:cut])
        ok &= (u64[pos + 4] >> np.uint64(32)) == np.tile(crc, reps)[:cut]
        m = cut if ok.all() else int(np.argmin(ok))
        if m:
            starts.frombytes(pos[:m].tobytes())
            o = int(pos[m - 1] + step[m - 1])
        if m < cut:                         # the pattern broke: walk again for a while
            return o, max(_AHEAD_MIN, want // 2)
        if cut < step.size:                 # reached the segment's end or the file's
            return o, want
        want = min(want * 4, _AHEAD_MAX)    # whole cycles accepted: same phase, go on


def _verify(data: Buffer, arr: np.ndarray, starts: array, problems: list[Problem],
            file: str) -> RecordScan:
    """Compute and check the payload CRCs of a segment's records; build its :class:`RecordScan`.

    The CRCs are computed in C-level ``map`` chains (no Python bytecode per record) and
    compared with the stored footers vectorised.
    """
    s = np.frombuffer(starts, dtype=np.int64) if starts else np.empty(0, np.int64)
    ln = _u32_at(arr, s).astype(np.int64) | (_u32_at(arr, s + 4).astype(np.int64) << 32)
    if s.size:
        crcs = np.empty(s.size, dtype=np.uint32)
        value = google_crc32c.value
        for lo in range(0, s.size, _CRC_BATCH):
            a = s[lo:lo + _CRC_BATCH] + HEADER_BYTES
            b = a + ln[lo:lo + _CRC_BATCH]
            crcs[lo:lo + a.size] = np.fromiter(
                map(value, map(data.__getitem__, map(slice, a.tolist(), b.tolist()))),
                dtype=np.uint32, count=a.size)
        bad = _mask(crcs) != _u32_at(arr, s + HEADER_BYTES + ln)
        if bad.any():
            problems.extend(
                Problem(file, off, "payload_crc", size + FRAME_BYTES)
                for off, size in zip(s[bad].tolist(), ln[bad].tolist(), strict=True)
            )
            problems.sort(key=lambda p: p.offset)
            s, ln = s[~bad], ln[~bad]
    return RecordScan(s, ln, tuple(problems))


def _releaser(data: Buffer) -> Callable[[int], None]:
    """A function dropping the resident pages of an mmap below an offset (no-op otherwise)."""
    if not isinstance(data, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return lambda offset: None
    done = [0]

    def release(offset: int) -> None:
        upto = offset - offset % mmap.PAGESIZE
        if upto > done[0]:
            data.madvise(mmap.MADV_DONTNEED, done[0], upto - done[0])
            done[0] = upto

    return release


def scan_records(data: Buffer, file: str = "", *, strict: bool = False) -> RecordScan:
    """Split ``data`` (a whole event file) into good records and problems, in file order.

    With ``strict`` the first problem (lowest offset) raises
    :class:`~rightsize.errors.IntegrityError` carrying :meth:`Problem.message`.
    """
    parts = list(scan_segments(data, file, strict=strict))
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return RecordScan(np.empty(0, np.int64), np.empty(0, np.int64), ())
    return RecordScan(np.concatenate([p.starts for p in parts]),
                      np.concatenate([p.lengths for p in parts]),
                      tuple(q for p in parts for q in p.problems))


def iter_records(data: Buffer, file: str = "", problems: list[Problem] | None = None, *,
                 strict: bool = False) -> Iterator[tuple[int, memoryview]]:
    """Yield ``(offset, payload)`` for each good record of ``data``, in file order.

    Problems are appended to ``problems`` (when given) before the first record is yielded;
    with ``strict`` the first one raises :class:`~rightsize.errors.IntegrityError`.
    """
    scan = scan_records(data, file, strict=strict)
    if problems is not None:
        problems.extend(scan.problems)
    view = memoryview(data)
    for start, length in zip(scan.starts.tolist(), scan.lengths.tolist(), strict=True):
        p = start + HEADER_BYTES
        yield start, view[p:p + length]
