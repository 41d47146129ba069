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
from rightsize.sizing.ask import ask, fits, gpu_types, types_bound_note
from rightsize.sizing.config import PAIRED, ModelSizing, ScenarioCount, SizingConfig
from rightsize.sizing.gpu_files import check_gpu_files, gpu_files_report, pick_gpu_file
from rightsize.sizing.summaries import before_after, bench_summary, where
from rightsize.sizing.timing import STARTUP, Part, cheapest, cpu_job, gpu_job, part_for
from rightsize.sizing.units import DTYPE_BYTES, parse_size

log = logging.getLogger(__name__)

HOUR = 3600.0
MB = 1_000_000
def _rates(d: dict[str, Any], key: str) -> tuple[float | None, float | None]:
    """(slowest, fastest) of a measured rate and its spread (``<key>_min``/``<key>_max``)."""
    mid = d.get(key)
    if not isinstance(mid, int | float) or mid <= 0:
        return None, None
    return float(d.get(f"{key}_min") or mid), float(d.get(f"{key}_max") or mid)


def _io_parts(storage: int, input_bytes: int | None, disk: dict[str, Any]) -> dict[str, Part]:
    w, r = disk["write"], disk.get("read")
    # The aggregate over the whole sample (every shard and the folder fsync'd), never the
    # fastest single shard: a job writes all of its shards.
    write = part_for("writing", storage, w["bytes_per_s"], w["bytes_per_s"], "measured",
                     f"{w['bytes_per_s'] / MB:,.0f} MB/s writing "
                     f"{w.get('array_bytes', w['shards'] * w['shard_bytes']) / MB:,.0f} MB "
                     f"of {w['format']} float16 shards ({w['shards']} of "
                     f"{w['shard_bytes'] / MB:,.0f} MB, each fsync'd), aggregate over the "
                     f"whole sample, at {disk['path']} on this machine")
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
                    f"{pre['records_per_s_per_core']:,.3g} records/s per core measured on "
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
            f"measured on {where(bench)}")
    if timing.get("extrapolated"):
        note += f" ({timing.get('note')})"
    workers = _workers_rate(bench)
    if workers is not None:
        lo, hi, note = workers
    start = startup_part(bench)
    cpu = {"compute": part_for("compute", records, lo, hi, how, note),
           "preprocessing": _preprocessing(records, bench, threads,
                                           f"this machine's {threads} cores"), **io,
           **({STARTUP: start} if start else {})}
    compute = gpu_compute(records, bench, cfg.estimate.gpu, cfg.estimate.utilisation, gpu)
    per_gpu = {"compute": compute,
               "preprocessing": _preprocessing(records, bench, 1,
                                               f"{cfg.cpu_cores_per_gpu} cores per GPU"), **io,
               **({STARTUP: Part(STARTUP, start.low, start.high, "estimated",
                                 start.note + "; on a GPU node CUDA's start is not in it")}
                  if start else {})}
    return cpu, per_gpu


def _workers_rate(bench: dict[str, Any]) -> tuple[float, float, str] | None:
    """The CPU's records/s as extract runs it (its workers together, best batch), slowest and
    fastest, from the bench's ``workers`` timing; None when it has none."""
    w = bench.get("workers")
    if bench.get("device") != "cpu" or not isinstance(w, dict) or not w.get("throughput"):
        return None
    best = max(w["throughput"].values(), key=lambda t: t["records_per_s_per_worker"])
    n, mid = int(w["workers"]), best["records_per_s_per_worker"]
    lo = best.get("records_per_s_per_worker_min") or mid
    hi = best.get("records_per_s_per_worker_max") or mid
    return (n * lo, n * hi, f"{n * mid:.3g} records/s: {n} extract workers x "
            f"{w['threads_per_worker']} thread(s) at batch {best['batch']}, "
            f"{mid:.3g} records/s each, measured together on {where(bench)}")


def startup_part(bench: dict[str, Any]) -> Part | None:
    """The workers' start-up (spawn, imports, model build) the bench measured, or None."""
    w = bench.get("workers")
    if not isinstance(w, dict) or w.get("startup_s_min") is None:
        return None
    return Part(STARTUP, float(w["startup_s_min"]), float(w["startup_s_max"]), "measured",
                f"{w['startup_s']:.1f} s per worker ({w['workers']} started at once: spawn, "
                f"imports, model build) measured on {where(bench)}")


