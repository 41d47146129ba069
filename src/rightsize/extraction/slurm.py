"""The ``slurm`` executor: extraction as a Slurm array job, one task per shard range.

The job goes through ``sbatch`` with a script generated here (:func:`job_script`), not a
client library: pyslurm must be built against the cluster's own libslurm headers and ships
no release for Slurm 22.05, and submitit submits pickled callables, which this project
keeps out of its artifacts (docs/extract_slurm.md). The script is plain text: what
``rightsize extract --executor slurm --dry-run`` prints and what the sizing ask shows is what
is submitted.

Each task runs the extract command with ``--task $SLURM_ARRAY_TASK_ID/N``: the task's
contiguous shard range, each shard written to a temporary file and renamed into place, so a
task that is killed, requeued or resubmitted redoes only its missing or invalid shards.
:func:`wait` polls ``squeue`` until the array leaves the queue; the shards on disk, verified
by the caller, then say what is done (this cluster needs no accounting daemon).
"""

from __future__ import annotations

import math
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rightsize.atomic import write_text
from rightsize.errors import InputError, ParamsError, RightsizeError

#: ``--time`` is the ask's predicted upper wall clock for one task times TIME_FACTOR, plus
#: TIME_PAD_S: room for start-up (loading the model), a slower node and requeue restarts.
TIME_FACTOR = 1.5
TIME_PAD_S = 600.0
#: The longest ``--time`` taken (about 31 years; Slurm counts minutes in 32 bits).
MAX_TIME_S = 1e9
#: Slurm's integer fields (cores, MB, tasks) are 32-bit.
MAX_INT = 2**31 - 1

#: A partition (or comma-separated list of them) as it may appear on a ``#SBATCH`` line.
PARTITION = re.compile(r"[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*")
#: Path characters a ``#SBATCH`` line takes unquoted; others are double-quoted (sbatch's
#: directive parser reads quotes), except those it cannot hold (:func:`directive_path`).
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_./+:@=,-]+")
_NO_PATH = re.compile(r'[\x00-\x1f\x7f"\\%]')


class SchedulerError(RightsizeError):
    """sbatch or squeue failed, or the array left shards undone (one-line message; exit 5)."""

    exit_code = 5


@dataclass(frozen=True)
class SlurmConfig:
    """The ``extract.slurm`` params block: the array's shape and each task's request.

    ``time_s`` None takes ``--time`` from the ask's prediction (:func:`time_limit_s`).
    ``mem_mb`` defaults to 8 GB: 4x the extraction's 2 GB peak-RSS goal at the default batch.
    """

    tasks: int = 3
    gpus_per_task: int = 0
    cpus_per_task: int = 1
    mem_mb: int = 8192
    time_s: float | None = None
    partition: str | None = None
    poll_s: float = 10.0

    def validate(self, key: str) -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a bad value."""
        from rightsize.params import require

        for name in ("tasks", "cpus_per_task", "mem_mb"):
            value = getattr(self, name)
            require(isinstance(value, int) and 1 <= value <= MAX_INT, f"{key}.{name}",
                    f"must be a positive integer up to {MAX_INT}, got {value!r}")
        require(isinstance(self.gpus_per_task, int) and 0 <= self.gpus_per_task <= MAX_INT,
                f"{key}.gpus_per_task", f"must be >= 0 (0: no --gres), got {self.gpus_per_task!r}")
        require(self.time_s is None or 0 < self.time_s <= MAX_TIME_S, f"{key}.time_s",
                f"must be > 0 s and at most {MAX_TIME_S:.0e} s, or null (from the ask's "
                f"prediction), got {self.time_s!r}")
        require(0 < self.poll_s <= 3600, f"{key}.poll_s",
                f"must be > 0 s and at most 3600 s, got {self.poll_s!r}")
        check_partition(self.partition, f"{key}.partition")

    def resources(self, predicted_task_s: float | None) -> SlurmResources:
        """Each task's request; ``--time`` from ``time_s``, else from the prediction."""
        if self.time_s is not None:
            limit = self.time_s
        elif predicted_task_s is not None:
            limit = time_limit_s(predicted_task_s)
        else:
            raise InputError("extract.slurm.time_s: not set and no prediction of the task's "
                             "wall clock to take --time from (run `rightsize sizing` first, "
                             "or set extract.slurm.time_s)")
        return SlurmResources(gpus_per_task=self.gpus_per_task,
                              cpus_per_task=self.cpus_per_task, mem_mb=self.mem_mb,
                              time_s=limit, partition=self.partition)


