"""A numpy probe's weights: a frozen dataclass of arrays as ``weights.npz`` (no pickle).

The ECG probe (:class:`~rightsize.probes.models.ecg.LinearEcgProbe`) and the echo probe
(:class:`~rightsize.probes.accel.echo_numpy.AttentiveEchoProbe`) save every field under its own
name, written atomically, and read back with ``allow_pickle=False``.
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from rightsize.atomic import atomic_path
from rightsize.errors import DataError

WEIGHTS = "weights.npz"
T = TypeVar("T")


def save_npz(obj: Any, out_dir: str | os.PathLike[str]) -> Path:
    """Write every field of dataclass ``obj`` to ``<out_dir>/weights.npz`` atomically."""
    path = Path(out_dir) / WEIGHTS
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **{f.name: getattr(obj, f.name) for f in fields(obj)})
    return path


def load_npz(cls: type[T], out_dir: str | os.PathLike[str], probe: str) -> T:
    """``cls`` from ``<out_dir>/weights.npz``; a DataError naming the file if it does not fit."""
    path = Path(out_dir) / WEIGHTS
    try:
        with np.load(path, allow_pickle=False) as npz:
            return cls(**{f.name: npz[f.name] for f in fields(cls)})  # type: ignore[arg-type]
    except (KeyError, ValueError, OSError) as exc:
        raise DataError(f"{path}: not an {probe} probe checkpoint ({exc})") from None
