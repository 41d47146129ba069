"""A full disk is exit 2, "no space left writing <path>", never an internal error (exit 1),
and leaves nothing half-written: on a real full file system, a small tmpfs mounted for the
test (root only; skipped with the reason elsewhere)."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_helpers import event_file, rightsize

PAGE = 4096


@pytest.fixture
def disk(sandbox: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs at ``sandbox/disk`` (unmounted afterwards)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    mnt = sandbox / "disk"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0777", "tmpfs",
                           str(mnt)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(mnt: Path, leave_pages: int = 0) -> None:
    """Fill the file system at ``mnt``, then free ``leave_pages`` pages of it."""
    filler = mnt / "filler"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * PAGE)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    if leave_pages:
        os.truncate(filler, max(0, filler.stat().st_size - leave_pages * PAGE))


def no_space(res, path: Path) -> None:
    assert res.rc == 2, res.err
    assert res.error_line() == f"rightsize: error: no space left writing {path}"


def test_scalars_output_on_a_full_disk_exits_2(disk, sandbox):
    event_file(sandbox / "run", steps=200)
    fill(disk)
    out = disk / "s.parquet"
    no_space(rightsize(["scalars", sandbox / "run", "-o", out]), out)
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]
    csv = disk / "s.csv"
    no_space(rightsize(["scalars", sandbox / "run", "-o", csv]), csv)
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]


def test_telemetry_json_on_a_full_disk_exits_2(disk, sandbox):
    event_file(sandbox / "run", steps=200)
    fill(disk)
    out = disk / "t.json"
    no_space(rightsize(["telemetry", sandbox / "run", "--train-records", "100",
                        "--global-batch", "5", "--json", out]), out)
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]


def test_rescue_sha256sums_on_a_full_disk_exits_2(disk, sandbox):
    """The copies fit (one page each) and SHA256SUMS does not: the rescue names it, in the
    destination's terms, and leaves no destination and no staged folder."""
    event_file(sandbox / "src" / "a", steps=20)
    event_file(sandbox / "src" / "b", steps=20)
    assert all(f.stat().st_size <= PAGE for f in (sandbox / "src").rglob("events*"))
    fill(disk, leave_pages=2)
    dest = disk / "rescued"
    no_space(rightsize(["rescue", sandbox / "src", dest]), dest / "SHA256SUMS")
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]


def test_rescue_copy_on_a_full_disk_exits_2(disk, sandbox):
    event_file(sandbox / "src" / "a", steps=20)
    fill(disk)
    dest = disk / "rescued"
    res = rightsize(["rescue", sandbox / "src", dest])
    no_space(res, dest / "a" / next((sandbox / "src" / "a").iterdir()).name)
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]
