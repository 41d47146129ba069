"""The probe names have one list: ``rightsize.probe_names.PROBES``, the names of the
engine's specs (``rightsize.probes.registry``). Tests, the report and the docs take theirs
from it; a literal list of three or more probe names anywhere else is a copy to fix."""

from __future__ import annotations

import re
from pathlib import Path

from rightsize.probe_names import PROBES
from rightsize.probes.registry import SPECS

REPO = Path(__file__).resolve().parents[2]
QUOTED = rf"""["'](?:{"|".join(PROBES)})["']"""
# a tuple or list literal of quoted probe names only (it may span lines)
LITERAL = re.compile(rf"[\[(]\s*(?:{QUOTED}\s*,\s*)+{QUOTED}\s*,?\s*[\])]")
THE_LIST = REPO / "src" / "rightsize" / "probe_names.py"


def _copies(text: str) -> list[str]:
    return [" ".join(m.group(0).split()) for m in LITERAL.finditer(text)
            if len(set(re.findall(QUOTED, m.group(0)))) >= 3]


def test_the_pattern_sees_a_copied_list():
    assert _copies('PROBES = ("ecg", "echo", "concat", "fused")')
    assert _copies('for p in ("echo",\n          "concat", "fused"):')
    assert _copies('@pytest.mark.parametrize("probe", ["concat", "echo", "ecg"])')
    assert not _copies('probes = ["ecg", "fused"]')                  # a subset of two is data
    assert not _copies('set_params(p, ["ecg", "echo", "concat", "fused", "fuzed"])')


def test_no_hard_coded_probe_list_outside_the_registry():
    files = [p for d in ("src", "tests", "benchmarks") for p in sorted((REPO / d).rglob("*.py"))
             if p not in (THE_LIST, Path(__file__).resolve())]
    found = [f"{p.relative_to(REPO)}: {c}" for p in files
             for c in _copies(p.read_text(encoding="utf-8"))]
    assert found == [], "\n".join(found)


def test_the_ground_names_are_the_registered_specs_in_order():
    assert tuple(SPECS)[:len(PROBES)] == PROBES
    assert all(SPECS[name].name == name for name in SPECS)


def test_the_docs_name_every_registered_probe():
    text = (REPO / "docs" / "probes.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| `models/\w+(?:\.py|/)` \|", text, re.M)   # file or folder
    assert rows == list(PROBES), rows
