"""The probe registry: the one place where a probe's name decides anything.

Every module of the probe engine (training, evaluation, checkpoints, seed replicas) and the
verbs ask :func:`entry` what a probe is and never compare probe names (a test greps for it).
An entry says where the probe's model lives, how it fits, which accelerators may train it,
and the facts shared code needs before any model module is imported (so the numpy probes'
processes never load torch). The params lists that name probes (``train.probes``,
``train.telemetry_probes``) are checked here too.

A ground module, light on purpose (no numpy, no torch, no model import): ``rightsize.cli``
checks the probe lists of every params file a verb reads before the verb runs, so every
pipeline stage imports this module, and none but the probe stages imports ``probes/``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rightsize.errors import InputError
from rightsize.params import require


@dataclass(frozen=True)
class Entry:
    """What the engine knows about one probe."""

    model: str                     # "module:Class": the textbook torch module ("" if none)
    closed_form: str = ""          # "module:function" fitting the probe in one go (no loop)
    numpy_model: str = ""          # "module:Class" of the weights.npz model, if any
    uses_ecg: bool = True
    ecg_pooling: str = "mean"      # how a subject's ECG tokens reach the probe (arch, report)
    ef_score: str = "neg_lvef"     # EF<=40 score: "neg_lvef" or the model's "logit"
    accelerators: tuple[str, ...] = ()


REGISTRY: dict[str, Entry] = {
    "ecg": Entry(model="", closed_form="rightsize.probes.models.ecg:fit_probe",
                 numpy_model="rightsize.probes.models.ecg:LinearEcgProbe", ef_score="logit"),
    "echo": Entry(model="rightsize.probes.models.echo:EchoAttnProbe",
                  numpy_model="rightsize.probes.accel.echo_numpy:AttentiveEchoProbe",
                  uses_ecg=False, ecg_pooling="none", accelerators=("echo_numpy",)),
    "concat": Entry(model="rightsize.probes.models.concat:ConcatMLPProbe",
                    accelerators=("concat_stacked",)),
    "fused": Entry(model="rightsize.probes.models.fused:CrossAttnFusedProbe",
                   ecg_pooling="attention (echo->ECG); mean (ECG->echo query)",
                   accelerators=("fused_pooled", "fused_tokens")),
}


PROBES = tuple(REGISTRY)        # the probe names, in pipeline order


def entry(name: str) -> Entry:
    """The registry entry of probe ``name`` (``InputError`` listing the known probes)."""
    if name not in REGISTRY:
        raise InputError(f"unknown probe {name!r} (known: {', '.join(REGISTRY)})")
    return REGISTRY[name]


def resolve(path: str) -> Any:
    """The object a ``"module:attribute"`` string names (the module imported now)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


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
