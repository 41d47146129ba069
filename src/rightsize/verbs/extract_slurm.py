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
    task writes neither. The tasks compute in the dtype ``extract.compute_dtype`` resolves to
    on the submitting host, the one whose check of the shards closes the folder (``auto`` on
    a login node without bf16 gives float32 tasks: set the dtype for the compute nodes).
    """
    cmd = [*(program or _program()), "extract", "--params", str(args.params),
           "--out", str(args.out)]
    if getattr(args, "events", None):
        cmd += ["--events", str(args.events)]
    if cfg.skip_bad:
        cmd.append("--skip-bad")
    workers = max(1, cfg.slurm.cpus_per_task // cfg.threads_per_worker)
    return (*cmd, "--workers", str(workers), "--compute-dtype", cfg.computes_in,
            "--executor", "local")


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
    tasks whose shard range is incomplete, wait for the array, close the folder, write the
    run's metrics (``--metrics``, ``--headline``) with the ask's prediction beside them.

    ``predict(n)`` is the ask's prediction for ``n`` records (None without --bench/--sizing);
    ``--time`` comes from it for the largest task unless ``extract.slurm.time_s`` is set.
    Exit 5 (``SchedulerError``) when sbatch refuses the job or a task leaves shards undone.
    """
    import dataclasses
    import time

    from rightsize.extraction.plan import survey
    from rightsize.extraction.record_list import shard_rows, task_shards
    from rightsize.extraction.slurm import job_script

    out = Path(args.out)
    first = survey(cfg, records, out)             # read only: a running task's files stay
    slurm = dataclasses.replace(cfg.slurm, tasks=max(1, min(cfg.slurm.tasks, first.shards)))
    n, per = len(records), cfg.shard_records
    largest = max(sum(len(shard_rows(s, n, per)) for s in task_shards(t, slurm.tasks,
                                                                       first.shards))
                  for t in range(slurm.tasks))           # records of the largest task
    predicted = None
    if slurm.time_s is None:
        prediction = predict(largest)
        predicted = (prediction or {}).get("wall_s_high")
    tasks = first.tasks_left(slurm.tasks)
    job = build_job(task_command(args, cfg), slurm, out, predicted,
                    tasks or tuple(range(slurm.tasks)))
    if args.dry_run:
        sys.stdout.write(job_script(job))
        return 0

    def pending() -> list[int]:
        return list(survey(cfg, records, out).tasks_left(slurm.tasks))

    start = time.perf_counter()
    job_id = _submit_and_wait(job, pending, out, slurm.poll_s) if tasks else None
    return _close(args, cfg, records, out, job, job_id, sum(first.todo_sizes),
                  time.perf_counter() - start, predict)


def _submit_and_wait(job: Any, pending: Callable[[], list[int]], out: Path,
                     poll_s: float) -> str:
    from rightsize.extraction.slurm import run_array

    def on_change(states: dict[str, str]) -> None:
        counts: dict[str, int] = {}
        for state in states.values():
            counts[state] = counts.get(state, 0) + 1
        console.info("slurm: " + (", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items()))
                                  or "array done"))

    return run_array(job, pending, out / "slurm" / "job.sh", poll_s=poll_s, on_change=on_change)


def _close(args: Any, cfg: Any, records: Any, out: Path, job: Any, job_id: str | None,
           todo_records: int, wall: float,
           predict: Callable[[int], dict[str, Any] | None]) -> int:
    """Close the folder when complete; metrics of the array run; one summary line."""
    from rightsize.extraction.plan import make_plan
    from rightsize.extraction.report import ArrayRun, close_if_complete, run_metrics
    from rightsize.verbs import headline

    plan = make_plan(cfg, records, out, None)
    counts = close_if_complete(plan)
    if job_id is None:
        console.info(f"slurm: every shard of {out} is already valid; nothing submitted")
    else:
        console.info(f"slurm: job {job_id}, {len(job.indices)} task(s) of {job.tasks}, "
                     f"{todo_records} records in {wall:.1f} s; {out}: "
                     + (f"complete, {counts['good']} good, {counts['bad']} bad" if counts
                        else "not complete"))
    if not (args.metrics or args.headline):
        return 0
    ran = ArrayRun(job_id, job.tasks, tuple(job.indices) if job_id else (),
                   job.resources.time_s, str(job.log_dir))
    metrics = run_metrics(plan, ran, wall, todo_records, counts)
    prediction = predict(todo_records) if job_id else None
    if prediction is not None:
        from rightsize.sizing.predict import compare

        metrics["prediction"] = prediction
        metrics["prediction_note"] = ("the ask's prediction for these records in one process "
                                      "on this machine's CPU; the array ran "
                                      f"{len(job.indices)} task(s) of "
                                      f"{job.resources.cpus_per_task} core(s)")
        metrics["prediction_check"] = compare(prediction, wall, {})
    if args.metrics:
        console.emit_json(args.metrics, metrics)
    if args.headline:
        headline.write(args.headline, headline.headline("extract", extract=metrics))
    return 0