@dataclass(frozen=True)
class SlurmResources:
    """What every array task asks for: ``--gres=gpu:K`` (none when 0), cores, memory, time."""

    gpus_per_task: int = 0
    cpus_per_task: int = 1
    mem_mb: int = 4096
    time_s: float = 3600.0
    partition: str | None = None

    def __post_init__(self) -> None:
        if self.gpus_per_task < 0:
            raise InputError(f"extract.slurm.gpus_per_task: must be >= 0, got {self.gpus_per_task}")
        if self.cpus_per_task < 1:
            raise InputError(f"extract.slurm.cpus_per_task: must be >= 1, got {self.cpus_per_task}")
        if self.mem_mb < 1:
            raise InputError(f"extract.slurm.mem_mb: must be >= 1, got {self.mem_mb}")
        if not 0 < self.time_s <= MAX_TIME_S:
            raise InputError(f"extract.slurm time limit: must be > 0 s and at most "
                             f"{MAX_TIME_S:.0e} s, got {self.time_s}")
        check_partition(self.partition, "extract.slurm.partition")


@dataclass(frozen=True)
class SlurmJob:
    """One array submission: ``tasks`` tasks in all, ``indices`` the ones to run now.

    ``command`` is the extract command a task runs; the script appends
    ``--task $SLURM_ARRAY_TASK_ID/<tasks>``. Task logs go to ``log_dir``, appended across
    requeues. ``workdir`` None leaves out ``--chdir``: the task runs where sbatch was called
    (the ask's script, which names no machine's paths).
    """

    command: tuple[str, ...]
    tasks: int
    indices: tuple[int, ...]
    resources: SlurmResources
    workdir: Path | None
    log_dir: Path
    name: str = "rightsize-extract"

    def __post_init__(self) -> None:
        if self.tasks < 1:
            raise InputError(f"extract.slurm.tasks: must be >= 1, got {self.tasks}")
        if not self.indices:
            raise InputError("slurm job: no task to run")
        bad = [i for i in self.indices if not 0 <= i < self.tasks]
        if bad:
            raise InputError(f"slurm job: task {bad[0]} outside 0..{self.tasks - 1}")
        if not self.command:
            raise InputError("slurm job: empty command")


def check_partition(value: str | None, key: str) -> None:
    """A partition goes on a ``#SBATCH`` line as written: Slurm partition names only (letters,
    digits, ``_ . -``, comma-separated), never a newline, ``#``, space or quote."""
    if value is not None and (not isinstance(value, str) or PARTITION.fullmatch(value) is None):
        raise ParamsError(f"{key}: {value!r} is not a Slurm partition name (letters, digits, "
                          "'_', '.', '-'; several separated by ','); it goes on a #SBATCH line")


def directive_path(path: Path | str, key: str) -> str:
    """``path`` as a ``#SBATCH`` value: as is when plain, else double-quoted (spaces, ``#``,
    ``'``). A path sbatch cannot carry is a ParamsError naming ``key``: a newline or control
    character (it would end the directive, and bash would run the rest as a command), ``"``
    or a backslash (sbatch's own quoting), ``%`` (a file-name pattern in ``--output``)."""
    text = str(path)
    bad = _NO_PATH.search(text)
    if bad is not None:
        raise ParamsError(f"{key}: {text!r} cannot go on a #SBATCH line (it holds "
                          f"{bad.group()!r}); choose a path without newlines, control "
                          "characters, quotes, backslashes or '%'")
    return text if _PLAIN_PATH.fullmatch(text) else f'"{text}"'


