"""rescue copies and checksums; verify catches tampered, missing and extra files."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from rightsize.cli import main
from rightsize.errors import InputError, IntegrityError
from rightsize.telemetry.rescue import rescue
from rightsize.telemetry.sha256sums import parse_manifest, verify


def errors(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln]


def test_rescue_rampnet_reproduces_its_manifest(rampnet, tmp_path, capsys):
    dest = tmp_path / "copy"
    assert main(["rescue", str(rampnet), str(dest)]) == 0
    assert "18 copied" in capsys.readouterr().out
    ours = parse_manifest(dest / "SHA256SUMS").entries
    assert ours == parse_manifest(rampnet / "SHA256SUMS").entries
    for rel in ours:
        assert (dest / rel).read_bytes() == (rampnet / rel).read_bytes()
    if shutil.which("sha256sum"):   # the real tool reads our manifest
        subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=dest, check=True)
    # again: refused without --into-existing; with it nothing to copy, still verifies
    with pytest.raises(InputError, match="not empty"):
        rescue(rampnet, dest)
    res = rescue(rampnet, dest, into_existing=True)
    assert (len(res.copied), len(res.updated), len(res.unchanged)) == (0, 0, 18)
    assert verify(dest).ok


def test_verify_shared_rampnet_in_place(rampnet, tmp_path):
    out = tmp_path / "v.json"
    assert main(["verify", str(rampnet), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["ok"] is True and doc["files"] == 18
    assert doc["bytes"] == sum(p.stat().st_size for p in rampnet.glob("events.out.tfevents.*"))
    assert (doc["missing"], doc["extra"], doc["mismatched"]) == (0, 0, 0)


@pytest.fixture()
def rescued(demo_factory, tmp_path):
    run, _ = demo_factory(0, 10)
    src = tmp_path / "src"
    shutil.copytree(run, src / "a")
    shutil.copytree(run, src / "nested" / "b")
    for p in (src / "a").glob("SHA256SUMS"):
        p.unlink()
    dest = tmp_path / "dest"
    res = rescue(src, dest)
    assert len(res.copied) == 2 * sum(1 for _ in run.glob("events.*"))
    return dest


def test_rescue_keeps_relative_paths(rescued):
    rels = sorted(parse_manifest(rescued / "SHA256SUMS").entries)
    assert rels and all(r.startswith(("a/", "nested/b/")) for r in rels)
    assert all((rescued / r).is_file() for r in rels)
    assert verify(rescued).ok


def test_tampered_file_fails_verify_naming_it(rescued, tmp_path, capsys):
    victim = sorted(parse_manifest(rescued / "SHA256SUMS").entries)[3]
    data = bytearray((rescued / victim).read_bytes())
    data[len(data) // 2] ^= 0x01
    (rescued / victim).write_bytes(bytes(data))
    out = tmp_path / "v.json"
    assert main(["verify", str(rescued), "--json", str(out)]) == 3
    lines = errors(capsys)
    assert len(lines) == 2
    assert lines[0] == f"rightsize: warning: {rescued / victim}: mismatched"
    assert lines[1].startswith("rightsize: error:") and victim in lines[1]
    doc = json.loads(out.read_text())
    assert doc["ok"] is False and doc["mismatched"] == 1 and doc["mismatched_files"] == [victim]


def test_missing_and_extra_files(rescued, capsys):
    rels = sorted(parse_manifest(rescued / "SHA256SUMS").entries)
    (rescued / rels[0]).unlink()
    (rescued / "nested" / "stray.txt").write_text("x")
    assert main(["verify", str(rescued)]) == 3
    lines = errors(capsys)
    assert any(ln.endswith(f"{rels[0]}: missing") for ln in lines)
    assert any("nested/stray.txt: extra" in ln for ln in lines)
    assert len(lines) == 3 and rels[0] in lines[-1]
    res = verify(rescued)
    assert (res.missing, res.extra, res.mismatched) == ((rels[0],), ("nested/stray.txt",), ())


def test_rescue_into_existing_updates_a_grown_file(rescued, tmp_path, capsys):
    src = tmp_path / "src"
    rel = sorted(parse_manifest(rescued / "SHA256SUMS").entries)[0]
    with open(src / rel, "ab") as fh:      # the source grew since the last rescue
        fh.write(b"\0" * 16)
    assert main(["rescue", str(src), str(rescued), "--into-existing"]) == 0
    assert "0 copied, 1 updated" in capsys.readouterr().out
    assert (rescued / rel).read_bytes() == (src / rel).read_bytes()
    assert verify(rescued).ok


def test_rescue_refuses_to_overwrite_a_different_file(rescued, tmp_path, capsys):
    src = tmp_path / "src"
    rel = sorted(parse_manifest(rescued / "SHA256SUMS").entries)[0]
    before = (rescued / rel).read_bytes()
    data = bytearray((src / rel).read_bytes())
    data[len(data) // 2] ^= 0xFF           # the same name, other bytes (not a longer version)
    (src / rel).write_bytes(bytes(data) + b"\0" * 16)
    manifest = (rescued / "SHA256SUMS").read_bytes()
    assert main(["rescue", str(src), str(rescued), "--into-existing"]) == 3
    err = errors(capsys)
    assert len(err) == 1 and "refusing to overwrite" in err[0] and rel in err[0]
    assert (rescued / rel).read_bytes() == before
    assert (rescued / "SHA256SUMS").read_bytes() == manifest


def test_rescue_checks_the_source_manifest(demo_factory, tmp_path, capsys):
    run, _ = demo_factory(0, 10)
    src = tmp_path / "src"
    shutil.copytree(run, src)
    victim = sorted(src.glob("events.*"))[0]
    victim.write_bytes(victim.read_bytes()[:-1])
    with pytest.raises(IntegrityError, match="does not match"):
        rescue(src, tmp_path / "dest")
    assert not (tmp_path / "dest").exists() and not list(tmp_path.glob(".dest*"))


@pytest.mark.parametrize("case", ["missing", "empty", "inside"])
def test_rescue_bad_input(case, tmp_path, capsys):
    src = tmp_path / "src"
    if case != "missing":
        src.mkdir()
    dest = src / "d" if case == "inside" else tmp_path / "d"
    if case == "inside":
        (src / "events.out.tfevents.1.h.1.0").write_bytes(b"")
    assert main(["rescue", str(src), str(dest)]) == 2
    err = errors(capsys)
    assert len(err) == 1 and err[0].startswith("rightsize: error:")


def test_verify_bad_input(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "nope")]) == 2
    assert main(["verify", str(tmp_path)]) == 2           # no SHA256SUMS
    (tmp_path / "SHA256SUMS").write_text("abc  x\n")
    assert main(["verify", str(tmp_path)]) == 2
    (tmp_path / "SHA256SUMS").write_text(f"{'0' * 64}  ../escape\n")
    assert main(["verify", str(tmp_path)]) == 2
    err = errors(capsys)
    assert len(err) == 4 and all(ln.startswith("rightsize: error:") for ln in err)
    assert "SHA256SUMS:1" in err[2] and "escapes" in err[3]
