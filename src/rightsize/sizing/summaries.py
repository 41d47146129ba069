"""What the sizing JSON says beside the rows: each bench in short (with its geometry in words
and the load it was timed under), and the retired calculator's job beside the measured one.
"""

from __future__ import annotations

from typing import Any

from rightsize.machine import machine_phrase, same_machine
from rightsize.sizing.config import SizingConfig
from rightsize.sizing.geometry_words import geometry_words

HOUR = 3600.0


def where(bench: dict[str, Any]) -> str:
    """``this machine (Intel Xeon ..., 2 cores, ...), N threads, bfloat16, torch V``: where a
    CPU bench ran and in which dtype, ``... (not this machine)`` when its machine stamp is
    another host's."""
    hw = bench.get("hardware", {})
    run = (f"{hw.get('threads', '?')} threads, {bench.get('compute_dtype', 'float32')}, "
           f"torch {hw.get('torch', '?')}")
    if same_machine(bench) is None:       # a bench file from before the machine stamp
        return f"{hw.get('cpu', '?')} (no machine stamp: maybe not this machine), {run}"
    return f"{machine_phrase(bench)}, {run}"

#: The retired calculator's job and asserted rates (params.yaml before issue 15), for the
#: one side-by-side comparison: 1M ten-second ECGs at 50 tokens/s, 40 records/s per GPU.
ASSERTED_BEFORE = {"records": 1_000_000, "tokens_per_record": 500, "records_per_s_per_gpu": 40.0,
                   "hidden": 768, "layers_kept": 4, "dtype": "float16", "dtype_bytes": 2}



def load_summary(bench: dict[str, Any]) -> dict[str, Any] | None:
    """The load average around the bench's CPU timings: the highest 1-minute reading, the
    cores, and whether it was above half of them (``None``: not recorded)."""
    load = bench.get("load")
    if not isinstance(load, dict) or bench.get("device") != "cpu":
        return None
    readings = [float(x) for x in load.get("readings", [])]
    cores = int(load.get("cores") or bench.get("hardware", {}).get("threads") or 1)
    worst = max(readings, default=0.0)
    return {"max": worst, "cores": cores, "loaded": worst > cores / 2}


def bench_summary(b: dict[str, Any]) -> dict[str, Any]:
    pre = b.get("preprocess") or {}
    return {"family": b["family"], "size": b["size"], "tokens_per_record": b["tokens_per_record"],
            "tokens_per_input": b.get("tokens_per_input"),
            "inputs_per_record": b.get("inputs_per_record"), "geometry": b.get("geometry"),
            "hidden_size": b["hidden_size"], "hidden_states": b["hidden_states"],
            "flops_per_record": b["flops_per_record"], "device": b["device"],
            "records_per_s": b.get("records_per_s"), "best_batch": b.get("best_batch"),
            "compute_dtype": b.get("compute_dtype", "float32"),
            "timing_extrapolated": bool(b.get("timing", {}).get("extrapolated")),
            "preprocess_records_per_s_per_core": pre.get("records_per_s_per_core"),
            "geometry_words": geometry_words(b["family"], b.get("geometry") or {},
                                             b.get("tokens_per_input")),
            "load": load_summary(b),
            "machine": b.get("machine"), "this_machine": same_machine(b),
            "measured_on": where(b) if not b.get("hardware", {}).get("gpu")
            else f"{b['hardware']['gpu']}, torch {b['hardware'].get('torch', '?')}"}


def before_after(cfg: SizingConfig, benches: dict[str, dict[str, Any]],
                  gpus: dict[str, tuple[str | None, dict[str, Any] | None]],
                  disk: dict[str, Any]) -> dict[str, Any]:
    """The retired calculator's job sized the old way and from the ECG bench, side by side;
    the measured side also writes its shards at the aggregate rate measured here, and one
    GPU's hours are those of compute or writing, whichever is slower."""
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
    rate_w = float(disk["write"]["bytes_per_s"])
    write_s = measured["storage_bytes"] / rate_w
    measured.update(write_s=write_s, write_bytes_per_s=rate_w,
                    gpu_hours_with_write_low=max(measured["gpu_hours_low"], write_s / HOUR),
                    gpu_hours_with_write_high=max(measured["gpu_hours_high"], write_s / HOUR))
    out["measured"] = measured
    return out
