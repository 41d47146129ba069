"""SHA256SUMS as GNU ``sha256sum -c`` reads it: a path listed twice fails (item 2), CRLF line
ends are accepted (item 13); and no reader ever opens a FIFO (item 7): one given directly,
listed in SHA256SUMS or lying in a run folder is reported and skipped, ``--strict`` exit 3.

Every FIFO case runs under a timeout: the fault is a hang."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess

import pytest
from fault_helpers import event_file, rightsize

GEOMETRY = ["--train-records", "25", "--global-batch", "5"]   # val every 5 steps
HANG_S = 20.0          # a reader that opens a FIFO blocks for ever: killed, the test fails


def sums(folder, *lines: str, newline: str = "\n") -> None:
    (folder / "SHA256SUMS").write_bytes("".join(ln + newline for ln in lines).encode())


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sha256sum_c(folder) -> int | None:
    """GNU ``sha256sum -c``'s exit code on ``folder`` (None when it is not installed)."""
    if shutil.which("sha256sum") is None:
        return None
    return subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=folder,
                          capture_output=True, timeout=30).returncode


def test_a_path_listed_twice_is_an_integrity_failure(sandbox):
    f = event_file(sandbox / "run")
    rel = f.name
    sums(sandbox / "run", f"{'0' * 64}  {rel}", f"{digest(f)}  {rel}")   # wrong first, right last
    assert sha256sum_c(sandbox / "run") in (1, None)           # the standard tool fails it
    res = rightsize(["verify", sandbox / "run"])
    assert res.rc == 3, res.err
    assert f"{rel} is listed twice (first at line 1)" in res.error_line()
    assert "SHA256SUMS:2" in res.error_line()


def test_crlf_sha256sums_is_accepted_like_sha256sum(sandbox):
    f = event_file(sandbox / "run")
    sums(sandbox / "run", f"{digest(f)}  {f.name}", newline="\r\n")
    assert sha256sum_c(sandbox / "run") in (0, None)
    res = rightsize(["verify", sandbox / "run"])
    assert res.rc == 0, res.err
    assert "1 files" in res.out
    f.write_bytes(f.read_bytes()[:-1])                         # and still checks the hash
    assert rightsize(["verify", sandbox / "run"]).rc == 3


@pytest.fixture
def fifo_run(sandbox):
    """``run/`` with one good event file and a FIFO named like an event file."""
    good = event_file(sandbox / "run", steps=40)
    fifo = sandbox / "run" / "events.out.tfevents.1700000100.h.2.0"
    os.mkfifo(fifo)
    return good, fifo


def test_verify_never_opens_a_fifo_listed_in_sha256sums(fifo_run, sandbox):
    good, fifo = fifo_run
    sums(sandbox / "run", f"{digest(good)}  {good.name}", f"{'0' * 64}  {fifo.name}")
    res = rightsize(["verify", sandbox / "run"], timeout=HANG_S)
    assert res.rc == 2, res.err
    assert f"{fifo}: cannot read file (not a regular file: a FIFO)" in res.err
    strict = rightsize(["verify", sandbox / "run", "--strict"], timeout=HANG_S)
    assert strict.rc == 3 and "not a regular file: a FIFO" in strict.err


@pytest.mark.parametrize("verb", ["scalars", "telemetry"])
def test_readers_never_open_a_fifo_given_directly(verb, fifo_run, sandbox):
    _, fifo = fifo_run
    out = sandbox / ("t.json" if verb == "telemetry" else "s.parquet")
    args = ([verb, fifo, "--json", out, *GEOMETRY] if verb == "telemetry"
            else [verb, fifo, "-o", out])
    res = rightsize(args, timeout=HANG_S)
    assert res.rc == 2, res.err
    assert "not a regular file: a FIFO" in res.error_line()
    strict = rightsize([*args, "--strict"], timeout=HANG_S)
    assert strict.rc == 3, strict.err
    assert "not a regular file: a FIFO" in strict.err
    assert not out.exists()


@pytest.mark.parametrize("verb", ["scalars", "telemetry"])
def test_readers_report_and_skip_a_fifo_in_a_run_folder(verb, fifo_run, sandbox):
    good, fifo = fifo_run
    out = sandbox / ("t.json" if verb == "telemetry" else "s.parquet")
    args = ([verb, sandbox / "run", "--json", out, *GEOMETRY] if verb == "telemetry"
            else [verb, sandbox / "run", "-o", out, "--json"])
    res = rightsize(args, timeout=HANG_S)
    assert res.rc == 0, res.err
    assert f"rightsize: warning: {fifo}: cannot read file (not a regular file: a FIFO)" \
        in res.err
    doc = json.loads(out.read_text() if verb == "telemetry" else res.out)
    assert doc["unreadable"] == 1
    strict = rightsize([*args, "--strict"], timeout=HANG_S)
    assert strict.rc == 3 and str(fifo) in strict.err
