"""Training logs of a probe run: a tfevents file and the per-epoch loss curve CSV.

Events (TensorBoard's format, via :class:`~rightsize.ground.event_writer.EventWriter`):
``Loss/train_step`` at every optimizer step (global step from 1, the step's real wall
time), then ``Loss/train_epoch`` and ``Loss/val_epoch`` at the step closing each epoch.
The event file is written epoch by epoch into a hidden temporary folder inside the events
directory and renamed into place when the run succeeds, replacing the event files of a
previous run there (one run per directory, so the telemetry analyzer never mixes runs).
Hidden ``.partial-*`` folders that a killed run left are deleted when the next run starts
(the readers skip hidden folders anyway). The new event file replaces the old ones in one
step: a staged copy of the directory (other entries hard-linked) is swapped in
(:func:`rightsize.atomic.staged_dir`), so a killed run leaves the old event file or the new
one, never both and never neither.

The curve CSV (``epoch,train_loss,val_loss``, epoch 1-based) is written atomically at close.
Given an :class:`~rightsize.output_set.OutputSet`, both are staged there instead, to be
renamed in with the command's other outputs (``rightsize train``: the model folder last).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from rightsize.atomic import no_space, staged_dir, write_text
from rightsize.ground.event_writer import EventWriter
from rightsize.output_set import OutputSet

EVENT_GLOB = "events.out.tfevents.*"
PARTIAL = ".partial-"


def replica_curves_csv(fits: Sequence[Any], seeds: Sequence[int]) -> str:
    """Every replica's per-epoch losses, long format ``seed,epoch,train_loss,val_loss``
    (``fits[k]`` trained from ``seeds[k]``; replica 0's rows are the ``--curve`` CSV's)."""
    lines = ["seed,epoch,train_loss,val_loss"]
    for seed, fit in zip(seeds, fits, strict=True):
        lines += [f"{seed},{e},{t!r},{v!r}"
                  for e, (t, v) in enumerate(zip(fit.train_loss, fit.val_loss, strict=True), 1)]
    return "\n".join(lines) + "\n"


class RunLog:
    """Per-epoch sink for a training run (``events_dir`` and/or ``curve_csv`` may be None).

    ``on_epoch``, if given, is called as ``on_epoch(epoch, train_loss, val_loss)`` after each
    epoch is recorded (e.g. to show progress).
    """

    def __init__(self, events_dir: str | os.PathLike[str] | None,
                 curve_csv: str | os.PathLike[str] | None, start_wall: float,
                 on_epoch: Callable[[int, float, float], None] | None = None,
                 outputs: OutputSet | None = None) -> None:
        self.on_epoch = on_epoch
        self.outputs = outputs
        self.events_dir = Path(events_dir) if events_dir is not None else None
        self.curve_csv = Path(curve_csv) if curve_csv is not None else None
        self.rows: list[tuple[int, float, float]] = []
        self.val_walls: list[float] = []      # each epoch's validation wall time (events')
        self._tmp: Path | None = None
        self._writer: EventWriter | None = None
        if self.events_dir is not None:
            self.events_dir.mkdir(parents=True, exist_ok=True)
            for leftover in self.events_dir.glob(f"{PARTIAL}*"):     # from a killed run
                shutil.rmtree(leftover, ignore_errors=True)
            self._tmp = Path(tempfile.mkdtemp(prefix=PARTIAL, dir=self.events_dir))
            with self._named():
                self._writer = EventWriter(self._tmp, wall_time=start_wall,
                                           host=socket.gethostname() or "localhost")

    @contextlib.contextmanager
    def _named(self) -> Iterator[None]:
        """A full disk met writing the event file: NoSpaceError naming its final path."""
        try:
            yield
        except Exception as exc:
            assert self.events_dir is not None
            name = self._writer.path.name if self._writer is not None else EVENT_GLOB
            full = no_space(exc, self.events_dir / name)
            if full is not None:
                raise full from exc
            raise

    def epoch(self, epoch: int, first_step: int, step_losses: list[float],
              step_walls: list[float], train_loss: float, val_loss: float,
              val_wall: float) -> None:
        """Record one epoch: its steps (``first_step`` is the global step of the first)."""
        self.rows.append((epoch, train_loss, val_loss))
        self.val_walls.append(val_wall)
        if self.on_epoch is not None:
            self.on_epoch(epoch, train_loss, val_loss)
        if self._writer is None:
            return
        w = self._writer
        with self._named():
            for i, (loss, wall) in enumerate(zip(step_losses, step_walls, strict=True)):
                w.add_scalar("Loss/train_step", loss, first_step + i, wall)
            last = first_step + len(step_losses) - 1
            w.add_scalar("Loss/train_epoch", train_loss, last,
                         step_walls[-1] if step_walls else val_wall)
            w.add_scalar("Loss/val_epoch", val_loss, last, val_wall)
            w.flush()

    def close(self, ok: bool = True) -> None:
        """Finish: on success move the event file into place and write the CSV."""
        if self._writer is not None:
            assert self.events_dir is not None and self._tmp is not None
            try:
                with self._named(), (contextlib.nullcontext() if ok
                                     else contextlib.suppress(Exception)):
                    self._writer.close()
                if ok:
                    src = self._writer.path
                    with open(src, "rb+") as fh:
                        os.fsync(fh.fileno())
                    stage = staged_dir if self.outputs is None else self.outputs.folder
                    with stage(self.events_dir) as staged:
                        _keep_others(self.events_dir, staged)
                        os.replace(src, staged / src.name)
            finally:
                with contextlib.suppress(OSError):
                    shutil.rmtree(self._tmp)
                self._writer = None
        if ok and self.curve_csv is not None:
            lines = ["epoch,train_loss,val_loss"]
            lines += [f"{e},{t!r},{v!r}" for e, t, v in self.rows]
            text = "\n".join(lines) + "\n"
            if self.outputs is None:
                write_text(self.curve_csv, text)
            else:
                self.outputs.write_text(self.curve_csv, text)

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(ok=exc_type is None)


def _keep_others(events_dir: Path, staged: Path) -> None:
    """Hard-link into ``staged`` whatever ``events_dir`` holds besides event files and
    partial folders, so swapping ``staged`` in replaces only the event files."""
    for entry in events_dir.iterdir():
        if entry.name.startswith(PARTIAL) or fnmatch.fnmatch(entry.name, EVENT_GLOB):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, staged / entry.name, symlinks=True, copy_function=os.link)
        else:
            os.link(entry, staged / entry.name, follow_symlinks=False)
