"""What is left of a run: which shards are done and which are still to do, for both executors.

:func:`survey` answers read only (the Slurm executor's dry run and its checks while and after
the array runs: a running task's temporary files stay); :func:`make_plan`, the local run's,
takes the folder's lock (:mod:`~rightsize.extraction.run_lock`), surveys and clears what the
run replaces. A shard done under the same fingerprint from the same inputs is kept; anything
else (missing, damaged, edited, other settings, weights or preprocessing, a changed list row
or record file) is redone, and so is a kept shard one of whose bad records now reads, or is
bad for another reason (bad records are tried again on every survey).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rightsize.extraction.config import ExtractConfig
from rightsize.extraction.record_list import RecordList, shard_count, shard_rows, task_shards
from rightsize.extraction.shards import SHARDS, ShardFile, fingerprint, shard_stem, stale_reason


@dataclass
class Plan:
    """This run's shards: those done already and those to do."""

    cfg: ExtractConfig
    records: RecordList
    out: Path
    identity: dict[str, Any]
    shards: int                         # shards in the whole corpus
    mine: range                         # this task's range
    done: dict[int, ShardFile] = field(default_factory=dict)
    todo: list[int] = field(default_factory=list)
    why: dict[int, str] = field(default_factory=dict)   # why each shard to do is redone
    lock: Any = field(default=None, repr=False)  # RunLock: held while the plan lives

    @property
    def want(self) -> dict[str, Any]:
        """The fingerprint a shard must carry to count as done."""
        return fingerprint(self.cfg, self.identity)

    @property
    def todo_sizes(self) -> tuple[int, ...]:
        """Records in each shard to do, in ``todo`` order."""
        n, per = len(self.records), self.cfg.shard_records
        return tuple(len(shard_rows(s, n, per)) for s in self.todo)

    def tasks_left(self, tasks: int) -> tuple[int, ...]:
        """Which of ``tasks`` array tasks (contiguous shard ranges of the corpus) hold a
        shard to do."""
        todo = set(self.todo)
        return tuple(t for t in range(tasks) if todo.intersection(task_shards(t, tasks,
                                                                               self.shards)))


def survey(cfg: ExtractConfig, records: RecordList, out: Path,
           task: tuple[int, int] | None = None, verify_inputs: bool = False) -> Plan:
    """Which shards of task ``task``'s range (the corpus without one) are done and which are
    to do, read only: no lock taken, nothing removed (``verify_inputs``: compare the record
    files' SHA-256, not only their size and ``mtime_ns``)."""
    return _sort(_new_plan(cfg, records, out, task), verify_inputs)


def make_plan(cfg: ExtractConfig, records: RecordList, out: Path,
              task: tuple[int, int] | None, verify_inputs: bool = False) -> Plan:
    """The run's plan: the folder's lock taken, then :func:`survey`'s answer; a killed
    worker's temporary files of the shards to do removed and, while a shard is to do, the
    folder's index, errors table and checksums (they would be stale)."""
    from rightsize.extraction.run_lock import RunLock, check_out_folder

    plan = _new_plan(cfg, records, out, task)
    check_out_folder(out)
    plan.lock = RunLock(out, {**cfg.fingerprint(), "weights": cfg.weights, "root": cfg.root,
                              "records": cfg.records})
    _sort(plan, verify_inputs)
    _remove_temporaries(out, plan.todo)
    if plan.todo:                     # the folder is not complete: no stale index or checksums
        for name in ("SHA256SUMS", "index.parquet", "extract.json", "errors.csv"):
            (out / name).unlink(missing_ok=True)
    return plan


def _new_plan(cfg: ExtractConfig, records: RecordList, out: Path,
              task: tuple[int, int] | None) -> Plan:
    """An empty plan of ``task``'s range, with the weights' identity."""
    from rightsize.encoders.weights import weights_identity

    identity = weights_identity(cfg.size, Path(cfg.weights) if cfg.weights else None, cfg.seed)
    n = shard_count(len(records), cfg.shard_records)
    return Plan(cfg, records, out, identity, n, task_shards(*task, n) if task else range(n))


def _sort(plan: Plan, verify_inputs: bool) -> Plan:
    """Each shard of ``plan.mine`` into ``done`` or ``todo`` (with why)."""
    cfg, records = plan.cfg, plan.records
    for s in plan.mine:
        found, why = stale_reason(plan.out, s, records, cfg, plan.want, verify_inputs)
        if found is not None and found.errors:
            why = _bad_records_changed(found, records, cfg)
            found = None if why else found
        if found is None:
            plan.todo.append(s)
            plan.why[s] = why
        else:
            plan.done[s] = found
    return plan


def _bad_records_changed(found: ShardFile, records: RecordList, cfg: ExtractConfig) -> str:
    """Why a kept shard's bad records no longer hold (one now good, or bad for another
    reason), or "" when each is still bad as recorded: they are tried again, every run."""
    from rightsize.encoders.ecg_files import BadRecord
    from rightsize.encoders.preprocess import model_input
    from rightsize.extraction.worker import geometry_of

    rows = {records.study_id[r]: r
            for r in shard_rows(found.shard, len(records), cfg.shard_records)}
    for e in found.errors:
        row = rows.get(e.get("study_id", ""))
        if row is None:
            return f"bad record {e.get('study_id')} is not in the shard's list rows"
        try:
            model_input(records.file(row), geometry_of(cfg), records.path[row])
        except BadRecord as bad:
            if (bad.reason, bad.detail) != (e.get("reason"), e.get("detail")):
                return f"{records.path[row]}: now {bad.reason} (was {e.get('reason')})"
            continue
        return f"{records.path[row]}: bad before, readable now"
    return ""


def _remove_temporaries(out: Path, todo: list[int]) -> None:
    """A killed worker's temporary files of the shards this run redoes (never another
    task's: only shards of this run's range)."""
    folder = out / SHARDS
    if not folder.is_dir():
        return
    stems = {f".{shard_stem(s)}." for s in todo}
    for p in folder.iterdir():
        if p.name.endswith(".tmp") and any(p.name.startswith(s) for s in stems):
            p.unlink(missing_ok=True)