def gpu_compute(records: int, bench: dict[str, Any], gpu_type: str,
                utilisation: tuple[float, float],
                gpu: tuple[str | None, dict[str, Any] | None]) -> Part:
    """One GPU's compute: the committed GPU file's measured rate when there is one, else the
    measured FLOPs at ``utilisation`` of ``gpu_type``'s published dense bf16 peak."""
    from rightsize.sizing.gpu_types import GPU_TYPES

    name, gfile = gpu
    g_lo, g_hi = _rates(gfile, "records_per_s") if gfile else (None, None)
    if gfile is not None and g_lo is not None:
        return part_for("compute", records, g_lo, g_hi, "measured",
                        f"{gfile['records_per_s']:.4g} records/s per GPU measured on "
                        f"{gfile['hardware'].get('gpu', 'a GPU')} ({name}, batch "
                        f"{gfile.get('best_batch')}, {gfile.get('compute_dtype', '?')})")
    t = GPU_TYPES[gpu_type]
    flops, peak = records * float(bench["flops_per_record"]), t.bf16_dense_tflops * 1e12
    return Part("compute", flops / (peak * utilisation[1]), flops / (peak * utilisation[0]),
                "estimated", f"no GPU measurement: measured FLOPs at {utilisation[0]:.0%}-"
                f"{utilisation[1]:.0%} of {t.name}'s {t.bf16_dense_tflops:g} TFLOP/s dense "
                f"bf16 tensor-core peak ({t.source})")


#: A part of a model's job in plain words, for "unknown: <part>".
UNKNOWN_WORDS = {("echojepa", "preprocessing"): "decoding", ("echojepa", "reading"):
                 "input reading", ("hubert_ecg", "reading"): "input reading"}


def unknown_parts(model: str, family: str, job: dict[str, Any]) -> list[str]:
    """The parts of ``job`` with no time, in plain words: ``echo decoding``."""
    return [f"{model} {UNKNOWN_WORDS.get((family, p), p)}" for p in job["not_measured"]]


def vectors_per_record(bench: dict[str, Any], ms: ModelSizing) -> int:
    """Hidden-state vectors a re-extraction keeps per record and layer: every token
    (``keep: tokens``) or one pooled vector per input (``keep: pooled``)."""
    if ms.keep == "tokens":
        return int(bench["tokens_per_record"])
    return int(bench.get("inputs_per_record") or 1)


def scaled_bench(bench: dict[str, Any], crops: int, key: str) -> dict[str, Any]:
    """An ECG bench re-sized to ``crops`` 5-s crops per record: every crop is one model
    input of the same shape, so tokens, FLOPs and the time per record scale by the crop
    ratio (compute and preprocessing labelled as scaled from the measured crop count)."""
    if bench["family"] != "hubert_ecg":
        raise ParamsError(f"{key}.crops_per_record: applies to ECG models only, not "
                          f"{bench['family']}")
    n = int(bench.get("inputs_per_record") or 1)
    if crops == n:
        return bench
    r = crops / n
    out = {**bench, "inputs_per_record": crops,
           "tokens_per_record": int(bench["tokens_per_record"]) * crops // n,
           "flops_per_record": float(bench["flops_per_record"]) * r,
           "geometry": {**(bench.get("geometry") or {}), "crops_per_record": crops}}
    for name in ("records_per_s", "records_per_s_min", "records_per_s_max"):
        if isinstance(bench.get(name), int | float):
            out[name] = bench[name] / r
    out["timing"] = {**bench.get("timing", {}), "extrapolated": True,
                     "note": f"scaled x{r:g} from the {n}-crop measurement"}
    w = bench.get("workers")
    if isinstance(w, dict) and isinstance(w.get("throughput"), dict):
        out["workers"] = {**w, "throughput": {b: {**t, **{k: t[k] / r for k in (
            "records_per_s_per_worker", "records_per_s_per_worker_min",
            "records_per_s_per_worker_max", "records_per_s") if isinstance(t.get(k), int | float)}}
            for b, t in w["throughput"].items()}}
    pre = bench.get("preprocess")
    if isinstance(pre, dict):
        out["preprocess"] = {**pre, **{k: pre[k] / r for k in (
            "records_per_s_per_core", "records_per_s_per_core_min",
            "records_per_s_per_core_max") if isinstance(pre.get(k), int | float)}}
    return out


