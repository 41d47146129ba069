"""The names of the built-in probes, and the checks of the params lists that name them.

The engine's probe specs (what each probe is: config, model, fit, accelerators) live in
:mod:`rightsize.probes.registry`; this ground module holds only their names, in pipeline
order, so the CLI, the report and the tests list probes without importing the engine (a
test holds this list equal to the specs', and another greps for any other hard-coded list).
The params lists that name probes (``train.probes``, ``train.telemetry_probes``) are checked
here too.

A ground module, light on purpose (no numpy, no torch, no engine import): ``rightsize.cli``
checks the probe lists of every params file a verb reads before the verb runs, so every
pipeline stage imports this module, and none but the probe stages imports ``probes/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rightsize.params import require

PROBES = ("ecg", "echo", "concat", "fused")   # the probe names, in pipeline order


def check_probe_list(names: Any, key: str, known: Sequence[str],
                     within: str | None = None) -> None:
    """``ParamsError`` naming ``key`` unless ``names`` lists ``known`` probes, each once.

    ``within``: the key ``known`` comes from (then an empty list is allowed and an outsider
    is "not in <within>"); None: ``known`` is the probe registry and one probe is needed.
    """
    require(isinstance(names, list | tuple) and all(isinstance(n, str) for n in names), key,
            f"expected a list of probe names, got {names!r}")
    require(within is not None or len(names) > 0, key,
            f"must list at least one probe (known: {', '.join(known)})")
    for i, name in enumerate(names):
        require(name in known, f"{key}[{i}]",
                f"unknown probe {name!r} (known: {', '.join(known)})" if within is None
                else f"{name!r} is not in {within} ({', '.join(known)})")
        require(name not in names[:i], f"{key}[{i}]", f"{name!r} is listed twice")


def check_train_probes(params: dict[str, Any]) -> None:
    """Check ``train.probes`` and ``train.telemetry_probes`` of a whole params file.

    Every verb that reads a params file calls this first (``rightsize.cli``), so a bad probe
    list stops the first pipeline stage that runs, whichever it is, before it does anything.
    Absent keys are left to the verbs (a params file without a ``train`` block is fine).
    """
    train = params.get("train")
    if not isinstance(train, dict) or "probes" not in train:
        return
    check_probe_list(train["probes"], "train.probes", PROBES)
    if "telemetry_probes" in train:
        check_probe_list(train["telemetry_probes"], "train.telemetry_probes",
                         tuple(train["probes"]), within="train.probes")
