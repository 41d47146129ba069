"""Terminal output shared by all verbs: warnings, info, progress and JSON on stdout.

Progress is drawn only when stderr is a terminal and ``--quiet`` was not given: in logs,
pipes and CI it costs nothing and prints nothing. It is one line on stderr, redrawn in place
(``\\r``) at most every :data:`REDRAW_S` seconds and once more when the work ends, so a
per-file or per-epoch callback stays cheap. Warnings always go to stderr as one line each
(``rightsize: warning: ...``), on a clean line even while progress is showing. Nothing
here writes progress to stdout, which stays for results.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
_state: dict[str, Any] = {"quiet": False, "debug": False, "line": None}

REDRAW_S = 0.1            # seconds between redraws of a progress line
_CLEAR = "\r\x1b[K"       # back to column 0, erase to the end of the line


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


def progress_enabled() -> bool:
    """True when progress may be drawn: stderr is a terminal and not ``--quiet``."""
    if _state["quiet"]:
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):   # replaced or closed stream
        return False


def _clear_line() -> None:
    """Erase a progress line in the way of a message (it is redrawn on its next update)."""
    line = _state["line"]
    if line is not None and line.drawn:
        sys.stderr.write(_CLEAR)
        line.drawn = False


def warn(message: str) -> None:
    """Print one warning line on stderr (always, even with ``--quiet``)."""
    _clear_line()
    print(f"rightsize: warning: {message}", file=sys.stderr)


def info(message: str) -> None:
    """Print an informational line on stderr unless quiet."""
    if not _state["quiet"]:
        _clear_line()
        print(message, file=sys.stderr)


def _width() -> int:
    try:
        cols = os.get_terminal_size(sys.stderr.fileno()).columns
    except (AttributeError, OSError, ValueError):
        cols = 0
    return cols if cols > 0 else 80     # a fresh pty may report 0 columns


class Progress:
    """A one-line progress report on a terminal's stderr; a no-op everywhere else.

    ``Progress("files", total=12)`` draws ``files 3/12 <note>``; without ``total`` it draws
    ``files 3 <note>``, or just ``<what> ...`` before the first update. Use it as a context
    manager: on success the final state is drawn and the line ended, on an exception the
    line is erased so the one-line error stands alone. Instances are callable
    (``bar(note)`` advances by one), so ``bar`` can be handed to a per-item callback.
    Check :attr:`enabled` to skip work that only feeds the display.
    """

    def __init__(self, what: str, total: int | None = None) -> None:
        self.what = what
        self.total = total
        self.count = 0
        self.note = ""
        self.enabled = progress_enabled()
        self.drawn = False
        self._last = 0.0
        self._start = time.perf_counter()

    def __enter__(self) -> Progress:
        if self.enabled:
            _state["line"] = self
            self._draw()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(ok=exc_type is None)

    def __call__(self, note: object = "", *_: object) -> None:
        """Advance by one item (``note``: e.g. the file just read)."""
        self.advance(1, str(note))

    def advance(self, n: int = 1, note: str = "") -> None:
        """Count ``n`` more items done; redraw if :data:`REDRAW_S` has passed."""
        self.count += n
        self.note = note
        if self.enabled and time.perf_counter() - self._last >= REDRAW_S:
            self._draw()

    def set(self, count: int, note: str = "") -> None:
        """Set the count of items done (instead of advancing it)."""
        self.advance(count - self.count, note)

    @property
    def seconds(self) -> float:
        """Seconds since the progress started."""
        return time.perf_counter() - self._start

    def text(self) -> str:
        """The line as it would be drawn now (without the terminal control codes)."""
        if not self.count and not self.note:
            return f"{self.what} ..."
        of = f"/{self.total}" if self.total is not None else ""
        return f"{self.what} {self.count}{of}" + (f" {self.note}" if self.note else "")

    def _draw(self) -> None:
        text = self.text()
        width = _width() - 1            # never reach the last column: no wrap, no scroll
        if len(text) > width:
            text = text[: max(width - 3, 0)] + "..."
        sys.stderr.write(_CLEAR + text)
        sys.stderr.flush()
        self.drawn = True
        self._last = time.perf_counter()

    def close(self, ok: bool = True, final: str | None = None) -> None:
        """End the line: draw the final state (or ``final``) on success, erase it on failure."""
        if not self.enabled:
            return
        self.enabled = False
        if _state["line"] is self:
            _state["line"] = None
        if ok:
            if final is not None:
                self.note, self.count, self.total, self.what = "", 0, None, final
            text = final if final is not None else self.text()
            sys.stderr.write(_CLEAR + text + "\n")
        elif self.drawn:
            sys.stderr.write(_CLEAR)
        sys.stderr.flush()
        self.drawn = False


@contextlib.contextmanager
def task(what: str) -> Iterator[Progress]:
    """Show ``<what> ...`` while a block runs, then ``<what> ... done in X s`` (TTY only).

    For work that is one vectorised call (bootstraps, hashing a folder): no counter, just a
    start and an end.
    """
    bar = Progress(what)
    with bar:
        yield bar
        if bar.enabled:
            bar.close(final=f"{what} ... done in {bar.seconds:.1f} s")


def progress(items: Iterable[T], total: int | None = None, what: str = "") -> Iterator[T]:
    """Yield ``items``, drawing a one-line counter on a TTY stderr unless quiet."""
    with Progress(what, total) as bar:
        for item in items:
            yield item
            bar.advance()


def emit_json(target: str, doc: Any) -> None:
    """Write ``doc`` as indented JSON to ``target`` atomically, or to stdout when it is ``-``."""
    if target == "-":
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        sys.stdout.flush()
        return
    from rightsize.atomic import write_json

    write_json(target, doc)


def print_table(title: str, rows: list[tuple[str, str]]) -> None:
    """Print (label, value) rows with rich when importable, else as aligned plain text."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is a dependency, but stay usable without it
        width = max(len(label) for label, _ in rows)
        print(title)
        for label, value in rows:
            print(f"  {label:<{width}}  {value}")
        return
    table = Table(title=title, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for label, value in rows:
        table.add_row(label, value)
    Console().print(table)
