"""A model folder whose files agree: content hashes in the sidecar, weights that fit the arch.

``rightsize train`` writes a whole model folder (weights, ``checkpoint.json``, the seed
replicas under ``replicas/r<k>/``) into a staged sibling and swaps it in
(:func:`rightsize.atomic.staged_dir`). Before the swap, :func:`record_contents` adds the
SHA-256 of every other file of the folder, replicas included, to the top ``checkpoint.json``
(key :data:`CONTENTS`), and then the SHA-256 of the sidecar's own content (key
:data:`SELF`: the canonical JSON of every other key), so the metadata the model reads (its
standardization, architecture, weights file) is covered too. :func:`check_contents`
recomputes them when a folder is loaded, so a folder assembled from two trainings (new
weights beside an old sidecar or old replicas, a replica left from another run, a file or
the sidecar edited since) is refused with an :class:`~rightsize.errors.IntegrityError`
(exit 3) naming the file. Folders written before this check carry no hashes: they load,
and the caller warns.

:func:`check_weights_fit` runs a two-row prediction on zero inputs of the sidecar's
dimensions: weights of the right names but the wrong shapes (a hand-edited ``.npz``) fail
there, as a :class:`~rightsize.errors.DataError`, instead of deep inside an evaluation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar

from rightsize.atomic import write_json
from rightsize.errors import DataError, IntegrityError
from rightsize.ground.sha256 import sha256_file

CONTENTS = "contents"      # sidecar key: {relative path: sha256 hex} of the folder's files
SELF = "sidecar_sha256"    # sidecar key: sha256 of the sidecar's canonical JSON without it
SIDECAR = "checkpoint.json"
P = TypeVar("P")


def folder_hashes(model_dir: str | os.PathLike[str]) -> dict[str, str]:
    """SHA-256 of every regular file under ``model_dir`` except its own ``checkpoint.json``
    and hidden (dot) names, keyed by relative POSIX path (sorted)."""
    root = Path(model_dir)
    out = {}
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if rel == SIDECAR or name.startswith(".") or not path.is_file():
                continue
            out[rel] = sha256_file(path)[0]
    return out


def record_contents(model_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Add :data:`CONTENTS` (hashes of every other file) to ``model_dir``'s sidecar, written
    atomically; return the sidecar as written."""
    path = Path(model_dir) / SIDECAR
    side = json.loads(path.read_text(encoding="utf-8"))
    side.pop(SELF, None)
    side[CONTENTS] = folder_hashes(model_dir)
    side[SELF] = sidecar_hash(side)
    write_json(path, side)
    return side


def sidecar_hash(sidecar: dict[str, Any]) -> str:
    """SHA-256 of ``sidecar``'s canonical JSON (sorted keys, no spaces), :data:`SELF` left out:
    what the model reads from it, independent of its layout."""
    import hashlib

    body = {k: v for k, v in sidecar.items() if k != SELF}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_contents(model_dir: str | os.PathLike[str], sidecar: dict[str, Any]) -> bool:
    """Check ``model_dir``'s files against the hashes in its ``sidecar``.

    Returns False for a folder written before hashes were recorded (nothing to check).
    Raises :class:`~rightsize.errors.IntegrityError` naming the sidecar when its content
    is not what was hashed when it was written, else the first file that is missing,
    changed or not listed.
    """
    want = sidecar.get(CONTENTS)
    if want is None:
        return False
    root = Path(model_dir)
    if not isinstance(want, dict):
        raise IntegrityError(f"{root / SIDECAR}: {CONTENTS} is not a mapping of file hashes")
    recorded = sidecar.get(SELF)
    if recorded is not None and recorded != sidecar_hash(sidecar):
        raise IntegrityError(f"{root / SIDECAR}: its content differs from the hash recorded "
                             f"in it ({SELF}): edited since training; retrain the probe "
                             "(rightsize train or dvc repro)")
    have = folder_hashes(root)
    for rel in sorted(set(want) | set(have)):
        if have.get(rel) == want.get(rel):
            continue
        why = ("is missing" if rel not in have else "is not listed in it" if rel not in want
               else "differs from the hash recorded in it")
        raise IntegrityError(f"{root / rel}: {why} ({root / SIDECAR}): the folder mixes "
                             "files of different trainings; retrain the probe (rightsize "
                             "train or dvc repro)")
    return recorded is not None


def check_weights_fit(probe: P, arch: dict[str, Any], weights: Path) -> P:
    """Predict two rows of zeros shaped as ``arch`` says and return ``probe``; a
    :class:`DataError` naming ``weights`` when the arrays do not fit (an error, or not one
    number per row)."""
    import numpy as np

    from rightsize.probes.engine.data import SplitData

    echo_dim, ecg_dim = arch.get("echo_dim"), arch.get("ecg_dim")
    if not isinstance(echo_dim, int) or not isinstance(ecg_dim, int):
        raise DataError(f"{weights.parent / SIDECAR}: arch lacks integer echo_dim/ecg_dim")
    rows, clips, tokens = 2, 2, arch.get("ecg_tokens", 1)
    ecg_shape = (rows, ecg_dim) if tokens == 1 else (rows, tokens, ecg_dim)
    data = SplitData(np.zeros((rows, clips, echo_dim), np.float32), np.ones((rows, clips), bool),
                     np.zeros(ecg_shape, np.float32), np.ones(rows, bool),
                     np.zeros(rows), np.zeros(rows, bool))
    try:
        out = probe.predict(data)
    except (ValueError, RuntimeError, IndexError, TypeError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"{weights}: the weights do not fit the architecture in "
                        f"{SIDECAR} ({msg})") from None
    shapes = [np.shape(a) for a in out]
    if shapes != [(rows,), (rows,)]:
        raise DataError(f"{weights}: the weights do not fit the architecture in {SIDECAR} "
                        f"(predictions of shapes {shapes} for {rows} rows)")
    return probe
