"""rightsize: measure what ML work costs and version the answer with DVC.

The Python API a notebook needs, imported lazily (``import rightsize`` loads no numpy,
pyarrow, pandas or torch; the ``rightsize`` command's verbs never pay for it):

>>> import rightsize
>>> table = rightsize.read_scalars("runs/")          # a folder of TensorBoard event files
>>> df = table.to_pandas()                           # run, tag, step, wall_time, value, file

:func:`read_scalars` is :func:`rightsize.telemetry.scalars.read_scalars`; its
:class:`~rightsize.telemetry.table.ScalarTable` also has ``to_arrow()``, ``files`` (one
entry per event file) and ``problems`` (every damaged byte range met).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "read_scalars": "rightsize.telemetry.scalars",
    "ScalarTable": "rightsize.telemetry.table",
}

__all__ = sorted(_EXPORTS)


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A package's ``__getattr__`` (PEP 562) importing ``exports[name]``'s module on first use."""
    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(importlib.import_module(exports[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


__getattr__ = lazy_exports(__name__, _EXPORTS)
