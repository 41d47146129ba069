"""Measure one encoder on one device: shapes, bytes, FLOPs, records/s and peak memory.

1. **Shapes and FLOPs** — one forward of one model input on the ``meta`` device (no memory,
   no arithmetic) under ``torch.utils.flop_counter.FlopCounterMode``: the hidden states'
   real shapes give tokens per layer; the counter gives FLOPs (total and the transformer
   layers' share). Exact for any size, even a ViT-g nothing here could run.
2. **Throughput** — random-weight model on the device; for each batch size (ascending):
   ``warmup`` untimed forwards, then ``repeats`` timed ones (median, min, max) and the
   step's peak memory. A batch that runs out of memory is recorded as the limit and the
   larger ones are skipped. On CPU with ``cpu_timing_layers`` the model is truncated to
   that depth at the full input shape and the time is scaled by the FLOP ratio of the full
   model to the truncated one (labelled ``extrapolated``).
"""

from __future__ import annotations

import logging
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

from rightsize.encoders.compute_dtype import autocast
from rightsize.encoders.models import (
    PATCH,
    TUBELET,
    EncoderSpec,
    VideoGeometry,
    analytic_flops,
    build_model,
    example_input,
    expected_tokens,
    forward_hidden_states,
    parameter_count,
)
from rightsize.sizing import memory
from rightsize.sizing.units import DTYPE_BYTES

log = logging.getLogger(__name__)

FLOPS_NOTE = ("torch.utils.flop_counter over one forward on the meta device: matmuls, "
              "convolutions and attention products, a multiply-add = 2 FLOPs; elementwise "
              "ops (norms, activations, softmax) not counted")
_LAYER_MODULE = re.compile(r"\.(?:encoder\.layers|encoder\.layer)\.\d+$")


def geometry_dict(spec: EncoderSpec) -> dict[str, Any]:
    """The input geometry as a bench file records it (a GPU file must match it to be used)."""
    out: dict[str, Any] = dict(vars(spec.geometry))
    if isinstance(spec.geometry, VideoGeometry):
        out.update(patch=PATCH, tubelet=TUBELET)
    return out


