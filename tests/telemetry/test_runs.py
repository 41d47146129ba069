"""Run discovery and event-file names."""

from __future__ import annotations

import pytest

from rightsize.errors import InputError
from rightsize.telemetry.runs import EventFileName, discover, natural_key, parse_name
from rightsize.telemetry.scalars import read_scalars


@pytest.mark.parametrize(("name", "want"), [
    ("events.out.tfevents.1750174762.g3055.43447.0",
     EventFileName(1750174762, "g3055", 43447, 0, "")),
    ("events.out.tfevents.1622966509.janoshs-mbp.lan.86059.2",
     EventFileName(1622966509, "janoshs-mbp.lan", 86059, 2, "")),
    ("events.out.tfevents.1586413367.YONGXIdeMacBook-Pro.local.60399.8091.v2",
     EventFileName(1586413367, "YONGXIdeMacBook-Pro.local", 60399, 8091, ".v2")),
    ("events.out.tfevents.1589601849.LEMON.profile-empty",
     EventFileName(1589601849, "LEMON", None, None, ".profile-empty")),
    ("events.out.tfevents.1500000000.tf1-host.example.com",
     EventFileName(1500000000, "tf1-host.example.com", None, None, "")),
    ("events.out.tfevents.1500000000", EventFileName(1500000000, None, None, None, "")),
    ("my.tfevents.backup", EventFileName(0, None, None, None, "")),
])
def test_parse_name(name, want):
    assert parse_name(name) == want


def test_natural_key_orders_numbers_as_numbers():
    names = ["run_10", "run_2", "run_1", "run_1a", "a"]
    assert sorted(names, key=natural_key) == ["a", "run_1", "run_1a", "run_2", "run_10"]


def touch(path, ev):
    ev.write(path, [ev.header()])


def test_files_ordered_by_timestamp_then_natural_name(tmp_path, ev):
    for name in ["events.out.tfevents.200.h.14431.0", "events.out.tfevents.200.h.2751.0",
                 "events.out.tfevents.100.h.99999.0", "events.out.tfevents.200.h.2751.10",
                 "events.out.tfevents.200.h.2751.9"]:
        touch(tmp_path / name, ev)
    (tmp_path / "notes.txt").write_text("not an event file")
    runs = discover(tmp_path)
    assert list(runs) == ["."]
    assert [f.relpath for f in runs["."]] == [
        "events.out.tfevents.100.h.99999.0", "events.out.tfevents.200.h.2751.0",
        "events.out.tfevents.200.h.2751.9", "events.out.tfevents.200.h.2751.10",
        "events.out.tfevents.200.h.14431.0"]


def test_nested_runs_are_named_by_relative_directory(tmp_path, ev):
    touch(tmp_path / "events.out.tfevents.1.h.1.0", ev)
    touch(tmp_path / "b" / "train" / "events.out.tfevents.3.h.1.0.v2", ev)
    touch(tmp_path / "a" / "events.out.tfevents.2.h.1.0", ev)
    (tmp_path / "empty" / "deeper").mkdir(parents=True)
    runs = discover(tmp_path)
    assert list(runs) == [".", "a", "b/train"]
    assert runs["b/train"][0].relpath == "b/train/events.out.tfevents.3.h.1.0.v2"
    table = read_scalars(tmp_path)
    assert table.runs == [".", "a", "b/train"]
    assert [f.path for f in table.files] == [
        "events.out.tfevents.1.h.1.0", "a/events.out.tfevents.2.h.1.0",
        "b/train/events.out.tfevents.3.h.1.0.v2"]
    assert all(f.header_only for f in table.files) and table.columns.num_rows == 0


def test_a_single_event_file_is_a_run(tmp_path, ev):
    path = tmp_path / "events.out.tfevents.5.h.7.0"
    ev.write(path, [ev.header(), ev.scalar(6.0, 1, "x", 1.0)])
    table = read_scalars(path)
    assert table.runs == ["."] and table.files[0].pid == 7 and table.columns.num_rows == 1


def test_missing_root_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="nope: no such file or directory"):
        discover(tmp_path / "nope")


def test_root_without_event_files_is_an_input_error(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "readme.txt").write_text("x")
    with pytest.raises(InputError, match=f"no event files under {tmp_path}"):
        discover(tmp_path)
    with pytest.raises(InputError, match="not an event file"):
        discover(tmp_path / "sub" / "readme.txt")


def test_zero_byte_file_is_a_header_only_launch(tmp_path):
    (tmp_path / "events.out.tfevents.9.h.1.0").write_bytes(b"")
    table = read_scalars(tmp_path)
    info = table.files[0]
    assert (info.size, info.records, info.events, info.first_wall_time) == (0, 0, 0, None)
    assert info.header_only and table.problems == ()


def test_dot_files_are_not_event_files_for_the_readers_nor_rescue(tmp_path, ev):
    # One rule (runs.is_event_file): a dot-file naming tfevents is a temporary copy
    # (rsync's .name.XXXXXX, an atomic write's .name.*.tmp), never a launch. Rescue lists
    # what it copies with the same walk (runs.list_tree).
    from rightsize.telemetry.rescue import rescue
    from rightsize.telemetry.runs import list_tree

    src = tmp_path / "src"
    touch(src / "events.out.tfevents.1.h.1.0", ev)
    touch(src / ".events.out.tfevents.1.h.1.0.Xa9Qz", ev)
    touch(src / "sub" / ".events.out.tfevents.2.h.1.0.tmp", ev)
    runs = discover(src)
    assert list(runs) == ["."] and [f.relpath for f in runs["."]] == [
        "events.out.tfevents.1.h.1.0"]
    assert list_tree(src, links="report").files == ("events.out.tfevents.1.h.1.0",)
    rescue(src, tmp_path / "dest")
    copied = sorted(p.name for p in (tmp_path / "dest").rglob("*") if p.is_file())
    assert copied == ["SHA256SUMS", "events.out.tfevents.1.h.1.0"]
    assert [f.path for f in read_scalars(src).files] == ["events.out.tfevents.1.h.1.0"]
