"""A command's outputs, staged beside their final names and put in place together.

A verb with several outputs (``train``: the model folder, the run's event files, the loss
curve, the metrics files; ``cohort``: the manifest, the truth file, the metrics) writes each
into a hidden sibling (``.<name>.partial-XXXXXXXX``) while it works. Only when every one is
complete does :meth:`OutputSet.commit` rename them into place, with SIGINT and SIGTERM held
back, the *anchor* (the model folder, the manifest) first out and last in: the old anchor
is moved aside, then every other output is replaced, then the new anchor is renamed in. An
anchor in place therefore always has the other outputs of its own run beside it:

* an error, a full disk, Ctrl-C or SIGTERM before the commit: nothing has moved; the staged
  names are deleted and the old set is whole;
* a rename failing inside the commit: the renames done are undone in reverse order and the
  old anchor goes back in last: the old set;
* SIGKILL between two renames of the commit (a few microseconds): no anchor in place (the
  old one sits at a hidden ``.<name>.old-*`` sibling), so nothing claims to be a set; the
  next run's staging deletes those leftovers.

A full disk or quota met while writing a staged output is a
:class:`~rightsize.errors.NoSpaceError` naming the output's final path.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rightsize.atomic import (
    PARTIAL,
    clear_staged,
    final_name,
    fsync_dir,
    new_dir_mode,
    no_interrupts,
    no_space,
)
from rightsize.errors import InputError, RightsizeError

OLD = "old"          # an output moved aside in a commit: .<name>.old-XXXXXXXX


def _error(path: Path, exc: OSError) -> RightsizeError:
    """The one-line error for ``exc`` met creating or renaming ``path``."""
    return no_space(exc, path) or InputError(f"{path}: cannot write ({exc.strerror or exc})")


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _remove(path: Path) -> None:
    """Delete a staged or moved-aside output, file or folder (missing: nothing to do)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


class OutputSet:
    """Every output of one command, staged, then renamed into place together.

    Use as a context manager: the block stages outputs (:meth:`file`, :meth:`folder`,
    :meth:`write_json` ...); leaving it normally commits them, leaving it by an exception
    (Ctrl-C included) deletes them. ``anchor`` is the output renamed last and moved aside
    first (it must be staged for the order to hold; without it the order is staging order).
    """

    def __init__(self, anchor: str | os.PathLike[str] | None = None) -> None:
        self.anchor = Path(anchor) if anchor is not None else None
        self._ready: dict[Path, Path] = {}      # final path -> its complete staged path
        self._made: list[Path] = []             # every staged path created (to discard)

    def __enter__(self) -> OutputSet:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()

    def _stage(self, target: Path, folder: bool) -> Path:
        if target in self._ready:
            raise ValueError(f"{target}: staged twice")
        prefix = f".{target.name}.{PARTIAL}-"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            clear_staged(target, (PARTIAL, OLD))           # what a killed run left
            if folder:
                staged = Path(tempfile.mkdtemp(prefix=prefix, dir=target.parent))
                os.chmod(staged, new_dir_mode())
            else:
                fd, name = tempfile.mkstemp(prefix=prefix, dir=target.parent)
                os.close(fd)
                staged = Path(name)
                os.chmod(staged, 0o666 & new_dir_mode())   # as a new file gets
        except OSError as exc:
            raise _error(target, exc) from None
        self._made.append(staged)
        return staged

    @contextlib.contextmanager
    def file(self, target: str | os.PathLike[str]) -> Iterator[Path]:
        """Yield the staged path of file ``target`` to write; when the block ends, the file
        is synced and waits for the commit. A full disk is a NoSpaceError naming ``target``."""
        final = Path(target)
        staged = self._stage(final, folder=False)
        try:
            yield staged
            with open(staged, "rb+") as fh:
                os.fsync(fh.fileno())
        except BaseException as exc:
            full = no_space(exc, final)
            if full is not None:
                raise full from exc
            raise
        self._ready[final] = staged

    @contextlib.contextmanager
    def folder(self, target: str | os.PathLike[str]) -> Iterator[Path]:
        """Yield an empty staged folder for folder ``target``; it replaces ``target`` whole at
        the commit. A full disk is a NoSpaceError naming the file in ``target``'s terms."""
        final = Path(target)
        staged = self._stage(final, folder=True)
        try:
            yield staged
        except BaseException as exc:
            name = getattr(exc, "path", None) or getattr(exc, "filename", None)
            full = no_space(exc, final_name(name if isinstance(name, str) else None,
                                            staged, final))
            if full is not None:
                raise full from exc
            raise
        self._ready[final] = staged

    def write_bytes(self, target: str | os.PathLike[str], data: bytes) -> None:
        """Stage file ``target`` holding ``data``."""
        with self.file(target) as staged:
            staged.write_bytes(data)

    def write_text(self, target: str | os.PathLike[str], text: str) -> None:
        """Stage file ``target`` holding UTF-8 ``text``."""
        self.write_bytes(target, text.encode("utf-8"))

    def write_json(self, target: str | os.PathLike[str], doc: Any) -> None:
        """Stage ``doc`` as indented JSON (trailing newline), as ``atomic.write_json`` writes."""
        self.write_text(target, json.dumps(doc, indent=2, sort_keys=False) + "\n")

    def staged(self, target: str | os.PathLike[str]) -> Path:
        """Where complete output ``target`` sits until the commit."""
        return self._ready[Path(target)]

    def discard(self) -> None:
        """Delete every staged output; nothing in place changes."""
        for path in self._made:
            _remove(path)
        self._made.clear()
        self._ready.clear()

    def commit(self) -> None:
        """Rename every staged output into place: the anchor moved aside first, put in last."""
        anchor = self.anchor if self.anchor in self._ready else None
        order = [t for t in self._ready if t != anchor] + ([anchor] if anchor else [])
        done: list[tuple[Path, Path | None]] = []       # (final path, its old one aside)
        old_anchor = None
        with no_interrupts():
            target = anchor or (order[0] if order else None)
            try:
                if anchor is not None and _exists(anchor):
                    old_anchor = self._aside(anchor)                    # first out
                for target in order:
                    old = old_anchor if target == anchor else \
                        self._aside(target) if _exists(target) else None
                    try:
                        os.rename(self._ready[target], target)          # anchor: last in
                    except OSError:
                        if old is not None and target != anchor:
                            os.rename(old, target)
                        raise
                    done.append((target, old))
            except OSError as exc:
                self._undo(done, anchor, old_anchor)
                raise _error(target or Path("."), exc) from None
        for parent in dict.fromkeys(t.parent for t, _ in done):
            fsync_dir(parent)
        for _, old in done:
            if old is not None:
                _remove(old)
        self._made.clear()
        self._ready.clear()

    def _aside(self, target: Path) -> Path:
        """Rename ``target`` to a hidden ``.<name>.old-*`` sibling; return that name."""
        old = target.with_name(f".{target.name}.{OLD}-{secrets.token_hex(4)}")
        os.rename(target, old)
        return old

    def _undo(self, done: list[tuple[Path, Path | None]], anchor: Path | None,
              old_anchor: Path | None) -> None:
        """Put back what a failed commit moved, in reverse order, the old anchor last."""
        with contextlib.suppress(OSError):
            for target, old in reversed(done):
                os.rename(target, self._ready[target])
                if old is not None and target != anchor:
                    os.rename(old, target)
            if old_anchor is not None:
                os.rename(old_anchor, anchor)  # type: ignore[arg-type]
