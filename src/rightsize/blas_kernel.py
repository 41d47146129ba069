"""One OpenBLAS kernel set on every x86-64 machine, so numpy fits give the same bits.

numpy (and through it the ECG probe's ridge and logistic fits, :mod:`rightsize.probes.models.glm`)
calls OpenBLAS, which picks its kernels per CPU when the library loads: Haswell
kernels on an AMD Zen, SkylakeX on an AVX-512 Xeon, whatever ``OPENBLAS_CORETYPE`` names
when a machine sets it. Different kernels round differently, so the same fit differs in its
last bits between machines (measured here: the ECG probe's weights under
``OPENBLAS_CORETYPE=Sandybridge`` differ from the default's). :func:`pin_openblas_kernel`
sets ``OPENBLAS_CORETYPE`` to :data:`PINNED` before numpy loads, on x86-64 CPUs that have
the instructions those kernels use (AVX2 and FMA); the hardware stamp records the variable
and the kernel OpenBLAS reports. ``RIGHTSIZE_BLAS_PIN=0`` leaves the choice to OpenBLAS.
Thread counts are a separate matter: the fits run under ``threadpool_limits(train.threads)``.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import MutableMapping

from rightsize.measure import cpu_flags

PINNED = "Haswell"                       # AVX2 + FMA kernels
REQUIRED_FLAGS = frozenset({"avx2", "fma"})
OPT_OUT = "RIGHTSIZE_BLAS_PIN"


def pin_openblas_kernel(environ: MutableMapping[str, str] | None = None) -> str | None:
    """Set ``OPENBLAS_CORETYPE`` to :data:`PINNED` for this process and its children.

    Returns the kernel set, or None when nothing was pinned: numpy already loaded (too
    late: OpenBLAS has chosen), not x86-64, a CPU without AVX2/FMA, or ``RIGHTSIZE_BLAS_PIN=0``.
    """
    env = os.environ if environ is None else environ
    if env.get(OPT_OUT, "1") == "0" or "numpy" in sys.modules:
        return None
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    if not REQUIRED_FLAGS <= cpu_flags():
        return None
    env["OPENBLAS_CORETYPE"] = PINNED
    return PINNED
