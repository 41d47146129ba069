"""After a run: close the folder when every shard is done, and the run's metrics.

One metrics function for both executors. A local run's hold what was done (records, shards
done now and reused), the wall clock, each part's seconds as the workers measured them
(reading + preprocessing, compute, writing; per worker and as wall-clock equivalents over
the workers), peak RSS per worker, what the features may be used for; a Slurm array's hold
its job, tasks and time limit, the records it was given and the wall clock from submission
to the array's end. The verb sets the ask's prediction beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rightsize.extraction.config import ExtractConfig
from rightsize.extraction.finalize import finalize
from rightsize.extraction.plan import Plan
from rightsize.extraction.run import RunStats
from rightsize.extraction.shards import read_done

NOT_BF16 = "not measured: the run computed in float32"
PART_OF = {"read_preprocess_s": "preprocessing", "compute_s": "compute", "write_s": "writing"}


def description(plan: Plan) -> dict[str, Any]:
    """What the folder holds and how it was made (extract.json, without counts)."""
    from rightsize.encoders.models import conv_lengths
    from rightsize.encoders.preprocess import STEPS
    from rightsize.extraction.worker import geometry_of

    cfg, g = plan.cfg, geometry_of(plan.cfg)
    return {"model": f"HuBERT-ECG {cfg.size}", "layers": list(cfg.stored_layers),
            "embedding_column": f"hidden state {max(cfg.layers)}",
            "other_layer_columns": [f"layer_{k}" for k in cfg.stored_layers[:-1]],
            "dtype": cfg.dtype, "tokens_per_record":
            conv_lengths(g.input_samples)[-1] * g.crops_per_record,
            "crops_per_record": g.crops_per_record, "shard_records": cfg.shard_records,
            "preprocessing": STEPS, "weights": plan.identity["weights"],
            "weights_files": plan.identity["files"], "seed": plan.identity["seed"],
            "features": plan.identity["features"], "record_list": str(plan.records.source)}


def close_if_complete(plan: Plan) -> dict[str, Any] | None:
    """Finalize the folder when every shard of the corpus is done (other tasks' included);
    return its counts, or None while some shard is missing."""
    done = dict(plan.done)
    for s in range(plan.shards):
        if s not in done:
            found = read_done(plan.out, s, plan.records, plan.cfg, plan.want)
            if found is None:
                return None
            done[s] = found
    return finalize(plan.out, plan.cfg, plan.records, done, plan.shards, description(plan))


@dataclass(frozen=True)
class LocalRun:
    """What the local executor ran: its workers' measurements, how many, which task."""

    stats: RunStats
    workers: int
    task: tuple[int, int] | None = None


@dataclass(frozen=True)
class ArrayRun:
    """What the Slurm executor ran: the array job (``job_id`` None: nothing submitted), its
    task count, the tasks submitted, their time limit and where their logs are."""

    job_id: str | None
    tasks: int
    submitted: tuple[int, ...]
    time_limit_s: float | None
    task_logs: str


def run_metrics(plan: Plan, ran: LocalRun | ArrayRun, wall_s: float, records: int,
                counts: dict[str, Any] | None) -> dict[str, Any]:
    """The detail JSON of one run (docs/outputs.md), either executor's: ``records`` done in
    ``wall_s`` seconds, ``counts`` the closed folder's (None: not complete)."""
    if isinstance(ran, ArrayRun):
        return {"executor": "slurm", "job_id": ran.job_id, "tasks": ran.tasks,
                "tasks_submitted": list(ran.submitted), "time_limit_s": ran.time_limit_s,
                "records": records, "records_in_corpus": len(plan.records),
                "shards_in_corpus": plan.shards, "wall_s": wall_s,
                "records_per_s": records / wall_s if ran.job_id and wall_s > 0 else None,
                "features": plan.identity["features"], "complete": counts is not None,
                "counts": counts, "task_logs": ran.task_logs}
    return _local_metrics(plan, ran, wall_s, records, counts)


def _local_metrics(plan: Plan, ran: LocalRun, wall_s: float, records: int,
                   counts: dict[str, Any] | None) -> dict[str, Any]:
    """The local executor's detail JSON: the workers' parts, peak RSS and hardware too."""
    from rightsize.measure import hardware_stamp, peak_rss_mb

    cfg, stats, workers, task = plan.cfg, ran.stats, ran.workers, ran.task
    n_workers = max(len(stats.times), 1)
    per_part = {PART_OF[k]: stats.total(k) for k in PART_OF}
    as_wall = {k: v / n_workers for k, v in per_part.items()}
    other = max(wall_s - sum(as_wall.values()), 0.0)
    out: dict[str, Any] = {
        "records": records, "records_in_corpus": len(plan.records),
        "shards_run": len(plan.todo), "shards_reused": len(plan.done) - len(plan.todo),
        "shards_in_corpus": plan.shards, "task": None if task is None else f"{task[0]}/{task[1]}",
        "workers": workers, "threads_per_worker": cfg.threads_per_worker,
        "batch_size": cfg.batch_size, "shard_records": cfg.shard_records,
        "crops_per_record": cfg.crops_per_record, "shard_sizes": list(plan.todo_sizes),
        "device": cfg.device, "model": f"HuBERT-ECG {cfg.size}",
        "layers": list(cfg.stored_layers), "dtype": cfg.dtype,
        "wall_s": wall_s, "records_per_s": records / wall_s if wall_s > 0 else None,
        "parts_worker_s": per_part, "parts_wall_s": as_wall,
        "startup_and_other_s": other,
        "peak_rss_mb": {"parent": peak_rss_mb(),
                        **{f"rank{r}": v for r, v in sorted(stats.peak_rss_mb.items())}},
        "peak_rss_mb_max_worker": max(stats.peak_rss_mb.values(), default=None),
        "features": plan.identity["features"],
        "compute_dtype": compute_dtype_of(cfg),
        "bf16_vs_float32": stats.bf16_check or NOT_BF16,
        "compute_words": compute_words(cfg, stats.bf16_check),
        "complete": counts is not None, "counts": counts,
        "hardware": hardware_stamp(threads=cfg.threads_per_worker * workers,
                                   device=cfg.device),
    }
    return out


def compute_dtype_of(cfg: ExtractConfig) -> dict[str, str]:
    """``extract.compute_dtype`` as resolved on this machine, with what was asked and why."""
    from rightsize.encoders.compute_dtype import resolve

    return resolve(cfg.compute_dtype, cfg.device).as_dict()


def compute_words(cfg: ExtractConfig, check: dict[str, Any] | None) -> str:
    """The dtype the forwards ran in, why, and (bf16) how far the stored states moved."""
    from rightsize.encoders.compute_dtype import difference_text

    chosen = compute_dtype_of(cfg)
    words = f"computed in {chosen['dtype']} ({chosen['requested']}: {chosen['why']})"
    if check:
        words += "; " + difference_text(check, cfg.stored_layers) + " (every hidden state: "\
                 "bf16_vs_float32 in the metrics JSON)"
    return words
