"""FLOPs of the torch probes, ours and the baseline's, and the fp32 matmul ceiling.

Three counts per probe and fit, every clip slot (padding included) counted:

* **ours, executed**: what the engine runs, counted by torch's ``FlopCounterMode``. A
  training step is the accelerated step on an already encoded batch (the fused probe's
  hand-written step; autograd of the textbook forward for concat, whose stacked
  accelerator runs the same products for all replicas at once; the engine encodes
  each split once, outside the loop, so ``encode`` is not counted),
  at the engine's batch size; the per-epoch validation forward is one eval
  inference forward per ``PREDICT_BATCH`` chunk. The fused probe forms some products
  once per batch (projection weights composed with the PCA lift, null-token keys and
  values), so its per-row cost depends on the batch size: every count is taken at the
  batch sizes a fit really uses (full batches and the last, shorter one). The engine
  trains the echo probe in numpy (:mod:`rightsize.probes.models.echo.numpy_model`), which no torch
  counter sees: its count is taken on its textbook torch module :class:`EchoAttnProbe`
  (autograd's step in place of the numpy hand-written one).
* **baseline, executed**: the probe's textbook module (the same parameters, its textbook
  forward) on raw inputs, training step and forward at batch 32, as ``naive_probes.py``
  runs it.
* **model FLOPs** (the issue's definition, as in MFU): ``6 x params`` per training row,
  i.e. ``6 * P * n_train * epochs`` per fit, whatever the implementation executes.

An executed fit is ``epochs * (n_train * train_row + n_val * forward_row)``, each side
with its own per-row counts. ``FlopCounterMode`` counts matmul-like ops (mm, addmm, bmm,
attention); LayerNorm, softmax, GELU and the optimizer are elementwise and not counted.
The same pass records every ``mm``/``addmm`` shape of ours' training step with its FLOPs,
so the benchmark can time torch on the probe's own matmuls. The counts are taken with
:mod:`rightsize.probes.accel.gemm`'s oneDNN route off: the same products, through aten ops the
counter sees.

Only the standard library at module level; torch is imported inside the functions.
"""

from __future__ import annotations

from typing import Any

BASELINE_BATCH = 32


def matmul_gflops(m: int, k: int, n: int, threads: int, min_s: float = 0.25,
                  repeats: int = 5, kernel: str = "best") -> float:
    """Best-of-``repeats`` fp32 GFLOP/s of ``(m, k) @ (k, n)`` with ``threads`` torch threads.

    ``kernel``: ``"mm"`` = ``torch.mm`` (MKL on CPU), ``"onednn"`` = the engine's
    :func:`rightsize.probes.accel.gemm.mm` with its oneDNN route on (``torch.mm`` where the route
    does not apply), ``"best"`` = the faster of the two: the ceiling the engine is held to.
    The timing is the library's (:func:`rightsize.probes.measurements.throughput.product_gflops`,
    what ``rightsize train`` records as the machine's GEMM rate).
    """
    from rightsize.probes.measurements.throughput import product_gflops

    if kernel == "best":
        return max(matmul_gflops(m, k, n, threads, min_s, repeats, kn)
                   for kn in ("mm", "onednn"))
    return product_gflops(m, k, n, threads, "onednn" if kernel == "onednn" else "mkl", min_s,
                          repeats)


def batch_sizes(n: int, batch: int) -> list[tuple[int, int]]:
    """``(size, how many)`` of the batches that cover ``n`` rows: full ones, then the rest."""
    from rightsize.probes.engine.flops import step_sizes

    return step_sizes(n, batch)


def _raw(arch: dict[str, Any], clips: int, batch: int) -> dict[str, Any]:
    """Random raw inputs, every clip and ECG present (FLOPs do not depend on the values)."""
    import torch

    gen = torch.Generator().manual_seed(batch)
    return {"echo": torch.randn(batch, clips, arch["echo_dim"], generator=gen),
            "clip_mask": torch.ones(batch, clips, dtype=torch.bool),
            "ecg": torch.randn(batch, arch["ecg_dim"], generator=gen),
            "has_ecg": torch.ones(batch, dtype=torch.bool)}


def _counted(fn: Any) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as fc:
        fn()
    return float(fc.get_total_flops())


def _train_step(model: Any, inputs: dict[str, Any], encoded: bool) -> float:
    """FLOPs of one training step (forward + backward of the MSE loss).

    Ours (``encoded``): the accelerated step the training loop takes (:func:`_ours_step`).
    """
    import torch
    import torch.nn.functional as F

    model.train()
    y = torch.zeros(inputs["has_ecg"].shape[0])
    if encoded:
        return _counted(lambda: _ours_step(model)(model, inputs, y))
    return _counted(lambda: F.mse_loss(model(**inputs), y).backward())


