"""Terminal output shared by all verbs: warnings, info, progress and JSON on stdout.

Progress goes to stderr only, never with ``--quiet``. On a terminal it is one line, redrawn
in place (``\\r``) at most every :data:`REDRAW_S` seconds and once more when the work ends.
Anywhere else (``dvc repro``'s output, a Slurm log, a pipe) it is one plain line every
``RIGHTSIZE_PROGRESS_S`` seconds (default :data:`LOG_EVERY_S`; 0: none) and a final line,
both only for work that lasts that long: short work prints nothing. A line carries the
count, and where the caller names a unit the rate and the time left, e.g. ``extract:
96/200 records, 7.9 records/s, ETA 13 s``. Either way a per-item callback stays cheap.
Warnings always go to stderr as one line each (``rightsize: warning: ...``), on a clean
line even while progress is showing. Nothing here writes progress to stdout, which stays
for results.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
_state: dict[str, Any] = {"quiet": False, "debug": False, "line": None}

REDRAW_S = 0.1            # seconds between redraws of a progress line
LOG_EVERY_S = 30.0        # seconds between plain progress lines off a terminal (default)
LOG_EVERY_ENV = "RIGHTSIZE_PROGRESS_S"
_CLEAR = "\r\x1b[K"       # back to column 0, erase to the end of the line


def configure(quiet: bool = False, debug: bool = False) -> None:
    """Set verbosity once at the CLI edge and configure logging; a warning naming
    ``RIGHTSIZE_PROGRESS_S`` when it is not seconds >= 0 (the default is used: a typo in a
    display setting does not stop the work)."""
    _state["quiet"] = quiet
    bad = _log_every_problem()
    if bad:
        warn(bad)
    _state["debug"] = debug
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="rightsize: %(levelname)s: %(name)s: %(message)s",
    )


def quiet() -> bool:
    """True when ``--quiet`` was given."""
    return _state["quiet"]


def _log_every_value() -> float | None:
    """``RIGHTSIZE_PROGRESS_S`` as seconds; :data:`LOG_EVERY_S` when unset; None when bad."""
    raw = os.environ.get(LOG_EVERY_ENV, "").strip()
    if not raw:
        return LOG_EVERY_S
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _log_every_problem() -> str:
    """The warning for a bad ``RIGHTSIZE_PROGRESS_S``, or ""."""
    if _log_every_value() is not None:
        return ""
    raw = os.environ.get(LOG_EVERY_ENV, "").strip()
    return (f"{LOG_EVERY_ENV}={raw!r}: not a number of seconds >= 0 (the time between "
            f"progress lines in a log; 0: none); using {LOG_EVERY_S:g} s")


def log_every_s() -> float:
    """Seconds between plain progress lines off a terminal: ``RIGHTSIZE_PROGRESS_S``, else
    (unset or bad) :data:`LOG_EVERY_S`; 0 turns them off."""
    value = _log_every_value()
    return LOG_EVERY_S if value is None else value


def progress_mode() -> str | None:
    """``"tty"`` (stderr is a terminal), ``"log"`` (it is not, and plain progress lines are
    on), or None (``--quiet``, or ``RIGHTSIZE_PROGRESS_S=0`` off a terminal)."""
    if _state["quiet"]:
        return None
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):   # replaced or closed stream
        tty = False
    if tty:
        return "tty"
    return "log" if log_every_s() > 0 else None


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


def _digits(x: float) -> str:
    """fmt.compact's running-text digits from 1 up (``1,234``, ``16.7``, ``8``), one decimal
    below (no exponent); kept here so that every verb need not depend on fmt.py."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}" if abs(x) >= 1 else f"{x:.1f}"


