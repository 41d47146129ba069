"""DVC experiments: seed sweeps through the queue and mean ± sd across them.

This is the only module that knows DVC's command line. It runs ``dvc`` as a subprocess
(never imports it), parses ``dvc exp show --json`` into :class:`ExpRow` records, and
summarizes every numeric metric across the baseline commit and its experiments.

Metric keys are ``<metrics file>:<dotted key>``, e.g.
``metrics/headline/probes/fused.json:fused.test_mae``: DVC's metrics are the headline files
dvc.yaml declares (docs/outputs.md); lists and strings in them would be dropped.
"""

from __future__ import annotations

import logging
import math
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rightsize.errors import InputError, RightsizeError

log = logging.getLogger(__name__)

TERMINAL_STATES = frozenset({"success", "failed", "killed", "unknown"})
_QUEUED_RE = re.compile(r"Queued experiment '([^']+)' for future execution")
_OVERRIDE_RE = re.compile(r"Queueing with overrides '(.*)'\.\s*$")
_WORKERS_RE = re.compile(r"Worker status:\s*(\d+)\s+active,\s*(\d+)\s+idle")


class DvcError(RightsizeError):
    """A ``dvc`` command or a queued experiment failed (message is one line; exit 5)."""

    exit_code = 5


@dataclass(frozen=True)
class ExpRow:
    """One row of ``dvc exp show``: the baseline commit or one of its experiments."""

    name: str
    rev: str
    is_baseline: bool
    metrics: dict[str, float] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricSummary:
    """Mean, sample standard deviation (None when n < 2), range and count of one metric."""

    n: int
    mean: float
    sd: float | None
    min: float
    max: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready mapping."""
        return {"n": self.n, "mean": self.mean, "sd": self.sd, "min": self.min, "max": self.max}


# --------------------------------------------------------------------------- parsing


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten nested mappings into ``{"a.b.c": leaf}`` (lists are kept as leaves)."""
    out: dict[str, Any] = {}
    if isinstance(data, Mapping):
        for key, value in data.items():
            sub = f"{prefix}.{key}" if prefix else str(key)
            out.update(flatten(value, sub))
    elif prefix:
        out[prefix] = data
    return out


def _is_number(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(float(value)))


def _file_values(section: Any, numeric_only: bool) -> dict[str, Any]:
    """``{"file:dotted.key": value}`` from an exp-show ``metrics``/``params`` section."""
    out: dict[str, Any] = {}
    if not isinstance(section, Mapping):
        return out
    for path, entry in section.items():
        if not isinstance(entry, Mapping) or entry.get("error"):
            continue
        for key, value in flatten(entry.get("data") or {}).items():
            if numeric_only and not _is_number(value):
                continue
            out[f"{path}:{key}"] = float(value) if numeric_only else value
    return out


def _row(entry: Mapping[str, Any], is_baseline: bool) -> ExpRow:
    data = entry.get("data") or {}
    rev = str(entry.get("rev") or data.get("rev") or "")
    return ExpRow(
        name=str(entry.get("name") or rev[:7]),
        rev=rev,
        is_baseline=is_baseline,
        metrics=_file_values(data.get("metrics"), numeric_only=True),
        params=_file_values(data.get("params"), numeric_only=False),
    )


def parse_exp_show(records: Sequence[Mapping[str, Any]],
                   baseline: str = "workspace") -> list[ExpRow]:
    """Baseline plus the finished experiments of the HEAD commit from ``dvc exp show --json``.

    ``baseline="workspace"`` (the default) takes the baseline row's numbers from the
    workspace, the files the report reads: after ``dvc repro`` on another CPU they can differ
    from HEAD's committed ones. ``baseline="head"`` takes HEAD's committed numbers. An
    experiment that failed, is queued or running, or carries an error is left out (DVC reports
    a failed experiment with its baseline's metrics). Only the first commit entry is used
    (``dvc exp show`` lists HEAD first).
    """
    if not isinstance(records, Sequence) or isinstance(records, str | bytes):
        raise DvcError("dvc exp show --json: expected a JSON list")
    if baseline not in ("workspace", "head"):
        raise InputError(f"--baseline: expected workspace or head, got {baseline!r}")
    entries = [r for r in records if isinstance(r, Mapping)]
    commits = [r for r in entries if r.get("rev") != "workspace"]
    if not commits:
        return []
    base = commits[0]
    rows = [] if base.get("error") else [_row(base, True)]
    work = next((r for r in entries if r.get("rev") == "workspace"), None)
    if baseline == "workspace" and rows and work is not None and not work.get("error") \
            and (work.get("data") or {}).get("metrics"):
        rows = [replace(_row(work, True), name="workspace", rev=rows[0].rev)]
    for group in base.get("experiments") or []:
        executor = group.get("executor") or {}
        state = executor.get("state") if isinstance(executor, Mapping) else None
        if state not in (None, "success"):
            continue
        for rev in group.get("revs") or []:
            if rev.get("error") or not rev.get("data"):
                continue
            if not rev.get("name") and group.get("name"):
                rev = {**rev, "name": group["name"]}
            rows.append(_row(rev, False))
    return rows


