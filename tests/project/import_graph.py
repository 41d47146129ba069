"""The project's import graph, read from the source (AST), and the deps each stage needs.

A stage ``rightsize <verb>`` runs ``rightsize.cli`` (the console script) and the verb's
handler function; its *closure* is every ``rightsize`` module they import, transitively.
In the verb's own module that is its module-level imports plus the imports inside the
handler and inside every module-level function the handler names, transitively (a verb
module holds several verbs: ``footprint`` does not run ``sizing``'s imports). Every other
module counts whole: imports inside any of its functions included (the libraries import
their engines lazily), ``if TYPE_CHECKING:`` blocks left out (never executed). Importing
``rightsize.a.b`` also runs the packages' ``__init__`` modules, so they are in it too; a
package's lazily exported name (``_EXPORTS = {"name": "module"}`` in its ``__init__``)
counts as an import of its module, and a module that names a package of probe homes
(``HOMES = "rightsize.probes.models"``, the registry) imports the home of every name in
``rightsize.probe_names.PROBES`` (it does, with ``importlib``). The other verb modules
that ``cli`` loads by name only register their flags for the parser, so they are not part of
a stage's closure.

Stage deps cover a module when they list its file or a folder above it (a whole package).
The rule dvc.yaml follows (:func:`suggested_deps`): a stage depends on each top-level module
its verb imports, on each ``verbs/`` module it imports, and on the whole folder of each other
package it imports any module of.
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
PACKAGE = "rightsize"
ENTRY = "rightsize.cli"


def module_file(name: str, src: Path = SRC) -> Path | None:
    """``rightsize.a.b`` -> its ``.py`` file (``b.py`` or ``b/__init__.py``), None if none."""
    base = src.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """Every node, skipping the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


@cache
def lazy_exports(package: str, src: Path = SRC) -> dict[str, str]:
    """A package's ``_EXPORTS`` mapping (exported name -> module), empty when it has none."""
    path = module_file(package, src)
    if path is None or path.name != "__init__.py":
        return {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets):
            value = ast.literal_eval(node.value)
            return {str(k): str(v) for k, v in value.items()}
    return {}


def _module_string(tree: ast.Module, target: str) -> object:
    """The literal value assigned to ``target`` at the top of ``tree`` (None if none)."""
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == target for t in targets) and node.value:
            return ast.literal_eval(node.value)
    return None


def _homes(tree: ast.Module, src: Path) -> set[str]:
    """The probe homes a registry module imports by name (``HOMES`` x ``PROBES``)."""
    package = _module_string(tree, "HOMES")
    names = module_file(f"{PACKAGE}.probe_names", src)
    if not isinstance(package, str) or names is None:
        return set()
    probes = _module_string(ast.parse(names.read_text(encoding="utf-8")), "PROBES")
    return {f"{package}.{p}" for p in probes or ()}


def _parse(name: str, src: Path) -> tuple[ast.Module, bool] | None:
    path = module_file(name, src)
    if path is None:
        return None
    return ast.parse(path.read_text(encoding="utf-8"), str(path)), path.name == "__init__.py"


@cache
def direct_imports(name: str, src: Path = SRC) -> frozenset[str]:
    """The ``rightsize`` modules module ``name`` imports anywhere in its body."""
    parsed = _parse(name, src)
    if parsed is None:
        return frozenset()
    return _imports_in(name, parsed[1], [parsed[0]], src) | _homes(parsed[0], src)


