"""Report section and verdict for the re-extraction sizing (``metrics/sizing.json``).

The sizing stage writes its own words into the JSON (``text``: the short answer, the ask
sentence, tables and notes); this section only lays them out: the ask (the cheapest option
within the deadline), the scenarios with their sources on this machine's CPU and on K GPUs,
the layers kept and their bytes, what each encoder was measured on, and the notes (dtype
caveat, where the disk was measured, geometry and its sources, prices when set).
"""

from __future__ import annotations

from typing import Any

from rightsize.reporting.doc import Block, Bullets, Heading, Note, Para, table
from rightsize.reporting.provenance import caveat
from rightsize.reporting.sources import Source

OLD_FORMAT = "metrics/sizing.json is not a measured sizing (old format?): dvc repro sizing."


def _text(d: Any) -> dict[str, Any] | None:
    text = d.get("text") if isinstance(d, dict) else None
    if (isinstance(text, dict) and isinstance(text.get("ask"), str)
            and isinstance(text.get("answer"), str) and isinstance(text.get("tables"), list)):
        return text
    return None


def sizing_answer(src: Source) -> tuple[str, str]:
    """(short answer, sentence) for the verdict list."""
    if not src.ok:
        return "not run", src.note().rstrip(".") + "."
    text = _text(src.data)
    if text is None:
        return "unreadable", OLD_FORMAT
    elsewhere = caveat(src.data, "These sizing figures")
    return text["answer"], text["ask"] + (f" {elsewhere}" if elsewhere else "")


def sizing_blocks(src: Source) -> list[Block]:
    """The sizing section: the ask, then the stage's tables and notes as it wrote them."""
    blocks: list[Block] = [Heading("Re-extraction sizing: cheapest hardware first", 3,
                                   "sizing")]
    if not src.ok:
        return blocks + [Note(f"{src.note()} (dvc repro sizing).")]
    text = _text(src.data)
    if text is None:
        return blocks + [Note(OLD_FORMAT)]
    blocks.append(Para(f"The ask: {text['ask']}"))
    elsewhere = caveat(src.data, "The ask's figures, the disk's included,")
    if elsewhere:
        blocks.append(Note(elsewhere))
    for t in text["tables"]:
        blocks.append(table(t["header"], t["rows"], t.get("caption", "")))
    if text.get("notes"):
        blocks.append(Bullets(tuple(text["notes"])))
    return blocks
