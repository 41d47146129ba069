"""Property tests: damage never raises, every byte is accounted for, both decoders agree."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rightsize.telemetry.events import FileEvents, TagIndex, decode_generic
from rightsize.telemetry.scalars import decode_file
from rightsize.telemetry.tfrecord import scan_records, scan_segments

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def assert_every_byte_accounted_for(data: bytes, scan) -> None:
    """Each byte lies in exactly one good record or one reported problem range."""
    cover = np.zeros(len(data), dtype=np.int32)
    for start, length in zip(scan.starts.tolist(), scan.lengths.tolist(), strict=True):
        cover[start:start + length + 16] += 1
    for p in scan.problems:
        assert p.bytes_skipped > 0 and p.offset + p.bytes_skipped <= len(data)
        cover[p.offset:p.offset + p.bytes_skipped] += 1
    assert (cover == 1).all(), np.flatnonzero(cover != 1)[:10]


def valid_file(n: int = 12) -> tuple[bytes, list[int]]:
    from rightsize.ground.crc import frame
    from rightsize.ground.event_writer import encode_event

    payloads = [encode_event(1.0, file_version="brain.Event:2")]
    payloads += [encode_event(1.0 + i, i * 37, scalars={f"t{i % 3}": i * 0.5})
                 for i in range(1, n)]
    payloads.insert(5, encode_event(3.0, 3, scalars={"a": 1.0, "b": 2.0}, plugin="scalars"))
    out, offs = b"", []
    for p in payloads:
        offs.append(len(out))
        out += frame(p)
    return out, offs


def periodic_file(n: int = 400) -> tuple[bytes, list[int]]:
    """Records in a repeating size pattern (3 tags of different lengths; steps cross 128),
    long enough for the scanner's run-ahead prediction to accept most of them."""
    from rightsize.ground.crc import frame
    from rightsize.ground.event_writer import encode_event

    tags = ("a", "bb/loss", "ccc/accuracy")
    out, offs = b"", []
    for i in range(n):
        offs.append(len(out))
        out += frame(encode_event(1.0 + i, i // 3, scalars={tags[i % 3]: i * 0.25}))
    return out, offs


VALID, OFFSETS = valid_file()
FILES = {"short": valid_file(), "periodic": periodic_file()}

mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 10**6), st.integers(1, 255)),
    st.tuples(st.just("insert"), st.integers(0, 10**6), st.binary(min_size=1, max_size=40)),
    st.tuples(st.just("delete"), st.integers(0, 10**6), st.integers(1, 40)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6), st.just(0)),
)


def mutate(data: bytes, ops) -> bytes:
    buf = bytearray(data)
    for op, pos, arg in ops:
        if not buf:
            break
        pos %= len(buf)
        if op == "flip":
            buf[pos] ^= arg
        elif op == "insert":
            buf[pos:pos] = arg
        elif op == "delete":
            del buf[pos:pos + arg]
        else:
            del buf[pos:]
    return bytes(buf)


@SETTINGS
@given(st.binary(max_size=600))
def test_arbitrary_bytes_never_raise_and_are_accounted_for(data):
    scan = scan_records(data, "f")
    assert_every_byte_accounted_for(data, scan)
    decode_file(data, "f", TagIndex())


@SETTINGS
@given(st.sampled_from(sorted(FILES)), st.lists(mutation, min_size=1, max_size=4))
def test_mutated_files_never_raise_and_are_accounted_for(which, ops):
    data = mutate(FILES[which][0], ops)
    scan = scan_records(data, "f")
    assert_every_byte_accounted_for(data, scan)
    events, records, problems = decode_file(data, "f", TagIndex())
    assert records == len(scan) and events.events + sum(
        p.kind == "undecodable" for p in problems) == records


@SETTINGS
@given(st.sampled_from(sorted(FILES)), st.floats(0, 1, exclude_max=True), st.integers(1, 255))
def test_one_flipped_byte_loses_exactly_its_record(which, where, xor):
    valid, offsets = FILES[which]
    pos = int(where * len(valid))
    data = bytearray(valid)
    data[pos] ^= xor
    k = max(i for i, o in enumerate(offsets) if o <= pos)
    scan = scan_records(bytes(data), "f")
    assert scan.starts.tolist() == offsets[:k] + offsets[k + 1:]
    end = offsets[k + 1] if k + 1 < len(offsets) else len(valid)
    kind = "length_crc" if pos - offsets[k] < 12 else "payload_crc"
    assert [(p.kind, p.offset, p.bytes_skipped) for p in scan.problems] == [
        (kind, offsets[k], end - offsets[k])]


@SETTINGS
@given(st.sampled_from(sorted(FILES)), st.lists(mutation, min_size=0, max_size=3),
       st.integers(16, 2000))
def test_segmented_scan_equals_whole_scan(which, ops, segment):
    data = mutate(FILES[which][0], ops)
    whole = scan_records(data, "f")
    parts = list(scan_segments(data, "f", segment_bytes=segment))
    starts = np.concatenate([p.starts for p in parts]) if parts else np.empty(0, np.int64)
    assert starts.tolist() == whole.starts.tolist()
    assert tuple(q for p in parts for q in p.problems) == whole.problems


tags = st.one_of(st.sampled_from(["loss", "Loss/train_step", "ünï", ""]),
                 st.text(min_size=0, max_size=130))
point = st.tuples(st.floats(allow_nan=False, allow_infinity=False, width=64),
                  st.integers(-(2**63), 2**63 - 1), tags,
                  st.floats(width=32, allow_nan=True, allow_infinity=True))


@SETTINGS
@given(st.lists(point, min_size=1, max_size=30))
def test_fast_path_agrees_with_generic_decoder(points):
    from rightsize.ground.crc import frame
    from rightsize.ground.event_writer import encode_event

    data = b"".join(frame(encode_event(w, s, scalars={t: v})) for w, s, t, v in points)
    fast_tags, slow_tags = TagIndex(), TagIndex()
    fast, records, problems = decode_file(data, "f", fast_tags)
    scan = scan_records(data, "f")
    slow = FileEvents()
    decode_generic(slow, data, np.arange(len(scan)), scan.starts, scan.lengths, slow_tags, "f")
    assert problems == [] and records == len(points) == slow.events == fast.events
    got, want = fast.points(), slow.points()
    assert [fast_tags.names[t] for t in got[0]] == [slow_tags.names[t] for t in want[0]]
    assert [t for _, _, t, _ in points] == [fast_tags.names[t] for t in got[0]]
    assert got[1].tolist() == want[1].tolist() == [s for _, s, _, _ in points]
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_array_equal(got[3], want[3])
    assert all(math.isnan(a) if math.isnan(b) else a == b
               for a, b in zip(got[3].tolist(), [v for *_, v in points], strict=True))
    assert (fast.wall_min, fast.wall_max) == (slow.wall_min, slow.wall_max)
