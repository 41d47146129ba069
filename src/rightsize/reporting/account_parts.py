"""The six parts of a run's calendar account as people read them: label, colour, meaning.

The telemetry engine computes the parts (``rightsize.telemetry.account``, keys in the
``account`` block of ``metrics/telemetry/<run>.json``); this is the one place that says
what each part is, for the report's table and figure and for ``rightsize telemetry``'s
text output.
"""

from __future__ import annotations

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