def seconds_text(seconds: float) -> str:
    """A duration in fmt.duration_range's units: ``0.4 s``, ``4.23 s``, ``84 s``, ``25 min``,
    ``28.1 h`` (seconds under 2 minutes, minutes under 2 hours)."""
    if seconds >= 7200:
        return f"{_digits(seconds / 3600)} h"
    if seconds >= 120:
        return f"{_digits(seconds / 60)} min"
    return f"{_digits(seconds)} s"


def rate_text(per_s: float, unit: str) -> str:
    """``7.94 records/s`` (``unit`` plural); below one a second, the time per item instead:
    ``3.1 s/epoch``."""
    if per_s >= 1:
        return f"{_digits(per_s)} {unit}/s"
    one = unit[:-1] if unit.endswith("s") else unit
    return f"{seconds_text(1 / per_s)}/{one}" if per_s > 0 else f"0 {unit}/s"


class Progress:
    """Progress of one piece of work on stderr: a redrawn line on a terminal, a plain line
    every :func:`log_every_s` seconds in a log, nothing with ``--quiet``.

    ``Progress("files read", total=12)`` shows ``files read 3/12 <note>``; without ``total``
    ``files read 3 <note>``, or just ``<what> ...`` before the first update. With ``unit``
    (plural) the count is followed by it and the line ends with the rate and, with a total,
    the time left: ``extract: 96/200 records, 7.9 records/s, ETA 13 s``, and once the total
    is reached the time taken (``extract: 200/200 records in 26 s``); ``rate_unit`` names the
    rate's unit alone (``fused: epoch 3/10 <note>, 2.1 s/epoch, ETA 15 s``). The rate is
    measured from the first update that counted something, so a start-up before the first
    item does not slow it (and there is none until a second update counted more).

    Use it as a context manager: on success the final state is shown and the line ended, on
    an exception a terminal's line is erased so the one-line error stands alone. Instances
    are callable (``bar(note)`` advances by one), so ``bar`` can be handed to a per-item
    callback. Check :attr:`enabled` to skip work that only feeds it.
    """

    def __init__(self, what: str, total: int | None = None, unit: str | None = None,
                 rate_unit: str | None = None) -> None:
        self.what = what
        self.total = total
        self.unit = unit
        self.rate_unit = rate_unit or unit
        self.count = 0
        self.note = ""
        self.mode = progress_mode()
        self.enabled = self.mode is not None
        self.every = REDRAW_S if self.mode == "tty" else log_every_s()
        self.drawn = False
        self.lines = 0                  # plain lines printed (log mode)
        self._shown = -1                # the count on the last plain line
        self._start = time.perf_counter()
        self._last = 0.0 if self.mode == "tty" else self._start
        self._first: tuple[float, int] | None = None     # (time, count) of the first count

    def __enter__(self) -> Progress:
        if self.mode == "tty":
            _state["line"] = self
            self._draw()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(ok=exc_type is None)

    def __call__(self, note: object = "", *_: object) -> None:
        """Advance by one item (``note``: e.g. the file just read)."""
        self.advance(1, str(note))

    def advance(self, n: int = 1, note: str = "") -> None:
        """Count ``n`` more items done; show the line if its interval has passed."""
        self.count += n
        self.note = note
        if not self.enabled:
            return
        now = time.perf_counter()
        if self._first is None and self.count > 0:
            self._first = (now, self.count)
        if now - self._last >= self.every and not self._finished_shown():
            self._draw()

    def _finished_shown(self) -> bool:
        """True in a log once the line of the total reached is out: the work's end is one
        line, however often the count is set to the total again."""
        return (self.mode == "log" and self.total is not None and self.count >= self.total
                and self._shown == self.count)

    def set(self, count: int, note: str = "") -> None:
        """Set the count of items done (instead of advancing it)."""
        self.advance(count - self.count, note)

    @property
    def seconds(self) -> float:
        """Seconds since the progress started."""
        return time.perf_counter() - self._start

    def rate(self) -> float | None:
        """Items per second since the first update that counted something; None until a
        later update counted more (a start-up before the first item never slows it)."""
        if self._first is None:
            return None
        now = time.perf_counter()
        t0, c0 = self._first
        return (self.count - c0) / (now - t0) if self.count > c0 and now > t0 else None

    def eta_s(self) -> float | None:
        """Seconds left at the current rate; None without a total or a rate."""
        rate = self.rate()
        if self.total is None or not rate:
            return None
        return max(self.total - self.count, 0) / rate

    def _stats(self) -> str:
        """``, 7.9 records/s, ETA 13 s`` while under way (with a unit and a rate), `` in 25 s``
        once the total is reached."""
        if self.rate_unit is None:
            return ""
        if self.total is not None and self.count >= self.total:
            return f" in {seconds_text(self.seconds)}"
        rate = self.rate()
        if rate is None:
            return ""
        eta = self.eta_s()
        left = f", ETA {seconds_text(eta)}" if eta is not None else ""
        return f", {rate_text(rate, self.rate_unit)}{left}"

    def _head(self) -> str:
        of = f"/{self.total}" if self.total is not None else ""
        return f"{self.what} {self.count}{of}" + (f" {self.unit}" if self.unit else "")

    def text(self, width: int | None = None) -> str:
        """The line as it would be shown now (without terminal control codes); with
        ``width``, the note is cut so the line fits (the count, rate and ETA stay)."""
        if not self.count and not self.note:
            return f"{self.what} ..."
        head, stats, note = self._head(), self._stats(), f" {self.note}" if self.note else ""
        line = head + note + stats
        if width is None or len(line) <= width:
            return line
        room = width - len(head) - len(stats)
        if room >= 8 and note:
            return head + note[: room - 3] + "..." + stats
        return line[: max(width - 3, 0)] + "..."

    def _draw(self) -> None:
        if self.mode == "log":
            print(self.text(), file=sys.stderr, flush=True)
            self.lines += 1
            self._shown = self.count
            self._last = time.perf_counter()
            return
        text = self.text(_width() - 1)  # never reach the last column: no wrap, no scroll
        sys.stderr.write(_CLEAR + text)
        sys.stderr.flush()
        self.drawn = True
        self._last = time.perf_counter()

    def close(self, ok: bool = True, final: str | None = None) -> None:
        """End the progress: show the final state (or ``final``) on success, erase a
        terminal's line on failure. In a log the final line comes only after work that
        lasted at least the interval between lines."""
        if not self.enabled:
            return
        self.enabled = False
        if self.mode == "log":
            if final is None and self._shown == self.count:
                return                  # the last line showed this state already
            if ok and (self.lines or self.seconds >= self.every):
                print(final if final is not None else self.text(), file=sys.stderr,
                      flush=True)
            return
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
    """Show ``<what> ...`` while a block runs, then ``<what> ... done in X s`` (on a terminal;
    in a log only the final line, and only after a block that lasted the interval between
    lines).

    For work that is one vectorised call (bootstraps, hashing a folder): no counter, just a
    start and an end.
    """
    bar = Progress(what)
    with bar:
        yield bar
        if bar.enabled:
            bar.close(final=f"{what} ... done in {bar.seconds:.1f} s")


def progress(items: Iterable[T], total: int | None = None, what: str = "") -> Iterator[T]:
    """Yield ``items``, showing a counter on stderr (see :class:`Progress`) unless quiet."""
    with Progress(what, total) as bar:
        for item in items:
            yield item
            bar.advance()


def emit_json(target: str, doc: Any, outputs: Any = None) -> None:
    """Write ``doc`` as indented JSON to ``target`` atomically, or to stdout when it is ``-``;
    with ``outputs`` (a :class:`rightsize.output_set.OutputSet`) staged there instead, to be
    put in place with the command's other outputs."""
    if target == "-":
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
        sys.stdout.flush()
        return
    if outputs is not None:
        outputs.write_json(target, doc)
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
