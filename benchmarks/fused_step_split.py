"""Where one training step of the fused probe goes: forward + backward, products, optimizer.

Runs the engine's own fit (:func:`rightsize.probes.engine.train.train_probe`, one seed, 1 thread)
on a pooled manifest and times, per step, the accelerated forward + backward
(``fused_step.fused_loss_backward``, less the optimizer calls made inside it), the
optimizer (``AdamW.update`` for the weight matrices the step hands over as it goes,
``AdamW.step`` for the rest), and inside the former every matrix product that goes
through :mod:`rightsize.probes.accel.gemm` (by operand shapes, with its GFLOP/s). Timing wrappers
add ~1 us per product; a first fit warms up, the second is measured. For scale, the same
process then times a plain copy of a buffer as large as all parameters (``copy_``: one read
and one write, best of 20): the memory bandwidth the optimizer's pass (parameters,
gradients and both moments read, three of them written: 7 parameter-sized transfers)
competes for. Prints a markdown report::

    python benchmarks/fused_step_split.py --fusion-dim 1024          # ~1 min
    python benchmarks/fused_step_split.py --fusion-dim 256 --epochs 20

The manifest is the e2e benchmark's (``probes_bench.py --child manifest``: 1,208 subjects,
one pooled clip each, 1024-d echo, 768-d ECG) unless ``--manifest`` names one.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "src"))


def measure(manifest: str, fusion_dim: int, epochs: int) -> dict[str, Any]:
    """Per-step seconds of forward+backward, optimizer, and products by shape."""
    import torch

    import rightsize.probes.models.fused.step as step_mod
    from probe_profile import _config
    from rightsize.cohort.load_manifest import load_arrays
    from rightsize.probes.accel.adamw import AdamW
    from rightsize.probes.engine.train import train_probe
    from rightsize.probes.registry import spec as probe_spec

    torch.set_num_threads(1)
    cfg = dataclasses.replace(_config(str(REPO / "params.yaml"), "fused", fusion_dim, 1, epochs),
                              seeds=1)           # one seed: the step of a single fit
    arrays = load_arrays(manifest)
    clock: dict[str, float] = collections.defaultdict(float)
    products: dict[tuple, list[float]] = collections.defaultdict(lambda: [0.0, 0, 0.0])

    def timed(fn: Any, bucket: str) -> Any:
        def wrapper(*args: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            out = fn(*args, **kw)
            clock[bucket] += time.perf_counter() - t0
            clock[bucket + " calls"] += 1
            return out
        return wrapper

    def timed_product(fn: Any, name: str) -> Any:
        def wrapper(a: Any, b: Any, *rest: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            out = fn(a, b, *rest, **kw)
            dt = time.perf_counter() - t0
            m, k = a.shape
            n = b.shape[1] if name == "mm" else b.shape[0]
            row = products[(name, m, k, n, "out" if kw.get("out") is not None else "")]
            row[0] += dt
            row[1] += 1
            row[2] += 2.0 * m * k * n
            return out
        return wrapper

    base = step_mod.ReplicaByReplica

    class TimedReplicas(base):  # type: ignore[misc, valid-type]
        """The trainer's replicas with their loss_backward timed (the accelerator binds the
        function when the module is imported, so the class is where to hook it)."""

        def __init__(self, *args: Any, loss_backward: Any, **kw: Any) -> None:
            super().__init__(*args, loss_backward=timed(loss_backward, "forward+backward"),
                             **kw)

    orig = (AdamW.step, AdamW.update, step_mod.ReplicaByReplica, step_mod.mm,
            step_mod.linear)
    train_probe(probe_spec("fused"), arrays, cfg)                                   # warm-up fit
    AdamW.step = timed(orig[0], "optimizer step")                       # type: ignore
    AdamW.update = timed(orig[1], "optimizer update")                   # type: ignore
    step_mod.ReplicaByReplica = TimedReplicas
    step_mod.mm, step_mod.linear = timed_product(orig[3], "mm"), timed_product(orig[4], "linear")
    try:
        t0 = time.perf_counter()
        fit = train_probe(probe_spec("fused"), arrays, cfg)
        fit_s = time.perf_counter() - t0
    finally:
        (AdamW.step, AdamW.update, step_mod.ReplicaByReplica, step_mod.mm,
         step_mod.linear) = orig
    if not clock["forward+backward calls"]:
        raise RuntimeError("the fused step was not timed: the accelerator no longer builds "
                           "its trainer from step.ReplicaByReplica")
    steps = clock["optimizer step calls"]
    n_params = sum(p.numel() for p in fit.probe.model.module.parameters())
    inside = clock["optimizer update"]           # runs within loss_backward
    from probe_flops import matmul_gflops

    return {"fusion_dim": fusion_dim, "epochs": epochs, "steps": int(steps), "fit_s": fit_s,
            "step_ms": 1e3 * (clock["forward+backward"] + clock["optimizer step"]) / steps,
            "product_gflop_step": sum(v[2] for v in products.values()) / steps / 1e9,
            "gemm_gflops": matmul_gflops(1024, 1024, 1024, 1),
            "params": n_params, "copy_ms": _copy_ms(n_params),
            "adamw_gelem_s": {"cached": _adamw_gelem_s(1 << 18, 4),
                              "cold": _adamw_gelem_s(n_params, 1)},
            "fwd_bwd_ms": 1e3 * (clock["forward+backward"] - inside) / steps,
            "update_ms": 1e3 * inside / steps,
            "optimizer_ms": 1e3 * (inside + clock["optimizer step"]) / steps,
            "products": sorted(((key, 1e3 * v[0] / steps, v[1] / steps, v[2] / v[0] / 1e9)
                                for key, v in products.items()), key=lambda r: -r[1])}


def _copy_ms(n: int, repeats: int = 20) -> float:
    """Best milliseconds of ``dst.copy_(src)`` for ``n`` float32 values (pages touched first)."""
    import torch

    from _measure import best_seconds

    src, dst = torch.ones(n), torch.zeros(n)
    return 1e3 * best_seconds(lambda: dst.copy_(src), repeats)


def _adamw_gelem_s(n: int, tensors: int, repeats: int = 20) -> float:
    """Best rate (1e9 elements/s) of torch's fused AdamW kernel on ``tensors`` tensors of ``n``
    float32 each: 4 x 1 MB stays in cache (the kernel's own speed), all parameters do not."""
    import torch

    ps, gs, ms, vs = ([torch.rand(n) for _ in range(tensors)] for _ in range(4))
    from _measure import best_seconds

    steps = [torch.zeros(()) for _ in range(tensors)]
    seconds = best_seconds(lambda: torch._fused_adamw_(
        ps, gs, ms, vs, [], steps, amsgrad=False, lr=1e-3, beta1=0.9, beta2=0.999,
        weight_decay=1e-4, eps=1e-8, maximize=False, grad_scale=None, found_inf=None), repeats)
    return n * tensors / seconds / 1e9


def render(res: dict[str, Any], info: dict[str, str], top: int) -> str:
    """The markdown report."""
    prod_ms = sum(r[1] for r in res["products"])
    mb = 4 * res["params"] / 1e6
    copy_gbs = 2 * mb / res["copy_ms"]
    adam_gbs = 7 * mb / res["optimizer_ms"]
    rates, n = res["adamw_gelem_s"], res["params"]
    lines = [f"# Fused probe step at fusion_dim {res['fusion_dim']}", "",
             *(f"- {k}: {v}" for k, v in info.items()), "",
             f"Fit of {res['epochs']} epochs: {res['fit_s']:.2f} s, {res['steps']} steps, "
             f"{res['params']:,} parameters.", "",
             "| per step | ms |", "|---|---:|",
             f"| forward + hand-written backward | {res['fwd_bwd_ms']:.2f} |",
             f"| of which matrix products (rightsize.probes.accel.gemm) | {prod_ms:.2f} |",
             f"| optimizer (AdamW's fused kernel, one pass over each tensor) | "
             f"{res['optimizer_ms']:.2f} |",
             f"| of which weights handed over during the backward pass | "
             f"{res['update_ms']:.2f} |", "", *_share_lines(res, prod_ms), "",
             f"Memory traffic: a plain copy of {mb:.0f} MB (all parameters, float32) takes "
             f"{res['copy_ms']:.2f} ms ({copy_gbs:.0f} GB/s counting its read and its write); the "
             f"optimizer moves 7 x {mb:.0f} MB a step, {adam_gbs:.0f} GB/s at the time above. "
             f"Its kernel alone: {rates['cached']:.2f} G elements/s on 4 x 1 MB tensors that stay "
             f"in cache, {rates['cold']:.2f} G elements/s on {mb:.0f} MB, i.e. "
             f"{1e3 * n / rates['cached'] / 1e9:.2f} ms a step even if nothing came from memory "
             f"(measured in the same process).", "",
             "| product | shape (m x k @ k x n) | out= | calls/step | ms/step | GFLOP/s |",
             "|---|---|---|---:|---:|---:|"]
    for (name, m, k, n, out), ms, calls, gflops in res["products"][:top]:
        lines.append(f"| {name} | {m} x {k} @ {k} x {n} | {out or '-'} | {calls:.1f} | "
                     f"{ms:.3f} | {gflops:.0f} |")
    return "\n".join(lines) + "\n"


def _share_lines(res: dict[str, Any], prod_ms: float) -> list[str]:
    """The step's matrix-product FLOPs per second of the whole step (optimizer included)
    against this process's fp32 GEMM rate: how near the limit the step runs."""
    gflop, gemm = res["product_gflop_step"], res["gemm_gflops"]
    step, products = gflop / (res["step_ms"] / 1e3), gflop / (prod_ms / 1e3)
    return [f"Against the limit: a whole step ({res['step_ms']:.2f} ms, optimizer included) "
            f"runs {gflop:.3f} GFLOP of matrix products, {step:.0f} GFLOP/s: **{step / gemm:.0%} "
            f"of this process's fp32 GEMM rate** ({gemm:.0f} GFLOP/s, a 1024 x 1024 x 1024 "
            f"product on 1 thread, the faster of torch.mm and the oneDNN route); the products "
            f"alone run at {products:.0f} GFLOP/s ({products / gemm:.0%}). Elementwise work "
            f"(softmax, GELU, layer norms) is not counted as FLOPs."]


def main() -> int:
    """Measure and print the markdown report."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fusion-dim", type=int, default=1024)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--manifest", default=None)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--out", default=None,
                    help="result file (default: results/fused_step_<fusion_dim>.md)")
    args = ap.parse_args()
    from _measure import child_json, machine_info, run_process, write_result

    with tempfile.TemporaryDirectory(prefix="fused-step-") as tmp:
        manifest = args.manifest
        if manifest is None:
            manifest = str(Path(tmp) / "manifest.parquet")
            m = run_process([sys.executable, str(HERE / "probes_bench.py"), "--child",
                             "manifest", manifest, "1", "1208", "1024", "768"], cwd=REPO)
            child_json(m, "manifest")
        res = measure(manifest, args.fusion_dim, args.epochs)
    text = render(res, machine_info(), args.top)
    out = args.out or HERE / "results" / f"fused_step_{args.fusion_dim}.md"
    write_result(out, text, "fused_step_split.py")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
