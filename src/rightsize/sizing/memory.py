"""Peak memory of one measured step, on CPU or CUDA, and what counts as running out of it.

CPU: Linux lets a process reset its peak-RSS mark (``VmHWM``) by writing ``5`` to
``/proc/self/clear_refs``; the peak of a step is then ``VmHWM`` after it (the whole
process: weights, inputs and activations). Where that is unavailable the value is the
process peak so far (a bound, not per step) and :func:`reset_peak` says so.
CUDA: ``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

_OOM_TEXT = ("out of memory", "can't allocate memory", "not enough memory",
             "failed to allocate")


def reset_peak(device: str) -> str:
    """Reset the peak-memory mark for ``device``; return what the next :func:`peak_mb` means."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        return "CUDA max_memory_allocated during the step"
    from rightsize.measure import reset_memory_hwm

    if reset_memory_hwm():
        return "process peak RSS during the step (VmHWM reset before it)"
    return "process peak RSS so far (peak mark could not be reset: not per step)"


def peak_mb(device: str) -> float:
    """Peak memory in MiB since :func:`reset_peak` (see its return value for the meaning)."""
    if device.startswith("cuda"):
        import torch

        return torch.cuda.max_memory_allocated() / 2**20
    from rightsize.measure import memory_hwm_mb

    return memory_hwm_mb()


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation failure (CUDA OOM, or CPU allocator refusing)."""
    name = type(exc).__name__
    if name == "OutOfMemoryError":
        return True
    if isinstance(exc, MemoryError):
        return True
    return isinstance(exc, RuntimeError) and any(t in str(exc).lower() for t in _OOM_TEXT)


def free_after_oom(device: str) -> None:
    """Give cached blocks back after an allocation failure so smaller work can go on."""
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def device_detail(device: str) -> dict[str, Any]:
    """GPU name and memory for a CUDA device (``{}`` on CPU): added beside the hardware stamp."""
    if not device.startswith("cuda"):
        return {}
    import torch

    props = torch.cuda.get_device_properties(torch.device(device))
    return {"gpu": props.name, "gpu_memory_gb": round(props.total_memory / 1e9, 1),
            "cuda": torch.version.cuda}
