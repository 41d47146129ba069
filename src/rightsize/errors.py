"""Named exceptions for bad input and their exit codes.

Every error a user can cause is a :class:`RightsizeError` subclass whose message is a
single line naming the file, key or row at fault. The CLI prints it as
``rightsize: error: <message>`` and exits with the class's ``exit_code``. ``details``, when
given, are the other lines a user needs (every unreadable path, every damaged record): the
CLI prints each as a warning before the error line.
"""

from __future__ import annotations


class RightsizeError(Exception):
    """Base class: bad input or a failed check. Message is one line."""

    exit_code = 2

    def __init__(self, message: str, details: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.details = tuple(details)


class InputError(RightsizeError):
    """A file, directory, flag or params value is missing or malformed."""

    exit_code = 2


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