def handler_imports(name: str, handler: str, src: Path = SRC) -> frozenset[str]:
    """What running ``handler`` of module ``name`` imports: the module-level imports, and
    those inside ``handler`` and the module's functions it names, transitively."""
    parsed = _parse(name, src)
    assert parsed is not None, name
    tree, is_pkg = parsed
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    top = [n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    run, todo = set(), [handler]
    while todo:
        f = todo.pop()
        if f in run or f not in funcs:
            continue
        run.add(f)
        todo += [n.id for n in ast.walk(funcs[f]) if isinstance(n, ast.Name) and n.id in funcs]
    return _imports_in(name, is_pkg, [*top, *(funcs[f] for f in sorted(run))], src)


def _imports_in(name: str, is_pkg: bool, trees: list[ast.AST], src: Path) -> frozenset[str]:
    out: set[str] = set()
    for node in (n for t in trees for n in _nodes(t)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_pkg else name.split(".")[:-1]
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            out.add(base)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if module_file(sub, src) is not None:
                    out.add(sub)
                elif alias.name in lazy_exports(base, src):
                    out.add(lazy_exports(base, src)[alias.name])
    return frozenset(m for m in out if m == PACKAGE or m.startswith(PACKAGE + "."))


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def closure(roots: Iterable[str], src: Path = SRC,
            first: dict[str, frozenset[str]] | None = None) -> dict[str, str | None]:
    """Every module reached from ``roots``: ``{module: the module that imported it}``.

    ``first`` overrides what a root imports (a verb module: :func:`handler_imports`).
    """
    first = first or {}
    via: dict[str, str | None] = {}
    todo: list[tuple[str, str | None]] = [(r, None) for r in roots]
    while todo:
        name, parent = todo.pop(0)
        for mod in _with_parents(name):
            if mod in via or module_file(mod, src) is None:
                continue
            via[mod] = parent
            found = first.get(mod, direct_imports(mod, src))
            todo += [(m, mod) for m in sorted(found)]
    return via


def chain(via: dict[str, str | None], name: str) -> str:
    """``rightsize.cli <- ...``: how ``name`` was reached (root first)."""
    path = [name]
    while via.get(path[-1]) is not None:
        path.append(via[path[-1]])  # type: ignore[arg-type]
    return " -> ".join(reversed(path))


def rel_file(name: str, src: Path = SRC) -> str:
    """Repo-relative POSIX path of module ``name``'s file."""
    path = module_file(name, src)
    assert path is not None, name
    return path.relative_to(src.parent).as_posix()


@cache
def verb_handlers() -> dict[str, tuple[str, str]]:
    """``{verb: (module, handler function name)}``, from the real parser."""
    from rightsize.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {verb: (p.get_default("func").__module__, p.get_default("func").__name__)
            for verb, p in sub.choices.items()}


@dataclass(frozen=True)
class Stage:
    """One stage of dvc.yaml (a ``foreach`` stage counts once: its deps do not vary)."""

    name: str
    verb: str
    deps: tuple[str, ...]


def stages(dvc_yaml: dict) -> list[Stage]:
    """The stages of a parsed dvc.yaml; each cmd must be ``rightsize <verb> ...``."""
    out = []
    for name, body in dvc_yaml["stages"].items():
        body = body.get("do", body)
        words = " ".join(str(body["cmd"]).split()).split()
        assert words[0] == "rightsize", f"stage {name}: cmd is not `rightsize <verb>`: {words}"
        out.append(Stage(name, words[1], tuple(str(d).rstrip("/") for d in body.get("deps", []))))
    return out


def load_stages(path: Path = REPO / "dvc.yaml") -> list[Stage]:
    """:func:`stages` of the dvc.yaml file at ``path``."""
    return stages(yaml.safe_load(path.read_text(encoding="utf-8")))


def stage_closure(stage: Stage) -> dict[str, str | None]:
    """The stage's closure: ``rightsize.cli`` and its verb's handler, transitively."""
    module, handler = verb_handlers()[stage.verb]
    return closure([ENTRY, module], first={module: handler_imports(module, handler)})


def covered(path: str, deps: Iterable[str]) -> bool:
    """True when a dep is ``path`` or a folder above it."""
    return any(path == d or path.startswith(d + "/") for d in deps)


def missing_deps(stage: Stage) -> list[str]:
    """One line per module of the closure no dep covers: stage, module, and how it is reached."""
    via = stage_closure(stage)
    return [f"stage {stage.name} (rightsize {stage.verb}): {rel_file(m)} is imported "
            f"({chain(via, m)}) but is not a dep"
            for m in sorted(via) if not covered(rel_file(m), stage.deps)]


def stale_deps(stage: Stage) -> list[str]:
    """Source deps that cover no module of the stage's closure, or lie inside another dep
    (so removing one would go unnoticed)."""
    files = [rel_file(m) for m in stage_closure(stage)]
    out = [f"stage {stage.name}: dep {d} covers no module `rightsize {stage.verb}` imports"
           for d in stage.deps
           if d.startswith("src/") and not any(covered(f, [d]) for f in files)]
    out += [f"stage {stage.name}: dep {d} lies inside dep {o}"
            for d in stage.deps for o in stage.deps if d != o and covered(d, [o])]
    return out


def touch_targets() -> list[str]:
    """One module per package (the project root's modules count as one): the one reached
    through the longest import chain from some stage's verb, so transitive deps are tried."""
    depth: dict[str, int] = {}
    for st in load_stages():
        via = stage_closure(st)
        for m in via:
            depth[m] = max(depth.get(m, 0), chain(via, m).count("->"))
    best: dict[str, str] = {}
    for m in sorted(depth):
        if module_file(m).name == "__init__.py":   # type: ignore[union-attr]
            continue
        pkg = m.rsplit(".", 1)[0]
        if pkg not in best or depth[m] > depth[best[pkg]]:
            best[pkg] = m
    return [best[p] for p in sorted(best)]


# Packages whose modules are listed one by one: a stage runs one verb module (rightsize.cli
# imports only the verb's own), so editing one verb re-runs only its stages.
FILE_BY_FILE = ("verbs",)


def policy_dep(path: str) -> str:
    """The dep that covers module file ``path`` under the project's rule: a top-level module
    is its own file, and so is a module of :data:`FILE_BY_FILE`; any other module inside a
    package (``src/rightsize/<pkg>/...``) is covered by the package folder, subpackages
    included."""
    parts = path.split("/")
    return path if len(parts) == 3 or parts[2] in FILE_BY_FILE else "/".join(parts[:3])


def suggested_deps(stage: Stage) -> list[str]:
    """The stage's source deps under the rule (:func:`policy_dep`): each top-level module
    its verb imports, and the folder of each package it imports any module of."""
    return sorted({policy_dep(rel_file(m)) for m in stage_closure(stage)})
