"""Measure what an extraction worker costs before and while it encodes: start-up and its rate.

``rightsize extract`` runs ``workers`` spawned processes, each with ``threads_per_worker``
torch threads, each importing torch and building the model before its first shard. The
encoder bench times one process on all cores; this times the workers as extract runs them:

1. **Start-up.** ``workers`` processes are spawned at once (``multiprocessing`` spawn, as
   extract's pool does); each imports torch and builds HuBERT-ECG with random weights
   (:func:`rightsize.encoders.weights.build_extractor`, extract's own function) after
   :func:`rightsize.encoders.worker_process.prepare` (threads, record readers), as extract's
   workers do. Its start-up is the wall clock from the pool's creation in the parent to the
   model built in the worker: spawn, imports, model build. Its shutdown is the pool's exit
   after the last result (the workers leave as extract's do).
2. **Rate.** Then every worker, concurrently with the others, times forwards of the
   extraction's model at each batch size (``warmup`` untimed, ``repeats`` timed, the same
   random inputs): records/s per worker while its siblings run, median, min and max.

Start-up is wall clock across processes (``time.time``); the rate is each worker's own
``perf_counter``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

WHAT = ("spawned processes started at once as extract starts its workers: Python start, "
        "import torch + transformers and the record readers, HuBERT-ECG built with random "
        "weights (extract's build_extractor); shutdown: the pool's exit after the last result")


def _worker(t0: float, size: str, crops: int, depth: int, threads: int,
            batches: tuple[int, ...], repeats: int, warmup: int,
            compute_dtype: str) -> dict[str, Any]:
    """In a spawned worker: build the model, then time forwards at each batch size."""
    import numpy as np
    import torch

    from rightsize.encoders.compute_dtype import autocast
    from rightsize.encoders.models import EcgGeometry
    from rightsize.encoders.weights import build_extractor
    from rightsize.encoders.worker_process import exit_without_teardown, prepare

    exit_without_teardown()
    prepare(threads)
    geometry = EcgGeometry(crops_per_record=crops)
    model, _ = build_extractor(size, None, 0, depth, geometry)
    startup = time.time() - t0
    rng = np.random.default_rng(0)
    rates: dict[str, list[float]] = {}
    for batch in batches:
        x = torch.from_numpy(rng.uniform(-1, 1, (batch, geometry.input_samples))
                             .astype(np.float32))
        seconds = []
        with torch.inference_mode():
            for i in range(warmup + repeats):
                start = time.perf_counter()
                with autocast(compute_dtype, "cpu"):
                    model(x, output_hidden_states=True)
                if i >= warmup:
                    seconds.append(time.perf_counter() - start)
        rates[f"batch_{batch}"] = [batch / crops / s for s in seconds]
    from rightsize.measure import memory_hwm_mb

    return {"startup_s": startup, "rates": rates, "peak_rss_mb": memory_hwm_mb()}


def bench_workers(size: str, crops: int, depth: int, workers: int, threads: int,
                  batches: tuple[int, ...], repeats: int, warmup: int,
                  compute_dtype: str = "float32") -> dict[str, Any]:
    """``workers`` spawned extraction workers of ``threads`` threads, the model ``depth``
    layers deep, computing in ``compute_dtype`` (resolved, as extract's forwards): start-up
    and rate."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    ctx = mp.get_context("spawn")
    t0 = time.time()
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(_worker, t0, size, crops, depth, threads, tuple(batches), repeats,
                               warmup, compute_dtype) for _ in range(workers)]
        results = [f.result() for f in futures]
        t_done = time.time()
    shutdown = time.time() - t_done
    startups = sorted(r["startup_s"] for r in results)
    throughput: dict[str, Any] = {}
    for key in results[0]["rates"]:
        per_worker = [statistics.median(r["rates"][key]) for r in results]
        every = [x for r in results for x in r["rates"][key]]
        throughput[key] = {
            "batch": int(key.split("_")[1]),
            "records_per_s_per_worker": statistics.median(per_worker),
            "records_per_s_per_worker_min": min(every),
            "records_per_s_per_worker_max": max(every),
            "records_per_s": sum(per_worker)}
    return {"workers": workers, "threads_per_worker": threads, "size": size,
            "crops_per_record": crops, "layers": depth, "compute_dtype": compute_dtype,
            "what": WHAT, "repeats": repeats,
            "warmup": warmup,
            "startup_s": statistics.median(startups), "startup_s_min": startups[0],
            "startup_s_max": startups[-1], "startup_s_each": startups,
            "shutdown_s": shutdown,
            "peak_rss_mb_per_worker": max(r["peak_rss_mb"] for r in results),
            "throughput": throughput}
