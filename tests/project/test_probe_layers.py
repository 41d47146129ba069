"""The probes sheet, read from the source: its sub-rooms stand in layers, and a module imports
only its own layer and the layers below (every import counts, those inside functions too).
An arrow upward fails, unless :data:`EXCEPTIONS` names it with its reason; an exception that
no longer exists fails too, so the list only shrinks."""

from __future__ import annotations

import import_graph as g

P = "rightsize.probes"
ENGINE_BASE = ("data", "fitted", "npzfile", "predict", "torch_model", "torch_replicas")
# bottom to top
LAYERS = (
    ("accel", "the kernels and the Accelerator contract, no probe's own code"),
    ("spec", "ProbeSpec: what a probe's home declares"),
    ("engine base", "the arrays, fitted-model protocol, weights files and torch helpers the "
                    "homes build on: " + ", ".join(ENGINE_BASE)),
    ("models", "the probes' homes: config, textbook model, closed form, accelerator"),
    ("registry", "the specs of the homes PROBES names"),
    ("engine", "fitting, replicas, checkpoints, the train config"),
    ("evaluation", "scores saved probes"),
    ("measurements", "footprint and token cost"),
    ("run", "the library calls: run (train and evaluate), checks (check_probe)"),
)
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}

# Upward arrows kept on purpose (module -> module it imports), each with its reason.
EXCEPTIONS: dict[tuple[str, str], str] = {}   # none: each probe's accelerator is in its home


def layer(module: str) -> str | None:
    """The layer of probes module ``module`` (None outside the probes, or the package)."""
    parts = module.split(".")
    if parts[:2] != P.split(".") or len(parts) == 2:
        return None
    room = parts[2]
    if room in ("spec", "registry"):
        return room
    if room in ("run", "checks"):
        return "run"
    if room == "engine" and len(parts) > 3 and parts[3] in ENGINE_BASE:
        return "engine base"
    return room


def _modules() -> list[str]:
    out = []
    for path in sorted((g.SRC / "rightsize" / "probes").rglob("*.py")):
        parts = list(path.relative_to(g.SRC).with_suffix("").parts)
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def upward_arrows(modules: list[str], imports=g.direct_imports) -> set[tuple[str, str]]:
    """Every ``(module, imported)`` pair where the import climbs to a higher layer."""
    return {(m, d) for m in modules for d in imports(m)
            if layer(m) and layer(d) and RANK[layer(d)] > RANK[layer(m)]}


def test_every_probes_module_sits_in_a_layer():
    modules = _modules()
    assert len(modules) > 30
    assert all(layer(m) in RANK for m in modules if m != P), \
        [m for m in modules if m != P and layer(m) not in RANK]


def test_no_upward_arrow_between_the_probes_layers():
    found = upward_arrows(_modules())
    new = sorted(found - EXCEPTIONS.keys())
    assert not new, "\n".join(f"{m} ({layer(m)}) imports {d} ({layer(d)})" for m, d in new)
    stale = sorted(EXCEPTIONS.keys() - found)
    assert not stale, f"no longer imported, drop from EXCEPTIONS: {stale}"


def test_the_check_sees_an_upward_arrow(tmp_path):
    root = tmp_path / "rightsize" / "probes"
    for room in ("accel", "engine"):
        (root / room).mkdir(parents=True)
        (root / room / "__init__.py").write_text("")
    for f in ("rightsize/__init__.py", "rightsize/probes/__init__.py"):
        (tmp_path / f).write_text("")
    (root / "accel" / "kernel.py").write_text(
        "def f():\n    from rightsize.probes.engine.estimator import Estimator\n")
    (root / "engine" / "estimator.py").write_text("from rightsize.probes.accel import kernel\n")
    found = upward_arrows([f"{P}.accel.kernel", f"{P}.engine.estimator"],
                          lambda m: g.direct_imports(m, tmp_path))
    assert found == {(f"{P}.accel.kernel", f"{P}.engine.estimator")}
