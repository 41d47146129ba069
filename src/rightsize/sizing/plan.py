"""Size a re-extraction from measured files: scenarios x models -> storage, wall-clock, the ask.

Inputs are what ``encoder_bench`` measured (``metrics/encoders/<model>.json``), the
committed GPU files, the disk measured at ``sizing.disk.path`` (:mod:`.disk`) and the
record counts per scenario, each with its source. Per row (scenario x model):

* **storage**: per layer per record = tokens per record (``keep: tokens``) or model inputs
  per record (``keep: pooled``: one vector per crop or clip) x hidden x dtype bytes; the
  last ``layers_kept`` hidden states are kept. A probe manifest built from the shards holds
  the same values as float32 (what ``cohort`` writes).
* **time** (:mod:`.timing`), every part labelled: compute from the measured CPU rate (all
  cores, best batch) or a GPU file, else from the measured FLOPs at the estimate's
  utilisation; preprocessing from the measured per-core rate; reading and writing from the
  rates measured at the disk path. On this machine's CPU and on ``sizing.gpus`` GPUs, and
  the cheapest option within ``sizing.deadline_h``.

No torch, no transformers: this reads numbers and does arithmetic.
"""

from __future__ import annotations

import logging
from typing import Any

from rightsize.errors import ParamsError
from rightsize.sizing.config import PAIRED, ModelSizing, ScenarioCount, SizingConfig
from rightsize.sizing.gpu_files import gpu_files_report, pick_gpu_file
from rightsize.sizing.timing import Part, add_jobs, cheapest, cost, cpu_job, gpu_job, part_for
from rightsize.sizing.units import DTYPE_BYTES, parse_size

log = logging.getLogger(__name__)

HOUR = 3600.0
MB = 1_000_000
#: The retired calculator's job and asserted rates (params.yaml before issue 15), for the
#: one side-by-side comparison: 1M ten-second ECGs at 50 tokens/s, 40 records/s per GPU.
ASSERTED_BEFORE = {"records": 1_000_000, "tokens_per_record": 500, "records_per_s_per_gpu": 40.0,
                   "hidden": 768, "layers_kept": 4, "dtype": "float16", "dtype_bytes": 2}


def _rates(d: dict[str, Any], key: str) -> tuple[float | None, float | None]:
    """(slowest, fastest) of a measured rate and its spread (``<key>_min``/``<key>_max``)."""
    mid = d.get(key)
    if not isinstance(mid, int | float) or mid <= 0:
        return None, None
    return float(d.get(f"{key}_min") or mid), float(d.get(f"{key}_max") or mid)


def _where(bench: dict[str, Any]) -> str:
    hw = bench.get("hardware", {})
    return f"{hw.get('cpu', '?')}, {hw.get('threads', '?')} threads, torch {hw.get('torch', '?')}"


def _io_parts(storage: int, input_bytes: int | None, disk: dict[str, Any]) -> dict[str, Part]:
    w, r = disk["write"], disk.get("read")
    write = part_for("writing", storage,
                     min(w["bytes_per_s_shard_min"], w["bytes_per_s"]),
                     max(w["bytes_per_s_shard_max"], w["bytes_per_s"]), "measured",
                     f"{w['bytes_per_s'] / MB:,.0f} MB/s writing {w['format']} float16 shards "
                     f"of {w['shard_bytes'] / MB:,.0f} MB, fsync'd, at {disk['path']} on "
                     f"this machine")
    if input_bytes is None:
        read = Part("reading", None, None, "not measured",
                    "input bytes per record not known (no input file measured)")
    elif r is None:
        read = Part("reading", None, None, "not measured", "no read measurement")
    else:
        read = part_for("reading", input_bytes, r["bytes_per_s"], r["bytes_per_s"], "measured",
                        f"{r['bytes_per_s'] / MB:,.0f} MB/s reading {r['files']} files of "
                        f"{r['file_bytes'] / 1000:,.0f} kB at {disk['path']} on this machine, "
                        f"page cache {r['page_cache'].split(' (')[0]}")
    return {"reading": read, "writing": write}


def _preprocessing(records: int, bench: dict[str, Any], cores: int, what: str) -> Part:
    pre = bench.get("preprocess")
    if not isinstance(pre, dict):
        why = ("video decoding not measured" if bench["family"] == "echojepa"
               else "preprocessing not measured (preprocess_records: 0)")
        return Part("preprocessing", None, None, "not measured", why)
    lo, hi = _rates(pre, "records_per_s_per_core")
    return part_for("preprocessing", records, None if lo is None else lo * cores,
                    None if hi is None else hi * cores, "measured",
                    f"{pre['records_per_s_per_core']:,.0f} records/s per core measured on "
                    f"{bench['hardware'].get('cpu', '?')} (page cache warm), x {what}")


