"""Report sections for the rescued training runs (``metrics/telemetry/<run>.json``).

Per run: a summary table, where the calendar went (:mod:`sections_account`), the validation
curve with its best epoch, step time per segment, the preemption timeline, the segment table,
damage found and the projection.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from rightsize import fmt
from rightsize.fmt import as_float, get, num
from rightsize.reporting import figures
from rightsize.reporting.doc import Block, Bullets, Heading, Note, Para, labelled, slug, table
from rightsize.reporting.sections_account import account_blocks
from rightsize.reporting.sources import ReportInputs, Source

MAX_DAMAGE_ITEMS = 20


SYNTHETIC_RUN_NOTE = ("Synthetic: the demo_run stage generated this run's event files (a "
                      "preempted 8-GPU run with planted truth in "
                      "data/telemetry/demo.truth.json) to show what rightsize reads from a real "
                      "one. Its hosts, times, hours and GPU-hours describe no real training; "
                      "point rightsize at your own run (rightsize rescue) for yours.")


def run_sections(inputs: ReportInputs, synthetic: tuple[str, ...] = ()) -> list[Block]:
    """All rescued-run sections, one per run named in ``telemetry.runs``; the runs named in
    ``synthetic`` (the demo_run stage's) are labelled synthetic in heading and captions."""
    blocks: list[Block] = [Heading("Telemetry: rescued training runs", 2, "runs", "Telemetry")]
    if not inputs.runs:
        blocks.append(Note("No rescued runs: telemetry.runs in params.yaml names none and "
                           "metrics/telemetry holds no run files."))
    for run in inputs.runs:
        with figures.stamped("synthetic demo run" if run in synthetic else ""):
            section = run_section(run, inputs.telemetry[run], inputs.val_csv[run])
        if run in synthetic:
            head = Heading(f"Run {run} (synthetic demo run)", 3, f"run-{slug(run)}")
            section = [head, Note(SYNTHETIC_RUN_NOTE),
                       *labelled(section[1:], "Synthetic demo run")]
        blocks += section
    return blocks


def run_section(run: str, tel: Source, val_csv: Source) -> list[Block]:
    """Blocks for one rescued run; a missing telemetry file gives a *not run* note."""
    blocks: list[Block] = [Heading(f"Run {run}", 3, f"run-{slug(run)}")]
    if not tel.ok:
        blocks.append(Note(f"{tel.note()} (dvc repro telemetry@{run})."))
        return blocks
    d = tel.data
    blocks.append(summary_table(d))
    blocks += account_blocks(run, d)
    blocks += _val_curve(run, d, val_csv)
    segments = [r for r in (get(d, "segment_table") or []) if isinstance(r, dict)]
    fig = figures.step_time_box(run, segments, get(d, "step_time_s"))
    blocks.append(fig or Note("No step times per segment in the telemetry file."))
    fig = figures.timeline(run, segments, num(d, "active_hours"), num(d, "calendar_hours"))
    blocks.append(fig or Note("No segment start/end times: preemption timeline not drawn."))
    if segments:
        blocks.append(segment_table(segments))
    blocks += damage_blocks(d)
    blocks += projection_blocks(d)
    return blocks


def summary_table(d: dict[str, Any]) -> Any:
    """Key numbers of one run as (quantity, value) rows."""
    st = get(d, "step_time_s") or {}
    active, cal = num(d, "active_hours"), num(d, "calendar_hours")
    ratio = f" (calendar/active = {cal / active:.2f}x)" if active and cal is not None else ""
    mfu = num(d, "mfu")
    mfu_s = fmt.DASH if mfu is None else (
        f"{fmt.number(mfu * 100)} %" if 0 < mfu <= 1 else fmt.number(mfu))
    rows = [
        ["step time, median", f"{fmt.number(num(st, 'median'))} s (p25 "
         f"{fmt.number(num(st, 'p25'))} s, p75 {fmt.number(num(st, 'p75'))} s; "
         f"n = {fmt.integer(num(st, 'n'))} steps)"],
        ["steps per epoch", f"{fmt.integer(num(d, 'steps_per_epoch'))} (from records "
         f"{fmt.integer(num(d, 'steps_per_epoch_from_records'))}, from val spacing "
         f"{fmt.integer(num(d, 'steps_per_epoch_from_val'))})"],
        ["wall-clock per epoch", fmt.hours(num(d, "epoch_hours"))],
        ["GPU-hours per epoch", fmt.number(num(d, "gpu_hours_per_epoch"))],
        ["MFU", mfu_s],
        ["last step / epochs run", f"{fmt.integer(num(d, 'max_step'))} / "
         f"{fmt.number(num(d, 'epochs_run'))}"],
        ["active / calendar hours", f"{fmt.hours(active)} / {fmt.hours(cal)}{ratio}"],
        ["start-up / tail hours", f"{fmt.hours(num(d, 'startup_hours'))} / "
         f"{fmt.hours(num(d, 'tail_hours'))}"],
        ["calendar_overhead (as reported)", fmt.number(num(d, "calendar_overhead"))],
        ["launches / segments / header-only files",
         f"{fmt.integer(num(d, 'launches'))} / {fmt.integer(num(d, 'segments'))} / "
         f"{fmt.integer(num(d, 'header_only_files'))}"],
        ["best epoch (val)", f"{fmt.number(num(d, 'best_epoch'))} "
         f"({fmt.number(num(d, 'best_val'), 4)})"],
        ["damaged records / re-logged steps", f"{fmt.integer(num(d, 'damaged_records'))} / "
         f"{fmt.integer(num(d, 'relogged_steps'))}"],
    ]
    return table(["quantity", "value"], rows, "What the rescued event files say.")


def _val_curve(run: str, d: dict[str, Any], val_csv: Source) -> list[Block]:
    curve = get(d, "val_curve")
    epochs: list[Any] = []
    values: list[Any] = []
    if isinstance(curve, list) and curve:
        epochs = [get(p, "epoch") for p in curve]
        values = [get(p, "value") for p in curve]
    elif val_csv.ok and "epoch" in val_csv.data and "value" in val_csv.data:
        epochs = list(val_csv.data["epoch"])
        values = list(val_csv.data["value"])
    fig = figures.val_curve(run, epochs, values, get(d, "best_epoch"), get(d, "best_val"))
    if fig is None:
        return [Note(f"No validation curve: neither val_curve in the telemetry file nor "
                     f"{val_csv.path} has points.")]
    return [fig]


def _when(t: Any) -> str:
    ts = figures.to_epoch_seconds(t)
    if ts is None:
        return fmt.DASH if t is None else str(t)
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def segment_table(segments: list[dict[str, Any]]) -> Any:
    """One row per segment: file, host, pid, steps, times, median step time."""
    rows = []
    for i, r in enumerate(segments, start=1):
        a = figures.to_epoch_seconds(r.get("start_time"))
        b = figures.to_epoch_seconds(r.get("end_time"))
        dur = fmt.hours((b - a) / 3600) if a is not None and b is not None else fmt.DASH
        first, last = as_float(r.get("first_step")), as_float(r.get("last_step"))
        steps_range = (f"{fmt.integer(first)}-{fmt.integer(last)}" if first is not None
                       else "none (header only)" if r.get("header_only") else fmt.DASH)
        med = as_float(r.get("median_step_s"))
        rows.append([str(i), str(r.get("host", fmt.DASH)), str(r.get("pid", fmt.DASH)),
                     steps_range, fmt.integer(as_float(r.get("steps"))),
                     _when(r.get("start_time")), _when(r.get("end_time")), dur,
                     fmt.DASH if med is None else f"{fmt.number(med)} s",
                     str(r.get("file", fmt.DASH)).rsplit("/", 1)[-1]])
    return table(["#", "host", "pid", "steps (first-last)", "steps", "start (UTC)", "end (UTC)",
                  "duration", "median step", "event file"], rows,
                 "One row per launch (event file).")


def damage_blocks(d: dict[str, Any]) -> list[Block]:
    """Damaged regions found while reading, one bullet each (capped)."""
    damage = get(d, "damage")
    if not isinstance(damage, list) or not damage:
        return [Para("Damage: none reported by the telemetry stage.")]
    items = []
    for item in damage[:MAX_DAMAGE_ITEMS]:
        if isinstance(item, dict) and {"file", "kind"} <= set(item):
            items.append(f"{item['file']}: {item['kind']} at byte {item.get('offset', '?')} "
                         f"({item.get('bytes_skipped', '?')} bytes skipped)")
        else:
            items.append(json.dumps(item, sort_keys=True) if not isinstance(item, str) else item)
    if len(damage) > MAX_DAMAGE_ITEMS:
        items.append(f"... and {len(damage) - MAX_DAMAGE_ITEMS} more")
    return [Para(f"Damage: {len(damage)} damaged region(s) skipped:"), Bullets(tuple(items))]


def projection_blocks(d: dict[str, Any]) -> list[Block]:
    """The projection: one row per schedule (epochs x compute / GPU / calendar hours)."""
    proj = get(d, "projection")
    schedules = get(proj, "schedules")
    if not isinstance(schedules, list) or not schedules:
        return [Note("No projection configured for this run (telemetry.runs.<run>.records).")]
    rows = [[fmt.number(num(s, "epochs")), fmt.hours(num(s, "compute_hours")),
             fmt.number(num(s, "gpu_hours")), fmt.hours(num(s, "calendar_hours"))]
            for s in schedules]
    caption = (f"Projection at {fmt.integer(num(proj, 'records'))} records: "
               f"{fmt.integer(num(proj, 'steps_per_epoch'))} steps/epoch, "
               f"{fmt.hours(num(proj, 'hours_per_epoch'))} per epoch (calendar hours as projected "
               "by the telemetry stage).")
    return [table(["epochs", "compute (wall-clock)", "GPU-hours", "calendar"], rows, caption)]
