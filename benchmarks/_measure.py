"""Timing, memory and stamping helpers shared by the benchmarks (standard library only).

Every result file starts with a stamp line (:func:`write_result`): commit, date, machine
and the script, which benchmarks/README.md's claims table cites.

Every contender runs in a fresh child process; :func:`run_process` times it with a
monotonic clock and reads its peak resident set size from ``os.wait4``.

Caveat on Linux: a child's ``ru_maxrss`` starts at the *parent's* peak RSS (the parent's
address space is what ``execve`` replaces, and its high-water mark is kept). A benchmark
driver must therefore stay small: import nothing heavy, generate data in a child, and
report :func:`self_peak_rss_mb` of the driver as the floor of every RSS it prints.
"""

from __future__ import annotations

import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MB = 1024 * 1024


@dataclass(frozen=True)
class Measurement:
    """One finished child process: wall seconds, peak RSS, exit code and its output."""

    wall_s: float
    max_rss_mb: float
    rc: int
    stdout: str
    stderr: str
    timed_out: bool = False
    cpu_s: float = 0.0          # user + system CPU seconds of the child (its own work)


def run_process(argv: list[str], *, cwd: str | os.PathLike[str] | None = None,
                env: dict[str, str] | None = None, timeout_s: float | None = None) -> Measurement:
    """Run ``argv`` to completion; return its wall time and peak RSS (``wait4`` rusage).

    Output goes to temporary files (no pipe can fill up and stall the child). On timeout
    the child's process group is killed and ``timed_out`` is set.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err,
                                start_new_session=True)
        fired = threading.Event()

        def _kill() -> None:
            fired.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout_s, _kill) if timeout_s else None
        if timer:
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            if timer:
                timer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measurement(
            wall_s=wall,
            max_rss_mb=usage.ru_maxrss * 1024 / MB,  # Linux reports kilobytes
            rc=proc.returncode,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            timed_out=fired.is_set(),
            cpu_s=usage.ru_utime + usage.ru_stime,
        )


REPO = Path(__file__).resolve().parents[1]
#: ``python -c CHILD verb args...``: the ``rightsize`` CLI of whichever ``src`` is first on
#: ``PYTHONPATH`` (the sides of :func:`source_sides`).
CHILD = "import sys; from rightsize.cli import main; sys.exit(main(sys.argv[1:]))"


def git(*args: str) -> str:
    """Output of ``git ARGS`` in this repository (stripped)."""
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True,
                          text=True).stdout.strip()


def extract(rev: str, dest: Path) -> Path:
    """``src/`` of ``rev`` under ``dest`` (git archive, no worktree)."""
    import tarfile

    blob = subprocess.run(["git", "archive", "--format=tar", rev, "src"], cwd=REPO,
                          check=True, capture_output=True).stdout
    tar = dest / "src.tar"
    tar.write_bytes(blob)
    with tarfile.open(tar) as tf:
        tf.extractall(dest, filter="data")
    return dest / "src"


def source_sides(base: str | None, tmp: Path) -> tuple[dict[str, Path], str]:
    """``{"before": src of base, "after": this checkout's src}`` and the base revision
    (default: ``git merge-base HEAD main``); each side is checked to be what a child with it
    first on ``PYTHONPATH`` imports."""
    base = base or git("merge-base", "HEAD", "main")
    sides = {"before": extract(base, tmp), "after": REPO / "src"}
    for name, src in sides.items():
        got = imported_from(src)
        assert got.startswith(str(src)), f"{name}: imports rightsize from {got}"
    return sides, base


def interleaved(sides: dict[str, Callable[[int], Measurement]], repeat: int
                ) -> dict[str, list[Measurement]]:
    """Run each side's child ``repeat`` times, alternating the order (ABBA...) so that load
    on a shared box hits every side alike; ``sides[name](i)`` runs run ``i`` of ``name``."""
    out: dict[str, list[Measurement]] = {k: [] for k in sides}
    names = list(sides)
    for i in range(repeat):
        for name in names if i % 2 == 0 else names[::-1]:
            out[name].append(sides[name](i))
    return out


def before_after_table(runs: dict[str, list[Measurement]], goal: float) -> list[str]:
    """Markdown rows for a before/after comparison: per side median, min and max seconds and
    median peak RSS, then the ratio of medians against ``goal`` (and of the fastest runs)."""
    import statistics

    times = {k: [m.wall_s for m in v] for k, v in runs.items()}
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["after"] / med["before"]
    return [
        "| side | median s | min s | max s | median peak RSS MB |",
        "|---|---|---|---|---|",
        *(f"| {k} | {med[k]:.3f} | {min(times[k]):.3f} | {max(times[k]):.3f} | "
          f"{statistics.median(m.max_rss_mb for m in runs[k]):.0f} |" for k in runs),
        "",
        f"after / before (medians): **{ratio:.3f}** — goal ≤ {goal:.2f}: "
        f"{'PASS' if ratio <= goal else 'FAIL'} (fastest runs: "
        f"{min(times['after']) / min(times['before']):.3f})",
    ]


def best_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Fewest wall seconds of ``repeats`` calls of ``fn()`` in this process (monotonic clock)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def child_json(m: Measurement, what: str) -> dict:
    """The JSON object a child printed as its last stdout line; raise if the child failed."""
    if m.rc != 0:
        raise RuntimeError(f"{what} failed (exit {m.rc}, timed out: {m.timed_out}): "
                           f"{last_line(m)}")
    return json.loads(m.stdout.strip().splitlines()[-1])


def last_line(m: Measurement) -> str:
    """The last line a child wrote on stderr (else stdout): usually its error."""
    lines = (m.stderr.strip() or m.stdout.strip() or f"exit {m.rc}").splitlines()
    return lines[-1]


def imported_from(src: str | os.PathLike[str]) -> str:
    """Where a child with ``src`` first on ``PYTHONPATH`` imports rightsize from."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([sys.executable, "-c", "import rightsize; print(rightsize.__file__)"],
                          env=env, check=True, capture_output=True, text=True).stdout.strip()


