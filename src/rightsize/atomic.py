"""Atomic writes: a temporary sibling, fsync, then a rename over the target.

A reader (or a killed ``dvc repro``) never sees a half-written file: either the old
content or the new one exists under the final name. Folders get the same treatment:
:func:`staged_dir` fills a hidden sibling and :func:`swap_dir` exchanges it with the
target in one ``renameat2(RENAME_EXCHANGE)`` where the kernel has it. Failing to create,
rename or replace a path is an :class:`~rightsize.errors.InputError` naming it (a directory
where a file goes, a folder without write permission), never an internal error; a full disk
or quota met anywhere in an atomic write (by us, pyarrow or torch) is a
:class:`~rightsize.errors.NoSpaceError` naming the final path: exit 2, "no space left
writing <path>".
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import logging
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rightsize.errors import InputError, NoSpaceError, RightsizeError, is_no_space

log = logging.getLogger(__name__)
PARTIAL = "partial"     # staged folders are named .<target>.partial-XXXXXXXX


def _cannot(path: Path, exc: OSError) -> InputError:
    """The one-line error for an ``OSError`` met creating or renaming ``path``."""
    if isinstance(exc, IsADirectoryError):
        return InputError(f"{path}: is a directory")
    if is_no_space(exc):
        return NoSpaceError(path)
    return InputError(f"{path}: cannot write ({exc.strerror or exc})")


def _full(folder: Path) -> bool:
    """True when the file system holding ``folder`` has no block left for us."""
    try:
        return os.statvfs(folder).f_bavail == 0
    except OSError:
        return False


def no_space(exc: BaseException, path: str | os.PathLike[str]) -> NoSpaceError | None:
    """The :class:`NoSpaceError` for ``path`` when ``exc``, raised while writing it, came from
    a full disk or quota; else None.

    Besides ENOSPC/EDQUOT (:func:`~rightsize.errors.is_no_space`), a ``RuntimeError`` raised
    while the file system is full counts: torch's zip writer reports a failed write as
    ``RuntimeError("... file write failed")`` without the errno.
    """
    if isinstance(exc, NoSpaceError):
        return NoSpaceError(path)
    if isinstance(exc, RightsizeError) or not isinstance(exc, Exception):
        return None
    if is_no_space(exc) or (isinstance(exc, RuntimeError) and _full(Path(path).parent)):
        return NoSpaceError(path)
    return None


def _written(exc: BaseException) -> str | None:
    """The file ``exc`` names (a :class:`NoSpaceError`'s path or an ``OSError``'s file)."""
    name = getattr(exc, "path", None) or getattr(exc, "filename", None)
    return name if isinstance(name, str) else None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def new_dir_mode() -> int:
    """The permission bits ``mkdir`` gives a new directory under the current umask."""
    return 0o777 & ~_umask()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` if the block succeeds.

    The temporary file is removed if the block raises, so nothing half-written remains.
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                        dir=target.parent)
    except OSError as exc:
        raise _cannot(target, exc) from None
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the final file normal permissions
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        try:
            os.replace(tmp, target)
        except OSError as exc:
            raise _cannot(target, exc) from None
    except BaseException as exc:
        full = no_space(exc, target)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        if full is not None:
            raise full from exc
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Atomically write ``data`` to ``path``."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Atomically write UTF-8 ``text`` to ``path``."""
    write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON (trailing newline) to ``path``."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def check_writable(*paths: str | os.PathLike[str] | None, folder: bool = False) -> None:
    """Fail early, before any work, when an output path cannot be written.

    ``None`` and ``"-"`` (stdout) are skipped. A file output that is an existing directory,
    and an output whose nearest existing ancestor is not a writable directory, are
    :class:`~rightsize.errors.InputError`\\ s naming the path; with ``folder`` the outputs
    are directories (they may exist).
    """
    for given in paths:
        if given is None or str(given) == "-":
            continue
        path = Path(given)
        if not folder and path.is_dir():
            raise InputError(f"{path}: is a directory (expected a file to write)")
        if folder and path.exists() and not path.is_dir():
            raise InputError(f"{path}: exists and is not a directory")
        if folder and path.is_dir() and not os.access(path, os.W_OK | os.X_OK):
            raise InputError(f"{path}: cannot write in this folder (permission denied)")
        parent = path.absolute().parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise InputError(f"{path}: cannot write: {parent} is not a directory")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise InputError(f"{path}: cannot write in {parent} (permission denied)")


