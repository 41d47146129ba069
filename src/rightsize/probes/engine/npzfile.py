"""A numpy probe's weights: a frozen dataclass of arrays as ``weights.npz`` (no pickle).

The ECG probe (:class:`~rightsize.probes.models.ecg.LinearEcgProbe`) and the echo probe
(:class:`~rightsize.probes.models.echo.numpy_model.AttentiveEchoProbe`) save every field under
its own name, written atomically, and read back with ``allow_pickle=False``. The archive is written
byte-reproducibly: ``np.savez`` stamps each member with the current time, so here each is an
``.npy`` member (``np.lib.format``) with a fixed date, stored uncompressed, in field order:
the same arrays give the same bytes (and the same DVC hash).
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from rightsize.atomic import atomic_path
from rightsize.errors import DataError

WEIGHTS = "weights.npz"
FIXED_DATE = (1980, 1, 1, 0, 0, 0)     # the zip format's first date: no clock in the bytes
T = TypeVar("T")


def save_npz(obj: Any, out_dir: str | os.PathLike[str]) -> Path:
    """Write every field of dataclass ``obj`` to ``<out_dir>/weights.npz`` atomically."""
    path = Path(out_dir) / WEIGHTS
    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
        for f in fields(obj):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asanyarray(getattr(obj, f.name)),
                                      allow_pickle=False)
            info = zipfile.ZipInfo(f"{f.name}.npy", date_time=FIXED_DATE)
            info.external_attr = 0o644 << 16
            zf.writestr(info, member.getvalue())
    return path


def load_npz(cls: type[T], out_dir: str | os.PathLike[str], probe: str) -> T:
    """``cls`` from ``<out_dir>/weights.npz``; a DataError naming the file if it does not fit."""
    path = Path(out_dir) / WEIGHTS
    try:
        with np.load(path, allow_pickle=False) as npz:
            return cls(**{f.name: npz[f.name] for f in fields(cls)})  # type: ignore[arg-type]
    except (KeyError, ValueError, OSError) as exc:
        raise DataError(f"{path}: not an {probe} probe checkpoint ({exc})") from None
