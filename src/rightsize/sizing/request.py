"""The Slurm request a lead can paste, per scenario: array, cores, memory, time, GPUs, scratch.

From a scenario's jobs (:mod:`.timing`, its models one after another) and the ask's rule
(:func:`~rightsize.sizing.timing.cheapest`):

* **GPUs win** (the rule picks ``k`` GPUs): an array of ``k`` tasks of one GPU each
  (``--gres=gpu:1``, ``sizing.cpu_cores_per_gpu`` cores, the shards split evenly, as
  ``rightsize extract --executor slurm`` runs them); ``--time`` is the ``k``-GPU wall clock's
  slow end times ``sizing.margin``.
* **Otherwise** an array of CPU tasks shaped like the machine the bench measured (its
  cores), as many as it takes for each task's slow end times the margin to meet
  ``sizing.deadline_h`` (1 when this machine alone meets it).
* ``--mem``: the workers' measured peak resident memory (each task runs the bench's
  workers; a GPU task one worker) times the margin, whole GB; the model's peak at its best
  batch when the bench has no worker timing (said so).
* **Scratch**: the shards' bytes against the free space measured at ``sizing.disk.path`` and
  the quota: "needs 457 GB; data has 66 GB free: request scratch".

Every value on an ``#SBATCH`` line passes :func:`directive`: a newline, ``#`` or control
character is ``ParamsError`` naming its key; anything outside a plain set is shell-quoted.
"""

from __future__ import annotations

import math
import re
import shlex
from typing import Any

from rightsize.errors import ParamsError
from rightsize.fmt import compact_bytes, duration_range
from rightsize.sizing.timing import HOUR, cheapest

PLAIN = re.compile(r"^[A-Za-z0-9_.:,=+/@-]+$")
GB = 1000**3


def directive(name: str, value: object, key: str) -> str:
    """``#SBATCH --name=value``, the value checked (``key`` names it in the error)."""
    text = str(value)
    if not text or any(c in "\n\r#" or ord(c) < 32 or ord(c) == 127 for c in text):
        raise ParamsError(f"{key}: {text!r} cannot go on an #SBATCH line (empty, newline, "
                          f"'#' or a control character)")
    return f"#SBATCH --{name}={text if PLAIN.match(text) else shlex.quote(text)}"


def slurm_time(seconds: float) -> str:
    """Seconds as Slurm's ``D-HH:MM:SS``, rounded up to the minute."""
    minutes = max(1, math.ceil(seconds / 60.0))
    days, rest = divmod(minutes, 24 * 60)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00"


def _mem_gb(bench: dict[str, Any], workers: int, margin: float) -> tuple[int, str]:
    """Whole GB per task for ``workers`` workers, and where the figure comes from."""
    w = bench.get("workers") or {}
    if w.get("peak_rss_mb_per_worker"):
        per, how = float(w["peak_rss_mb_per_worker"]), "the workers' measured peak RSS"
    else:
        peaks = [t.get("peak_mem_mb") for t in (bench.get("throughput") or {}).values()
                 if isinstance(t, dict) and t.get("status") == "ok" and t.get("peak_mem_mb")]
        per = float(max(peaks)) if peaks else 4000.0
        how = ("the model's peak at its largest batch (no worker timing)" if peaks
               else "4 GB assumed per worker (no memory measured)")
    return max(1, math.ceil(workers * per * 1.048576 * margin / 1000)), how


def scratch_words(storage: int, free: int | None, quota: int | None, path: str) -> str:
    """``needs 457 GB; data has 66 GB free: request scratch`` (or that it fits)."""
    need = f"needs {compact_bytes(storage)} of shards"
    short = []
    if free is not None and storage > free:
        short.append(f"{path} has {compact_bytes(free)} free")
    if quota is not None and storage > quota:
        short.append(f"the quota is {compact_bytes(quota)}")
    if short:
        return f"{need}; {' and '.join(short)}: request scratch of {compact_bytes(storage)}"
    where = f"the {compact_bytes(free)} free at {path}" if free is not None else path
    return f"{need}: fits {where}"


def scenario_request(name: str, cpu: dict[str, Any], by_k: dict[int, dict[str, Any]],
                     storage: int, disk: dict[str, Any], quota: int | None, cfg: Any,
                     cores: int, bench: dict[str, Any]) -> dict[str, Any]:
    """The request for one scenario (``cpu``/``by_k``: its jobs, models added up)."""
    margin, limit = cfg.margin, cfg.deadline_h * HOUR / cfg.margin
    pick = cheapest(cpu, by_k, cfg.deadline_h, margin)
    workers = int((bench.get("workers") or {}).get("workers") or 1)
    out: dict[str, Any] = {"scenario": name, "margin": margin,
                           "scratch_bytes": storage,
                           "scratch": scratch_words(storage, disk.get("free_bytes"), quota,
                                                    disk.get("path", "?"))}
    if pick["choice"] in ("gpu", "unknown") and pick["k"]:
        k, job = pick["k"], by_k[pick["k"]]
        span = duration_range(job["wall_s_low"], job["wall_s_high"])
        mem, mem_how = _mem_gb(bench, 1, margin)
        out.update(option="gpu", array=k, cpus_per_task=cfg.cpu_cores_per_gpu, gres="gpu:1",
                   time_s=job["wall_s_high"] * margin, mem_gb=mem,
                   why=f"{k} GPU{'s' if k != 1 else ''} meet{'s' if k == 1 else ''} the "
                       f"deadline: one task per GPU, {span} each")
    elif cpu.get("wall_s_high") is not None:
        start = (cpu.get("parts") or {}).get("startup") or {}
        s_hi = start.get("high_s") or 0.0
        work = max(cpu["wall_s_high"] - s_hi, 0.0)
        array = max(1, math.ceil(work / max(limit - s_hi, 1.0)))
        mem, mem_how = _mem_gb(bench, workers, margin)
        out.update(option="cpu", array=array, cpus_per_task=cores, gres=None,
                   time_s=(s_hi + work / array) * margin, mem_gb=mem,
                   why=(f"one task of {cores} cores meets the deadline" if array == 1 else
                        f"{array} tasks of {cores} cores, each "
                        f"{duration_range(s_hi + work / array)} at the slow end, meet the "
                        f"{cfg.deadline_h:g} h deadline with the {margin:g}x margin"))
    else:
        return {**out, "option": None, "lines": [], "why": "compute not measured: no request"}
    out["mem_how"] = mem_how
    if pick["choice"] == "unknown":
        out["why"] += (f" (unknown: {', '.join(cpu.get('unknown') or [])}: not measured, so "
                       f"the time is a lower bound)")
    key = f"sizing.scenarios.{name if PLAIN.match(name) else repr(name)}"
    lines = [directive("job-name", f"rightsize-{name}", key),
             directive("array", f"0-{out['array'] - 1}", key),
             directive("cpus-per-task", out["cpus_per_task"], key),
             directive("mem", f"{out['mem_gb']}G", key),
             directive("time", slurm_time(out["time_s"]), key)]
    if out["gres"]:
        lines.append(directive("gres", out["gres"], key))
    out["lines"] = lines
    return out
