"""``rightsize extract --executor slurm``: the command-line side of the slurm executor.

The extract verb hands over its own argv, the ``extract.slurm`` block and a way to list the
tasks with missing shards; this module builds the task command (the same invocation with
``--executor local --task I/N``), prints the script for ``--dry-run`` or submits it through
:mod:`rightsize.extraction.slurm`. The sizing verb writes the ask's script with
:func:`ask_job_script`: the same generator, with the ask's GPUs, cores and predicted time.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rightsize import console

#: Flags of the submitting invocation that a task must not inherit: it runs locally, its
#: range comes from the array index, and a dry run submits nothing.
_DROPPED_WITH_VALUE = ("--executor", "--task")
_DROPPED = ("--dry-run",)


def task_command(argv: Sequence[str], program: str | None = None) -> tuple[str, ...]:
    """The command an array task runs: ``argv`` (the extract verb's flags, after
    ``rightsize``) with ``--executor local`` and without ``--executor``/``--task``/``--dry-run``.

    ``program`` is the rightsize script to run; by default the one running now, by absolute
    path, so a task finds the same install whatever its PATH.
    """
    if program is None:
        found = shutil.which("rightsize")
        program = str(Path(found).resolve()) if found else f"{sys.executable} -m rightsize.cli"
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in _DROPPED_WITH_VALUE:
            skip = True
            continue
        if arg.startswith(tuple(f"{f}=" for f in _DROPPED_WITH_VALUE)) or arg in _DROPPED:
            continue
        out.append(arg)
    return (*program.split(" "), *out, "--executor", "local")


def build_job(command: tuple[str, ...], cfg: Any, out_dir: Path,
              predicted_task_s: float | None, indices: tuple[int, ...]) -> Any:
    """The array job for ``indices``: resources from ``cfg`` (a ``SlurmConfig``), logs and the
    script under ``<out_dir>/slurm/``, run from the current directory."""
    from rightsize.extraction.slurm import SlurmJob

    return SlurmJob(command=command, tasks=cfg.tasks, indices=indices,
                    resources=cfg.resources(predicted_task_s), workdir=Path.cwd().resolve(),
                    log_dir=(out_dir / "slurm").resolve())


def run(argv: Sequence[str], cfg: Any, out_dir: Path, predicted_task_s: float | None,
        pending_tasks: Callable[[], list[int]], dry_run: bool) -> int:
    """Print the job script (``dry_run``) or submit the tasks with missing shards and wait.

    ``cfg`` is the parsed ``extract.slurm`` block (``SlurmConfig``); ``pending_tasks`` lists
    the tasks of ``cfg.tasks`` whose shard range is incomplete. Exit 5 (``SchedulerError``)
    when sbatch refuses the job or a task leaves shards undone.
    """
    from rightsize.extraction.slurm import job_script, run_array

    command = task_command(argv)
    if dry_run:
        todo = tuple(pending_tasks()) or tuple(range(cfg.tasks))
        sys.stdout.write(job_script(build_job(command, cfg, out_dir, predicted_task_s, todo)))
        return 0

    def on_change(states: dict[str, str]) -> None:
        counts: dict[str, int] = {}
        for state in states.values():
            counts[state] = counts.get(state, 0) + 1
        console.info("slurm: " + (", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items()))
                                  or "array done"))

    script = out_dir / "slurm" / "job.sh"
    done = run_array(lambda todo: build_job(command, cfg, out_dir, predicted_task_s, todo),
                     pending_tasks, script, poll_s=cfg.poll_s, on_change=on_change)
    if not done:
        console.info(f"slurm: every shard of {out_dir} is already valid; nothing submitted")
    else:
        console.info(f"slurm: task(s) {len(done)} of {cfg.tasks} done; script {script}")
    return 0


def ask_job_script(ask: Mapping[str, Any], host_cores: int, mem_mb: int = 8192,
                   command: tuple[str, ...] = ("rightsize", "extract", "--params", "params.yaml",
                                               "--executor", "local"),
                   log_dir: Path = Path("data/extracted/slurm")) -> str:
    """The job script for the ask (``metrics/sizing.json``'s ``ask``): on GPUs, one task per
    GPU chosen with ``--gres=gpu:1`` and the ask's cores per GPU; on this CPU, one task with
    its cores. ``--time`` is the ask's upper wall clock with the stated margin
    (``extraction.slurm.time_limit_s``). Paths are relative: it names no machine."""
    from rightsize.extraction.slurm import SlurmJob, SlurmResources, job_script, time_limit_s

    wall_high = float(ask["option"]["wall_s_high"])
    if ask.get("choice") == "gpu" and ask.get("gpus_chosen"):
        tasks, gpus = int(ask["gpus_chosen"]), 1
        cpus = int(ask.get("gpu", {}).get("cpu_cores_per_gpu") or 1)
    else:
        tasks, gpus, cpus = 1, 0, max(1, host_cores)
    res = SlurmResources(gpus_per_task=gpus, cpus_per_task=cpus, mem_mb=mem_mb,
                         time_s=time_limit_s(wall_high))
    job = SlurmJob(command=command, tasks=tasks, indices=tuple(range(tasks)), resources=res,
                   workdir=None, log_dir=log_dir)
    return job_script(job)
