"""Small JSON files kept per user and machine: what a process measured or counted once, for
every later process to read (``$XDG_CACHE_HOME`` or ``~/.cache``, folder ``rightsize/``).

A file that cannot be read is no file; a folder that cannot be written keeps the value in the
writing process only. Files are written whole (temp + rename)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def cache_path(name: str) -> Path:
    """Where the cache file ``name`` is kept."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "rightsize" / name


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or None (absent, unreadable, not an object)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def write_json(path: Path, doc: dict[str, Any]) -> None:
    """Write ``doc`` to ``path`` atomically; an OSError leaves nothing behind."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:                    # its folder is not there, or not a folder
            pass
