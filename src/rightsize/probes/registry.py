"""The registry: the typed spec of every probe, collected from the probes' homes.

A probe's home is ``rightsize.probes.models.<name>``: its config dataclass, its textbook
module (or closed-form fit) and ``SPEC``, a :class:`~rightsize.probes.spec.ProbeSpec`. The
homes registered are those named in :data:`rightsize.probe_names.PROBES`, the one list
of probe names (pipeline order), which the CLI and the report read without importing the
engine; ``TrainConfig`` has a block per spec (written per built-in probe). Adding a probe is
its home plus its name in that list (docs/probes.md, "Add a probe"); a test does it in a
scratch copy and counts the files. :func:`register` adds a spec at run time (the tests'
common suite runs a fifth probe that way). Nothing else in the engine compares probe
names (a test greps for it).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from rightsize.errors import InputError
from rightsize.probe_names import PROBES
from rightsize.probes.spec import ProbeSpec

if TYPE_CHECKING:
    from rightsize.probes.accel import Accelerator

__all__ = ["SPECS", "ProbeSpec", "accelerator", "home_spec", "register", "spec", "unregister"]

HOMES = "rightsize.probes.models"   # the package of the probes' homes


def home_spec(name: str) -> ProbeSpec:
    """``SPEC`` of the home ``rightsize.probes.models.<name>`` (``ValueError`` if it names
    another probe)."""
    probe = importlib.import_module(f"{HOMES}.{name}").SPEC
    if probe.name != name:
        raise ValueError(f"{HOMES}.{name}.SPEC names probe {probe.name!r}")
    return probe


SPECS: dict[str, ProbeSpec] = {name: home_spec(name) for name in PROBES}


def spec(name: str) -> ProbeSpec:
    """The spec of probe ``name`` (``InputError`` listing the known probes)."""
    if name not in SPECS:
        raise InputError(f"unknown probe {name!r} (known: {', '.join(SPECS)})")
    return SPECS[name]


def register(probe: ProbeSpec) -> None:
    """Add ``probe`` to the registry (``ValueError`` if its name is taken)."""
    if probe.name in SPECS:
        raise ValueError(f"probe {probe.name!r} is already registered")
    SPECS[probe.name] = probe


def unregister(name: str) -> None:
    """Remove a probe :func:`register` added (a test's, when it is done)."""
    SPECS.pop(name)


def accelerator(name: str) -> Accelerator:
    """The declared accelerator called ``name``, whichever probe declares it."""
    for probe in SPECS.values():
        for load in probe.accelerators:
            acc = load()
            if acc.name == name:
                return acc
    raise InputError(f"unknown accelerator {name!r}")
