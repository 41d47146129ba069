"""ETA for a run still going: steps left to a target epoch count, and when they would be done.

Compute left = remaining steps x the last segment's median step time (the hardware the run
is on now); calendar left = compute left x the run's own calendar overhead (calendar / active
hours so far: the run keeps being interrupted and queued as it has been). Both are stamped
with the wall time of the last event read, so a reader knows how fresh the estimate is.
"""

from __future__ import annotations

from typing import Any


def eta(*, target_epochs: int, steps_per_epoch: int, base: int, max_step: int,
        step_s: float | None, step_s_source: str, calendar_overhead: float | None,
        as_of: float | None) -> dict[str, Any]:
    """The ``eta`` block: scalars only, plus the step-time source named in words."""
    target_step = target_epochs * steps_per_epoch + base - 1
    remaining = max(0, target_step - max_step)
    compute = None if step_s is None else remaining * step_s / 3600.0
    calendar = (None if compute is None or calendar_overhead is None
                else compute * calendar_overhead)
    return {
        "target_epochs": target_epochs,
        "target_step": target_step,
        "remaining_steps": remaining,
        "remaining_epochs": remaining / steps_per_epoch,
        "step_time_s": step_s,
        "step_time_from": step_s_source,
        "remaining_compute_hours": compute,
        "remaining_calendar_hours": calendar,
        "as_of_wall_time": as_of,
        "finish_wall_time": (None if calendar is None or as_of is None
                             else as_of + calendar * 3600.0),
    }
