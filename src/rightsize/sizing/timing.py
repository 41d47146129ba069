"""Wall-clock of a re-extraction on this machine's CPU and on k GPUs, its bound, the cheapest.

A job has four parts, each a time in seconds with where it came from (:class:`Part`):
``compute`` (the encoder's forwards), ``preprocessing`` (reading + decoding inputs on CPU
cores), ``reading`` (input bytes off the disk) and ``writing`` (the token shards). Parts
that were not measured have no time and are listed as such; they never silently count 0.

* **Start-up** (``startup``, when the bench measured it: spawning the workers, imports, the
  model build) comes before the rest on every worker or GPU at once, so it adds to the wall
  once: ``wall = startup + ...``.
* On **this machine's CPU** the encoder was timed with all its cores, and preprocessing
  runs on those same cores, so the two add; reads and writes overlap with them:
  ``wall = max(compute + preprocessing, reading, writing)``.
* On **k GPUs** (one node) the GPUs compute, ``cpu_cores_per_gpu`` cores beside each GPU
  preprocess, and the node's disk reads and writes, all at once:
  ``wall = max(compute / k, preprocessing / (k x cores per GPU), reading, writing)``;
  the GPU-hours reserved are ``k x wall``.

Parts with no time (``unknown``: e.g. echo decoding) never count 0 in a choice: an option
that meets the deadline only because of them is ``unknown``, never "No GPU needed".

The bound is the part that takes longest. For an estimate range (``low``/``high``) both
ends are computed; the deadline is checked at the slow end times ``sizing.margin``.
:func:`cheapest` picks the CPU when it meets the deadline, else the fewest GPUs that do
(``k x wall`` never falls as k grows, so that is also the fewest GPU-hours and, at fixed
prices, the lowest cost).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PARTS = ("compute", "preprocessing", "reading", "writing")
STARTUP = "startup"
HOUR = 3600.0


@dataclass(frozen=True)
class Part:
    """One part of a job: seconds at both ends of its range, how it is known, and why."""

    name: str
    low: float | None
    high: float | None
    how: str            # measured | extrapolated | estimated | not measured
    note: str

    @property
    def known(self) -> bool:
        """Whether this part has a time (measured, extrapolated or estimated)."""
        return self.low is not None and self.high is not None

    def over(self, divisor: float) -> Part:
        """The same part spread over ``divisor`` workers."""
        if not self.known:
            return self
        return Part(self.name, self.low / divisor, self.high / divisor, self.how, self.note)

    def as_dict(self) -> dict[str, Any]:
        """JSON form: ``low_s``, ``high_s``, ``how``, ``note``."""
        return {"low_s": self.low, "high_s": self.high, "how": self.how, "note": self.note}


def part_for(name: str, amount: float, rate_low: float | None, rate_high: float | None,
             how: str, note: str) -> Part:
    """``amount / rate``: the part's seconds at both ends (no rate -> not measured)."""
    if not rate_low or not rate_high:
        return Part(name, None, None, "not measured", note)
    return Part(name, amount / rate_high, amount / rate_low, how, note)


def _bound(terms: dict[str, float]) -> str:
    return max(terms, key=lambda k: terms[k])


def job(parts: dict[str, Part], shared_cores: bool) -> dict[str, Any]:
    """Wall-clock at both ends, the bound at each end, and the parts not measured.

    ``shared_cores``: compute and preprocessing run on the same cores (this machine's
    CPU), so their times add; otherwise (GPUs) every part overlaps.
    """
    known = {n: p for n, p in parts.items() if p.known}
    out: dict[str, Any] = {"parts": {n: p.as_dict() for n, p in parts.items()},
                           "not_measured": [n for n, p in parts.items() if not p.known]}
    if "compute" not in known:
        return {**out, "wall_s_low": None, "wall_s_high": None, "bound": None,
                "bound_low": None, "bound_high": None}
    start = known.pop(STARTUP, None)
    for end in ("low", "high"):
        terms = {n: getattr(p, end) for n, p in known.items()}
        walls = dict(terms)
        if shared_cores and "preprocessing" in walls:
            walls["compute"] = terms["compute"] + walls.pop("preprocessing")
        out[f"wall_s_{end}"] = max(walls.values()) + (getattr(start, end) if start else 0.0)
        top = _bound(walls)
        if top == "compute" and shared_cores and "preprocessing" in terms:
            top = _bound({k: terms[k] for k in ("compute", "preprocessing")})
        out[f"bound_{end}"] = top
    out["bound"] = out["bound_high"]
    return out


def bound_words(j: dict[str, Any]) -> str:
    """The bound in plain words: ``writing``; ``compute at the slow end, writing at the fast
    end``. Parts with no time are said apart (``unknown: echo decoding``), never here."""
    if j["bound"] is None:
        return "not determined (compute not measured)"
    low, high = j["bound_low"], j["bound_high"]
    return high if low == high else f"{high} at the slow end, {low} at the fast end"


def cpu_job(parts: dict[str, Part]) -> dict[str, Any]:
    """This machine's CPU: compute and preprocessing (already over all cores) add."""
    return job(parts, shared_cores=True)


