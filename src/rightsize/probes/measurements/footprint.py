"""Footprint of the probe pipeline: checkpoint bytes and parameters, payload sizes, peak RSS.

Reads what the cohort/train/evaluate stages left behind and reports, as DVC-friendly scalars:

* ``checkpoints.<probe>.{bytes,params,replicas}``: bytes = all files under ``models/<probe>/``
  (the seed replicas' checkpoints in ``replicas/r<k>/`` included; ``replicas`` counts them
  with replica 0); params of replica 0's weights;
  params = counted from the weights themselves (``weights.pt``: numel of every tensor in the
  state_dict loaded with ``torch.load(weights_only=True)``, buffers included;
  ``weights.npz``: total array size), i.e. every stored number, not just trainable ones.
  A ``checkpoint.json`` claiming more parameters than the weights hold is warned about.
* ``payload_bytes.clips_<k>`` = ``n x k x echo_dim x 4 + n x N x ecg_dim x 4`` (float32
  arithmetic, ``N`` = ``ecg_tokens``: ``cohort.ecg_tokens``, or with ``null`` the manifest's
  ECG width over ``ecg_dim``) for every ``k`` in ``footprint.clips`` plus ``cohort.max_clips``;
  the measured manifest bytes sit next to the configured ``k`` (``payload_measured_bytes``,
  ``payload_measured_ratio``).
* ``peak_rss_mb.{cohort,train_<probe>,eval_<probe>}`` from the stages' metric JSONs.
* ``writable.<name>``: the output location exists (or can be created) and a temp file can be
  created and removed there; ``free_disk_bytes`` at the metrics location.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rightsize import console
from rightsize.cohort.config import payload_bytes
from rightsize.errors import DataError, InputError
from rightsize.params import require

log = logging.getLogger(__name__)

SIDECAR = "checkpoint.json"
SIDECAR_PARAM_KEYS = ("params", "n_params", "param_count", "num_params")


@dataclass(frozen=True)
class FootprintConfig:
    """The ``footprint`` params block: clip counts for the payload table."""

    clips: tuple[int, ...] = (1, 8, 16, 32)

    def validate(self, key: str = "footprint") -> None:
        """Raise ``ParamsError`` naming ``<key>.clips`` unless it is a non-empty positive list."""
        require(len(self.clips) > 0, f"{key}.clips", "must list at least one clip count")
        for i, k in enumerate(self.clips):
            require(k > 0, f"{key}.clips[{i}]", f"must be a positive integer, got {k!r}")


@dataclass(frozen=True)
class CohortShape:
    """The ``cohort`` keys the payload arithmetic needs (``ecg_tokens`` None: from the
    manifest, as ``cohort.ecg_tokens: null`` takes it from the input files)."""

    n_subjects: int
    max_clips: int
    echo_dim: int
    ecg_dim: int
    ecg_tokens: int | None = 1

    def validate(self, key: str = "cohort") -> None:
        """Raise ``ParamsError`` naming ``<key>.<field>`` for a non-positive value."""
        for name in ("n_subjects", "max_clips", "echo_dim", "ecg_dim", "ecg_tokens"):
            value = getattr(self, name)
            ok = value > 0 if value is not None else name == "ecg_tokens"
            require(ok, f"{key}.{name}", f"must be a positive integer, got {value!r}")


@dataclass(frozen=True)
class FootprintPaths:
    """Where the stages wrote their outputs (all relative to the working directory)."""

    manifest: Path
    models: Path
    metrics_dir: Path
    reports: Path = Path("reports")


def payload_table(shape: CohortShape, clips: tuple[int, ...],
                  ecg_tokens: int = 1) -> list[dict[str, int]]:
    """``[{max_clips, ecg_tokens, payload_bytes}]`` for ``clips`` plus ``shape.max_clips``,
    ascending, each subject's ECG ``ecg_tokens`` vectors."""
    ks = sorted({*clips, shape.max_clips})
    return [{"max_clips": k, "ecg_tokens": ecg_tokens,
             "payload_bytes": payload_bytes(shape.n_subjects, k, shape.echo_dim, shape.ecg_dim,
                                            ecg_tokens)}
            for k in ks]


