"""Event files that lied to the reader: a record length with a valid length CRC that runs past
the end of the newest file while whole records follow is damage, resynchronised like a bad
CRC (item 4); wall time going backwards inside one file is a clock jump, never negative time,
and a warning names the file and the step (item 5)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from fault_helpers import rightsize

from rightsize.ground.crc import CRC, LENGTH, masked_crc32c
from rightsize.ground.event_writer import EventWriter

GEOMETRY = ["--train-records", "100", "--global-batch", "5"]
WALL = 1_700_000_000.0


def write_run(folder, steps: int, walls=None):
    w = EventWriter(folder, wall_time=WALL, host="h", pid=1)
    for s in range(1, steps + 1):
        w.add_scalar("Loss/train_step", 1.0 / s, s, walls[s - 1] if walls else WALL + s)
    w.close()
    return w.path


def record_offsets(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos + 12 <= len(data):
        out.append(pos)
        pos += 12 + LENGTH.unpack_from(data, pos)[0] + 4
    return out


def test_an_oversized_length_with_a_valid_crc_is_damage_not_a_live_tail(sandbox):
    run = sandbox / "run"
    path = write_run(run, steps=1000)
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    acc = ea.EventAccumulator(str(run), size_guidance={"scalars": 0})
    acc.Reload()                                   # the oracle reads the file intact
    intact = [e.step for e in acc.Scalars("Loss/train_step")]
    data = bytearray(path.read_bytes())
    at = record_offsets(bytes(data))[200]          # record 200 of 1,001 (header first)
    length = LENGTH.pack(len(data) * 4)            # far past the end; its CRC made valid
    data[at:at + 12] = length + CRC.pack(masked_crc32c(length))
    path.write_bytes(bytes(data))

    res = rightsize(["scalars", run, "-o", sandbox / "s.parquet", "--json"])
    assert res.rc == 0, res.err
    summary = json.loads(res.out)
    assert summary["points"] == 999                # one record lost, not 800
    steps = pq.read_table(sandbox / "s.parquet").column("step").to_pylist()
    assert steps == [s for s in intact if s != 200]
    assert summary["problem_kinds"] == {"bad_length": 1}
    assert f"bad_length at byte {at}" in res.err

    strict = rightsize(["telemetry", run, *GEOMETRY, "--strict"])
    assert strict.rc == 3, strict.err
    assert f"bad_length at byte {at}" in strict.error_line()
    plain = rightsize(["telemetry", run, *GEOMETRY, "--json", "-"])
    doc = json.loads(plain.out)
    assert doc["damaged_records"] == 1 and doc["partial_tail_bytes"] == 0
    assert doc["max_step"] == 1000
    assert "unfinished last record" not in plain.err


def test_a_real_live_tail_is_still_not_damage(sandbox):
    run = sandbox / "run"
    path = write_run(run, steps=50)
    data = path.read_bytes()
    path.write_bytes(data[:-10])                   # a writer mid-record
    res = rightsize(["telemetry", run, *GEOMETRY, "--strict", "--json", "-"])
    assert res.rc == 0, res.err
    doc = json.loads(res.out)
    assert doc["damaged_records"] == 0 and doc["partial_tail_bytes"] > 0


def test_wall_time_going_backwards_is_a_clock_jump(sandbox):
    run = sandbox / "run"
    walls = [WALL + s for s in range(1, 301)]
    walls[150:] = [w - 600.0 for w in walls[150:]]     # the clock steps back 10 min at step 151
    path = write_run(run, steps=300, walls=walls)
    res = rightsize(["telemetry", run, *GEOMETRY, "--json", "-"])
    assert res.rc == 0, res.err
    doc = json.loads(res.out)
    assert doc["active_hours"] >= 0
    assert doc["active_hours"] == pytest.approx(298 / 3600)     # 299 deltas of 1 s, one jump
    assert all(v >= 0 for k, v in doc["account"].items()), doc["account"]
    want = (f"rightsize: warning: {path.name}: wall time goes back 599 s at step 151 "
            "(a clock jump); the time across it is not counted")
    assert want in res.err.splitlines()