def gpu_job(gpu_parts: dict[str, Part], k: int, cores_per_gpu: int) -> dict[str, Any]:
    """``k`` GPUs: compute over k, preprocessing over k x cores per GPU (given per core)."""
    parts = dict(gpu_parts)
    parts["compute"] = gpu_parts["compute"].over(k)
    parts["preprocessing"] = gpu_parts["preprocessing"].over(k * cores_per_gpu)
    out = job(parts, shared_cores=False)
    out.update(gpus=k, cpu_cores_per_gpu=cores_per_gpu,
               gpu_hours_low=None if out["wall_s_low"] is None else k * out["wall_s_low"] / HOUR,
               gpu_hours_high=None if out["wall_s_high"] is None
               else k * out["wall_s_high"] / HOUR)
    return out


def add_jobs(jobs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Several models (by name) run one after another on the same hardware: walls add; the
    bound is each model's (``compute``, or ``ecg: writing; echo: compute``); the
    unknown parts of every model are listed together."""
    unknown = [u for j in jobs.values() for u in j.get("unknown", [])]
    if any(j["wall_s_high"] is None for j in jobs.values()):
        return {"wall_s_low": None, "wall_s_high": None, "bound": None, "unknown": unknown}
    words = {m: bound_words(j) for m, j in jobs.items()}
    bound = (next(iter(words.values())) if len(set(words.values())) == 1
             else "; ".join(f"{m}: {w}" for m, w in words.items()))
    out: dict[str, Any] = {"wall_s_low": sum(j["wall_s_low"] for j in jobs.values()),
                           "wall_s_high": sum(j["wall_s_high"] for j in jobs.values()),
                           "bound": bound, "unknown": unknown}
    first = next(iter(jobs.values()))
    if "gpus" in first:
        k = first["gpus"]
        out.update(gpus=k, cpu_cores_per_gpu=first["cpu_cores_per_gpu"],
                   gpu_hours_low=k * out["wall_s_low"] / HOUR,
                   gpu_hours_high=k * out["wall_s_high"] / HOUR)
    return out


def cheapest(cpu: dict[str, Any], gpu_by_k: dict[int, dict[str, Any]],
             deadline_h: float, margin: float = 1.0) -> dict[str, Any]:
    """The option a person should take: ``{"choice": "cpu" | "gpu" | "unknown" | "none",
    "k": ...}``.

    An option qualifies when its slow-end wall-clock times ``margin`` meets the deadline
    and every part of it was timed. The CPU in hand when it qualifies; else the fewest
    GPUs that do (the fewest GPU-hours); else, when an option meets the deadline only
    because a part has no time, ``unknown`` (that option: the CPU, ``k`` None, or the
    fewest GPUs): nothing may be claimed until the part is measured; else none, with the
    fastest configuration (all K GPUs) named.
    """
    limit = deadline_h * HOUR / margin

    def in_time(j: dict[str, Any]) -> bool:
        return j.get("wall_s_high") is not None and j["wall_s_high"] <= limit

    if in_time(cpu) and not cpu.get("unknown"):
        return {"choice": "cpu", "k": None}
    fits = [k for k, j in sorted(gpu_by_k.items()) if in_time(j) and not j.get("unknown")]
    if fits:                     # k x wall never falls as k grows: the fewest GPUs win
        return {"choice": "gpu", "k": fits[0]}
    if in_time(cpu):
        return {"choice": "unknown", "k": None}
    timed = [k for k, j in sorted(gpu_by_k.items()) if in_time(j)]
    if timed:
        return {"choice": "unknown", "k": timed[0]}
    return {"choice": "none", "k": max(gpu_by_k) if gpu_by_k else None}


def cost(option: dict[str, Any], prices: Any, cores: int,
         gpu_type: str | None = None) -> dict[str, Any] | None:
    """Money at the user's prices (``None`` when the prices it needs are not set).

    CPU: cores x wall-hours x ``cpu_core_hour``. GPUs: GPU-hours x ``gpu_hour`` plus, when
    ``cpu_core_hour`` is set, the cores beside the GPUs for the same hours.
    """
    if option.get("wall_s_high") is None:
        return None
    lo_h, hi_h = option["wall_s_low"] / HOUR, option["wall_s_high"] / HOUR
    if "gpus" not in option:
        if prices.cpu_core_hour is None:
            return None
        return {"low": cores * lo_h * prices.cpu_core_hour,
                "high": cores * hi_h * prices.cpu_core_hour,
                "what": f"{cores} cores x wall-hours x cpu_core_hour {prices.cpu_core_hour:g}"}
    gpu_hour = prices.gpu_hour_for(gpu_type) if gpu_type else prices.gpu_hour
    if not isinstance(gpu_hour, int | float):
        return None
    k, cpg = option["gpus"], option["cpu_cores_per_gpu"]
    per_hour = k * gpu_hour + (k * cpg * prices.cpu_core_hour
                               if prices.cpu_core_hour is not None else 0.0)
    what = f"{k} {gpu_type or 'GPU'}{'s' if k != 1 else ''} x gpu_hour {gpu_hour:g}"
    if prices.cpu_core_hour is not None:
        what += f" + {k * cpg} cores x cpu_core_hour {prices.cpu_core_hour:g}"
    return {"low": lo_h * per_hour, "high": hi_h * per_hour, "what": what + " per wall-hour"}
