"""A pilot extraction calibrates the ask: each scenario re-predicted from a measured run.

A lead sizes an 800,000-record job by running 200 and extrapolating. From the pilot's
``metrics/extract.json`` (:func:`check_pilot`): each part's worker seconds per record
(preprocessing with reading, compute, writing) and the start-up (the pilot's "start-up and
the rest" less the idle its own shard schedule implies, :func:`pilot_startup`). A scenario
of N records is then the pilot's start-up plus the last worker's finish when N records in
shards of the pilot's size go to the pilot's workers in order
(:func:`rightsize.sizing.predict.finish`): the same machine, workers and batch as the pilot,
with crops per record other than the pilot's scaled by the crop ratio (said so). The
pilot's machine is named beside every figure. No torch: numbers only.
"""

from __future__ import annotations

import math
from typing import Any

from rightsize.errors import DataError
from rightsize.sizing.predict import RUN_PARTS, finish

PILOT_KEYS = ("records", "workers", "wall_s", "parts_worker_s", "startup_and_other_s", "model")


def check_pilot(data: object, name: str) -> dict[str, Any]:
    """A pilot run's metrics, checked: exit 4 naming the file and key otherwise."""
    if not isinstance(data, dict):
        raise DataError(f"{name}: not an extract metrics file (a JSON object is expected, got "
                        f"{type(data).__name__})")
    for key in PILOT_KEYS:
        if key not in data:
            raise DataError(f"{name}: not an extract metrics file (missing key {key})")
    for key in ("records", "workers"):
        v = data[key]
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise DataError(f"{name}: {key} must be a positive integer, got {v!r}")
    parts = data["parts_worker_s"]
    if not isinstance(parts, dict) or set(RUN_PARTS) - set(parts):
        raise DataError(f"{name}: parts_worker_s must hold {', '.join(RUN_PARTS)}")
    for key, v in [*((f"parts_worker_s.{k}", parts[k]) for k in RUN_PARTS),
                   ("wall_s", data["wall_s"]), ("startup_and_other_s",
                                                data["startup_and_other_s"])]:
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) \
                or v < 0:
            raise DataError(f"{name}: {key} must be a finite number of seconds >= 0, got {v!r}")
    if data["parts_worker_s"]["compute"] <= 0:
        raise DataError(f"{name}: parts_worker_s.compute must be > 0 (a run that encoded)")
    return data


def pilot_startup(pilot: dict[str, Any]) -> tuple[float, str]:
    """The pilot's start-up: its "start-up and the rest" less the idle its own shard
    schedule implies (the last shards leave workers idle), and how it was found."""
    per = sum(pilot["parts_worker_s"][k] for k in RUN_PARTS) / pilot["records"]
    shards = pilot.get("shard_sizes")
    if not shards:
        return (float(pilot["startup_and_other_s"]),
                "the pilot's start-up and the rest (no shard sizes recorded: idle included)")
    w = pilot["workers"]
    idle = finish(tuple(shards), w, per, 0.0) - pilot["records"] * per / w
    return (max(pilot["wall_s"] - finish(tuple(shards), w, per, 0.0), 0.0),
            f"the pilot's start-up and the rest less {idle:.1f} s its shard schedule left "
            f"idle")


