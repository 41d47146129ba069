"""The ask checked against a run: ``metrics/extract.json`` beside the ask's prediction.

The extract stage writes the ask's predicted range for the records it extracted (the same
arithmetic as the ask's CPU option) and the wall clock it measured; this lays the two side by
side under the sizing section, with each part predicted and measured, and what the features
may be used for (random weights: cost only).
"""

from __future__ import annotations

from typing import Any

from rightsize.reporting.doc import Block, Heading, Note, Para, table
from rightsize.reporting.load import Source

PART_ORDER = ("compute", "preprocessing", "reading", "writing")


def _s(v: Any) -> str:
    return f"{v:,.1f} s" if isinstance(v, int | float) else "-"


def extract_blocks(src: Source) -> list[Block]:
    """The ask against the extract stage's run."""
    blocks: list[Block] = [Heading("The ask checked: the extraction run beside its prediction",
                                   4, "extract")]
    d = src.data if src.ok else None
    if not isinstance(d, dict) or "wall_s" not in d:
        return blocks + [Note(f"{src.note()} (dvc repro extract).")]
    check = d.get("prediction_check") or {}
    pred = d.get("prediction") or {}
    records, wall = d.get("records"), d.get("wall_s")
    lo, hi = check.get("predicted_wall_s_low"), check.get("predicted_wall_s_high")
    if lo and hi:
        verdict = ("inside the predicted range" if check.get("inside")
                   else f"{check.get('ratio_to_high', 0):.2f}x the slow end"
                   if wall > hi else f"{check.get('ratio_to_low', 0):.2f}x the fast end")
        text = (f"{records} records extracted in {_s(wall)} on {d.get('workers')} worker(s) "
                f"x {d.get('threads_per_worker')} thread(s); the ask predicted "
                f"{_s(lo)} to {_s(hi)} for them: {verdict}.")
        if not check.get("inside") and check.get("mispredicted_part"):
            ratio = check.get("mispredicted_ratio")
            text += (f" The part furthest off: {check['mispredicted_part']}, "
                     f"{check.get('mispredicted_excess_s') or 0:+,.1f} s against its "
                     f"prediction" + (f" ({ratio:.2f}x)." if ratio else " (not predicted)."))
    else:
        text = (f"{records} records extracted in {_s(wall)}; no prediction (the stage ran "
                "without the encoder bench and sizing files).")
    blocks.append(Para(text))
    parts = pred.get("parts") or {}
    measured = d.get("parts_wall_s") or {}
    rows = [[name, f"{_s((parts.get(name) or {}).get('low_s'))} - "
                   f"{_s((parts.get(name) or {}).get('high_s'))}",
             _s(measured.get(name)) if name in measured else "overlapped, not timed apart"]
            for name in PART_ORDER]
    rows.append(["start-up and the rest", "not predicted", _s(d.get("startup_and_other_s"))])
    rows.append(["wall clock", f"{_s(lo)} - {_s(hi)}", _s(wall)])
    blocks.append(table(["part", "the ask predicted", "measured"], rows,
                        "Measured parts are worker seconds over the workers (wall-clock "
                        "equivalents); reading is inside preprocessing. From "
                        "metrics/extract.json."))
    blocks.append(Note(f"Features: {d.get('features', '?')}; bf16 vs float32: "
                       f"{d.get('bf16_vs_float32') or 'see metrics/extract.json'}."))
    return blocks
