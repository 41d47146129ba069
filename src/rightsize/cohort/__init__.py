"""Cohort library: manifest build and validation. No DVC knowledge.

Public API (imported lazily, so ``import rightsize.cohort`` stays cheap):
:class:`CohortConfig`, :func:`build_manifest`, :func:`validate_manifest`,
:func:`load_arrays`, :class:`CohortArrays`.
"""

from __future__ import annotations

from rightsize import lazy_exports

_EXPORTS = {
    "CohortArrays": "rightsize.cohort.arrays",
    "load_arrays": "rightsize.cohort.load_manifest",
    "CohortConfig": "rightsize.cohort.config",
    "build_manifest": "rightsize.cohort.build",
    "validate_manifest": "rightsize.cohort.validate",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