def _status_kb(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def self_peak_rss_mb() -> float:
    """Peak RSS of this process so far (``VmHWM``; ``ru_maxrss`` where /proc is missing)."""
    kb = _status_kb("VmHWM")
    if kb is None:
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb * 1024 / MB


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (falls back to ``platform.processor()``)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info() -> dict[str, str]:
    """CPU model, cores, memory, OS, Python and load average, as printable strings."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    mem = "unknown"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / MB:.1f} GiB"
    except OSError:
        pass
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return {
        "cpu": cpu_model(),
        "cores": f"{os.cpu_count()} logical ({usable} usable)",
        "memory": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "load average (1/5/15 min)": load,
        "executable": Path(sys.executable).name,
    }


STAMP = re.compile(r"^Stamp: commit (?P<commit>[0-9a-f]{7,40}(?:\+dirty)?), "
                   r"(?P<date>\d{4}-\d{2}-\d{2}), (?P<machine>.+), "
                   r"(?P<script>benchmarks/[\w.]+\.py)(?P<note>.*)$")


def machine_line(info: dict[str, str] | None = None) -> str:
    """``AMD EPYC (2 logical cores, 23.5 GiB)``: what a result's stamp names."""
    info = info or machine_info()
    return f"{info['cpu']} ({info['cores'].split(' (')[0]} cores, {info['memory']})"


def stamp(script: str, info: dict[str, str] | None = None) -> str:
    """The first line of every result file: commit (``+dirty`` with uncommitted changes to
    the code measured), UTC date, machine and the script that wrote it (matches STAMP)."""
    repo = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                              check=False).stdout.strip()

    commit = git("rev-parse", "--short=7", "HEAD") or "0000000"
    if git("status", "--porcelain", "--", "src", "benchmarks", "dvc.yaml", "params.yaml"):
        commit += "+dirty"
    date = time.strftime("%Y-%m-%d", time.gmtime())
    return f"Stamp: commit {commit}, {date}, {machine_line(info)}, benchmarks/{script}"


def write_result(path: str | os.PathLike[str], text: str, script: str,
                 info: dict[str, str] | None = None) -> Path:
    """Write a result file atomically (temp file + rename), its stamp line first."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    body = f"{stamp(script, info)}\n\n{text.rstrip()}\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(body)
    os.chmod(tmp, 0o644)
    os.replace(tmp, target)
    return target
