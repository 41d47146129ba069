"""Issue 33 item 6: every cited source file is spelled one way (``rightsize.citations``).

A path that ends like a cited file (``dataset.py``, ``utils.py``, ``echojepa_lvef.yaml``,
``echojepa_large_lvef.yaml``) anywhere in the code, params, docs or committed metrics must be
the cited path itself (``hubert_ecg/dataset.py`` never existed at the cited commit), and a
commit written after it (``path@abc1234``) must be the cited commit. docs/sizing.md lists each
cited file once with its repository, path and full commit. CHANGELOG.md is history and is not
scanned; tests are not scanned (they name the wrong spellings they refuse).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from rightsize.citations import FILES

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("src", "params.yaml", "dvc.yaml", "README.md", "docs", "metrics")
CHECKED = [f for f in FILES.values() if "/" in f.path]          # README.md is too common a name
_PATH = re.compile(r"[\w./-]*?(?P<base>" + "|".join(
    re.escape(Path(f.path).name) for f in CHECKED) + r")(?P<at>@[0-9a-f]{7,40})?")


def _tracked() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "--", *SCANNED], cwd=REPO, check=True,
                         capture_output=True, text=True).stdout.split()
    return [REPO / p for p in out if Path(p).suffix in (".py", ".md", ".yaml", ".json")]


def spelling_errors(text: str, where: str) -> list[str]:
    """Every path in ``text`` that ends like a cited file but is spelled otherwise."""
    by_base: dict[str, list] = {}
    for f in CHECKED:
        by_base.setdefault(Path(f.path).name, []).append(f)
    bad = []
    for m in _PATH.finditer(text):
        token = m.group(0).split("@")[0].strip("./`'\"")
        cited = [f for f in by_base[m.group("base")] if f.path == token]
        if not cited:
            bad.append(f"{where}: {m.group(0)!r} is not a cited path "
                       f"({', '.join(f.path for f in by_base[m.group('base')])})")
        elif m.group("at") and not cited[0].commit.startswith(m.group("at")[1:]):
            bad.append(f"{where}: {m.group(0)!r} names another commit than "
                       f"{cited[0].commit[:7]}")
    return bad


def test_the_scanner_catches_the_old_spelling() -> None:
    assert spelling_errors("Edoar-do/HuBERT-ECG hubert_ecg/dataset.py", "x")
    assert spelling_errors("code/dataset.py@1234567", "x")
    assert not spelling_errors("Edoar-do/HuBERT-ECG code/dataset.py@affe1f9", "x")


def test_no_other_spelling_of_a_cited_file_in_code_params_docs_or_metrics() -> None:
    files = _tracked()
    assert any(p.name == "sizing.md" for p in files)
    bad = [e for p in files
           for e in spelling_errors(p.read_text(encoding="utf-8", errors="replace"),
                                    str(p.relative_to(REPO)))]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", sorted(FILES))
def test_docs_list_each_cited_file_once_with_its_commit(name: str) -> None:
    f = FILES[name]
    doc = (REPO / "docs" / "sizing.md").read_text(encoding="utf-8")
    row = f"| {f.repository} | `{f.path}` | `{f.commit}` |"
    assert doc.count(row) == 1, row
    assert len(f.commit) == 40
