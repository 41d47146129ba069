"""Generate a large, valid TensorBoard scalar event file quickly (numpy, no Python loop per record).

The file holds the ``file_version`` header event, then ``records`` scalar events, one
``Summary.Value{tag, simple_value}`` each: record ``i`` has step ``i``, tag
``TAGS[i % len(TAGS)]``, a float32 loss-like value and a wall time 0.05 s after the
previous one. Its bytes are exactly what :class:`rightsize.ground.event_writer.EventWriter`
(and torch's ``SummaryWriter.add_scalar``) would write; :func:`write_scalar_file` checks that
byte-for-byte on a sample of records (start, every varint-length boundary, the end) before
returning. Building ``encode_event`` + ``frame`` per record would take about a minute for
4 million records; here the records are laid out as fixed-width rows per step-varint
length and the CRC32C is computed column by column over all rows at once.

Usage::

    python benchmarks/gen_scalar_file.py OUT_DIR --records 4000000
"""

from __future__ import annotations

import argparse
import logging
import struct
import sys
from pathlib import Path

import numpy as np

from rightsize.atomic import atomic_path
from rightsize.ground.crc import frame, masked_crc32c
from rightsize.ground.event_writer import encode_event

log = logging.getLogger(__name__)

# Equal-length tags keep every record of one step-varint length the same width.
TAGS = ("Loss/train_step", "Grad/total_norm", "Optim/lr_group0", "Perf/samples_ps")
START_WALL_TIME = 1_750_000_000.0
WALL_TIME_STEP = 0.05
CHUNK_ROWS = 1 << 19
_POLY = 0x82F63B78  # CRC32C (Castagnoli), reflected


def _crc_table() -> np.ndarray:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLY), table >> 1).astype(np.uint32)
    return table


_TABLE = _crc_table()


