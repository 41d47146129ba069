"""What each package may import (docs/architecture.md), read from the source: every import
counts, those inside functions included."""

from __future__ import annotations

import ast

import import_graph as g
import pytest

GROUND = {"rightsize", "rightsize.atomic", "rightsize.blas_kernel", "rightsize.console",
          "rightsize.errors", "rightsize.experiments", "rightsize.measure", "rightsize.params",
          "rightsize.probe_registry", "rightsize.citations"}
LIBRARIES = ("telemetry", "cohort", "probes", "encoders", "sizing", "extraction", "reporting")
MAY_IMPORT = {                     # besides the ground modules and the package itself
    "telemetry": (),
    "cohort": (),
    "probes": ("cohort", "telemetry"),   # the manifest's arrays; the run log's event writer
    "encoders": (),                      # the encoder models and preprocessing: ground only
    "sizing": ("encoders",),             # the bench measures the encoders and their inputs
    "extraction": ("encoders", "telemetry"),   # runs the encoders; the event writer
    "reporting": (),                     # reads metrics files only: no engine
}


def _modules() -> list[str]:
    out = []
    for path in sorted(g.SRC.rglob("*.py")):
        parts = list(path.relative_to(g.SRC).with_suffix("").parts)
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or g.module_file(module).name == "__init__.py" and \
        len(parts) == 2 else None


def _third_party(module: str) -> set[str]:
    tree = ast.parse(g.module_file(module).read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names - {"rightsize"}


@pytest.mark.parametrize("package", LIBRARIES)
def test_libraries_import_only_the_ground_and_what_they_may(package):
    allowed = {f"rightsize.{p}" for p in (package, *MAY_IMPORT[package])}
    bad = [f"{m} imports {d}" for m in _modules() if _package(m) == package
           for d in sorted(g.direct_imports(m))
           if d not in GROUND and not any(d == a or d.startswith(a + ".") for a in allowed)]
    assert not bad, "\n".join(bad)


def test_ground_modules_import_only_the_ground():
    bad = [f"{m} imports {d}" for m in sorted(GROUND) for d in sorted(g.direct_imports(m))
           if d not in GROUND]
    assert not bad, "\n".join(bad)


def test_torch_and_transformers_stay_where_they_belong():
    bad = []
    for m in _modules():
        used = _third_party(m)
        if _package(m) in ("telemetry", "reporting", "cohort") and used & {"torch",
                                                                           "transformers"}:
            bad.append(f"{m} imports {sorted(used & {'torch', 'transformers'})}")
        if "transformers" in used and _package(m) != "encoders":
            bad.append(f"{m} imports transformers")
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_forbidden_import_inside_a_function(tmp_path):
    pkg = tmp_path / "rightsize" / "reporting"
    pkg.mkdir(parents=True)
    (tmp_path / "rightsize" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "leak.py").write_text("def f():\n    from rightsize.telemetry.account import PARTS\n")
    assert "rightsize.telemetry.account" in g.direct_imports("rightsize.reporting.leak",
                                                             tmp_path)
