"""Framing and CRC: which records survive each kind of damage, and what is reported."""

from __future__ import annotations

import numpy as np
import pytest

from rightsize.errors import IntegrityError
from rightsize.telemetry.scalars import read_scalars
from rightsize.telemetry.table import Problem
from rightsize.telemetry.tfrecord import iter_records, scan_records

NAME = "events.out.tfevents.1000.host.1.0"


def survivors(data: bytes) -> tuple[list[int], list[tuple[str, int, int]]]:
    """Offsets of good records and (kind, offset, bytes_skipped) of problems."""
    scan = scan_records(data, "f")
    return scan.starts.tolist(), [(p.kind, p.offset, p.bytes_skipped) for p in scan.problems]


def steps_values(tmp_path, ev, data: bytes) -> list[tuple[int, float]]:
    ev.write(tmp_path / "run" / NAME, data)
    t = read_scalars(tmp_path / "run").columns
    return list(zip(t.column("step").to_pylist(), t.column("value").to_pylist(), strict=True))


def test_clean_file_yields_every_record(small_file, ev):
    data, offs = small_file
    problems: list[Problem] = []
    got = list(iter_records(data, "f", problems))
    assert [o for o, _ in got] == offs
    payloads = [ev.header()] + [ev.scalar(1000.0 + i, i, "loss", i / 2) for i in range(1, 6)]
    assert [bytes(p) for _, p in got] == payloads
    assert problems == []


def test_zero_byte_and_header_only_files_are_normal(ev):
    assert survivors(b"") == ([], [])
    data, _ = ev.frame_all([ev.header()])
    assert survivors(data) == ([0], [])


def test_truncated_header(small_file):
    data, offs = small_file
    cut = data[: offs[5] + 5]
    assert survivors(cut) == (offs[:5], [("truncated_header", offs[5], 5)])


def test_truncated_payload_and_footer(small_file):
    data, offs = small_file
    cut = data[: offs[5] + 12 + 3]
    assert survivors(cut) == (offs[:5], [("truncated_payload", offs[5], 15)])
    cut = data[:-2]                                   # footer torn
    assert survivors(cut) == (offs[:5], [("truncated_payload", offs[5], len(data) - 2 - offs[5])])


def test_flipped_payload_byte_skips_only_that_record(small_file, tmp_path, ev):
    data, offs = small_file
    bad = bytearray(data)
    bad[offs[2] + 12 + 10] ^= 0x40                    # inside record 2 (step 2)
    good, problems = survivors(bytes(bad))
    assert good == [o for i, o in enumerate(offs) if i != 2]
    assert problems == [("payload_crc", offs[2], offs[3] - offs[2])]
    assert steps_values(tmp_path, ev, bytes(bad)) == [(1, 0.5), (3, 1.5), (4, 2.0), (5, 2.5)]


def test_flipped_payload_crc_byte_is_a_payload_problem(small_file):
    data, offs = small_file
    bad = bytearray(data)
    bad[offs[4] - 1] ^= 0x01                          # last footer byte of record 3
    assert survivors(bytes(bad)) == ([o for i, o in enumerate(offs) if i != 3],
                                     [("payload_crc", offs[3], offs[4] - offs[3])])


@pytest.mark.parametrize("pos", [0, 3, 7, 8, 11])
def test_flipped_length_byte_resyncs_at_next_record(small_file, tmp_path, ev, pos):
    data, offs = small_file
    bad = bytearray(data)
    bad[offs[3] + pos] ^= 0x10                        # length or its CRC of record 3 (step 3)
    good, problems = survivors(bytes(bad))
    assert good == [o for i, o in enumerate(offs) if i != 3]
    assert problems == [("length_crc", offs[3], offs[4] - offs[3])]
    assert [s for s, _ in steps_values(tmp_path, ev, bytes(bad))] == [1, 2, 4, 5]


@pytest.mark.parametrize("garbage", [b"\x07" * 37, bytes(range(200)), b"\0" * 100_000,
                                     b"x" * 12])
def test_garbage_between_records_is_skipped(small_file, tmp_path, ev, garbage):
    data, offs = small_file
    bad = data[: offs[2]] + garbage + data[offs[2]:]
    good, problems = survivors(bad)
    assert good == offs[:2] + [o + len(garbage) for o in offs[2:]]
    assert problems == [("length_crc", offs[2], len(garbage))]
    assert [s for s, _ in steps_values(tmp_path, ev, bad)] == [1, 2, 3, 4, 5]