def job_parts(records: int, bench: dict[str, Any], cfg: SizingConfig, storage: int,
              gpu: tuple[str | None, dict[str, Any] | None], disk: dict[str, Any]
              ) -> tuple[dict[str, Part], dict[str, Part]]:
    """The four parts on this machine's CPU, and on one GPU with one preprocessing core."""
    pre = bench.get("preprocess") if isinstance(bench.get("preprocess"), dict) else {}
    input_bytes = records * int(pre["record_file_bytes"]) if pre.get("record_file_bytes") \
        else None
    io = _io_parts(storage, input_bytes, disk)
    threads = int(bench.get("hardware", {}).get("threads") or 1)
    lo, hi = _rates(bench, "records_per_s") if bench.get("device") == "cpu" else (None, None)
    timing = bench.get("timing", {})
    how = "extrapolated" if timing.get("extrapolated") else "measured"
    note = (f"{bench.get('records_per_s') or 0:.3g} records/s at batch {bench.get('best_batch')} "
            f"measured on {_where(bench)}")
    if timing.get("extrapolated"):
        note += f" ({timing.get('note')})"
    cpu = {"compute": part_for("compute", records, lo, hi, how, note),
           "preprocessing": _preprocessing(records, bench, threads,
                                           f"this machine's {threads} cores"), **io}
    name, gfile = gpu
    g_lo, g_hi = _rates(gfile, "records_per_s") if gfile else (None, None)
    if g_lo is not None:
        compute = part_for("compute", records, g_lo, g_hi, "measured",
                           f"{gfile['records_per_s']:.4g} records/s per GPU measured on "
                           f"{gfile['hardware'].get('gpu', 'a GPU')} ({name}, batch "
                           f"{gfile.get('best_batch')}, {gfile.get('compute_dtype', '?')})")
    else:
        e = cfg.estimate
        flops, peak = records * float(bench["flops_per_record"]), e.peak_tflops * 1e12
        compute = Part("compute", flops / (peak * e.utilisation[1]),
                       flops / (peak * e.utilisation[0]), "estimated",
                       f"no GPU measurement: measured FLOPs at {e.utilisation[0]:.0%}-"
                       f"{e.utilisation[1]:.0%} of {e.gpu}'s {e.peak_tflops:g} TFLOP/s "
                       f"bf16/fp16 tensor-core peak")
    per_gpu = {"compute": compute,
               "preprocessing": _preprocessing(records, bench, 1,
                                               f"{cfg.cpu_cores_per_gpu} cores per GPU"), **io}
    return cpu, per_gpu


def vectors_per_record(bench: dict[str, Any], ms: ModelSizing) -> int:
    """Hidden-state vectors a re-extraction keeps per record and layer: every token
    (``keep: tokens``) or one pooled vector per input (``keep: pooled``)."""
    if ms.keep == "tokens":
        return int(bench["tokens_per_record"])
    return int(bench.get("inputs_per_record") or 1)


