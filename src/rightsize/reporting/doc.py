"""The report as a list of blocks, rendered the same way to Markdown and to HTML.

Sections build blocks; :mod:`render_md` and :mod:`render_html` turn them into text. Text in
blocks is plain (renderers escape it); figures carry their PNG bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Heading:
    """A section heading; ``anchor`` is the id used by the HTML table of contents."""

    text: str
    level: int = 2
    anchor: str = ""
    nav: str = ""                 # short label in the HTML table of contents (else ``text``)


@dataclass(frozen=True)
class Para:
    """A paragraph of plain text."""

    text: str


@dataclass(frozen=True)
class Note:
    """A highlighted remark, e.g. a section whose input was not run."""

    text: str


@dataclass(frozen=True)
class Bullets:
    """A bulleted list of plain-text items."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """A table of already formatted cells (first column is the row label)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str = ""


@dataclass(frozen=True)
class Figure:
    """A PNG figure: ``name`` is the file stem under ``figures/``."""

    name: str
    title: str
    png: bytes
    caption: str = ""


@dataclass(frozen=True)
class VerdictItem:
    """One verdict line: the question in bold, then the answer with its measurement."""

    question: str
    text: str


Block = Heading | Para | Note | Bullets | Table | Figure | VerdictItem


def table(header: list[str] | tuple[str, ...], rows: list[list[str]] | list[tuple[str, ...]],
          caption: str = "") -> Table:
    """Build a :class:`Table` from lists (cells converted to ``str``)."""
    return Table(tuple(str(h) for h in header),
                 tuple(tuple(str(c) for c in r) for r in rows), caption)


def labelled(blocks: list[Block], label: str) -> list[Block]:
    """``blocks`` with ``label`` leading every figure's title and caption and every table's
    caption, so each still says what its data are when read on its own."""
    out: list[Block] = []
    for b in blocks:
        if isinstance(b, Figure):
            b = replace(b, title=f"{b.title} ({label.lower()})",
                        caption=f"{label}. {b.caption}".strip())
        elif isinstance(b, Table):
            b = replace(b, caption=f"{label}. {b.caption}".strip())
        out.append(b)
    return out


def slug(text: str) -> str:
    """Anchor id from heading text (lowercase letters, digits and dashes)."""
    out = "".join(c.lower() if c.isalnum() else "-" for c in text)
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-") or "section"