def summarize(rows: Iterable[ExpRow],
              prefixes: Sequence[str] = ()) -> dict[str, MetricSummary]:
    """Mean ± sample sd per metric key across ``rows`` (keys filtered by ``prefixes``)."""
    import numpy as np

    values: dict[str, list[float]] = {}
    for row in rows:
        for key, value in row.metrics.items():
            if prefixes and not any(key.startswith(p) for p in prefixes):
                continue
            values.setdefault(key, []).append(value)
    out = {}
    for key in sorted(values):
        arr = np.asarray(values[key], dtype=np.float64)
        out[key] = MetricSummary(
            n=int(arr.size),
            mean=float(arr.mean()),
            sd=(None if arr.size < 2 else 0.0 if arr.min() == arr.max()
                else float(arr.std(ddof=1))),
            min=float(arr.min()),
            max=float(arr.max()),
        )
    return out


def baseline_moved(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Metric keys whose workspace value differs from HEAD's committed one (``dvc repro`` on
    another CPU moves timings always, and float-rounded model metrics within the seed
    spread)."""
    head = parse_exp_show(records, "head")
    work = parse_exp_show(records, "workspace")
    if not head or not work or work[0].name != "workspace":
        return []
    a, b = head[0].metrics, work[0].metrics
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def varying_params(rows: Sequence[ExpRow]) -> list[str]:
    """Param keys whose value differs between rows (what the experiments changed)."""
    keys = sorted({k for r in rows for k in r.params})
    return [k for k in keys if len({repr(r.params.get(k)) for r in rows}) > 1]


def format_pm(summary: MetricSummary) -> str:
    """``"0.8123 ± 0.012"``; sd shown as ``—`` when there is a single value."""
    sd = "—" if summary.sd is None else f"{summary.sd:.3g}"
    return f"{summary.mean:.6g} ± {sd}"


# --------------------------------------------------------------------------- running dvc


def failure_line(text: str) -> str:
    """The most telling line of a DVC/stage log: ``rightsize: error:``, else last ``ERROR:``."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith("rightsize: error:"):
            return ln
    for ln in reversed(lines):
        if ln.startswith("ERROR:"):
            return ln
    return lines[-1] if lines else "(no output)"


