"""Run a plan's shards on local worker processes (the plan, what is left:
:mod:`~rightsize.extraction.plan`).

Workers are processes, each with the model built once and torch on ``threads_per_worker``
threads; shards go to them in order. The first bad record (without ``skip_bad``) stops the
run: shards already being written finish, nothing written is lost, and
:class:`~rightsize.errors.DataError` names the record.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rightsize.errors import DataError
from rightsize.extraction.config import ExtractConfig
from rightsize.extraction.plan import Plan
from rightsize.extraction.record_list import RecordList
from rightsize.extraction.shards import ShardFile


@dataclass
class RunStats:
    """What the workers measured: seconds per part summed over workers, peak RSS per worker."""

    times: dict[int, dict[str, float]] = field(default_factory=dict)
    peak_rss_mb: dict[int, float] = field(default_factory=dict)
    hosts: dict[int, str] = field(default_factory=dict)
    bf16_check: dict[str, Any] | None = None     # the first worker's bf16 vs float32 batch

    def total(self, part: str) -> float:
        """``part`` seconds summed over the workers."""
        return sum(t.get(part, 0.0) for t in self.times.values())


def default_workers(cfg: ExtractConfig) -> int:
    """``extract.workers``, or one per ``threads_per_worker`` cores."""
    if cfg.workers:
        return cfg.workers
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) // cfg.threads_per_worker)


# -- worker processes -------------------------------------------------------------------------
_STATE: dict[str, Any] = {}
PR_SET_PDEATHSIG = 1          # <linux/prctl.h>
POLL_S = 0.5                  # seconds between the parent's reads of the records-done counter


def _die_with_parent(parent: int) -> None:
    """Linux: have the kernel SIGKILL this worker when the process that started it dies, by
    ``kill -9`` too (``prctl(PR_SET_PDEATHSIG)``), so no worker, and so no multiprocessing
    resource tracker waiting on the workers, outlives an extraction killed outright."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:               # the parent died before prctl: go now
        os._exit(1)


def _init(cfg: ExtractConfig, records: RecordList, out: Path, events: Path | None,
          rank_base: int, counter: Any, parent: int = 0, done: Any = None) -> None:
    from rightsize.encoders.worker_process import exit_without_teardown

    _die_with_parent(parent or os.getppid())
    exit_without_teardown()
    with counter.get_lock():
        rank = rank_base + counter.value
        counter.value += 1
    _STATE["args"] = (cfg, records, out, rank, events)
    _STATE["done"] = done


def _run(shard: int) -> tuple[ShardFile, int, str, dict[str, float], float,
                             dict[str, Any] | None]:
    """One shard in a worker process; the model is built on the first call, so an error
    there (weights that do not fit) reaches the parent as itself, not a broken pool."""
    from rightsize.extraction.worker import run_shard, start_worker
    from rightsize.measure import peak_rss_mb

    if "worker" not in _STATE:
        _STATE["worker"] = start_worker(*_STATE["args"])
        if _STATE.get("done") is not None:
            _STATE["worker"].on_inputs = _Count(_STATE["done"])
    state = _STATE["worker"]
    written = run_shard(state, shard)
    return (written, state.rank, state.host, dict(state.times), peak_rss_mb(),
            state.bf16_check)


class BadRecordError(DataError):
    """The run stopped at a bad record; ``error`` is its errors-table row."""

    def __init__(self, message: str, error: dict[str, str]) -> None:
        super().__init__(message)
        self.error = error


def _bad(exc: BaseException) -> BadRecordError:
    from rightsize.extraction.worker import StopOnBadRecord

    assert isinstance(exc, StopOnBadRecord)
    e = exc.error
    return BadRecordError(f"{e['path']}: {e['reason']}: {e['detail']} (record "
                          f"{e['study_id']}, list row {exc.row + 1}); rerun with --skip-bad "
                          "to list every bad record in errors.csv and go on", e)