def test_garbage_at_the_end(small_file):
    data, offs = small_file
    good, problems = survivors(data + b"\xab" * 50)
    assert good == offs and problems == [("length_crc", len(data), 50)]
    good, problems = survivors(data + b"\xab" * 7)    # shorter than a header
    assert good == offs and problems == [("truncated_header", len(data), 7)]


def test_record_with_bad_payload_inside_a_resync_gap_is_absorbed(small_file):
    data, offs = small_file
    bad = bytearray(data)
    bad[offs[1] + 2] ^= 0x01                          # header of record 1
    bad[offs[2] + 20] ^= 0x01                         # payload of record 2: not a resync point
    assert survivors(bytes(bad)) == ([offs[0], *offs[3:]],
                                     [("length_crc", offs[1], offs[3] - offs[1])])


def test_header_claiming_more_bytes_than_the_file_has(ev):
    from rightsize.ground.crc import CRC, LENGTH, masked_crc32c

    length = LENGTH.pack(1 << 40)
    data = ev.frame_all([ev.header()])[0] + length + CRC.pack(masked_crc32c(length)) + b"abc"
    assert survivors(data) == ([0], [("truncated_payload", 40, 15)])


def test_several_problems_are_reported_in_offset_order(small_file):
    data, offs = small_file
    bad = bytearray(data)
    bad[offs[4] + 14] ^= 0x02                         # payload of record 4
    bad[offs[1] + 1] ^= 0x02                          # header of record 1
    good, problems = survivors(bytes(bad[:-3]))       # and a torn tail (record 5)
    assert good == [offs[0], offs[2], offs[3]]
    assert problems == [("length_crc", offs[1], offs[2] - offs[1]),
                        ("payload_crc", offs[4], offs[5] - offs[4]),
                        ("truncated_payload", offs[5], len(data) - 3 - offs[5])]


def test_strict_raises_the_first_problem(small_file):
    data, offs = small_file
    bad = bytearray(data)
    bad[offs[3] + 13] ^= 0x01
    bad[offs[1] + 13] ^= 0x01
    with pytest.raises(IntegrityError) as info:
        scan_records(bytes(bad), "run/f", strict=True)
    assert str(info.value) == Problem("run/f", offs[1], "payload_crc",
                                      offs[2] - offs[1]).message()
    with pytest.raises(IntegrityError, match="truncated_header"):
        list(iter_records(data[:-41], "f", strict=True))
    assert len(scan_records(data, "f", strict=True)) == 6


def test_resync_over_a_long_garbage_region_finds_the_next_record(ev):
    rng = np.random.default_rng(7)
    noise = rng.integers(0, 256, 3_000_000, dtype=np.uint8).tobytes()
    head, _ = ev.frame_all([ev.header()])
    tail, _ = ev.frame_all([ev.scalar(2000.0, 9, "loss", 1.0)])
    good, problems = survivors(head + noise + tail)
    assert good == [0, len(head) + len(noise)]
    assert problems == [("length_crc", len(head), len(noise))]


def periodic(ev, n: int = 300) -> tuple[bytes, list[int]]:
    """A long file whose record sizes repeat (3 tags, steps crossing 128): run-ahead territory."""
    tags = ("a", "bb/loss", "ccc/accuracy")
    return ev.frame_all([ev.scalar(1.0 + i, 100 + i // 3, tags[i % 3], i / 8) for i in range(n)])


def test_long_periodic_file_is_read_whole(ev):
    data, offs = periodic(ev, 3000)
    assert survivors(data) == (offs, [])
    assert survivors(data[:-1]) == (offs[:-1], [("truncated_payload", offs[-1],
                                                   len(data) - 1 - offs[-1])])


@pytest.mark.parametrize("k", [9, 10, 150, 298])
def test_damage_inside_a_predicted_run(ev, k):
    data, offs = periodic(ev)
    size = offs[k + 1] - offs[k]
    header = bytearray(data)
    header[offs[k] + 8] ^= 0x80                       # stored length CRC
    assert survivors(bytes(header)) == (offs[:k] + offs[k + 1:],
                                        [("length_crc", offs[k], size)])
    payload = bytearray(data)
    payload[offs[k] + 20] ^= 0x01
    assert survivors(bytes(payload)) == (offs[:k] + offs[k + 1:],
                                         [("payload_crc", offs[k], size)])
    junk = b"\x01" * 5
    moved = data[:offs[k]] + junk + data[offs[k]:]
    assert survivors(moved) == (offs[:k] + [o + 5 for o in offs[k:]],
                                [("length_crc", offs[k], 5)])
