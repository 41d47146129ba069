"""``SHA256SUMS``: the checksum manifest of a rescued folder, and ``verify`` against it.

The format is ``sha256sum``'s, so ``sha256sum -c SHA256SUMS`` checks a folder without
rightsize: one ``<hex>  <relpath>`` line per file, sorted by path. Lines starting with ``#``
are comments, which GNU ``sha256sum -c`` skips (``--strict`` included): ``rescue
--skip-unreadable`` records there every path it could not read. A name holding a newline,
a carriage return or bytes that are not UTF-8 cannot be written as one plain line, so
:func:`check_name` refuses it, showing it escaped. Reading, lines may end in CRLF (a
manifest edited on Windows), as GNU ``sha256sum -c`` accepts; a path listed twice is an
:class:`~rightsize.errors.IntegrityError` (which line would count is a guess: ``sha256sum
-c`` checks both, so one of them fails).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rightsize import atomic
from rightsize.errors import InputError, IntegrityError
from rightsize.ground.sha256 import MANIFEST, sha256_file
from rightsize.telemetry.runs import Unreadable, escaped

SKIPPED = "skipped by rightsize rescue: "      # comment prefix of a path rescue could not read
_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


def check_name(path: str | os.PathLike[str], rel: str) -> None:
    """Refuse relative path ``rel`` (under ``path``'s folder) if one manifest line cannot
    hold it: an :class:`InputError` showing the name escaped."""
    bad = next((c for c in ("\n", "\r", "\0") if c in rel), None)
    reason = {"\n": "a newline", "\r": "a carriage return", "\0": "a NUL"}.get(bad or "")
    if reason is None:
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            reason = "bytes that are not UTF-8"
    if reason is not None:
        raise InputError(f"{escaped(str(path))}: the name holds {reason}, which {MANIFEST} "
                         "cannot list; rename the file and rerun")


@dataclass(frozen=True)
class Manifest:
    """A parsed ``SHA256SUMS``: {relpath: hex} and its comment lines (without ``# ``)."""

    entries: dict[str, str]
    comments: tuple[str, ...] = ()

    @property
    def skipped(self) -> tuple[str, ...]:
        """The paths a ``rescue --skip-unreadable`` recorded as not copied (its comments)."""
        return tuple(c[len(SKIPPED):] for c in self.comments if c.startswith(SKIPPED))


def parse_manifest(path: Path) -> Manifest:
    """Parse a ``sha256sum``-format file; errors name file and line."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    entries: dict[str, str] = {}
    lines: dict[str, int] = {}
    comments = []
    for no, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if line.startswith("#"):
            comments.append(line[1:].strip())
            continue
        if not line.strip():
            continue
        m = _LINE.match(line)
        if not m:
            raise InputError(f"{path}:{no}: not a sha256sum line: {line[:60]!r}")
        rel = m.group(2)
        parts = Path(rel).parts
        if Path(rel).is_absolute() or ".." in parts:
            raise InputError(f"{path}:{no}: path escapes the folder: {rel}")
        key = Path(rel).as_posix()
        if key in lines:
            raise IntegrityError(f"{path}:{no}: {key} is listed twice (first at line "
                                 f"{lines[key]}); which hash holds cannot be told")
        lines[key] = no
        entries[key] = m.group(1).lower()
    return Manifest(entries, tuple(comments))


def manifest_text(entries: dict[str, str], comments: tuple[str, ...] | list[str] = ()) -> str:
    """The manifest's text: comment lines first, then entries sorted by path."""
    return ("".join(f"# {c}\n" for c in comments)
            + "".join(f"{h}  {rel}\n" for rel, h in sorted(entries.items())))


def write_manifest(root: Path, entries: dict[str, str],
                   comments: tuple[str, ...] | list[str] = ()) -> Path:
    """Atomically write ``root/SHA256SUMS`` (comments first, then entries sorted by path)."""
    target = root / MANIFEST
    atomic.write_text(target, manifest_text(entries, comments))
    os.chmod(target, 0o644)
    return target


def manifest_for(root: Path) -> dict[str, str]:
    """Hash every event file under ``root`` and write its ``SHA256SUMS``."""
    from rightsize.telemetry.runs import list_tree

    entries = {rel: sha256_file(root / rel)[0] for rel in list_tree(root, "report").files}
    write_manifest(root, entries)
    return entries


@dataclass(frozen=True)
class VerifyResult:
    """Outcome of checking a folder against its ``SHA256SUMS``."""

    root: str
    files: int                     # entries in the manifest
    bytes: int                     # bytes hashed (present listed files)
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    mismatched: tuple[str, ...] = ()
    unreadable: tuple[Unreadable, ...] = ()
    skipped: tuple[str, ...] = field(default=())   # recorded by rescue --skip-unreadable

    @property
    def ok(self) -> bool:
        """True when every listed file is present, readable and intact, and nothing else is
        there."""
        return not (self.missing or self.extra or self.mismatched or self.unreadable)

    @property
    def intact(self) -> bool:
        """True when no file fails its checksum, is missing or extra (unreadable aside)."""
        return not (self.missing or self.extra or self.mismatched)

    def problems(self) -> list[str]:
        """One line per bad file: ``<relpath>: missing|extra|mismatched``."""
        return ([f"{p}: mismatched" for p in self.mismatched]
                + [f"{p}: missing" for p in self.missing]
                + [f"{p}: extra (not in {MANIFEST})" for p in self.extra])

    def to_json(self) -> dict[str, Any]:
        """Counts as scalars (for DVC metrics) plus the lists of names."""
        return {"ok": self.ok, "files": self.files, "bytes": self.bytes,
                "missing": len(self.missing), "extra": len(self.extra),
                "mismatched": len(self.mismatched), "unreadable": len(self.unreadable),
                "missing_files": list(self.missing), "extra_files": list(self.extra),
                "mismatched_files": list(self.mismatched),
                "unreadable_paths": [u.message() for u in self.unreadable],
                "skipped_at_rescue": list(self.skipped)}


def _present(root: Path, unreadable: list[Unreadable]) -> set[str]:
    """Relative paths of every file under ``root`` (hidden ones too); unlistable directories
    go to ``unreadable``."""
    found = set()

    def onerror(exc: OSError) -> None:
        unreadable.append(Unreadable(str(exc.filename), "directory", exc.strerror or str(exc)))

    for dirpath, _dirs, names in os.walk(root, onerror=onerror):
        rel = Path(dirpath).relative_to(root)
        found.update((rel / n).as_posix() for n in names if os.path.isfile(Path(dirpath, n)))
    return found


def verify(root: str | os.PathLike[str]) -> VerifyResult:
    """Check every file listed in ``root/SHA256SUMS``; list files present but not listed,
    and every directory or listed file that could not be read."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root}: not a directory")
    manifest = root / MANIFEST
    if not manifest.is_file():
        raise InputError(f"{manifest}: not found (nothing to verify)")
    parsed = parse_manifest(manifest)
    entries = parsed.entries
    unreadable: list[Unreadable] = []
    missing, mismatched = [], []
    total = 0
    for rel, want in sorted(entries.items()):
        p = root / rel
        try:
            got, n = sha256_file(p)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            missing.append(rel)
            continue
        except OSError as exc:
            if not os.path.lexists(p) and os.access(p.parent, os.X_OK):
                missing.append(rel)
            else:
                unreadable.append(Unreadable(str(p), "file", exc.strerror or str(exc)))
            continue
        total += n
        if got != want:
            mismatched.append(rel)
    present = _present(root, unreadable)
    extra = sorted(present - set(entries) - {MANIFEST})
    return VerifyResult(str(root), len(entries), total, tuple(missing), tuple(extra),
                        tuple(mismatched), tuple(unreadable), parsed.skipped)
