"""pyproject.toml's runtime dependencies are exactly what src/rightsize imports (plus the
``dvc`` command the pipeline and ``rightsize spread``/``sweep`` run, which nothing imports)."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions

import import_graph as g
import pytest

RUN_NOT_IMPORTED = {"dvc"}


def _project() -> dict:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from 3.11")
    return tomllib.loads((g.REPO / "pyproject.toml").read_text())["project"]


def _requirement_name(spec: str) -> str:
    return re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0].lower().replace("_", "-")


def _imported_distributions() -> dict[str, set[str]]:
    """{distribution: modules of src/rightsize importing it}, stdlib left out."""
    dists = packages_distributions()
    out: dict[str, set[str]] = {}
    for path in sorted(g.SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if top == "rightsize" or top in sys.stdlib_module_names:
                    continue
                for dist in dists.get(top, [top]):
                    out.setdefault(dist.lower().replace("_", "-"), set()).add(path.name)
    return out


def test_runtime_dependencies_are_what_the_package_imports():
    project = _project()
    declared = {_requirement_name(d) for d in project["dependencies"]}
    imported = _imported_distributions()
    assert set(imported) | RUN_NOT_IMPORTED == declared, (
        f"imported but not declared: {sorted(set(imported) - declared)}; "
        f"declared but not imported: {sorted(declared - set(imported) - RUN_NOT_IMPORTED)}")


def test_scikit_learn_is_a_test_dependency_only():
    project = _project()
    assert "scikit-learn" not in {_requirement_name(d) for d in project["dependencies"]}
    assert "scikit-learn" in {_requirement_name(d)
                              for d in project["optional-dependencies"]["test"]}
    assert "scikit-learn" not in _imported_distributions()
