"""The README is a short user's guide, and every relative link in the docs resolves."""

from __future__ import annotations

import re

import import_graph as g
import pytest

DOCS = ["README.md", "CHANGELOG.md", "benchmarks/README.md",
        *(p.relative_to(g.REPO).as_posix() for p in sorted((g.REPO / "docs").glob("*.md")))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(text: str) -> set[str]:
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_readme_is_a_short_guide():
    text = (g.REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for needle in ("## Install and run", "## The three questions", "## Measure a run of your own",
                   "## Sizing", "## Seeds", "## Experiments", "## Remotes", "## The pipeline",
                   "## Exit codes", "rightsize.read_scalars"):
        assert needle in text, needle


@pytest.mark.parametrize("doc", DOCS)
def test_relative_links_resolve(doc):
    path = g.REPO / doc
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):
            continue                              # http(s), mailto
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        assert dest.exists(), f"{doc}: link {target} points at nothing"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest.read_text(encoding="utf-8")), (
                f"{doc}: link {target}: no heading with that anchor")
