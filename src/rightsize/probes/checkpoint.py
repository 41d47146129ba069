"""Probe checkpoints without pickled code.

A model directory holds the weights and a JSON sidecar:

* torch probes (concat, fused): ``weights.pt``, the ``state_dict`` (CPU tensors) saved with
  ``torch.save`` and read back with ``torch.load(weights_only=True)``;
* the numpy probes (ecg, echo): ``weights.npz``, plain arrays read with ``allow_pickle=False``;
* ``checkpoint.json``: probe name, architecture, training config, parameter count,
  standardization constants, best epoch, validation MAE, train wall clock, peak RSS and
  the hardware stamp. The model is rebuilt from the architecture, then the weights load.

Every file is written atomically; the sidecar goes last, so a directory whose sidecar
exists holds a complete checkpoint.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

from rightsize.atomic import atomic_path, write_json
from rightsize.errors import DataError, InputError
from rightsize.probes.attentive import AttentiveEchoProbe
from rightsize.probes.data import Standardizer
from rightsize.probes.integrity import check_weights_fit
from rightsize.probes.linear import LinearEcgProbe
from rightsize.probes.names import NUMPY_PROBES
from rightsize.probes.npzfile import WEIGHTS as NPZ_WEIGHTS
from rightsize.probes.predict import Probe

FORMAT = 1
SIDECAR = "checkpoint.json"
PT_WEIGHTS = "weights.pt"


def weights_name(probe: str) -> str:
    """File name of ``probe``'s weights inside its model directory."""
    return NPZ_WEIGHTS if probe in NUMPY_PROBES else PT_WEIGHTS


def save_checkpoint(out_dir: str | os.PathLike[str], probe: Probe, arch: dict[str, Any],
                    info: dict[str, Any]) -> dict[str, Any]:
    """Write ``probe``'s weights and sidecar under ``out_dir``; return the sidecar as written.

    ``info`` (train config, metrics, timings, hardware ...) is merged into the sidecar. The
    dict returned is the JSON written (tuples become lists), so a caller that goes on with
    it sees what :func:`read_sidecar` would return.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stale = out / (PT_WEIGHTS if weights_name(probe.name) == NPZ_WEIGHTS else NPZ_WEIGHTS)
    if stale.exists():
        stale.unlink()
    if probe.is_torch:
        import torch

        state = {k: v.detach().to("cpu") for k, v in probe.model.state_dict().items()}
        with atomic_path(out / PT_WEIGHTS) as tmp:
            torch.save(state, tmp)
    else:
        probe.model.save(out)
    sidecar = {
        "format": FORMAT,
        "probe": probe.name,
        "arch": arch,
        "params": probe.n_params,
        "standardization": {"mean": probe.std.mean, "sd": probe.std.sd},
        "ef_score": "logit" if probe.name == "ecg" else "neg_lvef",
        "weights": weights_name(probe.name),
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
                    device: str = "cpu") -> tuple[Probe, dict[str, Any]]:
    """Rebuild the probe saved in ``model_dir`` on ``device``; return ``(probe, sidecar)``."""
    side = read_sidecar(model_dir, probe)
    name = side["probe"]
    std_d = side.get("standardization") or {}
    try:
        std = Standardizer(mean=float(std_d["mean"]), sd=float(std_d["sd"]))
    except (KeyError, TypeError, ValueError):
        raise DataError(f"{Path(model_dir) / SIDECAR}: bad standardization block") from None
    wpath = Path(model_dir) / weights_name(name)
    if not wpath.is_file():
        raise InputError(f"{wpath}: weights file not found")
    if name in NUMPY_PROBES:
        model = (LinearEcgProbe if name == "ecg" else AttentiveEchoProbe).load(model_dir)
        return check_weights_fit(Probe(name, model, std), side["arch"], wpath), side

    import torch

    from rightsize.probes.models import build_model

    try:
        model = build_model(side["arch"])
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{Path(model_dir) / SIDECAR}: bad arch block ({exc})") from None
    try:
        state = torch.load(wpath, map_location=device, weights_only=True)
        if not isinstance(state, dict):
            raise TypeError(f"holds a {type(state).__name__}, not a state_dict")
        model.load_state_dict(state)
    except (RuntimeError, OSError, EOFError, KeyError, ValueError, TypeError,
            pickle.UnpicklingError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"{wpath}: cannot load weights ({msg})") from None
    model.to(device).eval()
    return check_weights_fit(Probe(name, model, std, device), side["arch"], wpath), side


def checkpoint_bytes(model_dir: str | os.PathLike[str]) -> int:
    """Total bytes of the regular files in ``model_dir`` (weights + sidecar)."""
    return sum(p.stat().st_size for p in Path(model_dir).iterdir() if p.is_file())
