"""``rightsize extract --executor slurm``: the command-line side of the slurm executor.

The extract verb hands over its parsed flags, its config (with the ``extract.slurm`` block),
the record list and the ask's prediction; this module builds the task command (the same
params and output with ``--executor local --task I/N``), prints the script for ``--dry-run``
or submits the tasks with missing shards through :mod:`rightsize.extraction.slurm`.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rightsize import console


def _program() -> tuple[str, ...]:
    """The rightsize script of this install, by absolute path (a task finds the same install
    whatever its PATH), else this interpreter running the CLI module."""
    beside = Path(sys.executable).parent / "rightsize"
    found = str(beside) if beside.is_file() else shutil.which("rightsize")
    return (found,) if found else (sys.executable, "-m", "rightsize.cli")


def task_command(args: Any, cfg: Any, program: tuple[str, ...] | None = None
                 ) -> tuple[str, ...]:
    """What an array task runs: this extract invocation's params, output and events folders,
    on ``cpus_per_task / threads_per_worker`` local workers; the script appends ``--task``.

    Metrics and the headline are the submitting run's (one file for the whole array), so a
    task writes neither.
    """
    cmd = [*(program or _program()), "extract", "--params", str(args.params),
           "--out", str(args.out)]
    if getattr(args, "events", None):
        cmd += ["--events", str(args.events)]
    if cfg.skip_bad:
        cmd.append("--skip-bad")
    workers = max(1, cfg.slurm.cpus_per_task // cfg.threads_per_worker)
    return (*cmd, "--workers", str(workers), "--executor", "local")


def build_job(command: tuple[str, ...], slurm: Any, out_dir: Path,
              predicted_task_s: float | None, indices: tuple[int, ...]) -> Any:
    """The array job for ``indices``: resources from ``slurm`` (a ``SlurmConfig``), logs
    under ``<out_dir>/slurm/``, run from the current directory."""
    from rightsize.extraction.slurm import SlurmJob

    return SlurmJob(command=command, tasks=slurm.tasks, indices=indices,
                    resources=slurm.resources(predicted_task_s), workdir=Path.cwd().resolve(),
                    log_dir=(out_dir / "slurm").resolve())


def run_extract_slurm(args: Any, cfg: Any, records: Any,
                      predict: Callable[[int], dict[str, Any] | None]) -> int:
    """``rightsize extract --executor slurm``: print the script (``--dry-run``) or submit the
    tasks whose shard range is incomplete, wait for the array, close the folder.

    ``predict(n)`` is the ask's prediction for ``n`` records (None without --bench/--sizing);
    ``--time`` comes from it for the largest task unless ``extract.slurm.time_s`` is set.
    Exit 5 (``SchedulerError``) when sbatch refuses the job or a task leaves shards undone.
    """
    import dataclasses
    import time

    from rightsize.extraction.records import shard_count, task_shards
    from rightsize.extraction.report import close_if_complete
    from rightsize.extraction.run import make_plan
    from rightsize.extraction.slurm import job_script, run_array

    out = Path(args.out)
    shards = shard_count(len(records), cfg.shard_records)
    slurm = dataclasses.replace(cfg.slurm, tasks=max(1, min(cfg.slurm.tasks, shards)))
    largest = max(len(task_shards(t, slurm.tasks, shards)) for t in range(slurm.tasks))
    predicted = None
    if slurm.time_s is None:
        prediction = predict(min(largest * cfg.shard_records, len(records)))
        predicted = (prediction or {}).get("wall_s_high")
    command = task_command(args, cfg)

    def pending() -> list[int]:
        todo = set(make_plan(cfg, records, out, None).todo)
        return [t for t in range(slurm.tasks) if todo.intersection(task_shards(t, slurm.tasks,
                                                                               shards))]

    if args.dry_run:
        todo = tuple(pending()) or tuple(range(slurm.tasks))
        sys.stdout.write(job_script(build_job(command, slurm, out, predicted, todo)))
        return 0

    def on_change(states: dict[str, str]) -> None:
        counts: dict[str, int] = {}
        for state in states.values():
            counts[state] = counts.get(state, 0) + 1
        console.info("slurm: " + (", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items()))
                                  or "array done"))

    start = time.perf_counter()
    script = out / "slurm" / "job.sh"
    done = run_array(lambda todo: build_job(command, slurm, out, predicted, todo), pending,
                     script, poll_s=slurm.poll_s, on_change=on_change)
    counts = close_if_complete(make_plan(cfg, records, out, None))
    wall = time.perf_counter() - start
    if not done:
        console.info(f"slurm: every shard of {out} is already valid; nothing submitted")
    else:
        console.info(f"slurm: {len(done)} task(s) of {slurm.tasks} ran in {wall:.1f} s "
                     f"(script {script}); {out}: "
                     + (f"complete, {counts['good']} good, {counts['bad']} bad" if counts
                        else "not complete"))
    return 0
