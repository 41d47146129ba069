"""Size a re-extraction from measured bench files: scenarios x models -> GPU-, CPU-hours, bytes.

Inputs are what ``encoder_bench`` measured (``metrics/encoders/<model>.json``), optionally a
committed GPU file per model, the record counts per scenario and the disk. Per row:

* ``bytes_per_record`` = tokens per record x hidden x layers kept x dtype bytes (``keep:
  tokens``) or hidden x layers kept x dtype bytes (``keep: pooled``); storage = records x that;
* GPU-hours = records / measured GPU records/s / 3600 when a GPU file matches the model,
  else records x measured FLOPs per record / (peak x utilisation) / 3600 at both ends of the
  utilisation range (``estimated, no GPU measurement``);
* CPU-hours = records / measured preprocessing records/s per core / 3600;
* the bound is whichever takes longer per GPU: its GPU-hours, or its CPU-hours spread over
  ``cpu_cores_per_gpu`` cores.

No torch, no transformers: this reads numbers and does arithmetic.
"""

from __future__ import annotations

import logging
from typing import Any

from rightsize.errors import ParamsError
from rightsize.sizing.config import PAIRED, SizingConfig
from rightsize.sizing.units import parse_size

log = logging.getLogger(__name__)

HOUR = 3600.0
ESTIMATED = "estimated, no GPU measurement"
#: The retired calculator's job and asserted rates (params.yaml before issue 15), for the
#: one side-by-side comparison: 1M ten-second ECGs at 50 tokens/s, 40 records/s per GPU.
ASSERTED_BEFORE = {"records": 1_000_000, "tokens_per_record": 500, "records_per_s_per_gpu": 40.0,
                   "hidden": 768, "layers_kept": 4, "dtype": "float16", "dtype_bytes": 2}


def gpu_matches(bench: dict[str, Any], gpu_file: dict[str, Any]) -> bool:
    """Whether ``gpu_file`` measured the same encoder, size and input as ``bench`` on a GPU."""
    return (str(gpu_file.get("device", "")).startswith("cuda")
            and all(gpu_file.get(k) == bench.get(k) for k in ("family", "size", "geometry")))


def pick_gpu_file(model: str, bench: dict[str, Any], files: dict[str, dict[str, Any]],
                  want: str | None) -> tuple[str | None, dict[str, Any] | None]:
    """The committed GPU file for ``model`` (by ``sizing.gpu`` substring when several match)."""
    hits = {name: f for name, f in sorted(files.items()) if gpu_matches(bench, f)}
    if want is not None:
        hits = {n: f for n, f in hits.items()
                if want.lower() in str(f.get("hardware", {}).get("gpu", "")).lower()}
    if len(hits) > 1:
        raise ParamsError(f"sizing.gpu: {len(hits)} GPU files match {model} "
                          f"({', '.join(hits)}); set sizing.gpu to a GPU name to pick one")
    if not hits:
        return None, None
    name = next(iter(hits))
    return name, hits[name]


def _gpu_rate(gpu_file: dict[str, Any]) -> float | None:
    rate = gpu_file.get("records_per_s")
    return float(rate) if isinstance(rate, int | float) and rate > 0 else None


