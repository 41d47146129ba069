"""Render report blocks to ONE self-contained HTML page.

Figures are embedded as base64 PNG data URIs, the CSS is inline, there is no script and
no external URL: the page opens offline. Any ``://`` in report text is written as an
entity so that not even a quoted URL appears literally in the file.
"""

from __future__ import annotations

import base64
import html
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

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       max-width: 1000px; margin: 2em auto; padding: 0 1em; color: #1a1a1a; line-height: 1.45; }
h1 { border-bottom: 3px solid #1f77b4; padding-bottom: .2em; }
h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
h3 { margin-top: 1.6em; }
ul.verdicts { list-style: none; padding: 0; }
ul.verdicts li { background: #eef5fb; border-left: 5px solid #1f77b4; margin: .5em 0;
                 padding: .6em .9em; }
p.note { background: #fff6e0; border-left: 5px solid #e6a700; padding: .4em .8em; }
table { border-collapse: collapse; margin: .8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; vertical-align: top; }
td:last-child { overflow-wrap: anywhere; }
th { background: #f2f2f2; }
caption { caption-side: bottom; font-style: italic; color: #555; text-align: left;
          padding-top: .3em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-style: italic; color: #555; }
nav { font-size: .92em; background: #fafafa; border: 1px solid #ddd; padding: .4em 1em; }
nav a { margin-right: 1em; }
"""


def esc(text: str) -> str:
    """HTML-escape ``text`` and defuse ``://`` so no URL appears literally."""
    return html.escape(text, quote=True).replace("://", ":&#47;&#47;")


def data_uri(png: bytes) -> str:
    """``data:image/png;base64,...`` for ``png``."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _table(t: Table) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in t.header)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    cap = f"<caption>{esc(t.caption)}</caption>" if t.caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure(f: Figure) -> str:
    cap = f"<figcaption>{esc(f.caption)}</figcaption>" if f.caption else ""
    return (f'<figure id="fig-{esc(f.name)}"><img src="{data_uri(f.png)}" alt="{esc(f.title)}" '
            f'width="800" height="400">{cap}</figure>')


def _nav(blocks: Sequence[Block]) -> str:
    links = [f'<a href="#{esc(b.anchor)}">{esc(b.nav or b.text)}</a>' for b in blocks
             if isinstance(b, Heading) and b.level == 2 and b.anchor]
    return f"<nav>{''.join(links)}</nav>" if links else ""


def render_html(blocks: Sequence[Block], title: str) -> str:
    """The whole report as one HTML document."""
    parts: list[str] = []
    in_verdicts = False
    nav_done = False
    for b in blocks:
        if isinstance(b, VerdictItem):
            if not in_verdicts:
                parts.append('<ul class="verdicts">')
                in_verdicts = True
            parts.append(f"<li><strong>{esc(b.question)}</strong> {esc(b.text)}</li>")
            continue
        if in_verdicts:
            parts.append("</ul>")
            in_verdicts = False
        if isinstance(b, Heading):
            ident = f' id="{esc(b.anchor)}"' if b.anchor else ""
            parts.append(f"<h{b.level}{ident}>{esc(b.text)}</h{b.level}>")
            if b.level == 1 and not nav_done:
                parts.append(_nav(blocks))
                nav_done = True
        elif isinstance(b, Para):
            parts.append(f"<p>{esc(b.text)}</p>")
        elif isinstance(b, Note):
            parts.append(f'<p class="note">{esc(b.text)}</p>')
        elif isinstance(b, Bullets):
            parts.append("<ul>" + "".join(f"<li>{esc(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            parts.append(_table(b))
        elif isinstance(b, Figure):
            parts.append(_figure(b))
    if in_verdicts:
        parts.append("</ul>")
    body = "\n".join(parts)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}\n"
            f"</body>\n</html>\n")