class _Count:
    """Adds each batch's input count to a counter the workers share with the parent."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared

    def __call__(self, inputs: int) -> None:
        with self.shared.get_lock():
            self.shared.value += inputs


class _Records:
    """In this process: each batch's input count turned into records done for the caller."""

    def __init__(self, crops: int, on_records: Callable[[int], None]) -> None:
        self.crops, self.on_records, self.inputs = crops, on_records, 0

    def __call__(self, inputs: int) -> None:
        self.inputs += inputs
        self.on_records(self.inputs // self.crops)


def run_local(plan: Plan, workers: int, events: Path | None, rank_base: int,
              on_shard: Callable[[ShardFile], None],
              on_records: Callable[[int], None] | None = None) -> RunStats:
    """Run ``plan.todo`` on ``workers`` processes (in this process when one);
    ``on_records`` is told the records done so far (encoded, or bad with ``skip_bad``)
    after each batch, polled every :data:`POLL_S` seconds from worker processes."""
    from rightsize.extraction.worker import StopOnBadRecord

    stats = RunStats()
    if not plan.todo:
        return stats
    if workers <= 1 or len(plan.todo) == 1:
        from rightsize.extraction.worker import run_shard, start_worker
        from rightsize.measure import peak_rss_mb

        state = start_worker(plan.cfg, plan.records, plan.out, rank_base, events)
        if on_records is not None:
            state.on_inputs = _Records(plan.cfg.crops_per_record, on_records)
        try:
            for s in plan.todo:
                try:
                    written = run_shard(state, s)
                except StopOnBadRecord as exc:
                    raise _bad(exc) from None
                stats.times[state.rank] = dict(state.times)
                stats.bf16_check = stats.bf16_check or state.bf16_check
                stats.peak_rss_mb[state.rank] = peak_rss_mb()
                stats.hosts[state.rank] = state.host
                on_shard(written)
        finally:
            if state.events is not None:
                state.events.close()
        return stats
    return _run_pool(plan, workers, events, rank_base, on_shard, stats, on_records)


def _run_pool(plan: Plan, workers: int, events: Path | None, rank_base: int,
              on_shard: Callable[[ShardFile], None], stats: RunStats,
              on_records: Callable[[int], None] | None = None) -> RunStats:
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    from rightsize.extraction.worker import StopOnBadRecord

    ctx = mp.get_context("spawn")          # no fork of a parent holding threads
    counter = ctx.Value("i", 0)
    done = ctx.Value("q", 0) if on_records is not None else None   # inputs encoded
    crops = plan.cfg.crops_per_record
    first_bad: StopOnBadRecord | None = None
    with ProcessPoolExecutor(max_workers=min(workers, len(plan.todo)), mp_context=ctx,
                             initializer=_init,
                             initargs=(plan.cfg, plan.records, plan.out, events, rank_base,
                                       counter, os.getpid(), done)) as pool:
        futures = [pool.submit(_run, s) for s in plan.todo]
        order = {fut: i for i, fut in enumerate(futures)}
        pending = set(futures)
        try:
            while pending:
                finished, pending = wait(pending, POLL_S if done is not None else None,
                                         FIRST_COMPLETED)
                if on_records is not None and done is not None:
                    on_records(done.value // crops)
                for fut in sorted(finished, key=order.__getitem__):
                    if fut.cancelled():              # after a bad record: not run
                        continue
                    try:
                        written, rank, host, times, rss, bf16 = fut.result()
                    except StopOnBadRecord as exc:
                        if first_bad is None or exc.row < first_bad.row:
                            first_bad = exc
                        for other in futures:
                            other.cancel()
                        continue
                    stats.times[rank], stats.peak_rss_mb[rank] = times, rss
                    stats.hosts[rank] = host
                    stats.bf16_check = stats.bf16_check or bf16
                    on_shard(written)
        except BaseException:
            for other in futures:
                other.cancel()
            raise
    if first_bad is not None:
        raise _bad(first_bad)
    return stats


def wall_clock() -> float:
    """Seconds on a monotonic clock (the run's wall clock is measured with it)."""
    return time.perf_counter()
