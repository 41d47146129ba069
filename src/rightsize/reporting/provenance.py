"""Which machine a metrics file's figures were measured on, said beside them in the report.

A measuring stage stamps its JSON with :func:`rightsize.machine.stamp` (``"machine"``); the
report is built here and now, so a file whose stamp is another host's (or that has none)
gets a sentence saying where its figures come from instead of passing them off as this
machine's.
"""

from __future__ import annotations

from typing import Any

from rightsize.machine import machine_phrase, same_machine, stamp


def measured_where(data: Any) -> str:
    """``this machine (Intel Xeon ..., 2 cores, ...)`` or ``AMD EPYC ... (not this
    machine)``: where ``data``'s figures were measured."""
    return machine_phrase(data)


def elsewhere_words(data: Any) -> str:
    """`` (measured on AMD EPYC ..., not this machine)`` after a hardware phrase, or
    `` (no machine stamp: maybe not this machine)``; empty when measured here."""
    same = same_machine(data)
    if same:
        return ""
    if same is None:
        return " (no machine stamp: maybe not this machine)"
    return f" (measured on {machine_phrase(data)})"


def caveat(data: Any, what: str) -> str:
    """A sentence for ``what`` (e.g. "These timings") when ``data`` was measured on another
    machine or carries no machine stamp; empty when it was measured on this one."""
    same = same_machine(data)
    if same:
        return ""
    here = stamp()["words"]
    if same is None:
        return (f"{what} carry no machine stamp (written before it existed): they may come "
                f"from another machine than this one ({here}); `dvc repro` re-measures them.")
    return (f"{what} were measured on {machine_phrase(data)}, not on this machine ({here}); "
            f"`dvc repro` re-measures them here.")