def count_shapes_and_flops(spec: EncoderSpec, layers: int | None = None) -> dict[str, Any]:
    """Tokens per hidden state and FLOPs of one model input, from a meta-device forward."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    model = build_model(spec, "meta", layers=layers)
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        states = forward_hidden_states(model, spec, example_input(spec, 1, "meta"))
    per_module = counter.get_flop_counts()
    layer_flops = sum(sum(ops.values()) for name, ops in per_module.items()
                      if _LAYER_MODULE.search(name))
    widths = {int(s.shape[-1]) for s in states}
    return {
        "tokens_per_state": [int(s.shape[1]) for s in states],
        "hidden_size": widths.pop() if len(widths) == 1 else sorted(widths),
        "flops": int(counter.get_total_flops()),
        "layer_flops": int(layer_flops),
        "params": parameter_count(model, spec),
    }


def time_batches(spec: EncoderSpec, device: str, batch_sizes: tuple[int, ...], repeats: int,
                 warmup: int, compute_dtype: str, layers: int | None = None,
                 scale: float = 1.0, on_step: Callable[[str], None] | None = None
                 ) -> dict[str, dict[str, Any]]:
    """Per batch size: median/min/max seconds, records/s (scaled by ``scale``), peak memory.

    ``scale`` multiplies measured seconds (the FLOP ratio when timing a truncated model).
    ``compute_dtype`` is resolved (float32, bfloat16 under autocast, float16 weights cast).
    An allocation failure records ``status: "out_of_memory"`` and skips larger batches.
    """
    import torch

    model = build_model(spec, device, layers=layers)
    if compute_dtype == "float16":               # float16: the weights cast (GPU only)
        model = model.to(torch.float16)
    dtype = torch.float16 if compute_dtype == "float16" else torch.float32   # the inputs'

    def context() -> Any:                        # bfloat16: autocast, as extract runs it
        return autocast("bfloat16" if compute_dtype == "bfloat16" else "float32", device)
    out: dict[str, dict[str, Any]] = {}
    limit: int | None = None
    for batch in sorted(batch_sizes):
        key = f"batch_{batch}"
        if limit is not None:
            out[key] = {"batch": batch, "status": "skipped",
                        "note": f"larger than the out-of-memory batch {limit}"}
            continue
        if on_step:
            on_step(f"batch {batch}")
        try:
            out[key] = _time_one(model, spec, device, batch, repeats, warmup, dtype, scale,
                                 context)
        except Exception as exc:  # noqa: BLE001 - only allocation failures are recorded
            if not memory.is_out_of_memory(exc):
                raise
            memory.free_after_oom(device)
            limit = batch
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            out[key] = {"batch": batch, "status": "out_of_memory",
                        "error": f"{type(exc).__name__}: {first}"}
            log.info("%s %s: batch %d ran out of memory", spec.family, spec.size, batch)
    return out


def _time_one(model: Any, spec: EncoderSpec, device: str, batch: int, repeats: int,
              warmup: int, dtype: Any, scale: float, context: Any) -> dict[str, Any]:
    import torch

    peak_kind = memory.reset_peak(device)
    x = example_input(spec, batch, device, dtype)
    cuda = device.startswith("cuda")
    seconds = []
    with torch.inference_mode():
        for i in range(warmup + repeats):
            if cuda:
                torch.cuda.synchronize()
            start = time.perf_counter()
            with context():
                forward_hidden_states(model, spec, x)
            if cuda:
                torch.cuda.synchronize()
            if i >= warmup:
                seconds.append((time.perf_counter() - start) * scale)
    median = statistics.median(seconds)
    return {
        "batch": batch, "status": "ok", "repeats": repeats,
        "median_s": median, "min_s": min(seconds), "max_s": max(seconds),
        "spread_pct": 100.0 * (max(seconds) - min(seconds)) / median,
        "records_per_s": batch / spec.inputs_per_record / median,
        "records_per_s_min": batch / spec.inputs_per_record / max(seconds),
        "records_per_s_max": batch / spec.inputs_per_record / min(seconds),
        "peak_mem_mb": memory.peak_mb(device),
        "peak_mem_kind": peak_kind,
    }


def bench_encoder(spec: EncoderSpec, device: str, batch_sizes: tuple[int, ...], repeats: int,
                  warmup: int, compute_dtype: str = "float32",
                  cpu_timing_layers: int | None = None,
                  on_step: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Everything measured about ``spec`` on ``device`` as a JSON-ready dict (per record)."""
    n_in = spec.inputs_per_record
    if on_step:
        on_step("shapes and FLOPs (meta device)")
    full = count_shapes_and_flops(spec)
    tokens = full["tokens_per_state"]
    per_input = tokens[-1]
    hidden = full["hidden_size"]
    analytic = analytic_flops(spec)
    layers_timed = spec.arch.layers
    scale = 1.0
    if device == "cpu" and cpu_timing_layers is not None and cpu_timing_layers < spec.arch.layers:
        layers_timed = cpu_timing_layers
        scale = full["flops"] / count_shapes_and_flops(spec, layers=layers_timed)["flops"]
    throughput = time_batches(spec, device, batch_sizes, repeats, warmup, compute_dtype,
                              layers=None if layers_timed == spec.arch.layers else layers_timed,
                              scale=scale, on_step=on_step)
    ok = [r for r in throughput.values() if r["status"] == "ok"]
    best = max(ok, key=lambda r: r["records_per_s"]) if ok else None
    oom = [r["batch"] for r in throughput.values() if r["status"] == "out_of_memory"]
    per_record_tokens = per_input * n_in
    states = len(tokens)
    bytes_per_record = {
        dt: {"one_layer": per_record_tokens * hidden * width,
             "all_layers": per_record_tokens * hidden * states * width,
             "pooled_one_layer": n_in * hidden * width}
        for dt, width in DTYPE_BYTES.items()}
    return {
        "family": spec.family,
        "size": spec.size,
        "architecture": {"hidden": spec.arch.hidden, "layers": spec.arch.layers,
                         "heads": spec.arch.heads, "ffn": spec.arch.ffn,
                         "params": full["params"]},
        "geometry": geometry_dict(spec),
        "input_shape": "x".join(str(d) for d in spec.input_shape),
        "inputs_per_record": n_in,
        "tokens_per_input": per_input,
        "tokens_per_input_arithmetic": expected_tokens(spec),
        "tokens_per_record": per_record_tokens,
        "hidden_size": hidden,
        "hidden_states": states,
        "tokens_per_layer": {str(i): t for i, t in enumerate(tokens)},
        "bytes_per_record": bytes_per_record,
        "flops_per_input": full["flops"],
        "flops_per_input_layers": full["layer_flops"],
        "flops_per_input_analytic": analytic["total"],
        "flops_per_input_layers_analytic": analytic["transformer_layers"],
        "flops_per_record": full["flops"] * n_in,
        "flops_note": FLOPS_NOTE,
        "device": device,
        "compute_dtype": compute_dtype,
        "timing": {
            "layers_timed": layers_timed, "layers": spec.arch.layers,
            "extrapolated": layers_timed != spec.arch.layers, "flop_scale": scale,
            "note": ("measured on the full model" if scale == 1.0 else
                     f"measured on a {layers_timed}-of-{spec.arch.layers}-layer model at the "
                     f"full input shape, times scaled by the FLOP ratio {scale:.2f}; peak "
                     f"memory is the truncated model's")},
        "throughput": throughput,
        "best_batch": best["batch"] if best else None,
        "records_per_s": best["records_per_s"] if best else None,
        "records_per_s_min": best["records_per_s_min"] if best else None,
        "records_per_s_max": best["records_per_s_max"] if best else None,
        "oom_batch": oom[0] if oom else None,
        "max_batch_ok": max((r["batch"] for r in ok), default=None),
    }
