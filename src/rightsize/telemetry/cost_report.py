"""Assemble the cost report of one run (a dict of JSON-ready scalars, lists and blocks).

The rules are those of :mod:`rightsize.telemetry.cost`; projection and MFU come from
:mod:`rightsize.telemetry.projection`. Every headline number is a top-level (or one-level
nested) scalar so DVC's metrics tables show it; lists (``val_curve``, ``segment_table``,
``damage``, ``warnings``) are extras for people and plots (DVC drops them).

Keys: ``step_tag``/``val_tag`` (used); ``step_time_s.{median,p25,p75,n,dropped,logged}``
(kept per-step seconds; ``n + dropped == logged``); ``steps_per_epoch`` (from the val tag's
spacing when it has one, else from records) with ``steps_per_epoch_from_val`` and
``steps_per_epoch_from_records``; ``epoch_hours`` (steps/epoch x median / 3600) and
``gpu_hours_per_epoch``; ``max_step``; ``epochs_run`` (steps done / steps per epoch) and
``val_epochs`` (distinct val points); ``active_hours`` (sum over segments of first to last
logged training step, as the RampNet write-up counts active compute), ``startup_hours`` and
``tail_hours`` (per segment: first event to first step, last step to last event; summed),
``calendar_hours`` (first to last event over all launches) and ``calendar_overhead`` (their
ratio); ``account`` (where every calendar hour went, :mod:`rightsize.telemetry.account`);
``checkpoints`` (restarts, checkpoint interval and write cost, Young/Daly:
:mod:`rightsize.telemetry.checkpoints`); ``epochs_after_best`` and
``compute_hours_after_best``; ``eta`` with a target epoch count (:mod:`rightsize.telemetry.eta`);
``partial_tail_bytes`` (an unfinished last record at the end of the newest file: a live file,
not damage); ``launches``, ``segments``, ``header_only_files``;
``relogged_steps`` (step-tag rows superseded by a later logging of the same step);
``best_epoch``/``best_val``; ``damaged_records``/``damaged_bytes``; the geometry used;
``units_per_s``, ``achieved_tflops_per_gpu`` and ``mfu`` with FLOPs given; ``projection``.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from rightsize.errors import DataError, InputError
from rightsize.telemetry import cost
from rightsize.telemetry.account import Account, account
from rightsize.telemetry.checkpoints import checkpoints
from rightsize.telemetry.eta import eta
from rightsize.telemetry.projection import mfu, projection
from rightsize.telemetry.report_config import CostReportConfig
from rightsize.telemetry.table import FileInfo, Problem, ScalarTable

log = logging.getLogger(__name__)


def cost_reports(table: ScalarTable, cfg: CostReportConfig) -> dict[str, dict[str, Any]]:
    """One report per run in ``table`` (runs with no scalar points at all are skipped)."""
    out = {}
    for run in table.runs:
        if any(f.run == run and f.scalar_points for f in table.files):
            out[run] = cost_report(table, cfg, run)
    if not out:
        raise DataError(f"no scalar points in any of {len(table.files)} event files")
    return out


def _check_tag(tag: str, series: dict[str, cost.Series], flag: str, run: str) -> None:
    if tag not in series:
        raise InputError(f"{flag} {tag}: not a scalar tag of run {run!r} "
                         f"(tags: {', '.join(sorted(series))})")


def cost_report(table: ScalarTable, cfg: CostReportConfig,
                run: str | None = None) -> dict[str, Any]:
    """The cost report of ``run`` (the only run when None); see the module docs for keys."""
    if run is None:
        runs = table.runs
        if len(runs) != 1:
            raise InputError(f"expected one run, found {len(runs)}: {', '.join(runs[:5])}")
        run = runs[0]
    launches = [(i, f) for i, f in enumerate(table.files) if f.run == run]
    if not launches:
        raise InputError(f"run {run!r}: no event files")
    series = cost.run_series(table, run)
    if not series:
        raise DataError(f"run {run!r}: no scalar points in {len(launches)} event files")
    warnings: list[str] = []

    step_tag = cfg.step_tag or cost.pick_step_tag(series)
    _check_tag(step_tag, series, "--step-tag", run)
    if cfg.val_tag:
        _check_tag(cfg.val_tag, series, "--val-tag", run)
    val_tag = cfg.val_tag or cost.pick_val_tag(series, step_tag)
    s = series[step_tag]
    base = cost.step_base(s)

    times = cost.step_times(s, cfg.gap_s)
    q = times.quantiles()
    median = q["median"]
    if median is None:
        warnings.append(f"run {run!r}: no step deltas below gap_s={cfg.gap_s:g} s; "
                        "step time unknown")

    from_records = cost.steps_per_epoch_from_records(cfg.train_records, cfg.global_batch,
                                                     cfg.drop_last)
    from_val = cost.epoch_spacing(series[val_tag].step, base) if val_tag else None
    spe = from_val if from_val is not None else from_records
    if from_val is not None and from_val != from_records:
        warnings.append(
            f"run {run!r}: {val_tag} spacing gives {from_val} steps/epoch but "
            f"{cfg.train_records} records / batch {cfg.global_batch} "
            f"({'drop_last' if cfg.drop_last else 'keep_last'}) gives {from_records}; "
            f"using {from_val}")

    max_step = int(s.step.max())
    epoch_hours = None if median is None else spe * median / 3600.0
    acc = account(launches, s, cfg.gap_s)
    seg_rows = _launch_rows(launches, acc, times)
    active_s = acc.active
    firsts = [f.first_wall_time for _, f in launches if f.first_wall_time is not None]
    lasts = [f.last_wall_time for _, f in launches if f.last_wall_time is not None]
    calendar_s = (max(lasts) - min(firsts)) if firsts and lasts else None
    overhead = calendar_s / active_s if calendar_s is not None and active_s > 0 else None
    if acc.overlap > 1.0:
        warnings.append(f"run {run!r}: segments overlap in time by {acc.overlap / 3600:.3g} h "
                        "(two processes logging at once); the account counts it twice")

    curve, best_epoch, best_val, best_step = _val_curve(series.get(val_tag), base, spe,
                                                        cfg.best)
    damage, partial = _damage(table, launches)
    for p in damage:
        warnings.append(f"{p['file']}: {p['kind']} at byte {p['offset']} "
                        f"({p['bytes_skipped']} bytes skipped)")

    report: dict[str, Any] = {
        "run": run,
        "step_tag": step_tag,
        "val_tag": val_tag,
        "step_time_s": {**q, "n": times.n, "dropped": times.dropped, "logged": times.logged},
        "steps_per_epoch": spe,
        "steps_per_epoch_from_val": from_val,
        "steps_per_epoch_from_records": from_records,
        "epoch_hours": epoch_hours,
        "gpu_hours_per_epoch": None if epoch_hours is None else epoch_hours * cfg.gpus,
        "max_step": max_step,
        "epochs_run": (max_step - base + 1) / spe,
        "val_epochs": len(curve),
        "active_hours": active_s / 3600.0,
        "startup_hours": acc.seconds["startup"] / 3600.0,
        "tail_hours": acc.seconds["tail"] / 3600.0,
        "calendar_hours": None if calendar_s is None else calendar_s / 3600.0,
        "calendar_overhead": overhead,
        "account": acc.hours(),
        "checkpoints": checkpoints(acc, median, max_step),
        "launches": len(launches),
        "segments": sum(1 for r in seg_rows if r["steps"]),
        "header_only_files": sum(1 for _, f in launches if f.header_only),
        "relogged_steps": cost.relogged(s),
        "best_epoch": best_epoch,
        "best_val": best_val,
        "epochs_after_best": (None if best_step is None
                              else (max_step - best_step) / spe),
        "compute_hours_after_best": (None if best_step is None or median is None
                                     else (max_step - best_step) * median / 3600.0),
        "damaged_records": len(damage),
        "partial_tail_bytes": sum(p["bytes_skipped"] for p in partial),
        "damaged_bytes": sum(p["bytes_skipped"] for p in damage),
        "train_records": cfg.train_records,
        "global_batch": cfg.global_batch,
        "gpus": cfg.gpus,
        "drop_last": cfg.drop_last,
        "gap_s": cfg.gap_s,
    }
    if cfg.flops_per_unit is not None and cfg.peak_tflops is not None:
        report.update(mfu(global_batch=cfg.global_batch, gpus=cfg.gpus, median_step_s=median,
                          flops_per_unit=cfg.flops_per_unit, peak_tflops=cfg.peak_tflops))
    if cfg.projection is not None:
        report["projection"] = projection(
            cfg.projection, train_records=cfg.train_records, global_batch=cfg.global_batch,
            gpus=cfg.gpus, drop_last=cfg.drop_last, median_step_s=median,
            calendar_overhead=overhead)
    if cfg.target_epochs is not None:
        last = acc.segments[-1].file if acc.segments else None
        seg_med = None if last is None else times.quantiles(last)["median"]
        report["eta"] = eta(
            target_epochs=cfg.target_epochs, steps_per_epoch=spe, base=base, max_step=max_step,
            step_s=seg_med if seg_med is not None else median,
            step_s_source="last segment's median" if seg_med is not None else "run median",
            calendar_overhead=overhead, as_of=max(lasts) if lasts else None)
    report["val_curve"] = curve
    report["partial_tail"] = partial
    report["segment_table"] = seg_rows
    report["damage"] = damage
    report["warnings"] = warnings
    return report


def _launch_rows(launches: list[tuple[int, FileInfo]], acc: Account,
                 times: cost.StepTimes) -> list[dict[str, Any]]:
    """One row per launch, in file order: its segment of the account, if it logged steps."""
    by_file = {sg.file: sg for sg in acc.segments}
    rows = []
    for i, f in launches:
        sg = by_file.get(i)
        rows.append({
            "file": f.path,
            "host": f.host,
            "pid": f.pid,
            "first_step": None if sg is None else sg.first_step,
            "last_step": None if sg is None else sg.last_step,
            "start_time": f.first_wall_time if sg is None else sg.start,
            "end_time": f.last_wall_time if sg is None else sg.end,
            "first_step_time": None if sg is None else sg.first_wall,
            "last_step_time": None if sg is None else sg.last_wall,
            "steps": 0 if sg is None else sg.points,
            "deltas_kept": int((times.kept & (times.file == i)).sum()),
            "median_step_s": times.quantiles(i)["median"],
            "header_only": f.header_only,
        })
    return rows


def _val_curve(s: cost.Series | None, base: int, spe: int, best: str
               ) -> tuple[list[dict[str, Any]], int | float | None, float | None, int | None]:
    """Val points (one per step, later value wins), and the best epoch, value and step."""
    if s is None or len(s) == 0:
        return [], None, None, None
    steps, values, _ = cost.latest_per_step(s)
    epochs = cost.epoch_of(steps, base, spe)
    curve = [{"epoch": e, "step": int(st), "value": float(v)}
             for e, st, v in zip(epochs, steps, values, strict=True)]
    finite = np.isfinite(values)
    if not finite.any():
        return curve, None, None, None
    masked = np.where(finite, values, np.inf if best == "min" else -np.inf)
    k = int(np.argmin(masked) if best == "min" else np.argmax(masked))
    return curve, epochs[k], float(values[k]), int(steps[k])


def _damage(table: ScalarTable, launches: list[tuple[int, FileInfo]]
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Problems met in this run's files (all problems when the table holds one run), split
    into damage and the partial last record of a live file (see :func:`is_live_tail`)."""
    paths = {f.path for _, f in launches}
    single = len(table.runs) <= 1

    def ours(name: str) -> bool:
        return single or name in paths or any(name.endswith("/" + p) for p in paths)

    damage, partial = [], []
    for p in table.problems:
        if ours(p.file):
            row = {"file": p.file, "offset": p.offset, "kind": p.kind,
                   "bytes_skipped": p.bytes_skipped}
            (partial if is_live_tail(p, launches) else damage).append(row)
    return damage, partial


def live_tails(table: ScalarTable) -> set[tuple[str, int]]:
    """``(file, offset)`` of every problem that is a live file's unfinished last record
    (:func:`is_live_tail`, each file judged within its own run): not damage."""
    run_of = {f.path: f.run for f in table.files}
    launches: dict[str, list[tuple[int, FileInfo]]] = {}
    for i, f in enumerate(table.files):
        launches.setdefault(f.run, []).append((i, f))
    return {(p.file, p.offset) for p in table.problems
            if p.file in run_of and is_live_tail(p, launches[run_of[p.file]])}


def is_live_tail(p: Problem, launches: list[tuple[int, FileInfo]]) -> bool:
    """True for a record cut short at the very end of the run's newest file: the normal end of
    a file still being written, not damage."""
    if p.kind not in ("truncated_header", "truncated_payload") or not launches:
        return False
    newest = launches[-1][1]
    same = p.file == newest.path or p.file.endswith("/" + newest.path)
    return same and p.offset + p.bytes_skipped == newest.size
