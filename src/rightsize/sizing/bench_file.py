"""Check a bench, GPU or sizing file before anything uses it: its shape and every rate field.

A rate that is negative, zero, NaN, infinite or not a number, or a ``*_min`` above its
``*_max``, would print "2.4-0.012 min" or "nan h": it is ``DataError`` (exit 4) naming the
file and the field. Files read here are checked before any work starts.
"""

from __future__ import annotations

import math
from typing import Any

from rightsize.errors import DataError

BENCH_KEYS = ("family", "size", "tokens_per_record", "hidden_size", "hidden_states",
              "flops_per_record", "device", "hardware")
#: Rate fields (with their ``_min``/``_max``) at the top, in ``preprocess``, per batch.
RATES = ("records_per_s",)
PRE_RATES = ("records_per_s_per_core",)
WORKER_RATES = ("records_per_s_per_worker", "records_per_s")


def _number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def check_rate(block: dict[str, Any], key: str, where: str, required: bool = False) -> None:
    """``block[key]`` and its ``_min``/``_max``: positive finite numbers, min <= mid <= max
    (``None`` allowed unless ``required``)."""
    values = {}
    for k in (key, f"{key}_min", f"{key}_max"):
        v = block.get(k)
        if v is None:
            if required and k == key:
                raise DataError(f"{where}: {k} missing (a rate is needed)")
            continue
        if not _number(v) or not math.isfinite(v) or v <= 0:
            raise DataError(f"{where}: {k} must be a positive rate, got {v!r}")
        values[k] = float(v)
    lo, hi = values.get(f"{key}_min"), values.get(f"{key}_max")
    if lo is not None and hi is not None and lo > hi:
        raise DataError(f"{where}: {key}_min {lo:g} > {key}_max {hi:g}")


def check_seconds(block: dict[str, Any], key: str, where: str) -> None:
    """``block[key]`` (and ``_min``/``_max``): finite seconds >= 0, min <= max."""
    for k in (key, f"{key}_min", f"{key}_max"):
        v = block.get(k)
        if v is not None and (not _number(v) or not math.isfinite(v) or v < 0):
            raise DataError(f"{where}: {k} must be a finite number of seconds >= 0, got {v!r}")
    lo, hi = block.get(f"{key}_min"), block.get(f"{key}_max")
    if lo is not None and hi is not None and lo > hi:
        raise DataError(f"{where}: {key}_min {lo:g} > {key}_max {hi:g}")


def check_bench(data: object, name: str) -> dict[str, Any]:
    """An encoder bench or GPU file's content, checked (``name`` names it in errors)."""
    if not isinstance(data, dict):
        raise DataError(f"{name}: not an encoder bench file (a JSON object is expected, got "
                        f"{type(data).__name__})")
    for key in BENCH_KEYS:
        if key not in data:
            raise DataError(f"{name}: not an encoder bench file (missing key {key})")
    if not isinstance(data["hardware"], dict):
        raise DataError(f"{name}: hardware must be a mapping")
    check_rate(data, "records_per_s", name)
    for key, t in (data.get("throughput") or {}).items():
        if isinstance(t, dict) and t.get("status", "ok") == "ok":
            check_rate(t, "records_per_s", f"{name}: throughput.{key}")
    pre = data.get("preprocess")
    if pre is not None:
        if not isinstance(pre, dict):
            raise DataError(f"{name}: preprocess must be a mapping or null")
        check_rate(pre, "records_per_s_per_core", f"{name}: preprocess")
    workers = data.get("workers")
    if workers is not None:
        if not isinstance(workers, dict) or not isinstance(workers.get("throughput"), dict):
            raise DataError(f"{name}: workers must be a mapping with a throughput mapping")
        check_seconds(workers, "startup_s", f"{name}: workers")
        for key, t in workers["throughput"].items():
            if not isinstance(t, dict):
                raise DataError(f"{name}: workers.throughput.{key} must be a mapping")
            for rate in WORKER_RATES:
                check_rate(t, rate, f"{name}: workers.throughput.{key}")
    return data


def check_sizing_file(data: object, name: str) -> dict[str, Any]:
    """A sizing result's disk measurement (what a prediction reads), checked."""
    disk = data.get("disk") if isinstance(data, dict) else None
    if not isinstance(disk, dict) or not isinstance(disk.get("write"), dict):
        raise DataError(f"{name}: no disk measurement (a sizing result with disk.write is "
                        f"expected; run the sizing stage)")
    check_rate(disk["write"], "bytes_per_s", f"{name}: disk.write", required=True)
    if disk.get("read") is not None:
        if not isinstance(disk["read"], dict):
            raise DataError(f"{name}: disk.read must be a mapping or null")
        check_rate(disk["read"], "bytes_per_s", f"{name}: disk.read", required=True)
    return disk


def check_scenarios(data: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A sizing result's scenarios and benches (what a pilot re-predicts), checked; None
    when the file has none (a disk measurement only)."""
    scenarios = data.get("scenarios")
    if scenarios is None:
        return None
    if not isinstance(scenarios, dict):
        raise DataError(f"{name}: scenarios must be a mapping")
    for scen, block in scenarios.items():
        models = block.get("models") if isinstance(block, dict) else None
        if not isinstance(models, dict):
            raise DataError(f"{name}: scenarios.{scen}.models must be a mapping")
        for model, row in models.items():
            records = row.get("records") if isinstance(row, dict) else None
            if not isinstance(records, int) or isinstance(records, bool) or records <= 0 \
                    or not isinstance(row.get("cpu"), dict):
                raise DataError(f"{name}: scenarios.{scen}.models.{model} needs a positive "
                                f"records count and a cpu option")
    if not isinstance(data.get("benches", {}), dict):
        raise DataError(f"{name}: benches must be a mapping")
    return data
