"""Project a measured run onto a new dataset size, and its model FLOPs utilisation.

Units are what the data loader iterates. ``R0`` records of the measured dataset became ``U0``
loader units (crops, windows, clips...), and ``N`` of those units are iterated per training
epoch (``train_records``), so the training share is ``N / U0``. A dataset of ``R`` records
then yields ``R * (U0 / R0) * (N / U0) = R * N / R0`` training units per epoch, i.e.
``floor`` (drop_last) or ``ceil`` of that over the global batch ``B`` in steps, each costing
the measured median step time. Calendar time scales compute time by the run's measured
calendar overhead (calendar hours / active hours).

MFU (model FLOPs utilisation): the global batch is counted in loader units, so
``units_per_s = B / median_step_s`` and
``mfu = units_per_s * flops_per_unit / (gpus * peak_tflops * 1e12)``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from rightsize.telemetry.report_config import ProjectionConfig


def projection(cfg: ProjectionConfig, *, train_records: int, global_batch: int, gpus: int,
               drop_last: bool, median_step_s: float | None,
               calendar_overhead: float | None) -> dict[str, Any]:
    """The ``projection`` block of the report: steps, hours and one schedule per epoch count.

    Besides the ``schedules`` list (dropped by DVC's metrics tables) every schedule is also
    flattened into scalar keys ``e<E>_compute_hours``, ``e<E>_gpu_hours`` and
    ``e<E>_calendar_hours``.
    """
    units = Fraction(cfg.records * train_records, cfg.base_records)
    per_batch = units / global_batch
    steps = math.floor(per_batch) if drop_last else math.ceil(per_batch)
    hours = None if median_step_s is None else steps * median_step_s / 3600.0
    out: dict[str, Any] = {
        "records": cfg.records,
        "base_records": cfg.base_records,
        "base_units": cfg.base_units,
        "units_per_record": cfg.base_units / cfg.base_records,
        "train_share": train_records / cfg.base_units,
        "units_per_epoch": float(units),
        "steps_per_epoch": steps,
        "hours_per_epoch": hours,
        "gpu_hours_per_epoch": None if hours is None else hours * gpus,
        "schedules": [],
    }
    for e in cfg.epochs:
        compute = None if hours is None else e * hours
        gpu = None if compute is None else compute * gpus
        cal = None if compute is None or calendar_overhead is None else compute * calendar_overhead
        out["schedules"].append(
            {"epochs": e, "compute_hours": compute, "gpu_hours": gpu, "calendar_hours": cal})
        out[f"e{e}_compute_hours"] = compute
        out[f"e{e}_gpu_hours"] = gpu
        out[f"e{e}_calendar_hours"] = cal
    return out


def mfu(*, global_batch: int, gpus: int, median_step_s: float | None,
        flops_per_unit: float, peak_tflops: float) -> dict[str, float | None]:
    """Units per second and model FLOPs utilisation at the median step time."""
    if not median_step_s or median_step_s <= 0:
        return {"units_per_s": None, "achieved_tflops_per_gpu": None, "mfu": None}
    units_per_s = global_batch / median_step_s
    per_gpu = units_per_s * flops_per_unit / gpus / 1e12
    return {"units_per_s": units_per_s, "achieved_tflops_per_gpu": per_gpu,
            "mfu": per_gpu / peak_tflops}
