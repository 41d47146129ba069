"""Verbs are called through the CLI, libraries through their functions: no
``argparse.Namespace`` (or ``types.SimpleNamespace``) is built in src/ outside ``cli.py`` and
``verbs/``' argument parsing, so no module runs a verb by forging its arguments."""

from __future__ import annotations

import ast
from pathlib import Path

import rightsize

PACKAGE = Path(rightsize.__file__).parent
NAMES = {"Namespace", "SimpleNamespace"}


def namespace_calls(source: str) -> list[int]:
    """Lines of ``source`` that call ``Namespace(...)`` / ``SimpleNamespace(...)``, however
    reached (``argparse.Namespace``, ``types.SimpleNamespace``, an imported name)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in NAMES:
                lines.append(node.lineno)
    return lines


def test_the_detector_finds_a_forged_namespace():
    assert namespace_calls("import argparse\nargs = argparse.Namespace(probe='x')\n") == [2]
    assert namespace_calls("from types import SimpleNamespace\nSimpleNamespace(a=1)\n") == [2]
    assert namespace_calls("def f(args: argparse.Namespace) -> None: ...\n") == []


def test_no_namespace_is_built_outside_the_cli():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "cli.py" or rel.startswith("verbs/"):
            continue
        found += [f"{rel}:{n}" for n in namespace_calls(path.read_text(encoding="utf-8"))]
    assert not found, found


def test_no_verb_runs_another_verb_by_forging_its_arguments():
    # verbs/ may parse arguments (argparse builds the Namespace), never build one by hand
    found = [f"verbs/{p.name}:{n}" for p in sorted((PACKAGE / "verbs").glob("*.py"))
             for n in namespace_calls(p.read_text(encoding="utf-8"))]
    assert not found, found