def size_row(records: int, bench: dict[str, Any], cfg: SizingConfig, model: str,
             gpu: tuple[str | None, dict[str, Any] | None]) -> dict[str, Any]:
    """One model in one scenario: records, tokens, storage, GPU-hours, CPU-hours, bound."""
    if records <= 0:
        raise ParamsError(f"sizing: {model} records must be > 0, got {records}")
    ms = cfg.models[model]
    states = int(bench["hidden_states"])
    if ms.layers_kept > states:
        raise ParamsError(f"sizing.models.{model}.layers_kept: {ms.layers_kept} > the "
                          f"{states} hidden states of {bench['family']} {bench['size']}")
    width, hidden, tpr = cfg.dtype_bytes, int(bench["hidden_size"]), int(bench["tokens_per_record"])
    per_token_layer = hidden * width
    per_record = per_token_layer * ms.layers_kept * (tpr if ms.keep == "tokens" else 1)
    row: dict[str, Any] = {
        "records": records,
        "keep": ms.keep, "layers_kept": ms.layers_kept, "dtype": cfg.dtype,
        "tokens_per_record": tpr,
        "tokens": records * tpr,
        "bytes_per_record": per_record,
        "storage_bytes": records * per_record,
        "storage_bytes_one_layer": records * per_record // ms.layers_kept,
        "storage_bytes_all_layers": records * per_record // ms.layers_kept * states,
        "flops": records * float(bench["flops_per_record"]),
    }
    gpu_name, gpu_file = gpu
    rate = _gpu_rate(gpu_file) if gpu_file else None
    if rate is not None:
        hours = records / rate / HOUR
        row.update(gpu_hours=hours, gpu_hours_low=hours, gpu_hours_high=hours,
                   gpu_source=f"measured on {gpu_file['hardware'].get('gpu', 'a GPU')} "
                              f"({gpu_name}, batch {gpu_file.get('best_batch')})",
                   gpu_measured=True, utilisation_high=None)
    else:
        lo_u, hi_u = cfg.estimate.utilisation
        peak = cfg.estimate.peak_tflops * 1e12
        row.update(gpu_hours=None,
                   gpu_hours_low=row["flops"] / (peak * hi_u) / HOUR,
                   gpu_hours_high=row["flops"] / (peak * lo_u) / HOUR,
                   gpu_source=f"{ESTIMATED}: measured FLOPs at {lo_u:.0%}-{hi_u:.0%} of "
                              f"{cfg.estimate.gpu}'s {cfg.estimate.peak_tflops:g} TFLOP/s peak",
                   gpu_measured=False, utilisation_high=hi_u)
    pre = bench.get("preprocess")
    if isinstance(pre, dict) and pre.get("records_per_s_per_core"):
        row["cpu_hours"] = records / float(pre["records_per_s_per_core"]) / HOUR
        row["cpu_source"] = f"measured on {bench['hardware']['cpu']}, per core"
    else:
        row["cpu_hours"] = None
        row["cpu_source"] = "not measured"
    row["bound"] = _bound(row, cfg.cpu_cores_per_gpu)
    cpu_wall = (row["cpu_hours"] or 0.0) / (cfg.gpus * cfg.cpu_cores_per_gpu)
    row["wall_clock_hours_low"] = max(row["gpu_hours_low"] / cfg.gpus, cpu_wall)
    row["wall_clock_hours_high"] = max(row["gpu_hours_high"] / cfg.gpus, cpu_wall)
    return row


def _bound(row: dict[str, Any], cores_per_gpu: int) -> str:
    """Which side limits the job per GPU; for an estimate range, the crossover utilisation."""
    if row["cpu_hours"] is None:
        return "not determined: preprocessing not measured (GPU side only)"
    cpu = row["cpu_hours"] / cores_per_gpu
    fast, slow = row["gpu_hours_low"], row["gpu_hours_high"]
    if cpu >= slow:
        return "preprocessing (CPU)"
    if cpu <= fast:
        return "GPU"
    # GPU hours scale as 1/utilisation: equal to the CPU side at u* = u_high * fast / cpu.
    u_high = row["utilisation_high"]
    return (f"preprocessing (CPU) unless GPU utilisation is below {u_high * fast / cpu:.0%}, "
            f"then GPU")


def size_all(cfg: SizingConfig, benches: dict[str, dict[str, Any]],
             gpu_files: dict[str, dict[str, Any]], paired: dict[str, int],
             free_bytes: int | None) -> dict[str, Any]:
    """Every scenario x model row, totals per scenario, the ask, disk fit and before/after."""
    for model in cfg.models:
        if model not in benches:
            raise ParamsError(f"sizing.models.{model}: no bench file for it "
                              f"(run the encoder_bench stage for {model})")
    gpus = {m: pick_gpu_file(m, benches[m], gpu_files, cfg.gpu) for m in cfg.models}
    counts = {PAIRED: {m: paired[m] for m in cfg.models if paired.get(m)}, **cfg.scenarios}
    quota = None if cfg.disk.quota is None else parse_size(cfg.disk.quota, "sizing.disk.quota")
    capacity = min(x for x in (free_bytes, quota) if x is not None) if (
        free_bytes is not None or quota is not None) else None
    scenarios: dict[str, Any] = {}
    for name, per_model in counts.items():
        rows = {m: size_row(n, benches[m], cfg, m, gpus[m]) for m, n in per_model.items()}
        scenarios[name] = {"models": rows, **_totals(rows, free_bytes, quota)}
    ask_rows = {m: scenarios[cfg.ask.scenario]["models"][m] for m in cfg.ask.models
                if m in scenarios[cfg.ask.scenario]["models"]}
    if not ask_rows:
        raise ParamsError(f"sizing.ask: scenario {cfg.ask.scenario} has no records for "
                          f"{', '.join(cfg.ask.models)}")
    ask = {"scenario": cfg.ask.scenario, "models": ",".join(ask_rows),
           **_totals(ask_rows, free_bytes, quota),
           "bound": "; ".join(f"{m}: {r['bound']}" for m, r in ask_rows.items()),
           "gpu_source": "; ".join(f"{m}: {r['gpu_source']}" for m, r in ask_rows.items()),
           "gpu_measured": all(r["gpu_measured"] for r in ask_rows.values())}
    return {
        "ask": ask,
        "scenarios": scenarios,
        "disk": {"path": cfg.disk.path, "free_bytes": free_bytes, "quota_bytes": quota,
                 "capacity_bytes": capacity},
        "gpus": cfg.gpus, "cpu_cores_per_gpu": cfg.cpu_cores_per_gpu,
        "estimate": {"gpu": cfg.estimate.gpu, "peak_tflops": cfg.estimate.peak_tflops,
                     "utilisation_low": cfg.estimate.utilisation[0],
                     "utilisation_high": cfg.estimate.utilisation[1]},
        "gpu_files": {m: (g[0] or "none") for m, g in gpus.items()},
        "benches": {m: _bench_summary(b) for m, b in benches.items() if m in cfg.models},
        "asserted_vs_measured": _before_after(cfg, benches, gpus),
    }


