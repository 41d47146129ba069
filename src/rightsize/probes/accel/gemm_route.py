"""Which fp32 route the probes' weight products take on this machine: oneDNN or MKL.

:mod:`.gemm` can hand a plain fp32 product to oneDNN (``mkldnn._linear_pointwise``) or leave
it to ``torch.mm`` (MKL's sgemm in torch's x86 builds). Which one is faster depends on the
CPU: on the AMD EPYC the engine was tuned on, oneDNN ran the probes' skinny weight products
(``34 x 1024 @ 1024 x 1024``) about 2x faster; on an Intel Xeon with AMX, MKL ran every one
of them 1.3-1.45x faster. So the route is measured once per machine, at first use
(:func:`machine_route`): both routes time the products a fusion_dim-1024 fused step spends
most of its product time in (:data:`SHAPES`, the weight gradient written into a buffer as the
step writes it), fastest of :data:`REPEATS` each, interleaved. MKL is chosen only when it is
at least :data:`MARGIN` times faster over all of them; otherwise oneDNN, the route the engine
was tuned with.

The two routes sum in different orders, so a model trained on one differs from the other in
its last bits. A timing taken on the day must not decide a model's metrics, so the choice is
written to a file per machine (CPU model, instruction sets, torch version and torch threads:
:func:`machine_key`) under the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``,
``rightsize/``), and every later process on the machine reads it. A choice measured while
the machine was busier than its cores (1-minute load average) holds for its process only.
``RIGHTSIZE_GEMM_ROUTE`` (``onednn`` or ``mkl``) sets the route without measuring, for A/B
runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from rightsize.ground.user_cache import cache_path, read_json, write_json

ENV = "RIGHTSIZE_GEMM_ROUTE"
ROUTES = ("onednn", "mkl")
# (m, k, n, written into a buffer): a fused-1024 step's top products (benchmarks/results/
# fused_step_1024.md): the projections of 34 and 64 rows and a weight gradient
SHAPES = ((34, 1024, 1024, False), (64, 1024, 1024, False), (1024, 34, 1024, True))
REPEATS = 15
MARGIN = 1.15          # MKL must be this much faster to replace the tuned-on route

_CHOICE: dict[str, dict[str, Any]] = {}


def machine_key() -> str:
    """12 hex digits naming this machine's route file: CPU model and instruction sets, torch
    version and torch threads."""
    from rightsize.measure import cpu_flags, cpu_model

    text = json.dumps({"cpu": cpu_model(), "flags": sorted(cpu_flags()),
                       "torch": torch.__version__, "threads": torch.get_num_threads()},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def cache_file(key: str) -> Path:
    """Where this machine's choice is kept."""
    return cache_path(f"gemm-route-{key}.json")


def _best(fns: tuple[Callable[[], Any], Callable[[], Any]]) -> tuple[float, float]:
    """The fastest of :data:`REPEATS` runs of each of two functions, interleaved, after one
    warm-up run each."""
    best = [math.inf, math.inf]
    for fn in fns:
        fn()
    for _ in range(REPEATS):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best[0], best[1]


def measure(linear_pointwise: Callable[..., torch.Tensor]) -> dict[str, Any]:
    """Time both routes on :data:`SHAPES`; the choice and the seconds behind it."""
    g = torch.Generator().manual_seed(0)
    per_shape = []
    with torch.no_grad():
        for m, k, n, into in SHAPES:
            a = torch.randn(k, m, generator=g).t() if into else torch.randn(m, k, generator=g)
            b = torch.randn(k, n, generator=g)
            out = torch.empty(m, n)

            def onednn(a=a, b=b, out=out, into=into) -> Any:
                res = linear_pointwise(a, b.t(), None, "none", [], "")
                return out.copy_(res) if into else res

            def mkl(a=a, b=b, out=out, into=into) -> Any:
                return torch.mm(a, b, out=out) if into else torch.mm(a, b)

            one, mk = _best((onednn, mkl))
            per_shape.append({"shape": [m, k, n], "into_buffer": into, "onednn_s": one,
                              "mkl_s": mk})
    one = sum(s["onednn_s"] for s in per_shape)
    mk = sum(s["mkl_s"] for s in per_shape)
    return {"route": "mkl" if mk * MARGIN <= one else "onednn", "onednn_over_mkl": one / mk,
            "margin": MARGIN, "shapes": per_shape, "threads": torch.get_num_threads()}


def _read(path: Path) -> dict[str, Any] | None:
    doc = read_json(path)
    return doc if doc is not None and doc.get("route") in ROUTES else None


def machine_route(linear_pointwise: Callable[..., torch.Tensor]) -> dict[str, Any]:
    """This machine's route (``route``: ``onednn`` or ``mkl``) and where it came from
    (``source``: the environment, the cache file, or a measurement just taken)."""
    key = machine_key()
    if key in _CHOICE:
        return _CHOICE[key]
    forced = os.environ.get(ENV, "").strip().lower()
    if forced:
        if forced not in ROUTES:
            raise ValueError(f"{ENV}={forced!r}: expected one of {', '.join(ROUTES)}")
        doc: dict[str, Any] = {"route": forced, "source": f"environment ({ENV})"}
    else:
        path = cache_file(key)
        doc = _read(path) or {}
        if doc:
            doc["source"] = "measured earlier on this machine"
        else:
            doc = measure(linear_pointwise)
            doc["load_average"] = load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
            if load <= (os.cpu_count() or 1):       # busier than its cores: not kept
                write_json(path, doc)
            doc["source"] = "measured now"
    doc["key"] = key
    _CHOICE[key] = doc
    return doc
