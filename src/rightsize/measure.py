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
from dataclasses import dataclass
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


def reset_memory_hwm() -> bool:
    """Reset this process's resident high-water mark (Linux: ``5`` into
    ``/proc/self/clear_refs``), so that the next :func:`memory_hwm_mb` is the peak since now;
    False where it cannot be reset (the next reading is then the peak so far, a bound)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def memory_hwm_mb() -> float:
    """High-water mark of this process's own resident memory, MiB (``VmHWM`` on Linux).

    Unlike :func:`peak_rss_mb` it does not count what a parent held when it spawned this
    process (``ru_maxrss`` carries that over ``execve``); elsewhere it falls back to
    :func:`peak_rss_mb`.
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return peak_rss_mb()


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
    from importlib import metadata  # ~18 ms: not on the CLI's start-up path

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


# Instruction-set features the BLAS (MKL, OpenBLAS) and oneDNN kernels dispatch on.
ISA_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16",
             "amx_tile", "amx_bf16")
# Environment variables that change which kernels run or how many threads they use.
NUMERIC_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
               "MKL_NUM_THREADS", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE",
               "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ONEDNN_DEFAULT_FPMATH_MODE",
               "ATEN_CPU_CAPABILITY", "RIGHTSIZE_BLAS_PIN")


@functools.lru_cache(maxsize=1)
def _cpuinfo() -> tuple[str, frozenset[str]]:
    """``(vendor_id, flags)`` of the first CPU in ``/proc/cpuinfo`` (empty off Linux)."""
    vendor, flags = "unknown", frozenset()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                if key == "vendor_id":
                    vendor = value.strip()
                elif key == "flags":
                    flags = frozenset(value.split())
                    break
    except OSError:
        pass
    return vendor, flags


def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of the first CPU in ``/proc/cpuinfo`` (empty off Linux)."""
    return _cpuinfo()[1]


@functools.lru_cache(maxsize=1)
def _torch_libraries() -> dict[str, str]:
    """MKL and oneDNN versions from ``torch.__config__.show()`` (torch already loaded)."""
    torch = sys.modules["torch"]
    out = {"mkl": "absent", "onednn": "absent"}
    for line in torch.__config__.show().splitlines():
        if "Math Kernel Library Version" in line:
            out["mkl"] = line.split("Version", 1)[1].split()[0].split("-")[0]
        elif "MKL-DNN v" in line or "oneDNN v" in line:
            out["onednn"] = line.split(" v", 1)[1].split()[0]
    return out


def _openblas() -> str:
    """numpy's BLAS as loaded: ``"openblas 0.3.31 SkylakeX, 2 threads"`` (threadpoolctl)."""
    if "numpy" not in sys.modules:
        return "numpy not loaded"
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return "unknown (no threadpoolctl)"
    libs = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return "; ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture', '')}"
                     f", {i.get('num_threads')} threads".replace(" ,", ",")
                     for i in libs) or "none loaded"


def numerics_stamp() -> dict[str, Any]:
    """What decides the floating-point path of this process.

    ``cpu_vendor``; ``isa.<flag>`` (bool) for :data:`ISA_FLAGS`; ``torch_cpu_capability``
    (the kernel set ATen dispatches to), ``mkl`` and ``onednn`` versions (only when torch
    is already loaded: this never imports it); ``blas``: numpy's BLAS library, version, the
    kernel it picked and its threads; ``env.<VAR>`` for :data:`NUMERIC_ENV` (``"unset"``
    when not set).
    """
    vendor, flags = _cpuinfo()
    out: dict[str, Any] = {"cpu_vendor": vendor,
                           "isa": {f: f in flags for f in ISA_FLAGS}}
    torch = sys.modules.get("torch")
    if torch is not None:
        out["torch_cpu_capability"] = str(torch.backends.cpu.get_cpu_capability())
        out.update(_torch_libraries())
    else:
        out.update({"torch_cpu_capability": "torch not loaded",
                    "mkl": "torch not loaded", "onednn": "torch not loaded"})
    out["blas"] = _openblas()
    out["env"] = {k: os.environ.get(k, "unset") for k in NUMERIC_ENV}
    return out


def hardware_stamp(threads: int, device: str) -> dict[str, Any]:
    """Where a number was measured: CPU model, cores, threads used, library versions, device,
    and the numerics that decide its floating-point path (:func:`numerics_stamp`).

    Keys (stable): ``cpu``, ``cores``, ``threads``, ``torch``, ``numpy``, ``python``,
    ``platform``, ``device``, ``numerics``. Versions come from package metadata, so this
    never imports torch itself. (scikit-learn is a test oracle only: nothing that runs
    depends on its version, so the stamp leaves it out.)
    """
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count() or 0,
        "threads": int(threads),
        "torch": _version("torch"),
        "numpy": _version("numpy"),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "device": _device_name(str(device)),
        "numerics": numerics_stamp(),
    }


@dataclass(frozen=True)
class ProcessCost:
    """One finished child process: its wall-clock, peak RSS, exit code and last output."""

    wall_s: float
    peak_rss_mb: float          # the child's ru_maxrss (see :func:`run_measured`)
    rc: int
    output_tail: str            # the last lines of its stdout + stderr


def run_measured(argv: list[str], env: dict[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None) -> ProcessCost:
    """Run ``argv`` to completion: its wall-clock (monotonic, spawn to exit) and peak RSS
    (``ru_maxrss`` of ``os.wait4``, Linux and macOS).

    On Linux a child's ``ru_maxrss`` starts at the peak RSS its parent had when it was
    spawned (the address space ``execve`` replaced), so a caller that measures children
    should stay small and report its own :func:`memory_hwm_mb` as the floor of what it
    measured.
    Output goes to a temporary file (no pipe to fill up and stall the child).
    """
    import subprocess
    import tempfile

    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        tail = out.read()[-4000:].decode("utf-8", "replace")
    peak = usage.ru_maxrss / (2**20 if sys.platform == "darwin" else 1024)   # bytes / KiB
    return ProcessCost(wall, peak, proc.returncode, tail)