def manifest_ecg_tokens(path: Path, ecg_dim: int) -> int:
    """ECG vectors per subject of a manifest file: its ``ecg`` column's width over
    ``ecg_dim`` (1 for a directory or a manifest without a fixed-size ``ecg`` column)."""
    if not path.is_file():
        return 1
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
        raise DataError(f"{path}: not a readable parquet file: {exc}") from None
    index = schema.get_field_index("ecg")
    kind = schema.field(index).type if index >= 0 else None
    if kind is None or not pa.types.is_fixed_size_list(kind):
        return 1
    return max(1, kind.list_size // ecg_dim)


def tree_bytes(path: Path) -> int:
    """Bytes of a file, or of every regular file below a directory (symlinks not followed)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            p = Path(root) / name
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_size
    return total


def count_torch_params(path: Path) -> int:
    """Sum of ``numel`` over every tensor in a ``torch.save``d state_dict (nested ok)."""
    import torch

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is a bad file
        raise DataError(f"{path}: not a loadable torch state_dict: "
                        f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                        ) from None

    def numel(node: Any) -> int:
        if isinstance(node, torch.Tensor):
            return int(node.numel())
        if isinstance(node, dict):
            return sum(numel(v) for v in node.values())
        if isinstance(node, list | tuple):
            return sum(numel(v) for v in node)
        return 0

    return numel(obj)


def count_npz_params(path: Path) -> int:
    """Total number of elements over every array in an ``.npz`` file."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as npz:
            return int(sum(npz[name].size for name in npz.files))
    except Exception as exc:  # noqa: BLE001 - zip/format errors are a bad file
        raise DataError(f"{path}: not a readable .npz: {type(exc).__name__}: {exc}") from None


def checkpoint_footprint(model_dir: Path) -> dict[str, int]:
    """``{bytes, params, replicas}`` of one checkpoint directory (weights.pt or .npz)."""
    if not model_dir.is_dir():
        raise InputError(f"{model_dir}: checkpoint directory not found")
    pt, npz = model_dir / "weights.pt", model_dir / "weights.npz"
    if pt.is_file():
        params = count_torch_params(pt)
    elif npz.is_file():
        params = count_npz_params(npz)
    else:
        raise InputError(f"{model_dir}: no weights.pt or weights.npz in checkpoint directory")
    # The sidecar usually counts trainable parameters only; the weights also hold buffers and
    # standardization constants, so counted >= claimed is expected and only logged.
    claimed = _sidecar_params(model_dir / SIDECAR)
    if claimed is not None and claimed > params:
        console.warn(f"{model_dir / SIDECAR}: says {claimed} params but the weights hold only "
                     f"{params} numbers (reporting the counted number)")
    elif claimed is not None and claimed != params:
        log.debug("%s: sidecar %d params, weights hold %d numbers", model_dir, claimed, params)
    from rightsize.probes.engine.replicas import replica_dirs

    return {"bytes": tree_bytes(model_dir), "params": params,
            "replicas": 1 + len(replica_dirs(model_dir))}


def _sidecar_params(path: Path) -> int | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        return None
    for key in SIDECAR_PARAM_KEYS:
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def read_peak_rss(path: Path) -> float:
    """``peak_rss_mb`` from a stage's metric JSON; one-line ``InputError`` naming the file."""
    if not path.is_file():
        raise InputError(f"{path}: metrics file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from None
    value = data.get("peak_rss_mb") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{path}: missing numeric key peak_rss_mb")
    return float(value)


def _existing_ancestor(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def is_writable(path: Path) -> bool:
    """True if ``path`` is a directory (or creatable as one) where a temp file can be written.

    Probes by creating and removing a temp file in ``path`` or, when ``path`` does not exist
    yet, in its nearest existing ancestor (which must be a directory). Creates no directory.
    """
    target = path if path.exists() else _existing_ancestor(path)
    if not target.is_dir():
        return False
    try:
        fd, name = tempfile.mkstemp(prefix=".rightsize-write-check.", dir=target)
    except OSError:
        return False
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
    return True


def free_disk_bytes(path: Path) -> int:
    """Free bytes on the filesystem holding ``path`` (or its nearest existing ancestor)."""
    return int(shutil.disk_usage(_existing_ancestor(path)).free)


def manifest_rows(path: Path) -> int | None:
    """Row count from the parquet footer of a manifest file (None for a directory)."""
    if not path.is_file():
        return None
    import pyarrow.parquet as pq

    try:
        return int(pq.read_metadata(path).num_rows)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
        raise DataError(f"{path}: not a readable parquet file: {exc}") from None


def measure_footprint(paths: FootprintPaths, cfg: FootprintConfig, shape: CohortShape,
                      probes: tuple[str, ...]) -> dict[str, Any]:
    """Collect the whole footprint report (see module docstring for the keys)."""
    if not paths.manifest.exists():
        raise InputError(f"{paths.manifest}: manifest not found")
    manifest_bytes = tree_bytes(paths.manifest)
    rows = manifest_rows(paths.manifest)
    if rows is not None and rows != shape.n_subjects:
        console.warn(f"{paths.manifest}: {rows} rows but cohort.n_subjects is "
                     f"{shape.n_subjects}; payload table uses cohort.n_subjects")

    checkpoints = {p: checkpoint_footprint(paths.models / p) for p in probes}
    tokens = (shape.ecg_tokens if shape.ecg_tokens is not None
              else manifest_ecg_tokens(paths.manifest, shape.ecg_dim))
    table = payload_table(shape, cfg.clips, tokens)
    expected = payload_bytes(shape.n_subjects, shape.max_clips, shape.echo_dim, shape.ecg_dim,
                             tokens)

    rss: dict[str, float] = {"cohort": read_peak_rss(paths.metrics_dir / "cohort.json")}
    for stage in ("train", "eval"):
        for p in probes:
            rss[f"{stage}_{p}"] = read_peak_rss(paths.metrics_dir / stage / f"{p}.json")

    locations = {"data": paths.manifest.parent, "models": paths.models,
                 "metrics": paths.metrics_dir, "reports": paths.reports}
    return {
        "manifest_bytes": manifest_bytes,
        "manifest_rows": rows,
        "checkpoints": checkpoints,
        "checkpoint_bytes_total": sum(c["bytes"] for c in checkpoints.values()),
        "checkpoint_params_total": sum(c["params"] for c in checkpoints.values()),
        "n_subjects": shape.n_subjects,
        "max_clips": shape.max_clips,
        "ecg_tokens": tokens,
        "payload_table": table,
        "payload_bytes": {f"clips_{row['max_clips']}": row["payload_bytes"] for row in table},
        "payload_expected_bytes": expected,
        "payload_measured_bytes": manifest_bytes,
        "payload_measured_ratio": manifest_bytes / expected,
        "peak_rss_mb": {**rss, "max": max(rss.values())},
        "writable": {name: is_writable(p) for name, p in locations.items()},
        "free_disk_bytes": free_disk_bytes(paths.metrics_dir),
    }
