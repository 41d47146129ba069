"""Cohort library: manifest build and validation. No DVC knowledge.

Public API (imported lazily, so ``import rightsize.cohort`` stays cheap):
:class:`CohortConfig`, :func:`build_manifest`, :func:`validate_manifest`,
:func:`load_arrays`, :class:`CohortArrays`.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CohortArrays": "rightsize.cohort.arrays",
    "load_arrays": "rightsize.cohort.arrays",
    "CohortConfig": "rightsize.cohort.config",
    "build_manifest": "rightsize.cohort.build",
    "validate_manifest": "rightsize.cohort.validate",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
