"""Rescue event files into a checksummed folder: a transaction that never half-happens.

``rescue(src, dest)`` copies every event file under ``src`` (same relative paths) into a
hidden folder beside ``dest``, re-reads every copy against the hash taken while copying,
writes ``SHA256SUMS`` (:mod:`rightsize.telemetry.sha256sums`), checks the folder lists
exactly those files, and only then renames it into place. Any failure, Ctrl-C or SIGKILL
leaves ``dest`` exactly as it was (absent, empty, or an earlier rescue); a hidden
``.<dest>.rescue-*`` folder left by a kill is deleted by the next rescue into ``dest``.

* A non-empty ``dest`` is refused unless ``into_existing``: it must then be an earlier
  rescue (its ``SHA256SUMS`` lists everything in it). The new folder holds its files (hard
  links, no copy), the new files, and each file that grew since (its old bytes a prefix of
  the new: a run still being written) in its new version, with one ``SHA256SUMS`` for all;
  it replaces ``dest`` in one atomic exchange (``renameat2``), so every file is old or new
  and ``SHA256SUMS`` is true for what is there at every instant. The whole rescue holds an
  exclusive lock on ``dest``'s parent folder: two rescues into one place take turns and
  neither loses the other's entries. A file in ``dest`` that differs from its source in any
  other way is an :class:`IntegrityError` (refusing to overwrite).
* Every directory that cannot be listed and every event file that cannot be read (an
  event-file name that is a FIFO, socket or device included: never opened) is an
  :class:`InputError` naming it (all of them listed); with ``skip_unreadable`` they are
  left out and recorded as ``#`` comment lines in ``SHA256SUMS``.
* Symbolic links are not followed: each link to a directory or an event file is reported
  (:attr:`RescueResult.links`) and skipped; ``follow_links`` copies what they point to
  (and the result lists them as followed). Hidden (dot) files and folders are not copied.
* A name ``SHA256SUMS`` cannot hold (newline, carriage return, not UTF-8) is refused with
  the name shown escaped, before anything is written.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from rightsize import atomic
from rightsize.errors import InputError, IntegrityError, NoSpaceError, is_no_space
from rightsize.ground.sha256 import CHUNK, MANIFEST, sha256_file
from rightsize.telemetry.runs import CannotRead, Link, Listing, Unreadable, list_tree
from rightsize.telemetry.sha256sums import (
    SKIPPED,
    Manifest,
    VerifyResult,
    check_name,
    parse_manifest,
    verify,
    write_manifest,
)

log = logging.getLogger(__name__)

STAGE = "rescue"          # staging folders are .<dest>.rescue-XXXXXXXX beside dest


@dataclass(frozen=True)
class RescueResult:
    """What ``rescue`` did."""

    copied: tuple[str, ...]        # new files
    unchanged: tuple[str, ...]     # already in dest with identical bytes
    bytes: int                     # bytes of the source files rescued
    verify: VerifyResult | None = None
    updated: tuple[str, ...] = ()  # grown since the earlier rescue: new version copied
    links: tuple[Link, ...] = ()   # symbolic links met (followed or not)
    skipped: tuple[Unreadable, ...] = ()   # left out under skip_unreadable


@dataclass
class _Copied:
    digest: str
    size: int
    prefix_digest: str | None      # hash of the first ``prefix`` bytes, when asked for


def _cannot_write(dest: Path, exc: OSError) -> InputError:
    """The error for ``exc`` met writing ``dest``: no space left, or cannot write."""
    if is_no_space(exc):
        return NoSpaceError(dest)
    return InputError(f"{dest}: cannot write ({exc.strerror or exc})")


def _copy(src: Path, dest: Path, prefix: int | None) -> _Copied:
    """Copy ``src`` to the new file ``dest``, hashing on the way (and the first ``prefix``
    bytes apart), and fsync it. :func:`verify` of the staged folder re-reads it later."""
    h = hashlib.sha256()
    n = 0
    prefix_digest = h.hexdigest() if prefix == 0 else None
    try:
        fin = open(src, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise CannotRead.file(src, exc) from None
    with fin:
        try:
            # unbuffered: a full disk fails a write() here, not the close() on the way out
            fout = open(dest, "xb", buffering=0)  # noqa: SIM115 - closed below
        except OSError as exc:
            raise _cannot_write(dest, exc) from None
        with fout:
            while True:
                try:
                    chunk = fin.read(CHUNK)
                except OSError as exc:
                    raise CannotRead.file(src, exc) from None
                if not chunk:
                    break
                if prefix is not None and n < prefix <= n + len(chunk):
                    h.update(chunk[:prefix - n])
                    prefix_digest = h.hexdigest()
                    h.update(chunk[prefix - n:])
                else:
                    h.update(chunk)
                try:
                    view = memoryview(chunk)
                    while view:
                        view = view[fout.write(view):]
                except OSError as exc:
                    raise _cannot_write(dest, exc) from None
                n += len(chunk)
            try:
                os.fsync(fout.fileno())
            except OSError as exc:
                raise _cannot_write(dest, exc) from None
    os.chmod(dest, 0o644)
    return _Copied(h.hexdigest(), n, prefix_digest)


def _earlier(dest: Path, into_existing: bool) -> Manifest | None:
    """``dest``'s manifest when it is a non-empty earlier rescue (None when empty or absent);
    an :class:`InputError` when it is not empty and ``into_existing`` is off, or when it
    holds anything its ``SHA256SUMS`` does not list."""
    if not dest.is_dir() or not any(dest.iterdir()):
        return None
    if not into_existing:
        raise InputError(f"{dest}: not empty; rescue into a new folder, or add to an earlier "
                         "rescue there with --into-existing")
    if not (dest / MANIFEST).is_file():
        raise InputError(f"{dest}: not empty and holds no {MANIFEST}, so it is not an earlier "
                         "rescue; rescue into a new folder")
    old = parse_manifest(dest / MANIFEST)
    present = list_tree_all(dest)
    stray = sorted(present - set(old.entries) - {MANIFEST})
    if stray:
        raise InputError(f"{dest / stray[0]}: in the destination but not in its {MANIFEST} "
                         f"({len(stray)} such files); --into-existing adds only to an earlier "
                         "rescue")
    return old


def list_tree_all(root: Path) -> set[str]:
    """Relative paths of every file and link under ``root``, hidden ones included."""
    out = set()
    for dirpath, dirs, names in os.walk(root, onerror=_raise):
        rel = Path(dirpath).relative_to(root)
        out.update((rel / n).as_posix() for n in names)
        out.update((rel / d).as_posix() for d in dirs if os.path.islink(Path(dirpath, d)))
    return out


def _raise(exc: OSError) -> None:
    raise InputError(f"{exc.filename}: cannot list directory ({exc.strerror or exc})")


def _check_paths(src: Path, dest: Path) -> None:
    if not src.exists():
        raise InputError(f"{src}: no such directory")
    if not src.is_dir():
        raise InputError(f"{src}: not a directory")
    if dest.is_symlink():
        raise InputError(f"{dest}: is a symbolic link; give the folder it points to")
    if dest.exists() and not dest.is_dir():
        raise InputError(f"{dest}: exists and is not a directory")
    if dest.is_dir() and os.path.ismount(dest):
        raise InputError(f"{dest}: is a mount point; rescue into a folder inside it")
    if dest.resolve() == src.resolve() or dest.resolve().is_relative_to(src.resolve()):
        raise InputError(f"{dest}: destination must lie outside the source {src}")


def rescue(src: str | os.PathLike[str], dest: str | os.PathLike[str], *,
           into_existing: bool = False, skip_unreadable: bool = False,
           follow_links: bool = False) -> RescueResult:
    """Copy every event file of ``src`` into ``dest`` as one transaction (module docs).

    Raises :class:`InputError` for bad paths, a non-empty ``dest`` (without
    ``into_existing``), unreadable paths (without ``skip_unreadable``) and names the
    manifest cannot hold; :class:`IntegrityError` when a file already in ``dest`` differs
    from its source, when ``src`` holds a ``SHA256SUMS`` its files no longer match, or when
    the copy fails to verify. ``dest`` is unchanged whenever it raises.
    """
    src, dest = Path(src), Path(dest)
    _check_paths(src, dest)
    listing = list_tree(src, links="follow" if follow_links else "report")
    for rel in listing.files:
        check_name(src / rel, rel)
    if not listing.files and not listing.unreadable:
        raise InputError(f"{src}: no event files (events.out.tfevents.*) found")
    src_sums = parse_manifest(src / MANIFEST).entries if (src / MANIFEST).is_file() else {}
    parent = dest.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{dest}: cannot create ({exc.strerror or exc})") from None
    with atomic.locked_dir(parent):
        old = _earlier(dest, into_existing)
        atomic.clear_staged(dest, kinds=(STAGE,))
        try:
            stage = Path(tempfile.mkdtemp(prefix=f".{dest.name}.{STAGE}-", dir=parent))
        except OSError as exc:
            if is_no_space(exc):
                raise NoSpaceError(parent) from None
            raise InputError(f"{dest}: cannot write in {parent} ({exc.strerror or exc})"
                             ) from None
        try:
            result = _fill(stage, src, dest, listing, src_sums, old, skip_unreadable)
            os.chmod(stage, stat.S_IMODE(dest.stat().st_mode) if dest.is_dir()
                     else atomic.new_dir_mode())
            if dest.is_dir() and old is None:
                os.rename(stage, dest)           # replaces an empty folder in one step
                atomic.fsync_dir(parent)
            else:
                atomic.swap_dir(stage, dest)
        except BaseException as exc:
            full = atomic.no_space(exc, atomic.final_name(getattr(exc, "path", None)
                                                          or getattr(exc, "filename", None),
                                                          stage, dest))
            shutil.rmtree(stage, ignore_errors=True)
            if full is not None:
                raise full from exc
            raise
    log.debug("rescued %d files (%d unchanged, %d updated) into %s", len(result.copied),
              len(result.unchanged), len(result.updated), dest)
    return result


def _fill(stage: Path, src: Path, dest: Path, listing: Listing, src_sums: dict[str, str],
          old: Manifest | None, skip_unreadable: bool) -> RescueResult:
    """Build the new folder in ``stage`` (copies, links to the earlier rescue's files,
    ``SHA256SUMS``) and verify it."""
    unreadable = list(listing.unreadable) + list(listing.special)   # a FIFO named *.tfevents*
    entries = dict(old.entries) if old is not None else {}
    copied, unchanged, updated = [], [], []
    fresh: set[str] = set()
    total = 0
    made: set[Path] = {stage}
    for rel in listing.files:
        target, out = dest / rel, stage / rel
        if out.parent not in made:
            out.parent.mkdir(parents=True, exist_ok=True)
            made.update(out.parents)
        before = _old_size(dest, rel) if old is not None and rel in old.entries else None
        try:
            got = _copy(src / rel, out, before)
        except CannotRead as exc:
            unreadable.append(exc.what)
            continue
        total += got.size
        if rel in src_sums and src_sums[rel] != got.digest:
            raise IntegrityError(f"{src / rel}: does not match {src / MANIFEST}")
        if before is None:
            copied.append(rel)
        else:
            have = sha256_file(target)[0]
            if have != old.entries[rel]:
                raise IntegrityError(f"{target}: does not match {dest / MANIFEST}; run "
                                     "rightsize verify on it before adding to it")
            if have == got.digest:
                out.unlink()
                unchanged.append(rel)
                continue
            if got.prefix_digest != have:
                raise IntegrityError(f"{target}: exists and differs from {src / rel} (and is "
                                     "not an earlier, shorter version of it); refusing to "
                                     "overwrite")
            updated.append(rel)
        entries[rel] = got.digest
        fresh.add(rel)
    if unreadable and not skip_unreadable:
        lines = [u.message() for u in unreadable]
        more = f" and {len(lines) - 1} more paths" if len(lines) > 1 else ""
        raise InputError(f"{lines[0]}{more}; nothing rescued (--skip-unreadable rescues the "
                         "rest)", details=lines[1:])
    if not entries:
        raise InputError(f"{src}: no event file could be read")
    for rel in entries:
        if rel not in fresh:                     # the earlier rescue's file, as it is
            _link_or_copy(dest / rel, stage / rel)
    skipped = [_relative(u, src) for u in unreadable]
    comments = [c for c in (old.comments if old is not None else ())
                if not c.startswith(SKIPPED) or c[len(SKIPPED):].split(": ")[0] not in fresh]
    write_manifest(stage, entries, comments + [SKIPPED + s for s in skipped])
    checked = verify(stage)
    if not checked.ok:
        first = (checked.problems() or [u.message() for u in checked.unreadable])[0]
        raise IntegrityError(f"{dest}: the staged copy does not verify: {first}")
    checked = replace(checked, root=str(dest))
    return RescueResult(tuple(copied), tuple(unchanged), total, checked, tuple(updated),
                        listing.links, tuple(unreadable))


def _old_size(dest: Path, rel: str) -> int:
    """Size of the earlier rescue's copy of ``rel`` (an IntegrityError when it is gone)."""
    try:
        return os.stat(dest / rel).st_size
    except FileNotFoundError:
        raise IntegrityError(f"{dest / rel}: listed in {dest / MANIFEST} but missing; run "
                             "rightsize verify on it before adding to it") from None


def _relative(u: Unreadable, src: Path) -> str:
    """``<relpath>: cannot read file (reason)`` for a manifest comment (escaped, one line)."""
    rel = os.path.relpath(u.path, src)
    return Unreadable(rel, u.kind, u.reason).message()


def _link_or_copy(old: Path, new: Path) -> None:
    """Hard-link ``old`` to ``new`` (same file system); copy it where links are refused."""
    new.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(old, new, follow_symlinks=False)
    except FileNotFoundError:
        raise IntegrityError(f"{old}: listed in {old.parent / MANIFEST} but missing; run "
                             "rightsize verify on it before adding to it") from None
    except OSError:
        shutil.copy2(old, new, follow_symlinks=False)
