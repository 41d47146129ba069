"""The machine a measurement depends on: a fingerprint, its id, and the machine in words.

:func:`host` reads what a timing, rate or memory peak of this project depends on: the CPU
(model, family/model/stepping, the instruction sets the kernels dispatch on), its logical and
usable cores and any cgroup CPU quota, the memory, NVIDIA GPUs and their driver, the torch,
numpy and Python builds, numpy's BLAS build, and the environment variables that pick kernels
or thread counts (:data:`rightsize.measure.NUMERIC_ENV`). Nothing in it changes from one run
to the next on the same machine (no clock, load, free space or frequency), so the ``machine``
stage can run every time and leave the stages downstream alone until the host changes.
:func:`disk` is the filesystem and device under a path (what a disk rate depends on).

Each measured JSON carries :func:`stamp` (``{"id", "words"}``) under ``"machine"``; a
reader says where a figure came from with :func:`machine_phrase`: "this machine (...)" when
the stamp's id is this host's, "... (not this machine)" otherwise.

``RIGHTSIZE_MACHINE_TEST_SALT`` exists for tests only (a pipeline test simulates a new host
with it): when set, its value joins the fingerprint, so the id changes. Never set it for a
real measurement.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
from pathlib import Path
from typing import Any

from rightsize import blas_kernel
from rightsize.measure import ISA_FLAGS, NUMERIC_ENV, cpu_flags, cpu_model

TEST_SALT = "RIGHTSIZE_MACHINE_TEST_SALT"
MACHINE_ISA = (*ISA_FLAGS, "amx_int8")
_CPU_KEYS = {"vendor_id": "vendor", "cpu family": "family", "model": "model",
             "stepping": "stepping", "cpu cores": "cores_per_socket", "siblings": "siblings"}


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _cpu() -> dict[str, Any]:
    """The first CPU of ``/proc/cpuinfo``: model, vendor, family/model/stepping, ISA flags."""
    out: dict[str, Any] = {"model_name": cpu_model(), "machine": platform.machine()}
    flags: set[str] = set()
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        key, _, value = (s.strip() for s in line.partition(":"))
        if not key:                      # the blank line after the first CPU
            break
        if key in _CPU_KEYS:
            out[_CPU_KEYS[key]] = value
        elif key == "flags":
            flags = set(value.split())
    out["isa"] = {f: f in flags for f in MACHINE_ISA}
    return out


def _cpu_quota() -> float | None:
    """Cores' worth of CPU time the cgroup allows (``cpu.max`` / ``cfs_quota_us``), or None."""
    text = _read("/sys/fs/cgroup/cpu.max")
    if text and text.split()[0] != "max":
        quota, period = text.split()[:2]
        return round(int(quota) / int(period), 2)
    quota = _read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
    period = _read("/sys/fs/cgroup/cpu/cpu.cfs_period_us")
    if quota and period and int(quota) > 0:
        return round(int(quota) / int(period), 2)
    return None


def _memory_gib() -> float | None:
    """``MemTotal`` in GiB, one decimal (None off Linux)."""
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return round(int(line.split()[1]) / 2**20, 1)
    return None


