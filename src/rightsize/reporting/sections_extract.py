"""The ask checked against a run: ``metrics/extract.json`` beside the ask's prediction.

The extract stage writes the ask's predicted range for the records it extracted (the same
arithmetic as the ask's CPU option) and the wall clock it measured; this lays the two side by
side under the sizing section, with each part predicted and measured, and what the features
may be used for (random weights: cost only).
"""

from __future__ import annotations

from typing import Any

from rightsize.reporting.doc import Block, Heading, Note, Para, table
from rightsize.reporting.sources import Source

PART_ORDER = ("compute", "preprocessing", "writing")


def _s(v: Any) -> str:
    return f"{v:,.1f} s" if isinstance(v, int | float) else "-"


def _missed(check: dict[str, Any], pred: dict[str, Any]) -> str:
    """The part furthest outside its own predicted range, by how much, against what."""
    name = check["mispredicted_part"]
    part = (pred.get("parts") or {}).get(name) or {}
    measured = (check.get("parts_measured_s") or {}).get(name)
    ratio = check.get("mispredicted_ratio")
    return (f"The part that missed: {name}, measured {_s(measured)} against "
            f"{_s(part.get('low_s'))} to {_s(part.get('high_s'))} predicted "
            f"({check.get('mispredicted_excess_s') or 0:+,.1f} s"
            + (f", {ratio:.2f}x the nearer end)." if ratio else ", not predicted)."))


def _bench_words(host: dict[str, Any] | None) -> str:
    """Where the bench behind the prediction was measured: this host or another."""
    if not host:
        return "The bench's machine is not recorded."
    if host.get("same") is True:
        return f"The bench was measured on this host: {host.get('words')}."
    if host.get("same") is False:
        return (f"The bench came from another host, {host.get('words')}: re-measure it here "
                f"(dvc repro encoder_bench) before trusting the range.")
    return f"The bench's machine: {host.get('words')}."


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
            text += " " + _missed(check, pred)
        text += " " + _bench_words(check.get("bench_machine") or pred.get("bench_machine"))
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
    start = parts.get("start-up and the rest") or {}
    rows.append(["start-up and the rest",
                 f"{_s(start.get('low_s'))} - {_s(start.get('high_s'))}" if start
                 else "not predicted", _s(d.get("startup_and_other_s"))])
    rows.append(["wall clock", f"{_s(lo)} - {_s(hi)}", _s(wall)])
    blocks.append(table(["part", "the ask predicted", "measured"], rows,
                        "Measured parts are worker seconds over the workers (wall-clock "
                        "equivalents); reading is inside preprocessing; start-up and the "
                        "rest is the wall clock less those parts (workers starting, idle at "
                        "the end of the shard schedule, closing the folder). From "
                        "metrics/extract.json."))
    pilot = d.get("pilot") if isinstance(d.get("pilot"), dict) else {}
    words = pilot.get("words")
    if isinstance(words, list) and words and all(isinstance(w, str) for w in words):
        blocks.append(Para(
            "This run as a pilot: each scenario of the sizing re-predicted from its measured "
            "seconds per record and start-up, beside the bench's CPU prediction ("
            "`rightsize sizing --pilot metrics/extract.json` prints the Slurm request from "
            "it): " + "; ".join(words) + "."))
    blocks.append(Note(f"Features: {d.get('features', '?')}; "
                       f"{d.get('compute_words') or 'compute dtype: see metrics/extract.json'}."))
    return blocks
