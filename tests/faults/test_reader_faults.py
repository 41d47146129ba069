"""The readers (scalars, telemetry, verify) name every path they could not read, on stderr
and in their JSON, and --strict turns that into exit 3; damage under --strict is listed."""

from __future__ import annotations

import json
import os
import shutil
import struct

import pytest
from fault_helpers import event_file, rightsize

GEOMETRY = ["--train-records", "25", "--global-batch", "5"]   # val every 5 steps


@pytest.fixture
def runs(sandbox):
    """``runs/r1`` readable, ``runs/r2`` not listable, ``runs/r3/<file>`` not readable."""
    root = sandbox / "runs"
    event_file(root / "r1", steps=40)
    event_file(root / "r2", steps=40)
    locked = event_file(root / "r3", steps=40)
    for d in ("", "r1", "r2", "r3"):
        os.chmod(root / d, 0o755)
    for f in root.rglob("events.*"):
        os.chmod(f, 0o644)
    os.chmod(locked, 0)
    os.chmod(root / "r2", 0)
    return root, locked


@pytest.mark.parametrize("verb", ["scalars", "telemetry"])
def test_reader_names_unreadable_paths_and_strict_exits_3(verb, runs, sandbox, as_user):
    root, locked = runs
    out = sandbox / ("t.json" if verb == "telemetry" else "s.parquet")
    args = ([verb, root, "--json", out, *GEOMETRY] if verb == "telemetry"
            else [verb, root, "-o", out, "--json"])
    res = rightsize(args, user=as_user, home=sandbox)
    assert res.rc == 0, res.err
    assert f"rightsize: warning: {root / 'r2'}: cannot list directory (Permission denied)" \
        in res.err
    assert f"rightsize: warning: {locked}: cannot read file (Permission denied)" in res.err
    doc = json.loads(out.read_text() if verb == "telemetry" else res.out)
    if verb == "telemetry":
        doc = doc if "unreadable" in doc else doc["runs"]
    assert doc["unreadable"] == 2 and len(doc["unreadable_paths"]) == 2

    strict = rightsize([*args, "--strict"], user=as_user, home=sandbox)
    assert strict.rc == 3 and "2 paths under" in strict.error_line()
    assert str(root / "r2") in strict.err and str(locked) in strict.err


def test_telemetry_strict_on_an_all_damaged_run_exits_3_listing_the_damage(sandbox):
    good = event_file(sandbox / "src", steps=30)
    data = bytearray(good.read_bytes())
    pos, n = 0, 0
    while pos + 12 <= len(data):                       # break every record's payload CRC
        length = struct.unpack_from("<Q", data, pos)[0]
        data[pos + 12 + length] ^= 0xFF
        pos += 12 + length + 4
        n += 1
    run = sandbox / "run"
    run.mkdir()
    (run / good.name).write_bytes(bytes(data))
    strict = rightsize(["telemetry", run, *GEOMETRY, "--strict"])
    assert strict.rc == 3 and f"{n} damaged records under {run}" in strict.error_line()
    assert strict.err.count(f"rightsize: warning: {good.name}: payload_crc at byte") == n - 1
    plain = rightsize(["telemetry", run, *GEOMETRY])
    assert plain.rc == 4 and "no scalar points" in plain.error_line()
    assert f"{n} damaged records (first: {good.name}: payload_crc at byte 0" in \
        plain.error_line()


def test_telemetry_ignores_a_killed_runs_hidden_partial_folder(sandbox):
    run = sandbox / "run"
    event_file(run, steps=30)
    shutil.copytree(run, run / ".partial-x1y2")          # what a killed train left
    res = rightsize(["telemetry", run, *GEOMETRY, "--json", "-"])
    assert res.rc == 0, res.err
    doc = json.loads(res.out)
    assert "runs" not in doc and doc["launches"] == 1
