"""SHA-256 of a file, read in chunks through :func:`~rightsize.ground.regular_file.open_regular`,
and the name of the ``sha256sum``-format manifest a finished folder carries."""

from __future__ import annotations

import hashlib
import os

from rightsize.ground.regular_file import open_regular

MANIFEST = "SHA256SUMS"
CHUNK = 1 << 20


def sha256_file(path: str | os.PathLike[str]) -> tuple[str, int]:
    """Hex SHA-256 and byte count of ``path``, read in chunks (an ``OSError`` when it is not
    a regular file: a FIFO is never opened)."""
    h = hashlib.sha256()
    n = 0
    with open_regular(path) as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            n += len(chunk)
    return h.hexdigest(), n
