"""Render report blocks to Markdown (figures referenced as ``figures/<name>.png``).

Text in blocks is plain: every ``<`` is written as ``&lt;``, so nothing a run name, a file
name or a metrics value carries can open an HTML tag (``<script>``) or an autolink in the
rendered page; it reads the same.
"""

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


def esc(text: str) -> str:
    """``text`` for Markdown: ``<`` as ``&lt;`` (no raw HTML)."""
    return text.replace("<", "&lt;")


def _cell(text: str) -> str:
    return esc(text).replace("|", "\\|").replace("\n", " ") or " "


def _table(t: Table) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in t.header) + " |",
             "|" + "|".join("---" for _ in t.header) + "|"]
    for row in t.rows:
        cells = list(row) + [""] * (len(t.header) - len(row))
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    if t.caption:
        lines += ["", f"*{esc(t.caption)}*"]
    return lines


def render_markdown(blocks: Sequence[Block], figure_dir: str = "figures") -> str:
    """The whole report as Markdown text (ends with one newline)."""
    out: list[str] = []
    prev: Block | None = None
    for b in blocks:
        if isinstance(b, VerdictItem):
            if not isinstance(prev, VerdictItem):
                out.append("")
            out.append(f"- **{esc(b.question)}** {esc(b.text)}")
            prev = b
            continue
        out.append("")
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + esc(b.text))
        elif isinstance(b, Para):
            out.append(esc(b.text))
        elif isinstance(b, Note):
            out.append(f"> {esc(b.text)}")
        elif isinstance(b, Bullets):
            out += [f"- {esc(item)}" for item in b.items]
        elif isinstance(b, Table):
            out += _table(b)
        elif isinstance(b, Figure):
            out.append(f"![{esc(b.title)}]({figure_dir}/{b.name}.png)")
            if b.caption:
                out += ["", f"*{esc(b.caption)}*"]
        prev = b
    return "\n".join(out).strip("\n") + "\n"
