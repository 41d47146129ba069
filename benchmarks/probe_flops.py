"""FLOPs of the torch probes and the fp32 matmul ceiling they are compared with.

Two counts per probe, per row (every clip slot, padding included):

* **executed** (:func:`step_flops`): what the current model classes of
  :mod:`rightsize.probes.models` actually run, counted by torch's ``FlopCounterMode`` on one
  training step (forward + backward) and one forward at the engine's batch size, divided by
  the batch. It follows the engine as it changes (e.g. linear layers applied in the PCA
  coordinates). The same pass records every ``mm``/``addmm`` shape with its FLOPs, so the
  benchmark can time torch on the probe's own dominant matmul.
* **reference formulation** (:func:`row_flops`): the matmul FLOPs of the plain formulation
  (inputs projected back to full width, ``z -> B B^T z``, then full-width linear layers),
  split by what the backward pass does with them: ``frozen`` PCA projections (forward only),
  ``first`` layers whose input needs no gradient (2x: forward + weight gradient) and
  ``inner`` layers (3x). It documents the work before any algebraic shortcut.

A fit is ``epochs * (n_train * train_row + n_val * forward_row)`` (each epoch trains and
then predicts the validation split). LayerNorm, softmax, GELU and the optimizer are
elementwise and not counted.

Only the standard library at module level; torch is imported inside the functions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RowFlops:
    """Matmul FLOPs of one row's forward pass, by backward treatment."""

    frozen: float
    first: float
    inner: float

    @property
    def forward(self) -> float:
        """Forward FLOPs per row."""
        return self.frozen + self.first + self.inner

    @property
    def train(self) -> float:
        """Forward + backward FLOPs per training row."""
        return self.frozen + 2 * self.first + 3 * self.inner


def _rank(dim: int, rank: int) -> int:
    return rank if 0 < rank < dim else 0


def row_flops(arch: dict[str, Any], clips: int) -> RowFlops:
    """Per-row matmul FLOPs of the torch probe described by ``arch`` (see ``arch_of``)."""
    c, e, g = clips, arch["echo_dim"], arch["ecg_dim"]
    re_, rg = _rank(e, arch["pca_rank"]), _rank(g, arch["pca_rank"])
    norm_echo, norm_ecg = 4.0 * c * e * re_, 4.0 * g * rg       # z @ B @ B.T per token
    probe = arch["probe"]
    if probe == "echo":
        # query scores over [null, clips], softmax-weighted bmm pooling, linear head
        return RowFlops(norm_echo, 0.0, 2.0 * (1 + c) * e * 2 + 2.0 * e)
    if probe == "concat":
        h = arch["hidden"]
        return RowFlops(norm_echo + norm_ecg, 2.0 * (e + g) * h, 2.0 * h)
    if probe == "fused":
        d, h = arch["fusion_dim"], arch["hidden"]
        first = 2.0 * c * e * d + 2.0 * g * d                       # echo_proj, ecg_proj
        # echo->ECG: c queries, keys/values [null, ECG]; q/k/v/out projections + attention
        e2g = 2.0 * c * d * d + 2 * 2.0 * 2 * d * d + 2.0 * c * d * d + 2 * 2.0 * c * 2 * d
        # ECG->echo: 1 query, keys/values [null, clips]
        g2e = (2.0 * d * d + 2 * 2.0 * (1 + c) * d * d + 2.0 * d * d
               + 2 * 2.0 * (1 + c) * d)
        head = 2.0 * 2 * d * h + 2.0 * h
        return RowFlops(norm_echo + norm_ecg, first, e2g + g2e + head)
    raise ValueError(f"no FLOP model for probe {probe!r}")


def training_flops(rf: RowFlops, n_train: int, n_val: int, epochs: int) -> float:
    """FLOPs of a whole fit: every epoch trains on ``n_train`` rows and predicts ``n_val``."""
    return epochs * (n_train * rf.train + n_val * rf.forward)


def matmul_gflops(m: int, k: int, n: int, threads: int, min_s: float = 0.25,
                  repeats: int = 5) -> float:
    """Best-of-``repeats`` fp32 GFLOP/s of ``(m, k) @ (k, n)`` with ``threads`` torch threads."""
    import torch

    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(0)
        a = torch.randn(m, k, generator=gen)
        b = torch.randn(k, n, generator=gen)
        out = torch.empty(m, n)
        for _ in range(3):
            torch.mm(a, b, out=out)
        t0, reps = time.perf_counter(), 0
        while time.perf_counter() - t0 < min_s / repeats:   # size a timing block
            torch.mm(a, b, out=out)
            reps += 1
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(reps):
                torch.mm(a, b, out=out)
            best = min(best, (time.perf_counter() - t0) / reps)
    finally:
        torch.set_num_threads(prev)
    return 2.0 * m * k * n / best / 1e9


def step_flops(arch: dict[str, Any], clips: int, batch: int = 64) -> dict[str, Any]:
    """Executed per-row FLOPs (train step, forward) and the matmul shapes of a train step.

    Random inputs, every clip and ECG present (the FLOPs do not depend on the values).
    Returns ``{"train", "forward", "shapes"}``, shapes as ``[m, k, n, flops]`` (per step,
    summed over calls) sorted by FLOPs, largest first.
    """
    import torch
    import torch.nn.functional as F
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    from rightsize.probes.models import build_model

    aten = torch.ops.aten
    shapes: dict[tuple[int, int, int], int] = {}

    class Shapes(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            if func in (aten.mm.default, aten.addmm.default):
                a, b = args[-2:] if func is aten.mm.default else args[1:3]
                key = (int(a.shape[0]), int(a.shape[1]), int(b.shape[1]))
                shapes[key] = shapes.get(key, 0) + 2 * key[0] * key[1] * key[2]
            return func(*args, **(kwargs or {}))

    torch.manual_seed(0)
    model = build_model(arch)
    e, g = arch["echo_dim"], arch["ecg_dim"]
    inputs = {"echo": torch.randn(batch, clips, e),
              "clip_mask": torch.ones(batch, clips, dtype=torch.bool),
              "ecg": torch.randn(batch, g), "has_ecg": torch.ones(batch, dtype=torch.bool)}
    y = torch.randn(batch)
    model.train()
    with FlopCounterMode(display=False) as fc:
        F.mse_loss(model(**inputs), y).backward()
    train = fc.get_total_flops() / batch
    with Shapes():
        F.mse_loss(model(**inputs), y).backward()
    model.eval()
    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        model(**inputs)
    ranked = sorted(([*k, v] for k, v in shapes.items()), key=lambda r: -r[3])
    return {"train": train, "forward": fc.get_total_flops() / batch, "shapes": ranked}


def mix_gflops(shapes: list[list[int]], threads: int, min_s: float = 0.05) -> float:
    """FLOP-weighted ceiling of a matmul mix: total FLOPs / sum of each shape timed alone."""
    total = sum(r[3] for r in shapes)
    secs = sum(r[3] / (matmul_gflops(r[0], r[1], r[2], threads, min_s, 3) * 1e9)
               for r in shapes)
    return total / secs / 1e9