def _ours_step(model: Any) -> Any:
    """The engine's training step for ``model``: the fused probe's hand-written step, else
    autograd of the textbook forward (what the concat accelerator runs per replica)."""
    from rightsize.probes.engine.torch_replicas import autograd_loss_backward
    from rightsize.probes.models.fused.model import CrossAttnFusedProbe
    from rightsize.probes.models.fused.step import fused_loss_backward

    return fused_loss_backward if isinstance(model, CrossAttnFusedProbe) \
        else autograd_loss_backward


def _ours_forward(model: Any) -> Any:
    """The engine's inference forward for ``model`` (an accelerator's, else the textbook)."""
    from rightsize.probes.models.fused.coords import fast_forward
    from rightsize.probes.models.fused.model import CrossAttnFusedProbe

    if isinstance(model, CrossAttnFusedProbe):
        return lambda **b: fast_forward(model, **b)
    return model.forward_encoded


def _forward(model: Any, inputs: dict[str, Any], encoded: bool) -> float:
    """FLOPs of one eval forward pass without grad."""
    import torch

    model.eval()
    run = _ours_forward(model) if encoded else model
    with torch.no_grad():
        return _counted(lambda: run(**inputs))


def _encode(probe: Any, raw: dict[str, Any]) -> dict[str, Any]:
    import torch

    with torch.no_grad():
        return probe.encode(**raw)


def step_shapes(probe: Any, inputs: dict[str, Any]) -> list[list[int]]:
    """``[m, k, n, flops]`` of every ``mm``/``addmm`` in ours' training step, largest first."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    shapes: dict[tuple[int, int, int], int] = {}

    class Shapes(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            packet = func._overloadpacket        # mm/addmm, with or without out=
            if packet in (aten.mm, aten.addmm):
                a, b = args[:2] if packet is aten.mm else args[1:3]
                key = (int(a.shape[0]), int(a.shape[1]), int(b.shape[1]))
                shapes[key] = shapes.get(key, 0) + 2 * key[0] * key[1] * key[2]
            return func(*args, **(kwargs or {}))

    probe.train()
    y = torch.zeros(inputs["has_ecg"].shape[0])
    with Shapes():
        _ours_step(probe)(probe, inputs, y)
    return sorted(([*k, v] for k, v in shapes.items()), key=lambda r: -r[3])


def fit_flops(arch: dict[str, Any], clips: int, n_train: int, n_val: int,
              batch: int) -> dict[str, Any]:
    """Per-row executed FLOPs of both sides, the parameter count and ours' matmul shapes.

    Returns ``{"ours": {"train", "forward"}, "baseline": {"train", "forward"}, "params",
    "shapes"}``; per-row = the FLOPs of a whole epoch (all batch sizes it uses) / its rows.
    """
    import torch

    from rightsize.probes.accel import gemm
    from rightsize.probes.engine.build import build_module
    from rightsize.probes.engine.torch_model import PREDICT_BATCH, count_params
    from rightsize.probes.registry import spec as probe_spec

    torch.manual_seed(0)
    probe = build_module(probe_spec(arch["probe"]), arch)
    ref = probe                       # the baseline runs the textbook forward on raw inputs

    def per_row(n: int, size: int, count: Any) -> float:
        return sum(k * count(_raw(arch, clips, s)) for s, k in batch_sizes(n, size)) / n

    # FlopCounterMode counts aten matmuls; the engine's oneDNN route computes the same
    # products through a kernel it does not see, so count with the route off
    prev_route = gemm.set_onednn(False)
    try:
        ours = {"train": per_row(n_train, batch,
                                 lambda r: _train_step(probe, _encode(probe, r), True)),
                "forward": per_row(n_val, PREDICT_BATCH,
                                   lambda r: _forward(probe, _encode(probe, r), True))}
        base = {"train": per_row(n_train, BASELINE_BATCH, lambda r: _train_step(ref, r, False)),
                "forward": per_row(n_val, BASELINE_BATCH, lambda r: _forward(ref, r, False))}
        shapes = step_shapes(probe, _encode(probe, _raw(arch, clips, min(batch, n_train))))
    finally:
        gemm.set_onednn(prev_route)
    return {"ours": ours, "baseline": base, "params": count_params(probe), "shapes": shapes}


def fit_total(per_row: dict[str, float], n_train: int, n_val: int, epochs: int) -> float:
    """Executed FLOPs of a fit: every epoch trains on ``n_train`` rows and predicts ``n_val``."""
    return epochs * (n_train * per_row["train"] + n_val * per_row["forward"])


def model_flops(params: int, n_train: int, epochs: int) -> float:
    """The issue's model FLOPs of a fit: ``6 * params * n_train * epochs``."""
    return 6.0 * params * n_train * epochs


def mix_gflops(shapes: list[list[int]], threads: int, min_s: float = 0.05) -> float:
    """FLOP-weighted ceiling of a matmul mix: total FLOPs / sum of each shape timed alone."""
    total = sum(r[3] for r in shapes)
    secs = sum(r[3] / (matmul_gflops(r[0], r[1], r[2], threads, min_s, 3) * 1e9)
               for r in shapes)
    return total / secs / 1e9
