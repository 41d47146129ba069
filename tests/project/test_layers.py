"""What each package may import (docs/architecture.md), read from the source: every import
counts, those inside functions included."""

from __future__ import annotations

import ast

import import_graph as g
import pytest

GROUND = {"rightsize", "rightsize.atomic", "rightsize.blas_kernel", "rightsize.console",
          "rightsize.errors", "rightsize.experiments", "rightsize.machine", "rightsize.measure",
          "rightsize.output_set", "rightsize.params", "rightsize.probe_names",
          "rightsize.fmt", "rightsize.account_parts", "rightsize.cost_text", "rightsize.citations"}
GROUND_PACKAGE = "rightsize.ground"   # shared file helpers: event writer, CRC, SHA-256, opening
LIBRARIES = ("telemetry", "cohort", "probes", "encoders", "sizing", "extraction", "reporting")
MAY_IMPORT = {                     # besides the ground modules and the package itself
    "telemetry": (),
    "cohort": (),
    "probes": ("cohort",),               # the manifest's arrays
    "encoders": (),                      # the encoder models and preprocessing: ground only
    "sizing": ("encoders",),             # the bench measures the encoders and their inputs
    "extraction": ("encoders",),         # runs the encoders
    "reporting": (),                     # reads metrics files only: no engine
}


def _modules() -> list[str]:
    out = []
    for path in sorted(g.SRC.rglob("*.py")):
        parts = list(path.relative_to(g.SRC).with_suffix("").parts)
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def _is_ground(module: str) -> bool:
    return module in GROUND or module == GROUND_PACKAGE or module.startswith(GROUND_PACKAGE + ".")


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
           if not _is_ground(d) and not any(d == a or d.startswith(a + ".") for a in allowed)]
    assert not bad, "\n".join(bad)


def test_ground_modules_import_only_the_ground():
    ground = sorted(GROUND) + [m for m in _modules() if _is_ground(m) and m not in GROUND]
    assert f"{GROUND_PACKAGE}.event_writer" in ground and f"{GROUND_PACKAGE}.sha256" in ground
    bad = [f"{m} imports {d}" for m in ground for d in sorted(g.direct_imports(m))
           if not _is_ground(d)]
    assert not bad, "\n".join(bad)


def test_the_ground_package_imports_no_room_and_the_rooms_use_it():
    """The shared file helpers left telemetry (issue 45): the ground package imports only
    itself, and the probes and extraction, which write event files and hash files, no longer
    reach into telemetry for them."""
    ground = [m for m in _modules() if m.startswith(GROUND_PACKAGE + ".")]
    assert ground
    bad = [f"{m} imports {d}" for m in ground for d in sorted(g.direct_imports(m))
           if d != GROUND_PACKAGE and not d.startswith(GROUND_PACKAGE + ".")]
    assert not bad, "\n".join(bad)
    users = {_package(m) for m in _modules() for d in g.direct_imports(m)
             if d.startswith(GROUND_PACKAGE + ".")}
    assert {"telemetry", "probes", "extraction"} <= users, users


def test_torch_and_transformers_stay_where_they_belong():
    bad = []
    for m in _modules():
        used = _third_party(m)
        if _package(m) in ("telemetry", "reporting", "cohort", "ground") and used & {"torch",
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


def _circles(modules: list[str], imports=g.direct_imports) -> list[list[str]]:
    """Strongly connected groups of more than one module in the import graph of ``modules``
    (every import counted, those inside functions too)."""
    edges = {m: sorted(d for d in imports(m) if d in modules and d != m) for m in modules}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        order[v] = low[v] = len(order)
        stack.append(v)
        for w in edges[v]:
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for m in modules:
        if m not in order:
            visit(m)
    return out


def test_the_probe_engine_has_no_import_circle():
    probes = [m for m in _modules() if m.startswith("rightsize.probes.")]
    assert len(probes) > 20
    assert _circles(probes) == []


def test_no_module_of_src_is_in_an_import_circle():
    """Each room stands above what it imports, imports inside functions counted (the cohort's
    manifest, validation and arrays were one circle until load_arrays got its own module)."""
    assert _circles(_modules()) == []


def test_the_circle_check_sees_a_circle_through_an_import_inside_a_function(tmp_path):
    pkg = tmp_path / "rightsize" / "probes"
    pkg.mkdir(parents=True)
    for f in ("rightsize/__init__.py", "rightsize/probes/__init__.py"):
        (tmp_path / f).write_text("")
    (pkg / "a.py").write_text("def f():\n    from rightsize.probes import b\n")
    (pkg / "b.py").write_text("from rightsize.probes.a import f\n")
    (pkg / "c.py").write_text("from rightsize.probes.a import f\n")
    found = _circles(["rightsize.probes.a", "rightsize.probes.b", "rightsize.probes.c"],
                     lambda m: g.direct_imports(m, tmp_path))
    assert found == [["rightsize.probes.a", "rightsize.probes.b"]]
