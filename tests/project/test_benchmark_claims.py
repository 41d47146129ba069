"""benchmarks/README.md opens with the claims table; every row is backed and stamped."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import import_graph as g
import pytest

BENCH = g.REPO / "benchmarks"
COLUMNS = ["claim", "made in", "script", "result", "commit", "date", "machine"]


def _stamp_regex() -> re.Pattern[str]:
    spec = importlib.util.spec_from_file_location("benchmarks_measure", BENCH / "_measure.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)            # dataclasses look their module up
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.STAMP


def _claims() -> list[dict[str, str]]:
    text = (BENCH / "README.md").read_text(encoding="utf-8")
    head, _, body = text.partition("\n## Claims\n")
    assert body and "\n## " not in head.split("\n", 1)[1], "the README opens with ## Claims"
    lines = [ln for ln in body.strip().splitlines()]
    table = []
    for ln in lines:
        if not ln.startswith("|"):
            if table:
                break
            continue
        table.append([c.strip() for c in ln.strip().strip("|").split("|")])
    assert table[0] == COLUMNS and set(table[1][0]) <= set("-: ")
    return [dict(zip(COLUMNS, row, strict=True)) for row in table[2:]]


def test_every_claim_points_at_a_script_and_a_stamped_result():
    stamp = _stamp_regex()
    claims = _claims()
    assert len(claims) >= 6
    for row in claims:
        where = f"claim {row['claim'][:50]!r}"
        assert (BENCH / row["script"]).is_file(), f"{where}: no script {row['script']}"
        result = BENCH / row["result"]
        assert result.is_file(), f"{where}: no result file {row['result']}"
        m = stamp.match(result.read_text(encoding="utf-8").splitlines()[0])
        assert m, f"{where}: {row['result']} has no stamp line"
        assert (m["commit"], m["date"], m["machine"], m["script"]) == (
            row["commit"], row["date"], row["machine"], f"benchmarks/{row['script']}"), where
        doc = g.REPO / row["made in"]
        assert doc.is_file() and "benchmarks/README.md" in doc.read_text(encoding="utf-8"), (
            f"{where}: {row['made in']} does not link benchmarks/README.md")


def test_every_result_file_is_stamped_and_cited():
    stamp = _stamp_regex()
    cited = {row["result"] for row in _claims()}
    for path in sorted((BENCH / "results").glob("*.md")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert stamp.match(first), f"{path.name}: no stamp line"
        assert f"results/{path.name}" in cited, f"{path.name}: no claim cites it"


def test_stamped_commits_are_in_the_history():
    if not (g.REPO / ".git").exists():
        pytest.skip("not a git checkout: the commits cannot be looked up")
    for row in _claims():
        commit = row["commit"].removesuffix("+dirty")
        found = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=g.REPO,
                               capture_output=True, check=False)
        assert found.returncode == 0, f"{row['result']}: commit {commit} is not in the history"
