"""Open a path for reading only if it is a regular file: opening a FIFO blocks until something
writes to it, so every reader opens files through :func:`open_regular`."""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


def not_regular(mode: int) -> str | None:
    """Why a file of ``st_mode`` ``mode`` cannot be read as one (``"not a regular file: a
    FIFO"``), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "special")
    return f"not a regular file: {kind}"


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file (links followed).

    Anything else raises ``OSError`` whose ``strerror`` says what it is, and a FIFO is never
    opened: the ``stat`` comes first, and a FIFO swapped in after it is opened non-blocking,
    seen by ``fstat`` and closed unread.
    """
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    why = not_regular(mode)
    if why is None:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            why = not_regular(os.fstat(fd).st_mode)
            if why is None:
                os.set_blocking(fd, True)
                return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise OSError(errno.EINVAL, why, str(path))
