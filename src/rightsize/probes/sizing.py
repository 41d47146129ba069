"""GPU sizing calculator: storage and GPU time to re-extract token-level embeddings.

Pure arithmetic over a :class:`~rightsize.probes.sizing_config.SizingConfig` (no I/O):

* ``tokens_per_record = seconds_per_record x tokens_per_second``
* ``bytes_per_record = tokens_per_record x hidden_dim x layers_kept x bytes(dtype)``
* ``storage_bytes = records x bytes_per_record``
* pooled alternative (mean over tokens, one vector per record per kept layer):
  ``pooled_storage_bytes = records x hidden_dim x layers_kept x bytes(dtype)``
* ``gpu_hours = records / records_per_s_per_gpu / 3600``;
  ``wall_clock_hours = gpu_hours / gpus`` (perfect scaling, no startup or I/O stalls)
* ``fits_disk = storage_bytes <= disk_bytes``; ``max_records_on_disk`` and
  ``max_layers_on_disk`` are the largest counts whose storage still fits.

Sizes use decimal units (``storage_tb`` = bytes / 1e12). Integer outputs are computed with
exact rational arithmetic on the configured numbers, so a disk that fits exactly fits.
"""

from __future__ import annotations

import logging
import math
from fractions import Fraction
from typing import Any

from rightsize.probes.sizing_config import SizingConfig

log = logging.getLogger(__name__)

SECONDS_PER_HOUR = 3600


def size_extraction(cfg: SizingConfig) -> dict[str, Any]:
    """Return storage, GPU-hours, wall-clock and disk fit for ``cfg`` as flat scalars.

    Keys: the inputs echoed (``records`` ... ``disk_bytes``, ``dtype_bytes``), then
    ``tokens_per_record``, ``total_tokens``, ``bytes_per_record``, ``storage_bytes``,
    ``storage_tb``, ``storage_tib``, ``pooled_bytes_per_record``, ``pooled_storage_bytes``,
    ``token_to_pooled_ratio``, ``gpu_hours``, ``wall_clock_hours``, ``wall_clock_days``,
    ``fits_disk``, ``disk_headroom_bytes``, ``max_records_on_disk``, ``max_layers_on_disk``
    (the last four are ``None`` when ``disk_bytes`` is not set).
    """
    cfg.validate("sizing")
    dtype_bytes = cfg.dtype_bytes
    tokens = Fraction(cfg.seconds_per_record) * Fraction(cfg.tokens_per_second)
    per_layer_record = tokens * cfg.hidden_dim * dtype_bytes       # one kept layer, one record
    per_record = per_layer_record * cfg.layers_kept
    storage = per_record * cfg.records
    pooled_per_record = cfg.hidden_dim * cfg.layers_kept * dtype_bytes
    pooled = pooled_per_record * cfg.records
    gpu_hours = Fraction(cfg.records) / Fraction(cfg.records_per_s_per_gpu) / SECONDS_PER_HOUR
    wall_hours = gpu_hours / cfg.gpus

    out: dict[str, Any] = {
        "records": cfg.records,
        "seconds_per_record": cfg.seconds_per_record,
        "tokens_per_second": cfg.tokens_per_second,
        "hidden_dim": cfg.hidden_dim,
        "layers_kept": cfg.layers_kept,
        "dtype": cfg.dtype,
        "dtype_bytes": dtype_bytes,
        "records_per_s_per_gpu": cfg.records_per_s_per_gpu,
        "gpus": cfg.gpus,
        "disk_bytes": None if cfg.disk_bytes is None else _as_number(Fraction(cfg.disk_bytes)),
        "tokens_per_record": _as_number(tokens),
        "total_tokens": _as_number(tokens * cfg.records),
        "bytes_per_record": _as_number(per_record),
        "storage_bytes": _as_number(storage),
        "storage_tb": float(storage / 10**12),
        "storage_tib": float(storage / 2**40),
        "pooled_bytes_per_record": pooled_per_record,
        "pooled_storage_bytes": pooled,
        "token_to_pooled_ratio": float(storage / pooled),
        "gpu_hours": float(gpu_hours),
        "wall_clock_hours": float(wall_hours),
        "wall_clock_days": float(wall_hours / 24),
        "fits_disk": None,
        "disk_headroom_bytes": None,
        "max_records_on_disk": None,
        "max_layers_on_disk": None,
    }
    if cfg.disk_bytes is not None:
        disk = Fraction(cfg.disk_bytes)
        out["fits_disk"] = storage <= disk
        out["disk_headroom_bytes"] = _as_number(disk - storage)
        out["max_records_on_disk"] = math.floor(disk / per_record)
        out["max_layers_on_disk"] = math.floor(disk / (per_layer_record * cfg.records))
    log.debug("sizing %s -> storage %s bytes, %s GPU-hours",
              cfg, out["storage_bytes"], out["gpu_hours"])
    return out


def _as_number(x: Fraction) -> int | float:
    """An exact integer stays an ``int``; anything else becomes a ``float``."""
    return int(x) if x.denominator == 1 else float(x)


def table_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """Human-readable (label, value) rows of a :func:`size_extraction` result."""
    from rightsize.probes.sizing_config import format_bytes

    def hours(h: float) -> str:
        return f"{h:,.1f} h ({h / 24:,.2f} d)"

    rows = [
        ("records", f"{result['records']:,}"),
        ("signal per record", f"{result['seconds_per_record']:g} s x "
                              f"{result['tokens_per_second']:g} tokens/s = "
                              f"{result['tokens_per_record']:,} tokens"),
        ("kept per token", f"{result['hidden_dim']} hidden x {result['layers_kept']} layers x "
                           f"{result['dtype_bytes']} B ({result['dtype']})"),
        ("bytes per record", format_bytes(result["bytes_per_record"])),
        ("token-level storage", f"{format_bytes(result['storage_bytes'])} "
                                f"({result['storage_bytes']:,} B)"),
        ("pooled storage", f"{format_bytes(result['pooled_storage_bytes'])} "
                           f"(1/{result['token_to_pooled_ratio']:,.0f} of token-level)"),
        ("throughput", f"{result['records_per_s_per_gpu']:g} records/s per GPU"),
        ("GPU-hours", hours(result["gpu_hours"])),
        (f"wall clock on {result['gpus']} GPUs", hours(result["wall_clock_hours"])),
    ]
    if result["disk_bytes"] is not None:
        rows += [
            ("disk", format_bytes(result["disk_bytes"])),
            ("fits disk", "yes" if result["fits_disk"] else "NO"),
            ("max records on disk", f"{result['max_records_on_disk']:,}"),
            ("max layers on disk", f"{result['max_layers_on_disk']:,}"),
        ]
    return rows