def run_dvc(args: Sequence[str], cwd: str | Path | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``dvc ARGS`` capturing text output; on failure raise :class:`DvcError`.

    The error names the command and the most telling line of its output; the full
    output is logged at debug level (``rightsize --debug``).
    """
    cmd = ["dvc", *args]
    log.debug("running %s in %s", " ".join(cmd), cwd or ".")
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise InputError("dvc: command not found (install rightsize with its dvc extra)") from None
    if check and proc.returncode != 0:
        log.debug("dvc output:\n%s%s", proc.stdout, proc.stderr)
        raise DvcError(f"{' '.join(cmd)} exited with {proc.returncode}: "
                       f"{failure_line(proc.stderr or proc.stdout)}")
    return proc


def exp_show(cwd: str | Path | None = None) -> list[dict[str, Any]]:
    """Parsed ``dvc exp show --json`` (HEAD baseline and its experiments)."""
    import json

    proc = run_dvc(["exp", "show", "--json"], cwd=cwd)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise DvcError(f"dvc exp show --json: not JSON ({exc.msg} at char {exc.pos})") from None


def parse_queued(stdout: str) -> list[tuple[str, str]]:
    """``[(name, "key=value ..."), ...]`` from ``dvc exp run --queue`` output, in order."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in stdout.splitlines():
        m = _OVERRIDE_RE.search(line)
        if m:
            pending = " ".join(re.findall(r"'([^'=]+=[^']*)'", m.group(1))) or m.group(1)
            continue
        m = _QUEUED_RE.search(line)
        if m:
            out.append((m.group(1), pending))
            pending = ""
    return out


def queue_sweep(param: str, values: Sequence[Any], targets: Sequence[str] = (),
                cwd: str | Path | None = None) -> list[tuple[str, str]]:
    """Queue one experiment per value of ``param`` (a single ``-S key=v1,v2`` sweep).

    ``targets`` (stage names) limit what each experiment reproduces, as for ``dvc repro``.
    """
    spec = f"{param}={','.join(str(v) for v in values)}"
    proc = run_dvc(["exp", "run", "--queue", "-S", spec, *targets], cwd=cwd)
    queued = parse_queued(proc.stdout)
    if len(queued) != len(values):
        raise DvcError(f"dvc exp run --queue -S {spec}: expected {len(values)} queued "
                       f"experiments, saw {len(queued)}")
    return queued


def parse_queue_status(stdout: str) -> tuple[dict[str, str], int]:
    """``({name: state}, workers)`` from ``dvc queue status`` (state lower-cased)."""
    states: dict[str, str] = {}
    workers = 0
    lines = stdout.splitlines()
    for line in lines:
        m = _WORKERS_RE.search(line)
        if m:
            workers = int(m.group(1)) + int(m.group(2))
            continue
        parts = line.split()
        if len(parts) < 3 or parts[:2] == ["Task", "Name"]:
            continue
        states[parts[1]] = parts[-1].lower()
    return states, workers


def queue_status(cwd: str | Path | None = None) -> tuple[dict[str, str], int]:
    """Current ``dvc queue status`` as ``({name: state}, live workers)``."""
    return parse_queue_status(run_dvc(["queue", "status"], cwd=cwd).stdout)


def start_queue(jobs: int, cwd: str | Path | None = None) -> None:
    """``dvc queue start -j JOBS`` (workers run detached and exit when the queue drains)."""
    run_dvc(["queue", "start", "-j", str(jobs)], cwd=cwd)


def wait_queue(names: Sequence[str], cwd: str | Path | None = None, poll_s: float = 2.0,
               timeout_s: float | None = None, stall_polls: int = 5) -> dict[str, str]:
    """Poll ``dvc queue status`` until every experiment in ``names`` has finished.

    Raises :class:`DvcError` on timeout, or when experiments stay pending while no
    worker is alive for ``stall_polls`` consecutive polls.
    """
    start = time.monotonic()
    stalled = 0
    while True:
        states, workers = queue_status(cwd)
        mine = {n: states.get(n, "unknown") for n in names}
        pending = sorted(n for n, s in mine.items() if s not in TERMINAL_STATES)
        if not pending:
            return mine
        stalled = stalled + 1 if workers == 0 else 0
        if stalled >= stall_polls:
            raise DvcError(f"queue stalled: {len(pending)} experiment(s) pending "
                           f"({', '.join(pending)}) and no worker alive; run: dvc queue start")
        if timeout_s is not None and time.monotonic() - start > timeout_s:
            raise DvcError(f"timed out after {timeout_s:g}s waiting for {', '.join(pending)}; "
                           "see: dvc queue status")
        time.sleep(poll_s)


def queue_logs(name: str, cwd: str | Path | None = None) -> str:
    """The worker log of queued experiment ``name`` (``dvc queue logs NAME``)."""
    proc = run_dvc(["queue", "logs", name], cwd=cwd, check=False)
    return proc.stdout + proc.stderr


def raise_failures(states: Mapping[str, str], overrides: Mapping[str, str],
                   cwd: str | Path | None = None) -> None:
    """Print the worker log of each failed experiment on stderr; raise one-line DvcError."""
    failed = [n for n, s in states.items() if s != "success"]
    if not failed:
        return
    first_line = ""
    for name in failed:
        text = queue_logs(name, cwd)
        print(f"--- dvc queue logs {name} ({states[name]}) ---", file=sys.stderr)
        print(text.rstrip(), file=sys.stderr)
        if not first_line:
            first_line = failure_line(text).removeprefix("rightsize: error: ")
    name = failed[0]
    what = f" [{overrides[name]}]" if overrides.get(name) else ""
    more = f" (+{len(failed) - 1} more failed)" if len(failed) > 1 else ""
    raise DvcError(f"experiment {name}{what} {states[name]}: {first_line}{more}; "
                   f"log: dvc queue logs {name}")
