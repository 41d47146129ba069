"""The probe registry: the one place where a probe's name decides anything.

Every other module of the engine (training, evaluation, checkpoints, seed replicas, the
verbs) asks :func:`entry` what a probe is and never compares probe names (a test greps for
it). An entry says where the probe's model lives, how it fits, which accelerators may
train it, and the facts shared code needs before any model module is imported (so the
numpy probes' processes never load torch).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from rightsize.errors import InputError


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


PROBES: dict[str, Entry] = {
    "ecg": Entry(model="", closed_form="rightsize.probes.linear:fit_probe",
                 numpy_model="rightsize.probes.linear:LinearEcgProbe", ef_score="logit"),
    "echo": Entry(model="rightsize.probes.echo:EchoAttnProbe",
                  numpy_model="rightsize.probes.accel.echo_numpy:AttentiveEchoProbe",
                  uses_ecg=False, ecg_pooling="none", accelerators=("echo_numpy",)),
    "concat": Entry(model="rightsize.probes.concat:ConcatMLPProbe",
                    accelerators=("concat_stacked",)),
    "fused": Entry(model="rightsize.probes.fused:CrossAttnFusedProbe",
                   ecg_pooling="attention (echo->ECG); mean (ECG->echo query)",
                   accelerators=("fused_pooled", "fused_tokens")),
}


def entry(name: str) -> Entry:
    """The registry entry of probe ``name`` (``InputError`` listing the known probes)."""
    if name not in PROBES:
        raise InputError(f"unknown probe {name!r} (known: {', '.join(PROBES)})")
    return PROBES[name]


def resolve(path: str) -> Any:
    """The object a ``"module:attribute"`` string names (the module imported now)."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)
