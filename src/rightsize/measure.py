"""Cost measurement shared by every verb: peak RSS, phase timers, hardware/software stamp.

Small and dependency-light on purpose (standard library, plus ``psutil`` only as a
fallback): footprint, training and evaluation all stamp their metric files with it.

    with Timer() as t:
        fit(...)
    metrics = {"wall_clock_s": t.seconds, "peak_rss_mb": peak_rss_mb(),
               "hardware": hardware_stamp(threads=1, device="cpu")}
"""

from __future__ import annotations

import functools
import os
import platform
import sys
import time
from importlib import metadata
from types import TracebackType
from typing import Any


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (``ru_maxrss``).

    Linux reports KiB, macOS bytes; falls back to psutil's current RSS (a lower bound)
    where ``resource`` is unavailable (Windows).
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


class Timer:
    """Wall-clock context manager: ``with Timer() as t: ...`` then ``t.seconds``.

    Reading ``seconds`` inside the block gives the time elapsed so far.
    """

    def __init__(self) -> None:
        self._start: float | None = None
        self._stop: float | None = None

    def __enter__(self) -> Timer:
        self._start = time.perf_counter()
        self._stop = None
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop = time.perf_counter()

    @property
    def seconds(self) -> float:
        """Elapsed wall-clock seconds (0.0 before the block starts)."""
        if self._start is None:
            return 0.0
        end = self._stop if self._stop is not None else time.perf_counter()
        return end - self._start


@functools.lru_cache(maxsize=1)
def cpu_model() -> str:
    """CPU model name (``/proc/cpuinfo`` on Linux, else ``platform.processor()``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def _device_name(device: str) -> str:
    """``cpu`` or ``cuda:<name>`` when torch is already loaded and the device is CUDA."""
    if not device.startswith("cuda"):
        return device
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return device
    return f"{device}:{torch.cuda.get_device_name(torch.device(device))}"


def hardware_stamp(threads: int, device: str) -> dict[str, Any]:
    """Where a number was measured: CPU model, cores, threads used, library versions, device.

    Keys (stable): ``cpu``, ``cores``, ``threads``, ``torch``, ``sklearn``, ``numpy``,
    ``python``, ``platform``, ``device``. Versions come from package metadata, so this
    never imports torch or scikit-learn itself.
    """
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count() or 0,
        "threads": int(threads),
        "torch": _version("torch"),
        "sklearn": _version("scikit-learn"),
        "numpy": _version("numpy"),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "device": _device_name(str(device)),
    }
