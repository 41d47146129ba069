"""The ask's prediction for one extraction run on this machine's CPU, to set beside the run.

The same arithmetic as the ask's CPU option (:func:`~rightsize.sizing.plan.size_row`): the
encoder bench's measured records/s and preprocessing rate, the disk rates the sizing stage
measured, for the run's record count and the layers it keeps. No torch: numbers only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rightsize.sizing.config import ModelSizing, ScenarioCount, SizingConfig
from rightsize.sizing.plan import size_row

PARTS = ("compute", "preprocessing", "reading", "writing")


def predict_cpu_run(records: int, bench: dict[str, Any], cfg: SizingConfig, model: str,
                    layers_kept: int, disk: dict[str, Any]) -> dict[str, Any]:
    """``{"wall_s_low", "wall_s_high", "bound", "parts": {part: {low_s, high_s, how}}}`` of
    ``records`` records of ``model`` on this machine's CPU, ``layers_kept`` layers kept."""
    sized = replace(cfg, models={**cfg.models, model: ModelSizing(layers_kept, "tokens")})
    row, _ = size_row(ScenarioCount(records, "this extract run"), bench, sized, model,
                      (None, None), disk)
    cpu = row["cpu"]
    return {"records": records, "wall_s_low": cpu["wall_s_low"],
            "wall_s_high": cpu["wall_s_high"], "bound": cpu["bound"],
            "parts": cpu["parts"], "not_measured": cpu["not_measured"],
            "bench_size": bench.get("size"), "bench_batch": bench.get("best_batch"),
            "bench_threads": (bench.get("hardware") or {}).get("threads")}


def compare(prediction: dict[str, Any], wall_s: float,
            measured_parts: dict[str, float]) -> dict[str, Any]:
    """The measured wall clock against the predicted range: ratio to each end, whether it
    falls inside, and (outside) the part that contributed most seconds to the miss
    (``measured_parts``: wall-clock seconds per part; a part the ask does not predict, such
    as start-up, counts as predicted at 0 s).
    """
    lo, hi = prediction.get("wall_s_low"), prediction.get("wall_s_high")
    out: dict[str, Any] = {"wall_s": wall_s, "predicted_wall_s_low": lo,
                           "predicted_wall_s_high": hi, "parts_measured_s": measured_parts}
    if not lo or not hi:
        return {**out, "inside": None, "ratio_to_high": None, "ratio_to_low": None,
                "mispredicted_part": None, "note": "no prediction (compute not measured)"}
    inside = lo <= wall_s <= hi
    out.update(inside=inside, ratio_to_high=wall_s / hi, ratio_to_low=wall_s / lo,
               ratio_to_mid=wall_s / ((lo + hi) / 2))
    parts = prediction.get("parts", {})
    excess: dict[str, tuple[float, float | None]] = {}
    for name, seconds in measured_parts.items():
        p = parts.get(name) or {}
        mid = ((p.get("low_s") or 0) + (p.get("high_s") or 0)) / 2
        excess[name] = (seconds - mid, seconds / mid if mid > 0 else None)
    worst = max(excess, key=lambda k: abs(excess[k][0]), default=None)
    out["mispredicted_part"] = None if inside else worst
    out["mispredicted_excess_s"] = None if inside or worst is None else excess[worst][0]
    out["mispredicted_ratio"] = None if inside or worst is None else excess[worst][1]
    return out
