"""Discover runs (directories holding event files) and parse event-file names.

A *run* is a directory with at least one event file (:func:`is_event_file`); its name is
the directory's path relative to the root given (``"."`` for the root itself, ``/`` as
separator). Runs are listed in name order; files in a run by the timestamp in their name,
then by name with embedded numbers compared as numbers (``...g3050.2751.0`` before
``...g3050.14431.0``).

File names look like ``events.out.tfevents.<ts>.<host>.<pid>.<n>[.v2]``; the host may
contain dots, and some writers leave out pid and counter (``events.out.tfevents.<ts>.<host>``,
TensorFlow's ``<ts>.<host>.profile-empty``).

:func:`list_tree` is the one walk every reader and ``rescue`` share: hidden (dot) files and
folders are not part of a run (they are temporary files, and the ``.partial-*`` folder a
killed ``rightsize train`` leaves), every directory that cannot be listed is reported, and
symbolic links are read, followed or only reported as the caller asks. An event-file name
that is not a regular file (a FIFO, a device, a socket) is reported and never opened:
opening a FIFO blocks until something writes to it. The readers open a file only through
:func:`~rightsize.ground.regular_file.open_regular`, so a path given directly or listed in
``SHA256SUMS`` gets the same check.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rightsize.errors import InputError
from rightsize.ground.regular_file import not_regular

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


def escaped(name: str) -> str:
    """``name`` on one printable line: control characters as escapes (``\\n``), bytes that
    are not UTF-8 (decoded by Python as surrogates) as ``\\xNN``, backslashes doubled."""
    out = []
    for ch in name:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch == "\\":
            out.append("\\\\")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape").decode("ascii"))
    return "".join(out)


@dataclass(frozen=True)
class Unreadable:
    """A directory that could not be listed or a file that could not be read."""

    path: str           # as the user would type it: root joined with the relative path
    kind: str           # "directory" or "file"
    reason: str         # strerror, e.g. "Permission denied"

    def message(self) -> str:
        """One line naming the path: ``<path>: cannot list directory (Permission denied)``."""
        verb = "list" if self.kind == "directory" else "read"
        return f"{escaped(self.path)}: cannot {verb} {self.kind} ({self.reason})"


class CannotRead(Exception):
    """A file could not be opened or read (carries the :class:`Unreadable`)."""

    def __init__(self, what: Unreadable) -> None:
        super().__init__(what.message())
        self.what = what

    @classmethod
    def file(cls, path: str | os.PathLike[str], exc: OSError) -> CannotRead:
        """The error of the file ``path`` that ``exc`` stopped."""
        return cls(Unreadable(str(path), "file", exc.strerror or str(exc)))


@dataclass(frozen=True)
class Link:
    """A symbolic link met while listing (``followed``: its target was read or descended)."""

    relpath: str
    target: str
    followed: bool


@dataclass(frozen=True)
class Listing:
    """What :func:`list_tree` found: event files (relative paths), links, unreadable dirs."""

    files: tuple[str, ...]
    links: tuple[Link, ...]
    unreadable: tuple[Unreadable, ...]
    special: tuple[Unreadable, ...] = ()    # event-file names that are no regular file


Links = Literal["report", "files", "follow"]


def _join(root: Path, rel: str) -> str:
    return str(root / rel) if rel else str(root)


def list_tree(root: str | os.PathLike[str], links: Links = "files") -> Listing:
    """Every event file under directory ``root`` (sorted relative POSIX paths).

    Hidden names (a leading dot) are skipped at every level. ``links``: ``"files"`` reads a
    linked event file as a file and ignores links to directories (the readers, like
    ``os.walk``); ``"report"`` follows no link and lists each link to a directory or an
    event file in :attr:`Listing.links`; ``"follow"`` reads linked files and descends into
    linked directories once each (no loops), listing them as followed.
    """
    base = Path(root)
    files: list[str] = []
    found: list[Link] = []
    unreadable: list[Unreadable] = []
    special: list[Unreadable] = []
    st = os.stat(base)
    seen = {(st.st_dev, st.st_ino)}
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(base / rel if rel else base) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            unreadable.append(Unreadable(_join(base, rel), "directory", exc.strerror or str(exc)))
            continue
        subdirs = []
        for e in entries:
            if e.name.startswith("."):
                continue
            r = f"{rel}/{e.name}" if rel else e.name
            if not e.is_symlink():
                if e.is_dir(follow_symlinks=False):
                    if links == "follow":            # a followed link may lead back here
                        key = (e.stat().st_dev, e.stat().st_ino)
                        if key in seen:
                            continue
                        seen.add(key)
                    subdirs.append(r)
                elif is_event_file(e.name) and e.is_file(follow_symlinks=False):
                    files.append(r)
                elif is_event_file(e.name):
                    try:
                        why = not_regular(e.stat(follow_symlinks=False).st_mode)
                    except OSError:                  # gone since the listing
                        continue
                    special.append(Unreadable(_join(base, r), "file", why or "special"))
                continue
            try:
                target_st = os.stat(e.path)
            except OSError:
                target_st = None                        # dangling: reported as a link
            is_dir = target_st is not None and stat.S_ISDIR(target_st.st_mode)
            if not is_dir and not is_event_file(e.name):
                continue
            if links == "files":
                if not is_dir and target_st is not None and stat.S_ISREG(target_st.st_mode):
                    files.append(r)
                elif not is_dir and target_st is not None:
                    special.append(Unreadable(_join(base, r), "file",
                                              not_regular(target_st.st_mode) or "special"))
                continue
            follow = links == "follow" and target_st is not None
            if follow and is_dir:
                key = (target_st.st_dev, target_st.st_ino)
                follow = key not in seen
                seen.add(key)
                if follow:
                    subdirs.append(r)
            elif follow:
                follow = stat.S_ISREG(target_st.st_mode)
                if follow:
                    files.append(r)
            found.append(Link(r, os.readlink(e.path), follow))
        stack.extend(reversed(subdirs))
    return Listing(tuple(sorted(files)), tuple(sorted(found, key=lambda x: x.relpath)),
                   tuple(unreadable), tuple(sorted(special, key=lambda u: u.path)))


@dataclass(frozen=True)
class RunIndex:
    """Runs found under a root, and the directories that could not be listed."""

    runs: dict[str, list[EventFile]]
    unreadable: tuple[Unreadable, ...]


def scan(root: str | os.PathLike[str]) -> RunIndex:
    """Map run name -> its event files (ordered) for every run under ``root``, and list the
    directories that could not be listed.

    ``root`` may also be a single event file (run ``"."``). Raises
    :class:`~rightsize.errors.InputError` when ``root`` does not exist, or holds no event file
    and no directory it could not list.
    """
    base = Path(root)
    if not base.exists():
        raise InputError(f"{root}: no such file or directory")
    if not base.is_dir():
        if not is_event_file(base.name):
            raise InputError(f"{root}: not an event file (name lacks '{MARKER}')")
        return RunIndex({".": [EventFile(base, base.name, ".", parse_name(base.name))]}, ())
    try:
        listing = list_tree(base, links="files")
    except OSError as exc:
        raise InputError(f"{root}: cannot list directory ({exc.strerror or exc})") from None
    runs: dict[str, list[EventFile]] = {}
    for relpath in listing.files:
        parent, _, name = relpath.rpartition("/")
        run = parent or "."
        runs.setdefault(run, []).append(EventFile(base / relpath, relpath, run,
                                                  parse_name(name)))
    unreadable = listing.unreadable + listing.special
    if not runs:
        if unreadable:
            first = unreadable[0]
            raise InputError(f"no event files under {root} that could be read; "
                             f"{first.message()}",
                             details=[u.message() for u in unreadable[1:]])
        raise InputError(f"no event files under {root}")
    return RunIndex({run: sorted(files, key=_file_key) for run, files in sorted(runs.items())},
                    unreadable)


def discover(root: str | os.PathLike[str]) -> dict[str, list[EventFile]]:
    """Map run name -> its event files (ordered), for every run under ``root``
    (:func:`scan` without the list of unreadable directories)."""
    return scan(root).runs
