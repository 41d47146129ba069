"""The one comma-list argument parser of the verbs: ``"1,5,12"`` -> ``(1, 5, 12)``.

Blank items are ignored (``"1,,2"`` is ``(1, 2)``; ``""`` is ``()``): callers that need
at least (or exactly) one item say so in their own words. Errors are one line naming
the flag or key.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from rightsize.errors import InputError


def int_list(text: str, name: str, *, minimum: int | None = None,
             unique: bool = False) -> tuple[int, ...]:
    """Integers of a comma-separated ``text``; ``InputError`` naming ``name`` when one is not.

    ``minimum``: every item must be at least this; ``unique``: no item may repeat.
    """
    what = "integers" if minimum is None else f"integers >= {minimum}"
    try:
        items = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise InputError(f"{name}: expected comma-separated {what}, got {text!r}") from None
    if minimum is not None and any(v < minimum for v in items):
        raise InputError(f"{name}: expected comma-separated {what}, got {text!r}")
    if unique and len(set(items)) != len(items):
        raise InputError(f"{name}: duplicate values in {text!r}")
    return items


def int_list_type(minimum: int | None = None) -> Callable[[str], tuple[int, ...]]:
    """:func:`int_list` as an argparse ``type=``: a bad list is argparse's usage error (exit 2)."""
    def parse(text: str) -> tuple[int, ...]:
        try:
            return int_list(text, "list", minimum=minimum)
        except InputError as exc:
            raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[1]) from None

    return parse
