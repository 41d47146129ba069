"""Terminal output shared by all verbs: warnings, info and progress.

Progress is shown only on a TTY and never with ``--quiet``; warnings always go to stderr
as one line each (``rightsize: warning: ...``).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
_state = {"quiet": False, "debug": False}


def configure(quiet: bool = False, debug: bool = False) -> None:
    """Set verbosity once at the CLI edge and configure logging."""
    _state["quiet"] = quiet
    _state["debug"] = debug
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="rightsize: %(levelname)s: %(name)s: %(message)s",
    )


def quiet() -> bool:
    """True when ``--quiet`` was given."""
    return _state["quiet"]


def warn(message: str) -> None:
    """Print one warning line on stderr (always, even with ``--quiet``)."""
    print(f"rightsize: warning: {message}", file=sys.stderr)


def info(message: str) -> None:
    """Print an informational line on stderr unless quiet."""
    if not _state["quiet"]:
        print(message, file=sys.stderr)


def progress(items: Iterable[T], total: int | None = None, what: str = "") -> Iterator[T]:
    """Yield ``items``, drawing a one-line counter on a TTY stderr unless quiet."""
    show = sys.stderr.isatty() and not _state["quiet"]
    n = 0
    for item in items:
        yield item
        n += 1
        if show:
            of = f"/{total}" if total is not None else ""
            print(f"\r{what} {n}{of}", end="", file=sys.stderr, flush=True)
    if show and n:
        print(file=sys.stderr)
