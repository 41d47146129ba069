"""A run's calendar account and checkpoint advice as people read them, worded once.

The telemetry engine computes them (``rightsize.telemetry.account`` and ``.checkpoints``:
the ``account`` and ``checkpoints`` blocks of ``metrics/telemetry/<run>.json``); this is
the one place that says what each account part is and words the checkpoint rows, for the
report's tables and figure and for ``rightsize telemetry``'s text output.
"""

from __future__ import annotations

from typing import Any

from rightsize import fmt
from rightsize.fmt import num

PARTS = (                     # (key, label, colour): the figure's bars and the table's rows
    ("useful_steps", "useful steps", "#2ca02c"),
    ("redone_steps", "redone after restarts", "#d62728"),
    ("in_segment_pauses", "pauses in a launch (val, stalls)", "#ff7f0e"),
    ("startup", "launch start-up", "#9467bd"),
    ("tail", "after last step", "#8c564b"),
    ("waiting", "waiting between launches", "#7f7f7f"),
)
MEANING = {                   # what each part is, in words
    "useful_steps": "steps that advanced training for the first time",
    "redone_steps": "steps run again after a restart (work since the last checkpoint lost)",
    "in_segment_pauses": "step gaps >= gap_s inside a launch: validation passes and stalls",
    "startup": "per launch, first event (file header) to first training step",
    "tail": "per launch, last training step to last event",
    "waiting": "end of one launch to start of the next, dead launches included",
}


def checkpoint_rows(c: dict[str, Any]) -> list[list[str]]:
    """(label, value) rows of the ``checkpoints`` block: the report's table and the CLI's."""
    return [
        ["restarts", fmt.integer(num(c, "restarts"))],
        ["mean active hours between interruptions",
         fmt.hours(num(c, "mean_hours_between_interruptions"))],
        ["steps lost per restart (mean)", fmt.number(num(c, "lost_steps_per_restart"))],
        ["checkpoint interval used (from resumes / from slow steps)",
         f"{fmt.integer(num(c, 'checkpoint_interval_steps'))} steps "
         f"({fmt.integer(num(c, 'checkpoint_interval_from_resumes'))} / "
         f"{fmt.integer(num(c, 'checkpoint_interval_from_step_times'))})"],
        ["checkpoint write cost (median extra time of the step after one)",
         f"{fmt.seconds(num(c, 'checkpoint_write_s'))} "
         f"({fmt.integer(num(c, 'checkpoint_writes_seen'))} writes seen)"],
        ["Young/Daly interval", f"{fmt.number(num(c, 'young_daly_steps'))} steps "
         f"({fmt.hours(num(c, 'young_daly_hours'))})"],
        ["redone steps + writes at the interval used / at Young/Daly",
         f"{fmt.hours(num(c, 'overhead_hours_at_interval'))} / "
         f"{fmt.hours(num(c, 'overhead_hours_at_young_daly'))}"],
    ]


def checkpoint_notes(c: dict[str, Any]) -> list[str]:
    """The block's notes, then the Young/Daly assumptions when it gave an interval."""
    items = [str(n) for n in c.get("notes") or []]
    if num(c, "young_daly_steps") is not None:
        items.append(f"Assumptions: {c.get('assumptions', fmt.DASH)}; "
                     "tau = sqrt(2 x write cost x mean time between interruptions).")
    return items