def _totals(rows: dict[str, dict[str, Any]], free: int | None, quota: int | None
            ) -> dict[str, Any]:
    storage = sum(r["storage_bytes"] for r in rows.values())
    cpu = [r["cpu_hours"] for r in rows.values() if r["cpu_hours"] is not None]
    return {
        "storage_bytes": storage,
        "gpu_hours_low": sum(r["gpu_hours_low"] for r in rows.values()),
        "gpu_hours_high": sum(r["gpu_hours_high"] for r in rows.values()),
        "cpu_hours": sum(cpu) if cpu else None,
        "wall_clock_hours_low": sum(r["wall_clock_hours_low"] for r in rows.values()),
        "wall_clock_hours_high": sum(r["wall_clock_hours_high"] for r in rows.values()),
        "fits_free_space": None if free is None else storage <= free,
        "fits_quota": None if quota is None else storage <= quota,
    }


def _bench_summary(b: dict[str, Any]) -> dict[str, Any]:
    hw = b.get("hardware", {})
    pre = b.get("preprocess") or {}
    return {"family": b["family"], "size": b["size"], "tokens_per_record": b["tokens_per_record"],
            "hidden_size": b["hidden_size"], "hidden_states": b["hidden_states"],
            "flops_per_record": b["flops_per_record"], "device": b["device"],
            "records_per_s": b.get("records_per_s"),
            "timing_extrapolated": bool(b.get("timing", {}).get("extrapolated")),
            "preprocess_records_per_s_per_core": pre.get("records_per_s_per_core"),
            "measured_on": f"{hw.get('gpu') or hw.get('cpu', '?')}, {hw.get('threads', '?')} "
                           f"threads, torch {hw.get('torch', '?')}"}


def _before_after(cfg: SizingConfig, benches: dict[str, dict[str, Any]],
                  gpus: dict[str, tuple[str | None, dict[str, Any] | None]]) -> dict[str, Any]:
    """The retired calculator's job sized the old way and from the ECG bench, side by side."""
    ecg = next((m for m, b in benches.items() if b["family"] == "hubert_ecg"
                and m in cfg.models), None)
    a = ASSERTED_BEFORE
    before = {"tokens_per_record": a["tokens_per_record"],
              "storage_bytes": a["records"] * a["tokens_per_record"] * a["hidden"]
              * a["layers_kept"] * a["dtype_bytes"],
              "gpu_hours": a["records"] / a["records_per_s_per_gpu"] / HOUR}
    out: dict[str, Any] = {"records": a["records"], "layers_kept": a["layers_kept"],
                           "dtype": a["dtype"], "asserted": before}
    if ecg is None:
        return out
    b = benches[ecg]
    tpr, hidden = int(b["tokens_per_record"]), int(b["hidden_size"])
    flops = a["records"] * float(b["flops_per_record"])
    lo_u, hi_u = cfg.estimate.utilisation
    peak = cfg.estimate.peak_tflops * 1e12
    measured: dict[str, Any] = {
        "model": ecg, "size": b["size"], "tokens_per_record": tpr,
        "storage_bytes": a["records"] * tpr * hidden * a["layers_kept"] * a["dtype_bytes"],
        "gpu_hours_low": flops / (peak * hi_u) / HOUR,
        "gpu_hours_high": flops / (peak * lo_u) / HOUR, "gpu_measured": False}
    rate = _gpu_rate(gpus[ecg][1]) if gpus[ecg][1] else None
    if rate is not None:
        measured.update(gpu_hours_low=a["records"] / rate / HOUR,
                        gpu_hours_high=a["records"] / rate / HOUR, gpu_measured=True)
    out["measured"] = measured
    return out
