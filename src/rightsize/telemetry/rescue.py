"""Rescue event files into a checksummed folder, and verify such a folder later.

``rescue(src, dest)`` copies every event file under ``src`` to the same relative path under
``dest`` (temp file + rename, re-read before the rename), refuses to overwrite a different
existing file, and writes ``SHA256SUMS`` in ``sha256sum`` format (``<hex>  <relpath>``).
``verify(dir)`` re-hashes every listed file and reports missing, extra and mismatched ones.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rightsize import atomic
from rightsize.errors import InputError, IntegrityError
from rightsize.telemetry.runs import is_event_file as is_event_name

log = logging.getLogger(__name__)

MANIFEST = "SHA256SUMS"
CHUNK = 1 << 20
_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


def is_event_file(path: Path) -> bool:
    """A regular file whose name passes :func:`rightsize.telemetry.runs.is_event_file`."""
    return is_event_name(path.name) and path.is_file()


def event_files(root: Path) -> list[str]:
    """Relative POSIX paths of every event file under ``root``, sorted."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if is_event_file(p))


def sha256_file(path: Path) -> tuple[str, int]:
    """Hex SHA-256 and byte count of ``path``, read in chunks."""
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            n += len(chunk)
    return h.hexdigest(), n


def read_manifest(path: Path) -> dict[str, str]:
    """Parse a ``sha256sum``-format manifest into {relpath: hex}; errors name file and line."""
    entries: dict[str, str] = {}
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if not m:
            raise InputError(f"{path}:{no}: not a sha256sum line: {line[:60]!r}")
        rel = m.group(2)
        parts = Path(rel).parts
        if Path(rel).is_absolute() or ".." in parts:
            raise InputError(f"{path}:{no}: path escapes the folder: {rel}")
        entries[Path(rel).as_posix()] = m.group(1).lower()
    return entries


def write_manifest(root: Path, entries: dict[str, str]) -> Path:
    """Atomically write ``root/SHA256SUMS`` (sorted by path)."""
    text = "".join(f"{h}  {rel}\n" for rel, h in sorted(entries.items()))
    target = root / MANIFEST
    atomic.write_text(target, text)
    os.chmod(target, 0o644)
    return target


def manifest_for(root: Path) -> dict[str, str]:
    """Hash every event file under ``root`` and write its ``SHA256SUMS``."""
    entries = {rel: sha256_file(root / rel)[0] for rel in event_files(root)}
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

    @property
    def ok(self) -> bool:
        """True when every listed file is present and intact and nothing else is there."""
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
                "mismatched": len(self.mismatched), "missing_files": list(self.missing),
                "extra_files": list(self.extra), "mismatched_files": list(self.mismatched)}


def verify(root: str | os.PathLike[str]) -> VerifyResult:
    """Check every file listed in ``root/SHA256SUMS``; list files present but not listed."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"{root}: not a directory")
    manifest = root / MANIFEST
    if not manifest.is_file():
        raise InputError(f"{manifest}: not found (nothing to verify)")
    entries = read_manifest(manifest)
    missing, mismatched = [], []
    total = 0
    for rel, want in sorted(entries.items()):
        p = root / rel
        if not p.is_file():
            missing.append(rel)
            continue
        got, n = sha256_file(p)
        total += n
        if got != want:
            mismatched.append(rel)
    present = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    extra = sorted(present - set(entries) - {MANIFEST})
    return VerifyResult(str(root), len(entries), total, tuple(missing), tuple(extra),
                        tuple(mismatched))


@dataclass(frozen=True)
class RescueResult:
    """What ``rescue`` did."""

    copied: tuple[str, ...]
    unchanged: tuple[str, ...]     # already in dest with identical bytes
    bytes: int
    verify: VerifyResult | None = field(repr=False, default=None)


def _copy_verified(src: Path, dest: Path, want: str) -> None:
    """Copy ``src`` to ``dest`` via a temp file that is re-read and checked before the rename."""
    with atomic.atomic_path(dest) as tmp:
        h = hashlib.sha256()
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            while chunk := fin.read(CHUNK):
                h.update(chunk)
                fout.write(chunk)
        if h.hexdigest() != want:
            raise IntegrityError(f"{src}: changed while being copied; rerun rescue")
        got, _ = sha256_file(tmp)
        if got != want:
            raise IntegrityError(f"{dest}: copy reads back differently from {src}")
    os.chmod(dest, 0o644)


def rescue(src: str | os.PathLike[str], dest: str | os.PathLike[str]) -> RescueResult:
    """Copy every event file of ``src`` into ``dest``, write and check ``dest/SHA256SUMS``.

    Raises ``IntegrityError`` when a file already in ``dest`` differs from its source, when
    ``src`` holds a ``SHA256SUMS`` its files no longer match, or when the copy fails to verify.
    """
    src, dest = Path(src), Path(dest)
    if not src.is_dir():
        raise InputError(f"{src}: not a directory")
    if dest.resolve() == src.resolve() or dest.resolve().is_relative_to(src.resolve()):
        raise InputError(f"{dest}: destination must lie outside the source {src}")
    rels = event_files(src)
    if not rels:
        raise InputError(f"{src}: no event files (events.out.tfevents.*) found")
    src_manifest = read_manifest(src / MANIFEST) if (src / MANIFEST).is_file() else {}
    old = read_manifest(dest / MANIFEST) if (dest / MANIFEST).is_file() else {}
    copied, unchanged = [], []
    total = 0
    entries = dict(old)
    for rel in rels:
        digest, n = sha256_file(src / rel)
        total += n
        if rel in src_manifest and src_manifest[rel] != digest:
            raise IntegrityError(f"{src / rel}: does not match {src / MANIFEST}")
        target = dest / rel
        if target.exists():
            if not target.is_file() or sha256_file(target)[0] != digest:
                raise IntegrityError(f"{target}: exists and differs from {src / rel}; "
                                     "refusing to overwrite")
            unchanged.append(rel)
        else:
            _copy_verified(src / rel, target, digest)
            copied.append(rel)
        entries[rel] = digest
    write_manifest(dest, entries)
    result = verify(dest)
    if not result.ok:
        raise IntegrityError(f"{dest}: copy does not verify: {result.problems()[0]}")
    log.debug("rescued %d files (%d unchanged) into %s", len(copied), len(unchanged), dest)
    return RescueResult(tuple(copied), tuple(unchanged), total, result)
