"""Probe checkpoints without pickled code.

A model directory holds the weights and a JSON sidecar:

* a torch model: ``weights.safetensors``, the ``state_dict`` (CPU tensors) as safetensors
  (no pickle by construction; the same tensors give the same bytes). A ``weights.pt`` of an
  older folder is still read, with ``torch.load(weights_only=True)``;
* a numpy model (the ECG probe; the echo probe as its accelerator trains it):
  ``weights.npz``, plain arrays read with ``allow_pickle=False``;
* ``checkpoint.json``: probe name, architecture, training config, parameter count,
  standardization constants, which weights file, best epoch, validation MAE, train wall
  clock, peak RSS and the hardware stamp. The model is rebuilt from the architecture (its
  inference forward chosen as :mod:`rightsize.probes.accel` decides), then the weights load.

Every file is written atomically; the sidecar goes last, so a directory whose sidecar
exists holds a complete checkpoint.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rightsize.atomic import write_json
from rightsize.errors import DataError, InputError
from rightsize.probes.engine.data import Standardizer
from rightsize.probes.engine.integrity import check_weights_fit
from rightsize.probes.engine.npzfile import WEIGHTS as NPZ_WEIGHTS
from rightsize.probes.engine.predict import Probe
from rightsize.probes.registry import spec as probe_spec

FORMAT = 1
SIDECAR = "checkpoint.json"
PT_WEIGHTS = "weights.safetensors"      # rightsize.probes.engine.torch_model.WEIGHTS
LEGACY_PT_WEIGHTS = "weights.pt"        # torch.save's zip, written before safetensors
WEIGHTS_FILES = (PT_WEIGHTS, NPZ_WEIGHTS, LEGACY_PT_WEIGHTS)


def save_checkpoint(out_dir: str | os.PathLike[str], probe: Probe, arch: dict[str, Any],
                    info: dict[str, Any]) -> dict[str, Any]:
    """Write ``probe``'s weights and sidecar under ``out_dir``; return the sidecar as written.

    ``info`` (train config, metrics, timings, hardware ...) is merged into the sidecar. The
    dict returned is the JSON written (tuples become lists), so a caller that goes on with
    it sees what :func:`read_sidecar` would return.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    weights = probe.model.save(out).name
    for stale in WEIGHTS_FILES:
        if stale != weights and (out / stale).exists():
            (out / stale).unlink()
    sidecar = {
        "format": FORMAT,
        "probe": probe.name,
        "arch": arch,
        "params": probe.n_params,
        "standardization": {"mean": probe.std.mean, "sd": probe.std.sd},
        "ef_score": probe_spec(probe.name).ef_score,
        "weights": weights,
        **info,
    }
    write_json(out / SIDECAR, sidecar)
    return json.loads(json.dumps(sidecar))


def read_sidecar(model_dir: str | os.PathLike[str], probe: str | None = None) -> dict[str, Any]:
    """Read and check ``<model_dir>/checkpoint.json`` (InputError/DataError naming the file)."""
    d = Path(model_dir)
    if not d.is_dir():
        raise InputError(f"{d}: model directory not found")
    path = d / SIDECAR
    if not path.is_file():
        raise InputError(f"{path}: checkpoint sidecar not found (train the probe first)")
    try:
        side = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise DataError(f"{path}: not valid JSON") from None
    if not isinstance(side, dict) or not isinstance(side.get("arch"), dict):
        raise DataError(f"{path}: not a probe checkpoint sidecar (no arch mapping)")
    if side.get("format") != FORMAT:
        raise DataError(f"{path}: format {side.get('format')!r} unsupported (expected {FORMAT})")
    if probe is not None and side.get("probe") != probe:
        raise InputError(f"{path}: holds probe {side.get('probe')!r}, not {probe!r}")
    return side


def load_checkpoint(model_dir: str | os.PathLike[str], probe: str | None = None,
                    device: str = "cpu", accelerate: bool = True) -> tuple[Probe, dict[str, Any]]:
    """Rebuild the probe saved in ``model_dir`` on ``device``; return ``(probe, sidecar)``.

    ``accelerate`` (``train.accelerate``) lets an accelerator be its inference forward.
    """
    side = read_sidecar(model_dir, probe)
    name = side["probe"]
    std_d = side.get("standardization") or {}
    try:
        std = Standardizer(mean=float(std_d["mean"]), sd=float(std_d["sd"]))
    except (KeyError, TypeError, ValueError):
        raise DataError(f"{Path(model_dir) / SIDECAR}: bad standardization block") from None
    weights = side.get("weights")
    if weights not in WEIGHTS_FILES:
        raise DataError(f"{Path(model_dir) / SIDECAR}: weights {weights!r} unknown "
                        f"(expected one of {', '.join(WEIGHTS_FILES)})")
    wpath = Path(model_dir) / weights
    if not wpath.is_file():
        raise InputError(f"{wpath}: weights file not found")
    probe_of = probe_spec(name)         # the name the sidecar holds, resolved once
    numpy_model = probe_of.numpy_model
    if weights == NPZ_WEIGHTS:
        if numpy_model is None:
            raise DataError(f"{wpath}: probe {name!r} has no numpy model")
        model = numpy_model().load(model_dir)
        return check_weights_fit(Probe(name, model, std), side["arch"], wpath), side
    from rightsize.probes.engine.build import load_torch_model

    try:
        model = load_torch_model(probe_of, side["arch"], device, accelerate)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{Path(model_dir) / SIDECAR}: bad arch block ({exc})") from None
    probe = Probe(name, model.load_weights(wpath), std)
    return check_weights_fit(probe, side["arch"], wpath), side


def checkpoint_bytes(model_dir: str | os.PathLike[str]) -> int:
    """Total bytes of the regular files in ``model_dir`` (weights + sidecar)."""
    return sum(p.stat().st_size for p in Path(model_dir).iterdir() if p.is_file())