def masked_crc32c_rows(rows: np.ndarray) -> np.ndarray:
    """Masked CRC32C of every row of a 2-D uint8 array (all rows at once, one column a step)."""
    crc = np.full(rows.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for j in range(rows.shape[1]):
        crc = _TABLE[(crc ^ rows[:, j]) & 0xFF] ^ (crc >> np.uint32(8))
    crc ^= np.uint32(0xFFFFFFFF)
    c = crc.astype(np.uint64)
    rot = ((c >> np.uint64(15)) | (c << np.uint64(17))) & np.uint64(0xFFFFFFFF)
    return ((rot + np.uint64(0xA282EAD8)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def _varint_len(step: int) -> int:
    """Bytes of the step field's varint (0: step 0 is not written at all)."""
    return 0 if step == 0 else (step.bit_length() + 6) // 7


def _values(steps: np.ndarray, tag_idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    scale = np.array([2.5, 4.0, 3e-4, 900.0])[tag_idx]
    decay = np.exp(-steps / 1.5e6)
    return (scale * (0.1 + decay) * (1.0 + 0.05 * rng.standard_normal(steps.size))).astype("<f4")


def _segment_rows(steps: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Framed records for ``steps`` (all with step-varint length ``k``), one row per record."""
    tag_len = len(TAGS[0])
    value_len = 2 + tag_len + 5                   # tag field + float field
    summary_len = 2 + value_len                   # Summary.value (repeated field 1)
    payload_len = 9 + (1 + k if k else 0) + 2 + summary_len
    width = 12 + payload_len + 4
    n = steps.size
    rows = np.empty((n, width), dtype=np.uint8)
    header = struct.pack("<Q", payload_len)
    rows[:, 0:8] = np.frombuffer(header, dtype=np.uint8)
    rows[:, 8:12] = np.frombuffer(struct.pack("<I", masked_crc32c(header)), dtype=np.uint8)
    p = 12
    rows[:, p] = 0x09                             # Event.wall_time, fixed64
    wall = START_WALL_TIME + WALL_TIME_STEP * steps.astype(np.float64)
    rows[:, p + 1:p + 9] = wall.astype("<f8").view(np.uint8).reshape(n, 8)
    p += 9
    if k:
        rows[:, p] = 0x10                         # Event.step, varint
        for b in range(k):
            byte = (steps >> (7 * b)) & 0x7F
            rows[:, p + 1 + b] = byte | (0x80 if b < k - 1 else 0)
        p += 1 + k
    rows[:, p:p + 4] = (0x2A, summary_len, 0x0A, value_len)  # Event.summary, Summary.value
    p += 4
    tag_idx = (steps % len(TAGS)).astype(np.intp)
    tags = np.array([[0x0A, tag_len, *t.encode()] for t in TAGS], dtype=np.uint8)
    rows[:, p:p + 2 + tag_len] = tags[tag_idx]
    p += 2 + tag_len
    rows[:, p] = 0x15                             # Value.simple_value, fixed32
    rows[:, p + 1:p + 5] = _values(steps, tag_idx, rng).view(np.uint8).reshape(n, 4)
    p += 5
    crc = masked_crc32c_rows(rows[:, 12:p])
    rows[:, p:p + 4] = crc.astype("<u4").view(np.uint8).reshape(n, 4)
    return rows


def _reference_record(data: bytes, offset: int, step: int) -> tuple[bytes, bytes]:
    """(bytes in the file at ``offset``, what the project's writer encodes for ``step``)."""
    length = struct.unpack_from("<Q", data, offset)[0]
    got = data[offset:offset + length + 16]
    value = struct.unpack_from("<f", got, len(got) - 8)[0]
    wall = START_WALL_TIME + WALL_TIME_STEP * float(step)
    want = frame(encode_event(wall, step, scalars={TAGS[step % len(TAGS)]: value}))
    return got, want


def _check_sample(path: Path, offsets: dict[int, int]) -> None:
    data = path.read_bytes() if path.stat().st_size < 64 * 1024 * 1024 else None
    with open(path, "rb") as fh:
        for step, offset in offsets.items():
            if data is None:
                fh.seek(offset)
                chunk = fh.read(256)
                got, want = _reference_record(chunk, 0, step)
            else:
                got, want = _reference_record(data, offset, step)
            if got != want:
                raise RuntimeError(f"{path}: generated record for step {step} at byte {offset} "
                                   "differs from rightsize.ground.event_writer's encoding")


def write_scalar_file(directory: str | Path, records: int, *, seed: int = 0,
                      host: str = "benchhost", pid: int = 4242) -> Path:
    """Write ``records`` scalar events (plus the header event) as one event file in ``directory``.

    Returns the file's path. Memory stays bounded (chunks of :data:`CHUNK_ROWS` records);
    a sample of records is checked byte-for-byte against the project's writer.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"events.out.tfevents.{int(START_WALL_TIME)}.{host}.{pid}.0"
    rng = np.random.default_rng(seed)
    header = frame(encode_event(START_WALL_TIME, file_version="brain.Event:2"))
    boundaries = sorted({0, 1, 2, 128, 129, 16384, 16385, 2097152, 2097153, records} & set(
        range(records + 1)))
    wanted = {s for b in boundaries for s in (b - 1, b) if 0 <= s < records}
    wanted.update(range(min(records, 64)))
    offsets: dict[int, int] = {}
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(header)
        pos = len(header)
        start = 0
        while start < records:
            k = _varint_len(start)
            end = min(records, 1 if k == 0 else 1 << (7 * k))  # last step with this varint width
            for lo in range(start, end, CHUNK_ROWS):
                hi = min(end, lo + CHUNK_ROWS)
                rows = _segment_rows(np.arange(lo, hi, dtype=np.int64), k, rng)
                for s in wanted:
                    if lo <= s < hi:
                        offsets[s] = pos + (s - lo) * rows.shape[1]
                fh.write(rows.tobytes())
                pos += rows.size
            start = end
        fh.flush()
    _check_sample(path, offsets)
    log.debug("wrote %s (%d records, %d bytes)", path, records, pos)
    return path


def main(argv: list[str] | None = None) -> int:
    """CLI: write the file and print its path and size."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", help="directory to write the event file into")
    ap.add_argument("--records", type=int, default=4_000_000, help="scalar records (default 4M)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    path = write_scalar_file(args.out_dir, args.records, seed=args.seed)
    print(f"{path}\t{path.stat().st_size}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
