"""Discover runs (directories holding event files) and parse event-file names.

A *run* is a directory with at least one event file (:func:`is_event_file`); its name is
the directory's path relative to the root given (``"."`` for the root itself, ``/`` as
separator). Runs are listed in name order; files in a run by the timestamp in their name,
then by name with embedded numbers compared as numbers (``...g3050.2751.0`` before
``...g3050.14431.0``).

File names look like ``events.out.tfevents.<ts>.<host>.<pid>.<n>[.v2]``; the host may
contain dots, and some writers leave out pid and counter (``events.out.tfevents.<ts>.<host>``,
TensorFlow's ``<ts>.<host>.profile-empty``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from rightsize.errors import InputError

MARKER = "tfevents"
_NAME = re.compile(r"tfevents\.(?P<ts>\d+)(?:\.(?P<rest>.*))?$")
_PID = re.compile(r"^(?P<host>.+)\.(?P<pid>\d+)\.(?P<n>\d+)$")
_SUFFIXES = (".v2", ".profile-empty")
_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True)
class EventFileName:
    """Identity parsed from an event file's name (fields None/0 when absent)."""

    timestamp: int
    host: str | None
    pid: int | None
    index: int | None
    suffix: str


@dataclass(frozen=True)
class EventFile:
    """One event file found under the root."""

    path: Path          # absolute or as given
    relpath: str        # relative to the root, '/'-separated
    run: str
    name: EventFileName


def parse_name(name: str) -> EventFileName:
    """Parse ``events.out.tfevents.<ts>.<host>[.<pid>.<n>][.v2|.profile-empty]``.

    Unparseable parts stay ``None`` (timestamp 0): any name containing ``tfevents`` is an
    event file, whatever else it says.
    """
    m = _NAME.search(name)
    if m is None:
        return EventFileName(0, None, None, None, "")
    rest = m.group("rest") or ""
    suffix = ""
    for s in _SUFFIXES:
        if rest.endswith(s):
            rest, suffix = rest[: -len(s)], s
            break
    host: str | None = rest or None
    pid = index = None
    p = _PID.match(rest)
    if p is not None:
        host, pid, index = p.group("host"), int(p.group("pid")), int(p.group("n"))
    return EventFileName(int(m.group("ts")), host, pid, index, suffix)


def natural_key(text: str) -> tuple:
    """Sort key comparing digit runs as numbers (``run_2`` < ``run_10``)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in _DIGITS.split(text) if part)


def _file_key(f: EventFile) -> tuple:
    return (f.name.timestamp, natural_key(f.path.name), f.path.name)


def is_event_file(name: str) -> bool:
    """The one event-file rule: the name contains ``tfevents`` and does not start with a dot.

    TensorBoard reads any name containing ``tfevents``; a dot-file is a temporary copy
    (rsync's ``.name.XXXXXX``, our own atomic writes' ``.name.*.tmp``), never a launch.
    Every reader and ``rescue`` use this rule.
    """
    return MARKER in name and not name.startswith(".")


def discover(root: str | os.PathLike[str]) -> dict[str, list[EventFile]]:
    """Map run name -> its event files (ordered), for every run under ``root``.

    ``root`` may also be a single event file (run ``"."``). Raises
    :class:`~rightsize.errors.InputError` when ``root`` does not exist or holds no event file.
    """
    base = Path(root)
    if not base.exists():
        raise InputError(f"{root}: no such file or directory")
    if base.is_file():
        if not is_event_file(base.name):
            raise InputError(f"{root}: not an event file (name lacks '{MARKER}')")
        return {".": [EventFile(base, base.name, ".", parse_name(base.name))]}
    runs: dict[str, list[EventFile]] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        rel = Path(dirpath).relative_to(base).as_posix()
        files = []
        for fname in filenames:
            full = Path(dirpath, fname)
            if is_event_file(fname) and full.is_file():
                relpath = fname if rel == "." else f"{rel}/{fname}"
                files.append(EventFile(full, relpath, rel, parse_name(fname)))
        if files:
            runs[rel] = sorted(files, key=_file_key)
    if not runs:
        raise InputError(f"no event files under {root}")
    return dict(sorted(runs.items()))