def time_limit_s(predicted_task_s: float, factor: float = TIME_FACTOR,
                 pad_s: float = TIME_PAD_S) -> float:
    """``--time`` in seconds for a task predicted to take at most ``predicted_task_s``."""
    if not 0 <= predicted_task_s <= MAX_TIME_S:
        raise InputError(f"predicted task time: must be >= 0 s and finite, got "
                         f"{predicted_task_s}")
    return factor * predicted_task_s + pad_s


def slurm_time(seconds: float) -> str:
    """Seconds as Slurm's ``D-HH:MM:SS``, rounded up to the minute Slurm counts in."""
    minutes = max(1, math.ceil(seconds / 60.0))
    days, rest = divmod(minutes, 24 * 60)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00"


def array_spec(indices: Iterable[int]) -> str:
    """Task indices as Slurm's ``--array`` list: runs collapsed, ``0-2,5,7-8``."""
    runs: list[list[int]] = []
    for i in sorted(set(indices)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in runs]
    return ",".join(parts)


def job_script(job: SlurmJob) -> str:
    """The ``sbatch`` script for ``job``: directives, then one ``exec`` of the task command.

    Every value is checked or quoted: a path on a directive by :func:`directive_path`, the
    partition by :func:`check_partition`, the command by ``shlex.join``."""
    r = job.resources
    check_partition(r.partition, "extract.slurm.partition")
    logs = directive_path(job.log_dir, "--out")
    output = f'"{logs[1:-1]}/task_%a.log"' if logs.startswith('"') else f"{logs}/task_%a.log"
    lines = [
        "#!/bin/bash",
        f"# rightsize extract as a Slurm array: {job.tasks} task(s), one contiguous shard range "
        "each;",
        "# a killed or requeued task redoes only its missing shards (docs/extract_slurm.md).",
        f"#SBATCH --job-name={job.name}",
        f"#SBATCH --array={array_spec(job.indices)}",
        f"#SBATCH --cpus-per-task={r.cpus_per_task}",
        f"#SBATCH --mem={r.mem_mb}M",
        f"#SBATCH --time={slurm_time(r.time_s)}",
    ]
    if r.gpus_per_task > 0:
        lines.append(f"#SBATCH --gres=gpu:{r.gpus_per_task}")
    if r.partition:
        lines.append(f"#SBATCH --partition={r.partition}")
    lines += [
        "#SBATCH --requeue",
    ]
    if job.workdir is not None:
        lines.append(f"#SBATCH --chdir={directive_path(job.workdir, 'current directory')}")
    lines += [
        f"#SBATCH --output={output}",
        "#SBATCH --open-mode=append",
        "set -euo pipefail",
        'export OMP_NUM_THREADS="${SLURM_CPUS_PER_TASK:-1}"',
        'echo "rightsize: task ${SLURM_ARRAY_TASK_ID} of job ${SLURM_ARRAY_JOB_ID:-?}'
        ' on $(hostname), restart ${SLURM_RESTART_COUNT:-0}"',
        f"exec {shlex.join(job.command)} --task \"${{SLURM_ARRAY_TASK_ID}}/{job.tasks}\"",
    ]
    return "\n".join(lines) + "\n"


def _run(argv: Sequence[str], what: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=120,
                              check=False)
    except FileNotFoundError:
        raise SchedulerError(f"{what}: {argv[0]} not found on PATH (is the Slurm client "
                             f"installed?)") from None
    except subprocess.TimeoutExpired:
        raise SchedulerError(f"{what}: {argv[0]} did not answer within 120 s") from None


def _message(proc: subprocess.CompletedProcess[str]) -> str:
    text = " ".join((proc.stderr or proc.stdout or "").split())
    return text or f"exit status {proc.returncode}, no message"


def submit(script: Path) -> str:
    """Submit ``script`` with ``sbatch --parsable``; return the array's job id.

    Raises :class:`SchedulerError` with the scheduler's own message when sbatch refuses it.
    """
    proc = _run(["sbatch", "--parsable", str(script)], "sbatch")
    if proc.returncode != 0:
        raise SchedulerError(f"sbatch {script}: {_message(proc)}")
    job_id = proc.stdout.strip().split(";")[0]
    if not job_id.isdigit():
        raise SchedulerError(f"sbatch {script}: unexpected answer {proc.stdout.strip()!r}")
    return job_id


