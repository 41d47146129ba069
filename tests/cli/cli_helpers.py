"""Helpers for the CLI tests: run ``rightsize`` under a real pseudo-terminal or plain pipes.

``run_cli(args, tty=...)`` runs the console entry point in a subprocess. With ``tty=True`` its
stderr is the slave side of a fresh pty (so ``isatty()`` is true, as in a terminal) and
stdout is a file; with ``tty=False`` both are pipes, as in a log or CI. ``tty_stderr``
points this process's ``sys.stderr`` at a real pty for in-process runs of the torch verbs
(one torch import for the whole folder). Inputs are tiny: the demo run and a 120-subject
cohort with 16/12-dim embeddings.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rightsize.probe_names import PROBES

ENTRY = [sys.executable, "-c", "import sys; from rightsize.cli import main; sys.exit(main())"]

# Text that only progress output contains (never results, warnings, errors or info lines).
PROGRESS_MARKERS = ("\r", "\x1b[", "files read", "row groups written", "train_loss",
                    "resamples", "done in")

SMALL_COHORT = {
    "source": "synthetic", "seed": 0, "n_subjects": 120,
    "splits": {"train": 80, "val": 16, "test": 24},
    "echo_dim": 16, "ecg_dim": 12, "max_clips": 3, "row_group_size": 32,
}
SMALL_TRAIN = {
    "probes": list(PROBES), "seed": 0, "threads": 1, "device": "cpu",
    "batch_size": 32, "lr": 0.003, "pca_rank": 8,
    "ecg": {"alphas": [10.0, 1000.0], "Cs": [1.0]},
    "echo": {"epochs": 2}, "concat": {"epochs": 2, "hidden": 8},
    "fused": {"epochs": 2, "fusion_dim": 8, "heads": 2, "hidden": 8},
}
SMALL_EVALUATE = {"seed": 0, "n_bootstrap": 100, "n_bootstrap_missing": 50, "ci": 0.9}


@dataclass
class Result:
    """Exit code, stdout and stderr of one ``rightsize`` run."""

    rc: int
    out: str
    err: str


def set_winsize(fd: int, rows: int = 24, cols: int = 160) -> None:
    """Give a pty a window size (a fresh one reports 0 x 0)."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _drain(master: int, proc: subprocess.Popen, timeout: float) -> bytes:
    """Read the pty master until every slave is closed (EIO) or the child is gone."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            proc.kill()
            raise TimeoutError("rightsize did not finish in time")
        ready, _, _ = select.select([master], [], [], min(left, 0.5))
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            data = os.read(master, 65536)
        except OSError:                      # EIO: the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


def run_cli(args: list[str], *, tty: bool, cwd: Path | None = None,
            timeout: float = 180.0) -> Result:
    """Run ``rightsize ARGS`` in a subprocess; stderr is a pty when ``tty`` else a pipe."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    with tempfile.TemporaryFile() as out:
        if tty:
            master, slave = pty.openpty()
            set_winsize(slave)
            try:
                proc = subprocess.Popen([*ENTRY, *args], stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=slave, cwd=cwd, env=env)
            finally:
                os.close(slave)
            try:
                err = _drain(master, proc, timeout)
            finally:
                os.close(master)
            rc = proc.wait(timeout)
        else:
            done = subprocess.run([*ENTRY, *args], stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.PIPE, cwd=cwd, env=env, timeout=timeout)
            rc, err = done.returncode, done.stderr
        out.seek(0)
        return Result(rc, out.read().decode(), err.decode(errors="replace"))


@dataclass
class TtyCapture:
    """What was written to the pty while ``tty_stderr`` was active (filled at exit)."""

    text: str = ""
    chunks: list[bytes] = field(default_factory=list)


@contextlib.contextmanager
def tty_stderr_cm(monkeypatch: pytest.MonkeyPatch, cols: int = 160) -> Iterator[TtyCapture]:
    """Point ``sys.stderr`` at the slave side of a fresh pty; collect what reaches it."""
    master, slave = pty.openpty()
    set_winsize(slave, cols=cols)
    cap = TtyCapture()

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            cap.chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    stream = open(slave, "w", encoding="utf-8", buffering=1)  # noqa: SIM115 - closed below
    assert stream.isatty()
    original = sys.stderr
    monkeypatch.setattr(sys, "stderr", stream)
    try:
        yield cap
    finally:
        monkeypatch.setattr(sys, "stderr", original)
        stream.close()
        reader.join(10)
        os.close(master)
        cap.text = b"".join(cap.chunks).decode(errors="replace")


def no_progress(text: str) -> bool:
    """True when ``text`` holds none of the progress markers.

    A pty turns each ``\n`` into ``\r\n``; only a ``\r`` of our own counts as progress.
    """
    text = text.replace("\r\n", "\n")
    return not any(m in text for m in PROGRESS_MARKERS)
