"""Render report blocks to Markdown (figures referenced as ``figures/<name>.png``)."""

from __future__ import annotations

from collections.abc import Sequence

from rightsize.reporting.doc import (
    Block,
    Bullets,
    Figure,
    Heading,
    Note,
    Para,
    Table,
    VerdictItem,
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or " "


def _table(t: Table) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in t.header) + " |",
             "|" + "|".join("---" for _ in t.header) + "|"]
    for row in t.rows:
        cells = list(row) + [""] * (len(t.header) - len(row))
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    if t.caption:
        lines += ["", f"*{t.caption}*"]
    return lines


def render_markdown(blocks: Sequence[Block], figure_dir: str = "figures") -> str:
    """The whole report as Markdown text (ends with one newline)."""
    out: list[str] = []
    prev: Block | None = None
    for b in blocks:
        if isinstance(b, VerdictItem):
            if not isinstance(prev, VerdictItem):
                out.append("")
            out.append(f"- **{b.question}** {b.text}")
            prev = b
            continue
        out.append("")
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + b.text)
        elif isinstance(b, Para):
            out.append(b.text)
        elif isinstance(b, Note):
            out.append(f"> {b.text}")
        elif isinstance(b, Bullets):
            out += [f"- {item}" for item in b.items]
        elif isinstance(b, Table):
            out += _table(b)
        elif isinstance(b, Figure):
            out.append(f"![{b.title}]({figure_dir}/{b.name}.png)")
            if b.caption:
                out += ["", f"*{b.caption}*"]
        prev = b
    return "\n".join(out).strip("\n") + "\n"
