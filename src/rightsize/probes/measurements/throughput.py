"""How near this machine's limit a fit ran: its GFLOP/s beside the same process's fp32 GEMM rate.

A torch-trained probe's loop reports the FLOPs it executed and its seconds
(:mod:`rightsize.probes.engine.flops`); :func:`throughput` divides them and sets the result
beside :func:`gemm_rate`, a square fp32 product (:data:`SIZE`) timed in the same process at
the training threads through the route :mod:`rightsize.probes.accel.gemm` takes on this
machine (oneDNN, or ``torch.mm``: MKL in torch's x86 builds): the rate the probe's own
products could reach at best here. A probe's products are skinnier than the square (a few
dozen rows against a weight matrix), so they run below it; the share says how far.
"""

from __future__ import annotations

import time
from typing import Any

SIZE = 1024            # the square product the GEMM rate is timed on (2.1 GFLOP a call)


def product_gflops(m: int, k: int, n: int, threads: int, route: str = "mkl",
                   min_s: float = 0.1, repeats: int = 5) -> float:
    """Best-of-``repeats`` fp32 GFLOP/s of ``(m, k) @ (k, n)`` at ``threads`` torch threads:
    ``route`` ``"mkl"`` = ``torch.mm``, ``"onednn"`` = :func:`rightsize.probes.accel.gemm.mm`
    with its oneDNN route on (``torch.mm`` where that route does not apply); each timing
    block lasts about ``min_s / repeats`` seconds."""
    import torch

    from rightsize.probes.accel import gemm

    prev_threads = torch.get_num_threads()
    prev_route = gemm.set_onednn(route == "onednn")
    torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(0)
        a = torch.randn(m, k, generator=gen)
        b = torch.randn(k, n, generator=gen)
        run = (lambda: torch.mm(a, b)) if route == "mkl" else (lambda: gemm.mm(a, b))
        for _ in range(3):
            run()
        t0, reps = time.perf_counter(), 0
        while time.perf_counter() - t0 < min_s / repeats:      # size a timing block
            run()
            reps += 1
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(reps):
                run()
            best = min(best, (time.perf_counter() - t0) / reps)
    finally:
        torch.set_num_threads(prev_threads)
        gemm.set_onednn(prev_route)
    return 2.0 * m * k * n / best / 1e9


def gemm_rate(threads: int, size: int = SIZE) -> dict[str, Any]:
    """This process's fp32 GEMM rate: ``{"gflops", "route", "route_words", "shape",
    "threads"}`` of a ``size``-square product through the route the probes' products take
    here (``route_words``: that route and where it came from)."""
    import torch

    from rightsize.probes.accel import gemm

    prev = torch.get_num_threads()
    torch.set_num_threads(threads)           # the route is this machine's at these threads
    try:
        route = gemm.route()
        why = gemm.route_words()                  # the route and where it came from
    finally:
        torch.set_num_threads(prev)
    rate = product_gflops(size, size, size, threads, route, min_s=0.05)     # ~0.1 s
    return {"gflops": rate, "route": route, "route_words": why, "shape": [size, size, size],
            "threads": threads}


def throughput(flops: dict[str, Any], threads: int) -> dict[str, Any]:
    """A fit's achieved rate beside the GEMM rate: executed GFLOP, loop seconds, GFLOP/s,
    :func:`gemm_rate` and the share of it the loop reached."""
    rate = gemm_rate(threads)
    gflops = flops["fit"] / 1e9 / flops["loop_s"]
    return {"executed_gflop": flops["fit"] / 1e9, "loop_s": flops["loop_s"],
            "gflops": gflops, "gemm": rate, "share_of_gemm": gflops / rate["gflops"],
            "counted_by": "torch.utils.flop_counter.FlopCounterMode (matrix products)",
            "count": flops.get("source", "counted now")}


def words(name: str, t: dict[str, Any]) -> str:
    """One line for the console: the loop's rate and its share of the GEMM rate."""
    g = t["gemm"]
    return (f"{name}: the training loop ran {t['executed_gflop']:,.0f} GFLOP of matrix "
            f"products in {t['loop_s']:.1f} s: {t['gflops']:.1f} GFLOP/s, "
            f"{t['share_of_gemm']:.0%} of this machine's fp32 GEMM rate "
            f"({g['gflops']:.0f} GFLOP/s, a {g['shape'][0]}-square product, "
            f"{g.get('route_words', g['route'])}, "
            f"{g['threads']} thread{'s' if g['threads'] != 1 else ''}, measured now)")
