"""Every benchmark script parses its arguments with argparse: ``--help`` prints help, exits 0
and writes nothing (item 14: ``stage_budget.py`` took argv[1] as its output path, and a file
named ``--help`` was committed at the repository root)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (REPO / "benchmarks").glob("*.py")
                 if 'if __name__ == "__main__"' in p.read_text(encoding="utf-8"))


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if ".git" not in p.parts and ".venv" not in p.parts and "__pycache__" not in p.parts}


def test_no_stray_file_named_like_a_flag_at_the_root():
    assert not [p.name for p in REPO.iterdir() if p.name.startswith("-")]
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_prints_help_and_writes_nothing(script, tmp_path):
    before = files_under(REPO / "benchmarks")
    done = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: {script.name}"), done.stdout[:200]
    assert list(tmp_path.iterdir()) == []
    assert files_under(REPO / "benchmarks") == before
