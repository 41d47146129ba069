"""Report blocks for where a rescued run's calendar went, and what would have saved the most.

Reads the ``account``, ``checkpoints``, ``epochs_after_best`` and ``eta`` keys of
``metrics/telemetry/<run>.json`` (written by the telemetry stage); computes nothing new.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from rightsize import fmt
from rightsize.account_parts import MEANING, PARTS, checkpoint_notes, checkpoint_rows
from rightsize.fmt import get, num
from rightsize.reporting.doc import Block, Bullets, Note, Para, table
from rightsize.reporting.figures_account import calendar_account


def _utc(t: float | None) -> str:
    if t is None:
        return fmt.DASH
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def account_blocks(run: str, d: dict[str, Any]) -> list[Block]:
    """Figure and table of the account, checkpoint advice, epochs after best, ETA."""
    acc, cal = get(d, "account"), num(d, "calendar_hours")
    if not isinstance(acc, dict):
        return [Note("No calendar account in the telemetry file (written before it existed: "
                     f"dvc repro telemetry@{run}).")]
    blocks: list[Block] = []
    fig = calendar_account(run, acc, cal)
    if fig is not None:
        blocks.append(fig)
    rows = []
    for key, label, _ in PARTS:
        h = num(acc, key)
        share = fmt.DASH if h is None or not cal else f"{100 * h / cal:.1f} %"
        rows.append([label, fmt.hours(h), share, MEANING[key]])
    rows.append(["total", fmt.hours(num(acc, "total")), "", f"calendar: {fmt.hours(cal)}"])
    blocks.append(table(["part", "hours", "share", "what it is"], rows,
                        "The six parts add up to the calendar. Active hours (the published "
                        "definition: first to last logged step per segment, summed) = useful + "
                        "redone + pauses."))
    blocks += checkpoint_blocks(get(d, "checkpoints"))
    after, hours = num(d, "epochs_after_best"), num(d, "compute_hours_after_best")
    if after is not None:
        blocks.append(Para(f"Epochs that mattered: the best val epoch was "
                           f"{fmt.number(num(d, 'best_epoch'))}; {fmt.number(after)} epochs "
                           f"({fmt.hours(hours)} of compute) ran after it."))
    blocks += eta_blocks(get(d, "eta"))
    tail = num(d, "partial_tail_bytes")
    if tail:
        blocks.append(Para(f"Live file: the newest event file ends in an unfinished record "
                           f"({fmt.integer(tail)} bytes), the normal end of a file still being "
                           "written; not counted as damage."))
    return blocks


def checkpoint_blocks(c: Any) -> list[Block]:
    """Preemptions, checkpoint interval and write cost, Young/Daly advice."""
    if not isinstance(c, dict):
        return []
    out: list[Block] = [table(["preemptions and checkpoints", "value"], checkpoint_rows(c),
                              f"Advice: {c.get('advice', fmt.DASH)}.")]
    items = checkpoint_notes(c)
    if items:
        out.append(Bullets(tuple(items)))
    return out


def eta_blocks(e: Any) -> list[Block]:
    """Steps and hours left to the target epoch count, stamped with the last event read."""
    if not isinstance(e, dict):
        return []
    return [Para(
        f"ETA to {fmt.integer(num(e, 'target_epochs'))} epochs, as of "
        f"{_utc(num(e, 'as_of_wall_time'))} (the last event read): "
        f"{fmt.integer(num(e, 'remaining_steps'))} steps left, "
        f"{fmt.hours(num(e, 'remaining_compute_hours'))} of compute at "
        f"{fmt.number(num(e, 'step_time_s'))} s/step ({e.get('step_time_from', fmt.DASH)}), "
        f"about {fmt.hours(num(e, 'remaining_calendar_hours'))} of calendar at the run's own "
        f"overhead: done around {_utc(num(e, 'finish_wall_time'))} (estimate).")]