def _shards(records: int, size: int) -> tuple[int, ...]:
    """Records per shard as extraction cuts ``records`` at ``shard_records: size``: equal
    shards, the larger first (:func:`rightsize.extraction.record_list.shard_sizes`)."""
    n = -(-records // size)
    base, extra = divmod(records, n)
    return (base + 1,) * extra + (base,) * (n - extra)


def pilot_wall(pilot: dict[str, Any], records: int, crops: int | None) -> dict[str, Any]:
    """``records`` records on the pilot's machine and workers, from its measured run."""
    pilot_crops = int(pilot.get("crops_per_record") or 1)
    scale = (crops or pilot_crops) / pilot_crops
    per_part = {k: pilot["parts_worker_s"][k] / pilot["records"] for k in RUN_PARTS}
    per = per_part["preprocessing"] * scale + per_part["compute"] * scale + \
        per_part["writing"] * scale
    start, how = pilot_startup(pilot)
    size = int(pilot.get("shard_records") or max(pilot.get("shard_sizes") or [records]))
    wall = finish(_shards(records, size), pilot["workers"], per, start)
    return {"records": records, "wall_s": wall, "startup_s": start, "startup_how": how,
            "seconds_per_record_per_worker": per, "workers": pilot["workers"],
            "scaled": None if scale == 1 else
            f"x{scale:g}: {crops} crops per record from the pilot's {pilot_crops}"}


def pilot_machine(pilot: dict[str, Any]) -> str:
    """The pilot's machine in words (this one or another)."""
    from rightsize.sizing.predict import bench_host

    return bench_host(pilot)["words"]


def pilot_block(pilot: dict[str, Any], name: str, result: dict[str, Any]) -> dict[str, Any]:
    """Every ECG row of a sizing ``result`` re-predicted from the pilot, beside the bench's
    CPU prediction; rows of another family or size are listed as not covered."""
    scenarios, benches = result["scenarios"], result.get("benches") or {}
    out: dict[str, Any] = {"file": name, "machine": pilot_machine(pilot),
                           "records": pilot["records"], "workers": pilot["workers"],
                           "model": pilot["model"], "wall_s": pilot["wall_s"],
                           "scenarios": {}, "not_covered": []}
    size = str(pilot["model"]).rsplit(" ", 1)[-1]
    for scen, block in scenarios.items():
        for model, row in block["models"].items():
            if row.get("family") != "hubert_ecg" or \
                    (benches.get(model) or {}).get("size", size) != size:
                out["not_covered"].append(f"{scen}/{model}")
                continue
            crops = row.get("inputs_per_record")
            p = pilot_wall(pilot, int(row["records"]), crops)
            cpu = row.get("cpu") or {}
            p.update(bench_wall_s_low=cpu.get("wall_s_low"),
                     bench_wall_s_high=cpu.get("wall_s_high"))
            out["scenarios"].setdefault(scen, {})[model] = p
    return out


def pilot_words(block: dict[str, Any]) -> list[str]:
    """The pilot in one clause (records, wall clock, machine, start-up), then one per
    scenario: the pilot's prediction beside the bench's."""
    from rightsize.fmt import duration_range

    first = next((p for models in block["scenarios"].values() for p in models.values()), None)
    if first is None:
        return []
    out = [f"pilot: {block['records']} records in {duration_range(block['wall_s'])} on "
           f"{block['workers']} workers of {block['machine']}, start-up "
           f"{first['startup_s']:.1f} s"]
    for scen, models in block["scenarios"].items():
        for model, p in models.items():
            bench = duration_range(p["bench_wall_s_low"], p["bench_wall_s_high"])
            out.append(f"{scen}/{model}: {p['records']:,} records in "
                       f"{duration_range(p['wall_s'])}"
                       + (f" ({p['scaled']})" if p.get("scaled") else "")
                       + f", the bench predicts {bench}")
    return out


def pilot_requests(block: dict[str, Any], pilot: dict[str, Any], result: dict[str, Any],
                   cfg: Any) -> dict[str, Any]:
    """The CPU Slurm request of each scenario the pilot covers whole: tasks shaped like the
    pilot (its cores, its workers' measured peak memory), time from the pilot."""
    from rightsize.sizing.request import scenario_request

    cores = int((pilot.get("hardware") or {}).get("threads") or pilot["workers"])
    shape = {"workers": {"workers": pilot["workers"],
                         "peak_rss_mb_per_worker": pilot.get("peak_rss_mb_max_worker")}}
    out = {}
    for scen, models in block["scenarios"].items():
        sc = result["scenarios"][scen]
        if set(models) != set(sc["models"]):
            continue
        wall = sum(p["wall_s"] for p in models.values())
        start = sum(p["startup_s"] for p in models.values())
        cpu = {"wall_s_low": wall, "wall_s_high": wall, "unknown": [],
               "parts": {"startup": {"high_s": start}}}
        out[scen] = scenario_request(scen, cpu, {}, sc["storage_bytes"], result["disk"],
                                     result["disk"].get("quota_bytes"), cfg, cores, shape)
    return out
