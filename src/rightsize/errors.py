"""Named exceptions for bad input and their exit codes.

Every error a user can cause is a :class:`RightsizeError` subclass whose message is a
single line naming the file, key or row at fault. The CLI prints it as
``rightsize: error: <message>`` and exits with the class's ``exit_code``. ``details``, when
given, are the other lines a user needs (every unreadable path, every damaged record): the
CLI prints each as a warning before the error line.
"""

from __future__ import annotations

import errno
import os


class RightsizeError(Exception):
    """Base class: bad input or a failed check. Message is one line."""

    exit_code = 2

    def __init__(self, message: str, details: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.details = tuple(details)


class InputError(RightsizeError):
    """A file, directory, flag or params value is missing or malformed."""

    exit_code = 2


class NoSpaceError(InputError):
    """The disk or the user's quota filled up while writing ``path`` (ENOSPC, EDQUOT): exit 2,
    a problem of the machine, not a bug."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(f"no space left writing {path}")
        self.path = str(path)


NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# strerror texts: libraries that wrap an OSError in their own exception keep only the text
_NO_SPACE_TEXTS = tuple(os.strerror(e) for e in sorted(NO_SPACE_ERRNOS))


def is_no_space(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception it was raised from) is a full disk or quota.

    An ``OSError`` with errno ENOSPC or EDQUOT, or an exception whose text carries the
    system's message for one of them (pyarrow's and torch's own exception types do).
    """
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, OSError) and cur.errno in NO_SPACE_ERRNOS:
            return True
        if any(text in str(cur) for text in _NO_SPACE_TEXTS):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


class ParamsError(InputError):
    """A params.yaml key is missing, unknown or out of range (message names the key)."""


class IntegrityError(RightsizeError):
    """A checksum, CRC or manifest check failed (``verify``, ``--strict``)."""

    exit_code = 3


class DataError(RightsizeError):
    """A data file has the wrong schema, shape or values (message names the column/row)."""

    exit_code = 4


class Terminated(BaseException):
    """SIGTERM arrived (a scheduler or ``timeout`` stopping the process): unwind like Ctrl-C,
    so temporary files are removed, then exit 143."""


class MachineBusy(RightsizeError):
    """The machine stayed loaded while a quiet one was required (``--require-quiet``)."""

    exit_code = 5
