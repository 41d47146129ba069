"""The dtype the encoders compute in, chosen once for the bench and for ``extract``.

``auto`` computes in bfloat16 where the hardware has bf16 matrix units — a CUDA GPU, or a
CPU with AMX (``amx_bf16``) — and in float32 elsewhere. A CPU with AVX512-BF16 but no AMX
gets float32: there bf16 autocast ran HuBERT-ECG base slower than float32 (1,000 records
168-173 s against 112 s on an Intel Xeon VM without AMX; 2.0x faster with AMX), and bf16 is
emulated where neither exists. ``float32`` and ``bfloat16`` force
one. bf16 runs under ``torch.autocast`` (weights stay float32; matrix products in bf16,
norms and softmax in float32): the same context in the bench's timing, its worker timing and
``extract``'s forwards, so the ask predicts the dtype the run computes in. Stored states are
cast to the storage dtype (``extract.dtype``) either way.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

CHOICES = ("auto", "float32", "bfloat16")
CPU_BF16_FLAGS = ("amx_bf16",)        # bf16 matrix units that beat float32 (module doc)


@dataclass(frozen=True)
class ComputeDtype:
    """A resolved compute dtype: ``dtype`` (float32 | bfloat16), what was asked, and why."""

    dtype: str
    requested: str
    why: str

    def as_dict(self) -> dict[str, str]:
        return {"dtype": self.dtype, "requested": self.requested, "why": self.why}


def resolve(requested: str, device: str, flags: frozenset[str] | None = None) -> ComputeDtype:
    """``requested`` (one of :data:`CHOICES`) on ``device`` as a concrete dtype.

    ``flags``: the CPU's instruction-set flags (default: this machine's ``/proc/cpuinfo``).
    """
    if requested not in CHOICES:
        raise ValueError(f"compute dtype {requested!r}: expected one of {', '.join(CHOICES)}")
    if requested != "auto":
        return ComputeDtype(requested, requested, "set in the params")
    if device.startswith("cuda"):
        return ComputeDtype("bfloat16", requested, "a CUDA GPU: bf16 tensor cores")
    if flags is None:
        from rightsize.measure import cpu_flags

        flags = cpu_flags()
    have = [f for f in CPU_BF16_FLAGS if f in flags]
    if have:
        return ComputeDtype("bfloat16", requested, f"the CPU has {' and '.join(have)}")
    if "avx512_bf16" in flags:
        return ComputeDtype("float32", requested,
                            "the CPU has avx512_bf16 but no AMX: bf16 autocast ran slower "
                            "than float32 on such a CPU")
    return ComputeDtype("float32", requested, "the CPU has no bf16 units: bf16 would be "
                        "emulated")


def autocast(dtype: str, device: Any) -> Any:
    """The forward's context for a resolved ``dtype``: bf16 autocast, or nothing (float32)."""
    if dtype == "float32":
        return contextlib.nullcontext()
    import torch

    device_type = str(device).split(":")[0]
    return torch.autocast(device_type, dtype=getattr(torch, dtype))


def difference(model: Any, batch: Any, layers: tuple[int, ...], device: Any,
               dtype: str = "bfloat16") -> dict[str, Any]:
    """The same batch in float32 and in ``dtype``: per hidden state in ``layers`` the largest
    absolute difference and the RMS difference relative to the float32 RMS."""
    import torch

    with torch.inference_mode():
        ref = model(batch, output_hidden_states=True).hidden_states
        with autocast(dtype, device):
            low = model(batch, output_hidden_states=True).hidden_states
    out: dict[str, Any] = {"inputs": int(batch.shape[0]), "dtype": dtype}
    for k in layers:
        a, b = ref[k].float(), low[k].float()
        diff = a - b
        out[f"layer_{k}"] = {
            "max_abs": float(diff.abs().max()),
            "rel_rms": float(diff.pow(2).mean().sqrt() / a.pow(2).mean().sqrt())}
    return out


def difference_text(check: dict[str, Any] | str | None,
                    layers: tuple[int, ...] | None = None) -> str:
    """One line: the bf16 vs float32 difference of ``layers`` (default: every one measured),
    or why there is none."""
    if not isinstance(check, dict):
        return str(check) if check else "not measured"
    keys = [k for k in check if k.startswith("layer_")
            and (layers is None or int(k.split("_")[1]) in layers)]
    parts = [f"{k.replace('layer_', 'hidden state ')} max |diff| {check[k]['max_abs']:.3g}, "
             f"relative RMS {check[k]['rel_rms']:.2%}" for k in keys]
    return (f"{check.get('dtype', 'bfloat16')} vs float32 on the first "
            f"{check.get('inputs', '?')} inputs: " + "; ".join(parts))
