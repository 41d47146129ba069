"""rescue under faults: unreadable paths, links, a taken destination, odd names, concurrent
rescues, and SIGKILL / SIGINT at seeded points. Whatever happens, the destination is as it
was or complete, and nothing is left under a final name."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fault_helpers import (
    ENTRY,
    event_file,
    hidden,
    killed,
    points,
    rightsize,
    snapshot,
    visible,
    writes,
)

from rightsize.telemetry.sha256sums import parse_manifest, verify


def make_src(root: Path, runs: tuple[str, ...] = ("a", "b")) -> Path:
    """``root/src`` with one or two small event files per run folder."""
    src = root / "src"
    for i, run in enumerate(runs):
        for k in range(1 + i):
            event_file(src / run, steps=30 + 7 * k, pid=10 + k)
    for dirpath, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(Path(dirpath, name), 0o755)
        for name in files:
            os.chmod(Path(dirpath, name), 0o644)
    return src


def test_unreadable_folder_is_an_error_naming_it_or_a_recorded_skip(sandbox, as_user):
    src = make_src(sandbox)
    os.chmod(src / "b", 0)
    dest = sandbox / "dest"
    res = rightsize(["rescue", src, dest], user=as_user, home=sandbox)
    assert res.rc == 2 and f"{src / 'b'}: cannot list directory" in res.error_line()
    assert not dest.exists() and visible(sandbox) == {"src"} and not hidden(sandbox)

    res = rightsize(["rescue", src, dest, "--skip-unreadable"], user=as_user, home=sandbox)
    assert res.rc == 0, res.err
    assert f"rightsize: warning: {src / 'b'}: cannot list directory" in res.err
    assert "1 copied" in res.out and "1 skipped" in res.out
    text = (dest / "SHA256SUMS").read_text()
    assert text.startswith("# skipped by rightsize rescue: b: cannot list directory")
    subprocess.run(["sha256sum", "--strict", "--quiet", "-c", "SHA256SUMS"], cwd=dest,
                   check=True)                                  # the standard tool agrees
    ver = rightsize(["verify", dest, "--json", "-"])
    assert ver.rc == 0 and "could not read: b: cannot list directory" in ver.err
    assert '"skipped_at_rescue": [' in ver.out


def test_a_fifo_with_an_event_file_name_is_named_not_skipped_silently(sandbox):
    src = make_src(sandbox)
    fifo = src / "b" / "events.out.tfevents.1700000000.h.99.0"
    os.mkfifo(fifo)
    res = rightsize(["rescue", src, sandbox / "d"])
    assert res.rc == 2, res.err
    assert f"{fifo}: cannot read file (not a regular file: a FIFO)" in res.error_line()
    assert not (sandbox / "d").exists() and not hidden(sandbox)

    res = rightsize(["rescue", src, sandbox / "d", "--skip-unreadable"])
    assert res.rc == 0, res.err
    assert "3 copied" in res.out and "1 skipped" in res.out
    text = (sandbox / "d" / "SHA256SUMS").read_text()
    assert "# skipped by rightsize rescue: b/events.out.tfevents.1700000000.h.99.0: " in text
    assert verify(sandbox / "d").ok


def test_unreadable_file_in_rescue_and_verify_is_exit_2_naming_it(sandbox, as_user):
    src = make_src(sandbox)
    victim = sorted((src / "b").iterdir())[0]
    os.chmod(victim, 0)
    res = rightsize(["rescue", src, sandbox / "d"], user=as_user, home=sandbox)
    assert res.rc == 2 and f"{victim}: cannot read file (Permission denied)" in res.error_line()
    assert not (sandbox / "d").exists() and not hidden(sandbox)

    os.chmod(victim, 0o644)
    assert rightsize(["rescue", src, sandbox / "d", "-q"]).rc == 0
    copy = sandbox / "d" / victim.relative_to(src)
    os.chmod(copy, 0)
    res = rightsize(["verify", sandbox / "d", "--json", sandbox / "v.json"], user=as_user,
                    home=sandbox)
    assert res.rc == 2 and str(copy) in res.error_line()
    assert f"rightsize: warning: {copy}: cannot read file" in res.err
    assert '"unreadable": 1' in (sandbox / "v.json").read_text()
    strict = rightsize(["verify", sandbox / "d", "--strict"], user=as_user, home=sandbox)
    assert strict.rc == 3 and str(copy) in strict.error_line()


def test_symbolic_links_are_reported_and_skipped_unless_followed(sandbox):
    src = make_src(sandbox, runs=("a",))
    secret = sandbox / "secret.txt"
    secret.write_text("not telemetry\n")
    (src / "events.out.tfevents.evil").symlink_to(secret)
    (src / "loop").symlink_to(src, target_is_directory=True)
    res = rightsize(["rescue", src, sandbox / "d"])
    assert res.rc == 0, res.err
    assert (f"{src / 'events.out.tfevents.evil'}: symbolic link to {secret}: not followed"
            in res.err)
    assert f"{src / 'loop'}: symbolic link to {src}: not followed" in res.err
    assert set(parse_manifest(sandbox / "d" / "SHA256SUMS").entries) == {
        p.relative_to(src).as_posix() for p in (src / "a").iterdir()}

    res = rightsize(["rescue", src, sandbox / "f", "--follow-links", "--json", "-"])
    assert res.rc == 0, res.err
    assert f"{src / 'events.out.tfevents.evil'}: symbolic link to {secret}: followed, its " \
        "target copied" in res.err
    assert f"{src / 'loop'}: symbolic link to {src}: not followed, not copied (a loop" in res.err
    assert (sandbox / "f" / "events.out.tfevents.evil").read_text() == "not telemetry\n"
    assert '"events.out.tfevents.evil"' in res.out and verify(sandbox / "f").ok


def test_a_taken_destination_is_refused_and_left_as_it_was(sandbox):
    src = make_src(sandbox)
    dest = sandbox / "d"
    dest.mkdir()
    (dest / "README").write_text("x\n")
    before = snapshot(dest)
    res = rightsize(["rescue", src, dest])
    assert res.rc == 2 and f"{dest}: not empty" in res.error_line()
    res = rightsize(["rescue", src, dest, "--into-existing"])
    assert res.rc == 2 and f"{dest}: not empty and holds no SHA256SUMS" in res.error_line()
    assert snapshot(dest) == before and not hidden(sandbox)

    (sandbox / "file").write_text("x\n")
    res = rightsize(["rescue", src, sandbox / "file"])
    assert res.rc == 2 and f"{sandbox / 'file'}: exists and is not a directory" in \
        res.error_line()


def test_into_existing_updates_what_grew_and_refuses_what_differs(sandbox):
    src = make_src(sandbox)
    dest = sandbox / "d"
    assert rightsize(["rescue", src, dest, "-q"]).rc == 0
    grown = sorted((src / "b").iterdir())[-1]
    with open(grown, "ab") as fh:                       # the run went on: bytes appended
        fh.write((src / "a").iterdir().__next__().read_bytes()[40:200])
    new = event_file(src / "c", steps=12)
    res = rightsize(["rescue", src, dest, "--into-existing"])
    assert res.rc == 0 and "1 copied, 1 updated, 2 unchanged" in res.out, res.err
    assert verify(dest).ok and (dest / new.relative_to(src)).is_file()
    assert (dest / grown.relative_to(src)).read_bytes() == grown.read_bytes()

    before = snapshot(dest)
    data = bytearray(grown.read_bytes())
    data[30] ^= 0xFF                                   # same name, other bytes
    grown.write_bytes(bytes(data) + b"more")
    res = rightsize(["rescue", src, dest, "--into-existing"])
    assert res.rc == 3 and "refusing to overwrite" in res.error_line()
    assert str(dest / grown.relative_to(src)) in res.error_line()
    assert snapshot(dest) == before and not hidden(sandbox)


def test_a_name_with_a_newline_is_refused_escaped(sandbox):
    src = make_src(sandbox, runs=("a",))
    shutil.copy(next((src / "a").iterdir()), src / "a" / "events.out.tfevents.1.x\ny")
    res = rightsize(["rescue", src, sandbox / "d"])
    assert res.rc == 2 and "events.out.tfevents.1.x\\ny: the name holds a newline" in \
        res.error_line()
    assert not (sandbox / "d").exists() and not hidden(sandbox)


def test_concurrent_rescues_into_one_folder_lose_no_entries(sandbox):
    dest = sandbox / "d"
    first = make_src(sandbox / "s0", runs=("a",))
    assert rightsize(["rescue", first, dest, "-q"]).rc == 0
    sources = []
    for i in range(1, 5):
        src = sandbox / f"s{i}" / "src"
        for k in range(3):
            event_file(src / f"run{i}", steps=25 + k, pid=100 * i + k)
        sources.append(src)
    procs = [subprocess.Popen([*ENTRY, "rescue", str(s), str(dest), "--into-existing", "-q"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for s in sources]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    listed = parse_manifest(dest / "SHA256SUMS").entries
    assert len(listed) == 1 + 4 * 3 and all(f"run{i}/" in "".join(listed) for i in range(1, 5))
    assert verify(dest).ok and not hidden(sandbox)


def _check_fresh(dest: Path, expected: dict[str, str]) -> None:
    """Absent, or complete: every source file and a SHA256SUMS that verifies."""
    if dest.exists():
        got = snapshot(dest)
        assert set(got) == set(expected) | {"SHA256SUMS"}, sorted(got)
        assert all(got[k] == v for k, v in expected.items()) and verify(dest).ok


@pytest.mark.parametrize("mode", ["kill", "int"])
def test_killed_rescue_leaves_no_dest_or_a_complete_one(sandbox, mode):
    src = make_src(sandbox)
    expected = {p.relative_to(src).as_posix(): h for p, h in
                ((Path(src, k), v) for k, v in snapshot(src).items())}
    args = ["rescue", src, sandbox / "d"]
    log = writes(sandbox, [*args[:2], sandbox / "probe"], sandbox / "writes.log")
    shutil.rmtree(sandbox / "probe")
    assert any("os.rename" in w for w in log)
    for at in points(len(log), 4, seed=26 if mode == "kill" else 27):
        res = killed(sandbox, args, mode, at)
        assert res.rc == (-9 if mode == "kill" else 130), (at, res.rc, res.err)
        if mode == "int":
            assert res.error_line() == "rightsize: error: interrupted"
        _check_fresh(sandbox / "d", expected)
        assert visible(sandbox) <= {"src", "d", "writes.log"}
        shutil.rmtree(sandbox / "d", ignore_errors=True)
    res = rightsize([*args, "-q"])                       # the next rescue clears leftovers
    assert res.rc == 0 and verify(sandbox / "d").ok and not hidden(sandbox)


@pytest.mark.parametrize("mode", ["kill", "int"])
def test_killed_rescue_into_existing_leaves_old_or_new(sandbox, mode):
    src = make_src(sandbox)
    dest = sandbox / "d"
    assert rightsize(["rescue", src, dest, "-q"]).rc == 0
    shutil.copytree(dest, sandbox / "old")
    old = snapshot(dest)
    with open(sorted((src / "b").iterdir())[0], "ab") as fh:
        fh.write(b"\0" * 64)                          # the run went on (bytes appended)
    event_file(src / "c", steps=9)
    shutil.copytree(dest, sandbox / "probe")
    args = ["rescue", src, dest, "--into-existing"]
    log = writes(sandbox, [*args[:2], sandbox / "probe", args[3]], sandbox / "writes.log")
    new = snapshot(sandbox / "probe")
    shutil.rmtree(sandbox / "probe")
    assert old != new and any("os.link" in w for w in log)
    for at in points(len(log), 3, seed=126 if mode == "kill" else 127):
        res = killed(sandbox, args, mode, at)
        assert res.rc == (-9 if mode == "kill" else 130), (at, res.rc, res.err)
        assert snapshot(dest) in (old, new), at
        assert visible(sandbox) == {"src", "d", "old", "writes.log"}
        if snapshot(dest) != old:
            shutil.rmtree(dest)
            shutil.copytree(sandbox / "old", dest)
    res = rightsize([*args, "-q"])                       # the next rescue clears leftovers
    assert res.rc == 0 and snapshot(dest) == new and not hidden(sandbox)
