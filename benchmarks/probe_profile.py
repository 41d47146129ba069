"""Where a probe's training time goes: torch profiler categories and the optimizer step.

:func:`profile_fit` runs the engine's own :func:`rightsize.probes.train.train_probe` for a
few epochs under ``torch.profiler`` and splits the profiled CPU time into matmuls,
attention kernels, the AdamW step (everything under ``Optimizer.step``/``zero_grad``) and
the rest (elementwise, layer norm, batch gathers, autograd bookkeeping), plus the top ops
by self time. It also times the same epochs without the profiler: as built, and with
``torch.optim.AdamW`` forced to ``fused=True`` and to the single-tensor loop (what-ifs: one
fused pass over the parameters vs ~10 elementwise passes).

Heavy imports live inside the functions (the benchmark driver imports nothing heavy).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

MATMUL = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul"}


def _config(params: str, probe: str, fusion_dim: int, threads: int, epochs: int) -> Any:
    from rightsize.params import load_block
    from rightsize.probes.config import TrainConfig

    cfg = load_block(params, "train", TrainConfig)
    sub = dataclasses.replace(getattr(cfg, probe), epochs=epochs)
    if probe == "fused":
        sub = dataclasses.replace(sub, fusion_dim=fusion_dim)
    return dataclasses.replace(cfg, threads=threads, **{probe: sub})


@contextlib.contextmanager
def adamw_variant(seen: list[dict[str, Any]] | None = None, **force: Any) -> Iterator[None]:
    """Within the block ``torch.optim.AdamW(...)`` gets ``force`` merged into its keywords.

    The keywords the caller passed (``lr`` and ``weight_decay`` left out) are appended to
    ``seen``.
    """
    import torch

    orig = torch.optim.AdamW

    class Variant(orig):  # type: ignore[misc, valid-type]
        def __init__(self, params: Any, **kw: Any) -> None:
            if seen is not None:
                seen.append({k: v for k, v in kw.items() if k not in ("lr", "weight_decay")})
            super().__init__(params, **{**kw, **force})

    torch.optim.AdamW = Variant
    try:
        yield
    finally:
        torch.optim.AdamW = orig


def profile_fit(manifest: str, probe: str, fusion_dim: int, threads: int, params: str,
                epochs: int = 3, top: int = 8) -> dict[str, Any]:
    """Time and profile ``epochs`` epochs of the engine's fit (see the module docstring)."""
    from torch.profiler import ProfilerActivity, profile

    from rightsize.cohort.arrays import load_arrays
    from rightsize.probes.train import train_probe

    arrays = load_arrays(manifest)
    train_probe(probe, arrays, _config(params, probe, fusion_dim, threads, 1))   # warm-up
    cfg = _config(params, probe, fusion_dim, threads, epochs)
    seen: list[dict[str, Any]] = []
    epoch_s = {}
    for name, force in (("built", {}), ("fused", {"fused": True}),
                        ("single", {"fused": False, "foreach": False}), ("built", {})):
        with adamw_variant(seen if name == "built" else None, **force):
            t0 = time.perf_counter()
            train_probe(probe, arrays, cfg)
            sec = (time.perf_counter() - t0) / epochs
        epoch_s[name] = min(sec, epoch_s.get(name, sec))    # as built: best of first, last
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        train_probe(probe, arrays, cfg)
    ka = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in ka)
    opt = sum(e.cpu_time_total for e in ka if e.key.startswith(("Optimizer.step",
                                                                   "Optimizer.zero_grad")))
    mm = sum(e.self_cpu_time_total for e in ka if e.key in MATMUL)
    attn = sum(e.self_cpu_time_total for e in ka if "scaled_dot_product" in e.key)
    ops = sorted((e for e in ka if e.key.startswith("aten::")),
                 key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    return {
        "epochs": epochs, "epoch_s": epoch_s,
        "adamw_kwargs": ", ".join(f"{k}={v}" for k, v in (seen[0] if seen else {}).items()),
        "share": {"matmul": mm / total, "attention": attn / total, "optimizer": opt / total,
                  "other": max(0.0, 1 - (mm + attn + opt) / total)},
        "top": [(e.key, e.self_cpu_time_total / total, e.count) for e in ops],
    }