def _gpus() -> dict[str, Any]:
    """NVIDIA GPUs and driver from ``/proc/driver/nvidia`` (no torch, no subprocess)."""
    root = Path("/proc/driver/nvidia")
    models = []
    if (root / "gpus").is_dir():
        for info in sorted((root / "gpus").glob("*/information")):
            line = next((x for x in (_read(info) or "").splitlines()
                         if x.startswith("Model:")), "Model: unknown")
            models.append(line.split(":", 1)[1].strip())
    version = re.search(r"Kernel Module\s+(\S+)", _read(root / "version") or "")
    return {"nvidia": models, "driver": version.group(1) if version else None,
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", "unset")}


def _version(dist: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"


def _blas() -> str:
    """numpy's BLAS as built (name, version, build configuration); the kernel it picks at
    load follows from the CPU flags and ``OPENBLAS_CORETYPE``, both in the fingerprint."""
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is a dependency
        return "numpy absent"
    blas = numpy.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    config = " ".join(str(blas.get("openblas configuration", "")).split())
    return " ".join(x for x in (str(blas.get("name", "unknown")), str(blas.get("version", "")),
                                config) if x)


def _numeric_env() -> dict[str, str]:
    """:data:`NUMERIC_ENV` as every ``rightsize`` command runs with it: the CLI pins
    ``OPENBLAS_CORETYPE`` (:func:`rightsize.blas_kernel.pin_openblas_kernel`) unless opted
    out, so the value is the pinned one in any process, whether or not it pinned."""
    env = {k: os.environ.get(k, "unset") for k in NUMERIC_ENV}
    if (env[blas_kernel.OPT_OUT] != "0" and platform.machine().lower() in ("x86_64", "amd64")
            and blas_kernel.REQUIRED_FLAGS <= cpu_flags()):
        env["OPENBLAS_CORETYPE"] = blas_kernel.PINNED
    return env


@functools.lru_cache(maxsize=1)
def host() -> dict[str, Any]:
    """This host's fingerprint (see the module docstring); the same dict on every call."""
    out: dict[str, Any] = {
        "cpu": _cpu(),
        "logical_cores": os.cpu_count() or 0,
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
        else os.cpu_count() or 0,
        "cpu_quota_cores": _cpu_quota(),
        "memory_gib": _memory_gib(),
        "gpu": _gpus(),
        "os": platform.system(),
        "python": platform.python_version(),
        "torch": _version("torch"),
        "numpy": _version("numpy"),
        "blas": _blas(),
        "env": _numeric_env(),
    }
    if os.environ.get(TEST_SALT):
        out["test_salt"] = os.environ[TEST_SALT]
    return out


def machine_id(fingerprint: dict[str, Any]) -> str:
    """12 hex digits of the SHA-256 of the fingerprint's canonical JSON."""
    text = json.dumps(fingerprint, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _short_cpu(name: str) -> str:
    """``Intel(R) Xeon(R) Processor`` -> ``Intel Xeon``."""
    name = re.sub(r"\((R|TM|tm|r)\)", "", name)
    name = re.sub(r"\b(CPU|Processor)\b", "", name).replace("@", " @ ")
    return " ".join(name.split()) or "unknown CPU"


def machine_words(fingerprint: dict[str, Any]) -> str:
    """``Intel Xeon (AVX-512, AMX), 2 cores, 23.5 GiB, no GPU``."""
    cpu = fingerprint["cpu"]
    isa = cpu.get("isa", {})
    tiers = [w for w, f in (("AVX-512", "avx512f"), ("AMX", "amx_tile")) if isa.get(f)]
    if not tiers and isa.get("avx2"):
        tiers = ["AVX2"]
    cores = fingerprint.get("usable_cores") or fingerprint.get("logical_cores")
    words = [f"{_short_cpu(cpu.get('model_name', ''))}"
             f"{' (' + ', '.join(tiers) + ')' if tiers else ''}",
             f"{cores} core{'s' if cores != 1 else ''}"]
    if fingerprint.get("cpu_quota_cores") is not None:
        words.append(f"a quota of {fingerprint['cpu_quota_cores']:g} cores")
    if fingerprint.get("memory_gib") is not None:
        words.append(f"{fingerprint['memory_gib']:g} GiB")
    gpus = fingerprint.get("gpu", {}).get("nvidia") or []
    words.append(", ".join(f"{gpus.count(g)}x {g}" for g in dict.fromkeys(gpus)) or "no GPU")
    if fingerprint.get("test_salt"):
        words.append(f"test host {fingerprint['test_salt']}")
    return ", ".join(words)


def stamp(fingerprint: dict[str, Any] | None = None) -> dict[str, str]:
    """``{"id": ..., "words": ...}`` of ``fingerprint`` (default: this host): what a measured
    JSON carries under ``"machine"``."""
    fp = host() if fingerprint is None else fingerprint
    return {"id": machine_id(fp), "words": machine_words(fp)}


def joined_stamp(stamps: list[Any]) -> dict[str, str] | None:
    """One stamp for figures joined from several files: theirs when all share it, else an
    id that is no machine's and the machines' words (None when any file has no stamp)."""
    if not stamps or any(not isinstance(s, dict) or "id" not in s for s in stamps):
        return None
    ids = dict.fromkeys(s["id"] for s in stamps)
    if len(ids) == 1:
        return {"id": stamps[0]["id"], "words": stamps[0]["words"]}
    words = "; ".join(dict.fromkeys(s["words"] for s in stamps))
    return {"id": "several:" + ",".join(ids), "words": f"several machines ({words})"}


def same_machine(measured: Any) -> bool | None:
    """True when ``measured`` (a :func:`stamp`, or a JSON holding one under ``"machine"``) is
    this host's; False when it is another's; None when there is no stamp to tell."""
    if isinstance(measured, dict) and isinstance(measured.get("machine"), dict):
        measured = measured["machine"]
    if not isinstance(measured, dict) or not isinstance(measured.get("id"), str):
        return None
    return measured["id"] == stamp()["id"]


def machine_phrase(measured: Any) -> str:
    """Where a figure was measured, for a sentence: ``this machine (Intel Xeon ..., 2 cores,
    ...)``, ``AMD EPYC ..., 2 cores, ... (not this machine)``, or ``an unrecorded machine``."""
    same = same_machine(measured)
    if same is None:
        return "an unrecorded machine (no machine stamp: re-run it here to measure)"
    words = (measured.get("machine", measured) if isinstance(measured, dict) else {})["words"]
    return f"this machine ({words})" if same else f"{words} (not this machine)"


def _mount(path: Path) -> tuple[str, str, str]:
    """(mount point, fstype, source) of the mount holding ``path`` (``/proc/self/mountinfo``)."""
    best = ("", "unknown", "unknown")
    for line in (_read("/proc/self/mountinfo") or "").splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 2:
            continue
        point = fields[4].replace("\\040", " ")
        inside = str(path) == point or str(path).startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best[0]):
            best = (point, tail[0], tail[1])
    return best


def disk(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What a disk rate at ``path`` depends on: filesystem type, the device's name, whether
    it spins, and its model where the kernel says (no free space: that changes)."""
    real = Path(os.path.realpath(path))
    while not real.exists() and real != real.parent:
        real = real.parent
    _, fstype, source = _mount(real)
    name = os.path.basename(source) if source.startswith("/dev/") else source
    out: dict[str, Any] = {"path": str(path), "fstype": fstype, "device": name}
    block = Path("/sys/class/block") / name
    if block.exists():
        queue = block / "queue" if (block / "queue").exists() else block.parent / "queue"
        rotational = (_read(queue / "rotational") or "").strip()
        out["rotational"] = rotational == "1" if rotational else None
        out["model"] = " ".join((_read(block / "device" / "model") or "").split()) or None
    return out