def queued_states(job_id: str) -> dict[str, str]:
    """The array's tasks still in the queue (pending, running, requeued...): id -> state."""
    proc = _run(["squeue", "-h", "-r", "-j", job_id, "-o", "%i %T"], "squeue")
    if proc.returncode != 0:
        if "Invalid job id" in (proc.stderr or ""):
            return {}   # purged from the controller: the array is over
        raise SchedulerError(f"squeue -j {job_id}: {_message(proc)}")
    states = {}
    for line in proc.stdout.splitlines():
        fields = line.split()
        if len(fields) == 2:
            states[fields[0]] = fields[1]
    return states


def wait(job_id: str, poll_s: float = 10.0,
         on_change: Callable[[dict[str, str]], None] | None = None,
         squeue_retries: int = 3) -> None:
    """Block until no task of array ``job_id`` is queued; ``on_change`` sees each new state.

    A transient ``squeue`` failure (controller restarting) is retried ``squeue_retries``
    times before :class:`SchedulerError`.
    """
    last: dict[str, str] | None = None
    failures = 0
    while True:
        try:
            states = queued_states(job_id)
        except SchedulerError:
            failures += 1
            if failures > squeue_retries:
                raise
            time.sleep(poll_s)
            continue
        failures = 0
        if states != last and on_change is not None:
            on_change(states)
        last = states
        if not states:
            return
        time.sleep(poll_s)


def cancel(job_id: str) -> None:
    """``scancel`` the whole array (used when the waiting process is interrupted)."""
    _run(["scancel", job_id], "scancel")


def run_array(job: SlurmJob, pending_tasks: Callable[[], list[int]], script_path: Path,
              poll_s: float = 10.0,
              on_change: Callable[[dict[str, str]], None] | None = None) -> str:
    """Submit ``job``, wait for the array to leave the queue, check its shards; the job id.

    The script is written to ``script_path`` first (it is what ran). ``pending_tasks`` lists
    the tasks whose shard range still has a missing or invalid shard (the caller verifies
    the shards). Raises :class:`SchedulerError` when sbatch refuses the job or tasks left
    shards undone, naming them and their logs. Interrupted while waiting, it cancels the array.
    """
    job.log_dir.mkdir(parents=True, exist_ok=True)
    write_text(script_path, job_script(job))
    job_id = submit(script_path)
    try:
        wait(job_id, poll_s=poll_s, on_change=on_change)
    except BaseException:
        cancel(job_id)
        raise
    left = pending_tasks()
    if left:
        logs = ", ".join(str(job.log_dir / f"task_{i}.log") for i in left[:3])
        raise SchedulerError(
            f"slurm job {job_id}: task(s) {array_spec(left)} of {job.tasks} left shards "
            f"missing or invalid (cancelled, out of time or failed; see {logs}); run the same "
            f"command again to resubmit only those tasks")
    return job_id


def ask_job(ask: Mapping[str, Any], host_cores: int, command: tuple[str, ...],
            log_dir: Path, mem_mb: int = 8192) -> SlurmJob:
    """The array job of the sizing ask (``metrics/sizing.json``'s ``ask``): on GPUs, one task
    per GPU chosen with ``--gres=gpu:1`` and the ask's cores per GPU; on this CPU, one task on
    its cores. ``--time`` is the ask's upper wall clock with the stated margin
    (:func:`time_limit_s`). No ``--chdir``: it names no machine's paths."""
    wall_high = float(ask["option"]["wall_s_high"])
    if ask.get("choice") == "gpu" and ask.get("gpus_chosen"):
        tasks, gpus = int(ask["gpus_chosen"]), 1
        cpus = int((ask.get("gpu") or {}).get("cpu_cores_per_gpu") or 1)
    else:
        tasks, gpus, cpus = 1, 0, max(1, host_cores)
    res = SlurmResources(gpus_per_task=gpus, cpus_per_task=cpus, mem_mb=mem_mb,
                         time_s=time_limit_s(wall_high))
    return SlurmJob(command=command, tasks=tasks, indices=tuple(range(tasks)), resources=res,
                    workdir=None, log_dir=log_dir)
