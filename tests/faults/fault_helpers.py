"""Helpers for the fault-injection suite: run ``rightsize`` as a subprocess (optionally with file
permissions enforced, optionally killed at a chosen point), write small event files, and
snapshot folders to compare them before and after a fault.

Kill points come from ``killer.py``: a run in ``count`` mode lists every file-system write
under a root (audit events ``open`` for writing, ``os.rename``, ``os.remove``, ``os.mkdir``,
``shutil.rmtree`` ...); a run in ``kill`` or ``int`` mode sends itself SIGKILL or SIGINT at
the N-th of them. SIGKILL lands before write N happens, SIGINT is raised in Python right
after it. Points are drawn with a seeded ``random.Random``, so every run of the suite
exercises the same ones.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENTRY = [sys.executable, "-c", "from rightsize.cli import console_main; console_main()"]
KILLER = [sys.executable, str(HERE / "killer.py")]
TIMEOUT = 180.0


@dataclass
class Result:
    """Exit code, stdout and stderr of one ``rightsize`` run."""

    rc: int
    out: str
    err: str

    def error_line(self) -> str:
        """The one ``rightsize: error: ...`` line (asserts there is exactly one)."""
        lines = [ln for ln in self.err.splitlines() if ln.startswith("rightsize: error: ")]
        assert len(lines) == 1, self.err
        assert "Traceback" not in self.err, self.err
        return lines[0]


def _env(home: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if home is not None:
        env["HOME"] = str(home)
    return env


def rightsize(args: list[str], *, user: list[str] | None = None, cwd: Path | None = None,
              home: Path | None = None, timeout: float = TIMEOUT) -> Result:
    """Run ``rightsize ARGS`` in a subprocess (prefixed by ``user``, e.g. setpriv); a run
    past ``timeout`` seconds is killed and fails the test (``subprocess.TimeoutExpired``)."""
    done = subprocess.run([*(user or []), *ENTRY, *map(str, args)], cwd=cwd,
                          env=_env(home), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    return Result(done.returncode, done.stdout, done.stderr)


def writes(root: Path, args: list[str], log: Path, cwd: Path | None = None) -> list[str]:
    """Run ``rightsize ARGS`` to the end, listing its file-system writes under ``root``."""
    done = subprocess.run([*KILLER, str(root), "count", "0", str(log), "--", *map(str, args)],
                          cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines()


def killed(root: Path, args: list[str], mode: str, at: int, cwd: Path | None = None) -> Result:
    """Run ``rightsize ARGS``, sending SIGKILL (``mode="kill"``) or SIGINT (``"int"``) to it
    at its ``at``-th write under ``root``."""
    done = subprocess.run([*KILLER, str(root), mode, str(at), os.devnull, "--",
                           *map(str, args)], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                          preexec_fn=_default_sigint)
    return Result(done.returncode, done.stdout, done.stderr)


def _default_sigint() -> None:
    """SIGINT back to its default in the child: a test suite started as a background job of a
    non-interactive shell inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt, so an interrupt test would see its command run to the end."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def points(n_writes: int, k: int, seed: int) -> list[int]:
    """``k`` distinct write indices in ``1 .. n_writes``, drawn with ``seed``."""
    return sorted(random.Random(seed).sample(range(1, n_writes + 1), min(k, n_writes)))


def extract_corpus(root: Path, records: int = 4) -> Path:
    """``root/params.yaml`` (the repository's, its ``extract`` block on a small encoder) and a
    ``records``-record synthetic corpus under ``root/corpus`` (``rightsize ecg-demo``)."""
    import yaml

    params = yaml.safe_load((HERE.parents[1] / "params.yaml").read_text())
    params["ecg_demo"].update(records=records, seconds=6.0)
    params["extract"].update(records="corpus/record_list.csv", root="corpus", size="small",
                             layers=[8], shard_records=2, batch_size=2, workers=1)
    params["extract"]["slurm"].update(tasks=2, time_s=900)
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    res = rightsize(["ecg-demo", "corpus", "--params", "params.yaml", "-q"], cwd=root)
    assert res.rc == 0, res.err
    return root


def event_file(folder: Path, steps: int = 20, host: str = "h", pid: int = 1,
               wall: float = 1_700_000_000.0) -> Path:
    """A small valid event file (``Loss/train_step`` and ``Loss/val_epoch``) in ``folder``."""
    from rightsize.ground.event_writer import EventWriter

    w = EventWriter(folder, wall_time=wall, host=host, pid=pid)
    for s in range(1, steps + 1):
        w.add_scalar("Loss/train_step", 1.0 / s, s, wall + s)
        if s % 5 == 0:
            w.add_scalar("Loss/val_epoch", 2.0 / s, s, wall + s + 0.5)
    w.close()
    return w.path


def snapshot(root: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under ``root`` (hidden ones included);
    ``{}`` when ``root`` is absent."""
    out = {}
    if not root.exists():
        return out
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            p = Path(dirpath, name)
            out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def visible(folder: Path) -> set[str]:
    """Names in ``folder`` that do not start with a dot."""
    return {p.name for p in folder.iterdir() if not p.name.startswith(".")}


def hidden(folder: Path) -> set[str]:
    """Names in ``folder`` that start with a dot."""
    return {p.name for p in folder.iterdir() if p.name.startswith(".")}


class Clock:
    """Seconds since creation (to report how long a group of fault runs took)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.start