def size_row(count: ScenarioCount, bench: dict[str, Any], cfg: SizingConfig, model: str,
             gpu: tuple[str | None, dict[str, Any] | None], disk: dict[str, Any]
             ) -> tuple[dict[str, Any], dict[int, dict[str, Any]]]:
    """One model in one scenario: the row's JSON, and its job on k = 1 .. ``sizing.gpus``
    GPUs (what the ask adds up)."""
    if count.crops_per_record is not None:
        bench = scaled_bench(bench, count.crops_per_record, f"sizing.scenarios.*.{model}")
        if gpu[1] is not None and gpu[1].get("geometry") != bench.get("geometry"):
            gpu = (None, None)
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
    for j in (cpu, *by_k.values()):
        j["unknown"] = unknown_parts(model, bench["family"], j)
    pick = cheapest(cpu, by_k, cfg.deadline_h, cfg.margin)
    pre = bench.get("preprocess") if isinstance(bench.get("preprocess"), dict) else {}
    row = {
        "records": records, "source": count.source, "assumption": count.assumption,
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
        "cheapest": {**pick, "option": cpu if pick["k"] is None else by_k.get(pick["k"])},
    }
    return row, by_k


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
    check_gpu_files(gpu_files, cfg.gpu)
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
        disk_fit = fits(storage, free, quota)
        if False in disk_fit.values():       # no option of a job whose shards do not fit
            for r in rows.values():
                r["cheapest"] = {"choice": "no_fit", "k": None, "option": None}
        scenarios[name] = {"models": rows, "storage_bytes": storage,
                           "manifest_bytes": sum(r["manifest_bytes"] for r in rows.values()),
                           **disk_fit}
    hardware = _hardware(cfg, benches, gpus)
    types = gpu_types(cfg, scenarios, _type_parts(cfg, counts, benches, gpu_files, disk),
                      free, quota)
    result = {
        "ask": ask(cfg, scenarios, jobs, free, quota, hardware["cores"]),
        "gpu_types": types, "gpu_types_bound": types_bound_note(types),
        "requests": requests(cfg, scenarios, jobs, disk, quota, benches, hardware["cores"]),
        "margin": cfg.margin,
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
        "gpu_files": gpu_files_report(benches, gpu_files, gpus, cfg.models, cfg.gpu),
        "benches": {m: bench_summary(b) for m, b in benches.items() if m in cfg.models},
        "asserted_vs_measured": before_after(cfg, benches, gpus, disk),
    }
    result["text"] = describe(result)
    return result


def requests(cfg: SizingConfig, scenarios: dict[str, Any],
             jobs: dict[str, dict[str, dict[int, dict[str, Any]]]], disk: dict[str, Any],
             quota: int | None, benches: dict[str, dict[str, Any]], cores: int
             ) -> dict[str, Any]:
    """The Slurm request of every scenario (:mod:`.request`), its models added up."""
    from rightsize.sizing.request import scenario_request
    from rightsize.sizing.timing import add_jobs

    out = {}
    for name, sc in scenarios.items():
        models = list(sc["models"])
        if not models:
            continue
        cpu = add_jobs({m: sc["models"][m]["cpu"] for m in models})
        cpu["parts"] = {"startup": {"high_s": sum(
            ((sc["models"][m]["cpu"]["parts"].get("startup") or {}).get("high_s") or 0.0)
            for m in models)}}
        by_k = {k: add_jobs({m: jobs[name][m][k] for m in models})
                for k in range(1, cfg.gpus + 1)}
        bench = next((benches[m] for m in models if benches[m].get("workers")),
                     benches[models[0]])
        out[name] = scenario_request(name, cpu, by_k, sc["storage_bytes"], disk, quota, cfg,
                                     cores, bench)
    return out


def _type_parts(cfg: SizingConfig, counts: dict[str, dict[str, ScenarioCount]],
                benches: dict[str, dict[str, Any]], gpu_files: dict[str, dict[str, Any]],
                disk: dict[str, Any]) -> dict[str, dict[str, dict[str, Part]]]:
    """One GPU's parts of each ask model's job per GPU type: a committed GPU file of that
    type (same encoder and geometry) outranks the type's estimate."""
    from rightsize.sizing.gpu_types import GPU_TYPES

    out: dict[str, dict[str, dict[str, Part]]] = {}
    per_model = counts[cfg.ask.scenario]
    for name in cfg.gpu_types:
        t = GPU_TYPES[name]
        out[name] = {}
        for m in (m for m in cfg.ask.models if m in per_model):
            own = {f: g for f, g in gpu_files.items()
                   if t.matches(str(g.get("hardware", {}).get("gpu", "")))}
            pair = _first_match(m, benches[m], own)
            records = per_model[m].records
            ms = cfg.models[m]
            storage = records * vectors_per_record(benches[m], ms) * \
                int(benches[m]["hidden_size"]) * cfg.dtype_bytes * ms.layers_kept
            _, parts = job_parts(records, benches[m], cfg, storage, (None, None), disk)
            parts["compute"] = gpu_compute(records, benches[m], name, cfg.estimate.utilisation,
                                           pair)
            out[name][m] = parts
    return out


def _first_match(model: str, bench: dict[str, Any], files: dict[str, dict[str, Any]]
                 ) -> tuple[str | None, dict[str, Any] | None]:
    from rightsize.sizing.gpu_files import gpu_matches

    hit = next(((n, f) for n, f in sorted(files.items()) if gpu_matches(bench, f)), None)
    return hit if hit else (None, None)


def _hardware(cfg: SizingConfig, benches: dict[str, dict[str, Any]],
              gpus: dict[str, tuple[str | None, dict[str, Any] | None]]) -> dict[str, Any]:
    stamp = next((b["hardware"] for b in benches.values() if b.get("device") == "cpu"),
                 next(iter(benches.values()))["hardware"])
    measured = sorted({g[1]["hardware"].get("gpu", "a GPU") for g in gpus.values() if g[1]})
    return {"cpu": stamp.get("cpu", "?"), "cores": int(stamp.get("threads") or 1),
            "gpu": ", ".join(measured) or cfg.estimate.gpu, "gpu_measured": bool(measured)}
