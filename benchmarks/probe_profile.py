"""Where a probe's training time goes: torch profiler categories and seconds per epoch.

:func:`profile_fit` runs the engine's own :func:`rightsize.probes.engine.train.train_probe` for a
few epochs under ``torch.profiler`` and splits the profiled CPU time into matmuls,
attention kernels, the optimizer and the rest (elementwise, layer norm, batch gathers,
autograd bookkeeping), plus the top ops by self time. Attention kernels = fused attention,
softmax and sigmoid ops and their backward (the fused probe forms its attention scores
and mixes with ``einsum``, i.e. batched matmuls, counted as matmul). The engine's
optimizer is :class:`rightsize.probes.accel.adamw.AdamW` (torch's fused AdamW kernel, no
``torch.optim``): while profiling, its ``step`` and ``update`` (the weights the fused
probe's step hands over as it goes) run inside ``AdamW.step`` / ``AdamW.update``
profiler labels, and the optimizer share is everything under those labels (at least the
self time of ``aten::_fused_adamw_`` and ``aten::_foreach_add_``). Seconds per epoch are measured
without the profiler (best of a run before and one after the profiled run).

Heavy imports live inside the functions (the benchmark driver imports nothing heavy).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

MATMUL = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul",
          "mkldnn::_linear_pointwise"}     # the oneDNN route of rightsize.probes.accel.gemm
ATTENTION = ("scaled_dot_product", "softmax", "sigmoid")     # substrings, backward included
OPTIMIZER_OPS = {"aten::_fused_adamw_", "aten::_foreach_add_"}
OPTIMIZER_LABELS = ("AdamW.step", "AdamW.update")


def _config(params: str, probe: str, fusion_dim: int, threads: int, epochs: int) -> Any:
    from rightsize.params import load_block
    from rightsize.probes.engine.config import TrainConfig

    cfg = load_block(params, "train", TrainConfig)
    sub = dataclasses.replace(getattr(cfg, probe), epochs=epochs)
    if probe == "fused":
        sub = dataclasses.replace(sub, fusion_dim=fusion_dim)
    return dataclasses.replace(cfg, threads=threads, **{probe: sub})


@contextlib.contextmanager
def labelled_step() -> Iterator[None]:
    """Within the block ``AdamW.step`` and ``.update`` run under profiler labels of their
    names (:data:`OPTIMIZER_LABELS`)."""
    from torch.profiler import record_function

    from rightsize.probes.accel.adamw import AdamW

    orig = AdamW.step, AdamW.update

    def step(self: Any) -> None:
        with record_function(OPTIMIZER_LABELS[0]):
            orig[0](self)

    def update(self: Any, param: Any, grad: Any) -> None:
        with record_function(OPTIMIZER_LABELS[1]):
            orig[1](self, param, grad)

    AdamW.step, AdamW.update = step, update  # type: ignore[method-assign]
    try:
        yield
    finally:
        AdamW.step, AdamW.update = orig  # type: ignore[method-assign]


def profile_fit(manifest: str, probe: str, fusion_dim: int, threads: int, params: str,
                epochs: int = 3, top: int = 8) -> dict[str, Any]:
    """Time and profile ``epochs`` epochs of the engine's fit (see the module docstring)."""
    from torch.profiler import ProfilerActivity, profile

    from rightsize.cohort.load_manifest import load_arrays
    from rightsize.probes.engine.train import train_probe
    from rightsize.probes.registry import spec as probe_spec

    arrays = load_arrays(manifest)
    warm = _config(params, probe, fusion_dim, threads, 1)
    train_probe(probe_spec(probe), arrays, warm)                                  # warm-up
    cfg = _config(params, probe, fusion_dim, threads, epochs)

    def epoch_s() -> float:
        t0 = time.perf_counter()
        train_probe(probe_spec(probe), arrays, cfg)
        return (time.perf_counter() - t0) / epochs

    before = epoch_s()
    with labelled_step(), profile(activities=[ProfilerActivity.CPU]) as prof:
        train_probe(probe_spec(probe), arrays, cfg)
    built = min(before, epoch_s())
    ka = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in ka)
    opt = max(sum(e.cpu_time_total for e in ka if e.key in OPTIMIZER_LABELS),
              sum(e.self_cpu_time_total for e in ka if e.key in OPTIMIZER_OPS))
    mm = sum(e.self_cpu_time_total for e in ka if e.key in MATMUL)
    attn = sum(e.self_cpu_time_total for e in ka
               if e.key.startswith("aten::") and any(a in e.key for a in ATTENTION))
    ops = sorted((e for e in ka if e.key.startswith("aten::")),
                 key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    return {
        "epochs": epochs, "epoch_s": {"built": built},
        "share": {"matmul": mm / total, "attention": attn / total, "optimizer": opt / total,
                  "other": max(0.0, 1 - (mm + attn + opt) / total)},
        "top": [(e.key, e.self_cpu_time_total / total, e.count) for e in ops],
    }