def size_row(count: ScenarioCount, bench: dict[str, Any], cfg: SizingConfig, model: str,
             gpu: tuple[str | None, dict[str, Any] | None], disk: dict[str, Any]
             ) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    """One model in one scenario: the row's JSON, and its job on k = 1 .. ``sizing.gpus``
    GPUs (what the ask adds up)."""
    records = count.records
    if records <= 0:
        raise ParamsError(f"sizing: {model} records must be > 0, got {records}")
    ms = cfg.models[model]
    states = int(bench["hidden_states"])
    if ms.layers_kept > states:
        raise ParamsError(f"sizing.models.{model}.layers_kept: {ms.layers_kept} > the "
                          f"{states} hidden states of {bench['family']} {bench['size']}")
    width, hidden, tpr = cfg.dtype_bytes, int(bench["hidden_size"]), int(bench["tokens_per_record"])
    n_in = int(bench.get("inputs_per_record") or 1)
    vectors = vectors_per_record(bench, ms)
    per_layer = vectors * hidden * width
    storage = records * per_layer * ms.layers_kept
    cpu_parts, gpu_parts = job_parts(records, bench, cfg, storage, gpu, disk)
    cpu = cpu_job(cpu_parts)
    by_k = {k: gpu_job(gpu_parts, k, cfg.cpu_cores_per_gpu) for k in range(1, cfg.gpus + 1)}
    pick = cheapest(cpu, by_k, cfg.deadline_h)
    pre = bench.get("preprocess") if isinstance(bench.get("preprocess"), dict) else {}
    row = {
        "records": records, "source": count.source,
        "family": bench["family"], "inputs_per_record": n_in,
        "tokens_per_input": tpr // n_in, "tokens_per_record": tpr, "tokens": records * tpr,
        "keep": ms.keep, "layers_kept": ms.layers_kept, "hidden_states": states,
        "layers": list(range(states - ms.layers_kept, states)), "hidden_size": hidden,
        "dtype": cfg.dtype,
        "bytes_per_record_per_layer": per_layer,
        "bytes_per_record": per_layer * ms.layers_kept,
        "storage_bytes": storage,
        "storage_bytes_per_layer": records * per_layer,
        "storage_bytes_all_layers": records * per_layer * states,
        "manifest_bytes": records * vectors * hidden * DTYPE_BYTES["float32"] * ms.layers_kept,
        "input_bytes_per_record": pre.get("record_file_bytes"),
        "input_bytes": records * pre["record_file_bytes"] if pre.get("record_file_bytes")
        else None,
        "flops": records * float(bench["flops_per_record"]),
        "gpu_measured": gpu[1] is not None and gpu_parts["compute"].how == "measured",
        "cpu": cpu, "gpu": by_k[cfg.gpus],
        "cheapest": {**pick, "option": cpu if pick["choice"] == "cpu" else by_k.get(pick["k"])},
    }
    return row, by_k


def _fits(storage: int, free: int | None, quota: int | None) -> dict[str, Any]:
    return {"fits_free_space": None if free is None else storage <= free,
            "fits_quota": None if quota is None else storage <= quota}


def size_all(cfg: SizingConfig, benches: dict[str, dict[str, Any]],
             gpu_files: dict[str, dict[str, Any]], paired: dict[str, ScenarioCount],
             disk: dict[str, Any]) -> dict[str, Any]:
    """Every scenario x model row, totals per scenario, the ask, and the words for each.

    ``paired`` holds the manifest's counts (models with none are left out); ``disk`` is
    :func:`rightsize.sizing.disk.measure_disk`'s result.
    """
    from rightsize.sizing.report_rows import describe

    for model in cfg.models:
        if model not in benches:
            raise ParamsError(f"sizing.models.{model}: no bench file for it "
                              f"(run the encoder_bench stage for {model})")
    gpus = {m: pick_gpu_file(m, benches[m], gpu_files, cfg.gpu) for m in cfg.models}
    counts = {PAIRED: {m: c for m, c in paired.items() if m in cfg.models and c.records > 0},
              **cfg.scenarios}
    quota = None if cfg.disk.quota is None else parse_size(cfg.disk.quota, "sizing.disk.quota")
    free = disk.get("free_bytes")
    scenarios: dict[str, Any] = {}
    jobs: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
    for name, per_model in counts.items():
        built = {m: size_row(c, benches[m], cfg, m, gpus[m], disk) for m, c in per_model.items()}
        rows = {m: r for m, (r, _) in built.items()}
        jobs[name] = {m: by_k for m, (_, by_k) in built.items()}
        storage = sum(r["storage_bytes"] for r in rows.values())
        scenarios[name] = {"models": rows, "storage_bytes": storage,
                           "manifest_bytes": sum(r["manifest_bytes"] for r in rows.values()),
                           **_fits(storage, free, quota)}
    hardware = _hardware(cfg, benches, gpus)
    result = {
        "ask": _ask(cfg, scenarios, jobs, free, quota, hardware["cores"]),
        "scenarios": scenarios,
        "hardware": hardware,
        "deadline_h": cfg.deadline_h,
        "gpus": cfg.gpus, "cpu_cores_per_gpu": cfg.cpu_cores_per_gpu,
        "disk": {**disk, "quota_bytes": quota,
                 "capacity_bytes": min(x for x in (free, quota) if x is not None)
                 if free is not None or quota is not None else None},
        "prices": ({"gpu_hour": cfg.prices.gpu_hour, "cpu_core_hour": cfg.prices.cpu_core_hour}
                   if cfg.prices.any_set else None),
        "estimate": {"gpu": cfg.estimate.gpu, "peak_tflops": cfg.estimate.peak_tflops,
                     "utilisation_low": cfg.estimate.utilisation[0],
                     "utilisation_high": cfg.estimate.utilisation[1]},
        "gpu_files": gpu_files_report(benches, gpu_files, gpus, cfg.models),
        "benches": {m: _bench_summary(b) for m, b in benches.items() if m in cfg.models},
        "asserted_vs_measured": _before_after(cfg, benches, gpus),
    }
    result["text"] = describe(result)
    return result


