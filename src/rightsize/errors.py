"""Named exceptions for bad input and their exit codes.

Every error a user can cause is a :class:`RightsizeError` subclass whose message is a
single line naming the file, key or row at fault. The CLI prints it as
``rightsize: error: <message>`` and exits with the class's ``exit_code``.
"""

from __future__ import annotations


class RightsizeError(Exception):
    """Base class: bad input or a failed check. Message is one line."""

    exit_code = 2


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
