"""The ask: the ask's models summed on one hardware, the rule that picks an option, and the
same job on every reservable GPU type side by side.

The rule (:func:`rightsize.sizing.timing.cheapest`): the cheapest option that finishes
within ``sizing.deadline_h`` with ``sizing.margin`` to spare, every part of it timed, and
whose shards fit the free space and the quota. A job whose shards do not fit is
``no_fit`` whatever its time; a part with no time (echo decoding) makes the choice
``unknown`` rather than "No GPU needed".
"""

from __future__ import annotations

from typing import Any

from rightsize.errors import ParamsError
from rightsize.sizing.config import SizingConfig
from rightsize.sizing.timing import add_jobs, cheapest, cost, gpu_job

Jobs = dict[str, dict[str, dict[int, dict[str, Any]]]]


def fits(storage: int, free: int | None, quota: int | None) -> dict[str, Any]:
    """Whether ``storage`` bytes fit the free space and the quota (``None``: not known)."""
    return {"fits_free_space": None if free is None else storage <= free,
            "fits_quota": None if quota is None else storage <= quota}


def _option(pick: dict[str, Any], cpu: dict[str, Any], by_k: dict[int, dict[str, Any]]
            ) -> dict[str, Any] | None:
    if pick["k"] is None:
        return cpu if pick["choice"] in ("cpu", "unknown", "no_fit") else None
    return by_k.get(pick["k"])


def ask(cfg: SizingConfig, scenarios: dict[str, Any], jobs: Jobs, free: int | None,
        quota: int | None, cores: int) -> dict[str, Any]:
    """The ask's models summed on the same hardware, and the option the rule picks."""
    rows = scenarios[cfg.ask.scenario]["models"]
    models = [m for m in cfg.ask.models if m in rows]
    if not models:
        raise ParamsError(f"sizing.ask: scenario {cfg.ask.scenario} has no records for "
                          f"{', '.join(cfg.ask.models)}")
    per_model = jobs[cfg.ask.scenario]
    cpu = add_jobs({m: rows[m]["cpu"] for m in models})
    by_k = {k: add_jobs({m: per_model[m][k] for m in models}) for k in range(1, cfg.gpus + 1)}
    storage = sum(rows[m]["storage_bytes"] for m in models)
    disk = fits(storage, free, quota)
    pick = cheapest(cpu, by_k, cfg.deadline_h, cfg.margin)
    in_time = dict(pick)
    if False in disk.values():
        pick = {"choice": "no_fit", "k": None}
    option = _option(pick, cpu, by_k)
    gtype = None if any(rows[m]["gpu_measured"] for m in models) else cfg.estimate.gpu
    return {
        "scenario": cfg.ask.scenario, "models": models,
        "omitted": [m for m in cfg.ask.models if m not in rows],
        "records": {m: rows[m]["records"] for m in models},
        "sources": {m: rows[m]["source"] for m in models},
        "storage_bytes": storage,
        "manifest_bytes": sum(rows[m]["manifest_bytes"] for m in models),
        **disk, "margin": cfg.margin,
        "choice": pick["choice"], "gpus_chosen": pick["k"], "option": option,
        "in_time": {**in_time, "option": _option(in_time, cpu, by_k)},
        "unknown": cpu.get("unknown", []),
        "cpu": cpu, "gpu": by_k[cfg.gpus],
        "gpu_measured": all(rows[m]["gpu_measured"] for m in models),
        "cost": None if option is None else cost(option, cfg.prices, cores, gtype),
        "cpu_cost": cost(cpu, cfg.prices, cores),
    }


def ks(gpus: int) -> list[int]:
    """The GPU counts a comparison shows: 1, 2, 4, ... up to and including ``gpus``."""
    out, k = [], 1
    while k < gpus:
        out.append(k)
        k *= 2
    return [*out, gpus]


def gpu_types(cfg: SizingConfig, scenarios: dict[str, Any],
              gpu_parts: dict[str, dict[str, dict[str, Any]]], free: int | None = None,
              quota: int | None = None) -> list[dict[str, Any]]:
    """The ask's job on each of ``sizing.gpu_types``: per k, wall-clock and GPU-hours, and
    the fewest GPUs within the deadline with margin (money at its price when set).

    ``gpu_parts[type][model]`` are one GPU's parts of that model's job, compute measured
    (a GPU file of that type) or estimated from the type's peak.
    """
    from rightsize.sizing.gpu_types import GPU_TYPES

    rows = scenarios[cfg.ask.scenario]["models"]
    models = [m for m in cfg.ask.models if m in rows]
    storage = sum(rows[m]["storage_bytes"] for m in models)
    fits_disk = False not in fits(storage, free, quota).values()
    out = []
    for name in cfg.gpu_types:
        t = GPU_TYPES[name]
        parts = gpu_parts[name]
        by_k = {k: add_jobs({m: {**gpu_job(parts[m], k, cfg.cpu_cores_per_gpu),
                                 "unknown": rows[m]["gpu"].get("unknown", [])}
                             for m in models}) for k in range(1, cfg.gpus + 1)}
        pick = cheapest({}, by_k, cfg.deadline_h, cfg.margin)
        if not fits_disk:
            pick = {"choice": "no_fit", "k": None}
        chosen = by_k.get(pick["k"]) if pick["choice"] in ("gpu", "unknown") else None
        hows = sorted({parts[m]["compute"].how for m in models})
        out.append({
            "type": name, "bf16_dense_tflops": t.bf16_dense_tflops, "memory_gb": t.memory_gb,
            "source": t.source, "compute": "/".join(hows),
            "notes": sorted({parts[m]["compute"].note for m in models}),
            "by_k": {str(k): {"wall_s_low": by_k[k]["wall_s_low"],
                              "wall_s_high": by_k[k]["wall_s_high"],
                              "bound": by_k[k].get("bound"),
                              "gpu_hours_low": by_k[k].get("gpu_hours_low"),
                              "gpu_hours_high": by_k[k].get("gpu_hours_high")}
                     for k in ks(cfg.gpus)},
            "choice": pick["choice"], "k": pick["k"] if chosen else None,
            "cost": None if chosen is None else cost(chosen, cfg.prices, 0, name),
        })
    return out


def types_bound_note(types: list[dict[str, Any]]) -> str | None:
    """When the GPU type does not change the time: every type at every k is bound by the
    same part that is not compute (``writing``), said as a sentence; else None."""
    bounds = {j.get("bound") for t in types for j in t["by_k"].values()}
    if len(bounds) != 1 or None in bounds:
        return None
    bound = bounds.pop()
    if "compute" in bound:
        return None
    return (f"Every GPU type at every count is bound by {bound}: the type does not change "
            f"the wall clock here, so take the fewest GPUs of the cheapest type (or speed up "
            f"{bound} first).")