def _hardware(cfg: SizingConfig, benches: dict[str, dict[str, Any]],
              gpus: dict[str, tuple[str | None, dict[str, Any] | None]]) -> dict[str, Any]:
    stamp = next((b["hardware"] for b in benches.values() if b.get("device") == "cpu"),
                 next(iter(benches.values()))["hardware"])
    measured = sorted({g[1]["hardware"].get("gpu", "a GPU") for g in gpus.values() if g[1]})
    return {"cpu": stamp.get("cpu", "?"), "cores": int(stamp.get("threads") or 1),
            "gpu": ", ".join(measured) or cfg.estimate.gpu, "gpu_measured": bool(measured)}


def _ask(cfg: SizingConfig, scenarios: dict[str, Any],
         jobs: dict[str, dict[str, dict[int, dict[str, Any]]]],
         free: int | None, quota: int | None, cores: int) -> dict[str, Any]:
    """The ask's models summed on the same hardware, and the cheapest option in time."""
    rows = scenarios[cfg.ask.scenario]["models"]
    models = [m for m in cfg.ask.models if m in rows]
    if not models:
        raise ParamsError(f"sizing.ask: scenario {cfg.ask.scenario} has no records for "
                          f"{', '.join(cfg.ask.models)}")
    per_model = jobs[cfg.ask.scenario]
    cpu = add_jobs([rows[m]["cpu"] for m in models])
    by_k = {k: add_jobs([per_model[m][k] for m in models]) for k in range(1, cfg.gpus + 1)}
    pick = cheapest(cpu, by_k, cfg.deadline_h)
    option = cpu if pick["choice"] == "cpu" else by_k.get(pick["k"])
    storage = sum(rows[m]["storage_bytes"] for m in models)
    return {
        "scenario": cfg.ask.scenario, "models": models,
        "records": {m: rows[m]["records"] for m in models},
        "sources": {m: rows[m]["source"] for m in models},
        "storage_bytes": storage,
        "manifest_bytes": sum(rows[m]["manifest_bytes"] for m in models),
        **_fits(storage, free, quota),
        "choice": pick["choice"], "gpus_chosen": pick["k"], "option": option,
        "cpu": cpu, "gpu": by_k[cfg.gpus],
        "gpu_measured": all(rows[m]["gpu_measured"] for m in models),
        "cost": None if option is None else cost(option, cfg.prices, cores),
        "cpu_cost": cost(cpu, cfg.prices, cores),
    }


def _bench_summary(b: dict[str, Any]) -> dict[str, Any]:
    pre = b.get("preprocess") or {}
    return {"family": b["family"], "size": b["size"], "tokens_per_record": b["tokens_per_record"],
            "tokens_per_input": b.get("tokens_per_input"),
            "inputs_per_record": b.get("inputs_per_record"), "geometry": b.get("geometry"),
            "hidden_size": b["hidden_size"], "hidden_states": b["hidden_states"],
            "flops_per_record": b["flops_per_record"], "device": b["device"],
            "records_per_s": b.get("records_per_s"), "best_batch": b.get("best_batch"),
            "timing_extrapolated": bool(b.get("timing", {}).get("extrapolated")),
            "preprocess_records_per_s_per_core": pre.get("records_per_s_per_core"),
            "measured_on": _where(b) if not b.get("hardware", {}).get("gpu")
            else f"{b['hardware']['gpu']}, torch {b['hardware'].get('torch', '?')}"}


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
        "crops_per_record": b.get("inputs_per_record"),
        "storage_bytes": a["records"] * tpr * hidden * a["layers_kept"] * a["dtype_bytes"],
        "gpu_hours_low": flops / (peak * hi_u) / HOUR,
        "gpu_hours_high": flops / (peak * lo_u) / HOUR, "gpu_measured": False}
    rate = (gpus[ecg][1] or {}).get("records_per_s")
    if isinstance(rate, int | float) and rate > 0:
        measured.update(gpu_hours_low=a["records"] / rate / HOUR,
                        gpu_hours_high=a["records"] / rate / HOUR, gpu_measured=True)
    out["measured"] = measured
    return out