@contextlib.contextmanager
def no_interrupts() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back for a few renames that belong together (delivered after)."""
    held = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (AttributeError, OSError, ValueError):     # no pthread_sigmask: best effort
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make the entries of directory ``path`` durable (no-op where directories cannot sync)."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """``renameat2(a, b, RENAME_EXCHANGE)``: swap two paths in one step; False if unsupported."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise _cannot(b, OSError(err, os.strerror(err)))


def swap_dir(staged: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Put folder ``staged`` in place of ``target`` (absent, or a folder that is replaced).

    One atomic exchange where the kernel and file system offer it (Linux ``renameat2``); an
    old ``target`` then sits at ``staged`` and is deleted. Elsewhere two renames with SIGINT
    and SIGTERM held back between them (only SIGKILL in between leaves ``target`` absent and
    the old folder at a hidden ``.<name>.old-*`` sibling).
    """
    staged, target = Path(staged), Path(target)
    try:
        if not target.exists() and not target.is_symlink():
            os.rename(staged, target)
        elif _exchange(staged, target):
            shutil.rmtree(staged, ignore_errors=True)      # the old folder, now at staged
        else:
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            with no_interrupts():
                os.replace(target, old)
                os.rename(staged, target)
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        raise _cannot(target, exc) from None
    fsync_dir(target.parent)


def clear_staged(target: str | os.PathLike[str], kinds: tuple[str, ...] = (PARTIAL, "old")
                 ) -> list[Path]:
    """Delete the hidden ``.<target>.<kind>-*`` folders a killed :func:`staged_dir` (or
    :func:`swap_dir`) of ``target`` left beside it, and such files (staged by
    :class:`rightsize.output_set.OutputSet`); return them."""
    target = Path(target)
    if not target.parent.is_dir():
        return []
    gone = []
    for kind in kinds:
        for leftover in target.parent.glob(f".{target.name}.{kind}-*"):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
                gone.append(leftover)
            elif leftover.is_file() and not leftover.is_symlink():
                leftover.unlink(missing_ok=True)
                gone.append(leftover)
    return gone


def final_name(path: str | os.PathLike[str] | None, staged: Path, target: Path) -> Path:
    """``path`` (a file being written in folder ``staged``) as it will be named once
    ``staged`` becomes ``target``; ``target`` itself when ``path`` is not in ``staged``."""
    if isinstance(path, str | os.PathLike):
        with contextlib.suppress(ValueError):
            return Path(target) / Path(path).relative_to(staged)
    return Path(target)


@contextlib.contextmanager
def staged_dir(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty hidden sibling of folder ``target``; swap it in if the block succeeds.

    Leftovers of an earlier killed run are cleared first; on any exception (Ctrl-C included)
    the staged folder is deleted and ``target`` is untouched. The folder gets the
    permissions a new directory would have.
    """
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        clear_staged(target)
        staged = Path(tempfile.mkdtemp(prefix=f".{target.name}.{PARTIAL}-", dir=target.parent))
    except OSError as exc:
        raise _cannot(target, exc) from None
    try:
        os.chmod(staged, new_dir_mode())
        yield staged
        swap_dir(staged, target)
    except BaseException as exc:
        full = no_space(exc, final_name(_written(exc), staged, target))
        shutil.rmtree(staged, ignore_errors=True)
        if full is not None:
            raise full from exc
        raise


@contextlib.contextmanager
def locked_dir(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on directory ``path`` (nothing is written to it).

    Where the file system has no locks (some network mounts) this logs a warning and goes
    on unlocked.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as exc:
        raise InputError(f"{path}: cannot open directory ({exc.strerror or exc})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            log.warning("%s: cannot lock (%s); going on without the lock", path, exc.strerror)
        yield
    finally:
        os.close(fd)
