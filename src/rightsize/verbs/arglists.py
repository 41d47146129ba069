"""The verbs' one argument-parsing module: comma lists (``"1,5,12"`` -> ``(1, 5, 12)``) and
the number validators argparse calls (``type=``).

Blank items are ignored (``"1,,2"`` is ``(1, 2)``; ``""`` is ``()``): callers that need
at least (or exactly) one item say so in their own words. Errors are one line naming
the flag or key.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
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


def pos_int(text: str) -> int:
    """argparse ``type=``: an integer > 0 (else argparse's usage error, exit 2)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def nonneg_int(text: str) -> int:
    """argparse ``type=``: an integer >= 0 (else argparse's usage error, exit 2)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return v


def pos_float(text: str) -> float:
    """argparse ``type=``: a finite number > 0 (else argparse's usage error, exit 2)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not v > 0 or not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return v


class ExistingPath(argparse.Action):
    """argparse ``action=`` for a path the verb reads: one that does not exist is an
    ``InputError`` naming it (exit 2), raised while parsing, so before any missing flag.

    Only existence is checked (``os.path.lexists``: a dangling link is the verb's to judge);
    what the path must be (a folder, a readable file) stays with the verb's own checks.
    """

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        if not os.path.lexists(str(values)):
            raise InputError(f"{values}: no such file or directory")
        setattr(namespace, self.dest, values)


#: The params file a verb reads when ``--params`` is left out.
PARAMS_FILE = "params.yaml"
WHEN_PRESENT = f"default: {PARAMS_FILE} when present"


def add_params_when_present(p: argparse._ActionsContainer, text: str, *,
                            only_with: str = "") -> None:
    """``--params YAML`` for a verb that also runs without params: left out, it is
    :data:`PARAMS_FILE` when the working directory has one, else none (``text`` says what is
    read). ``only_with``: a dest (e.g. ``run``) without which a left-out ``--params`` stays
    none. The CLI calls ``args.fill_params(args)`` once parsed, before checking the file."""
    p.add_argument("--params", metavar="YAML", default=None, help=f"{text} ({WHEN_PRESENT}"
                   + (f" and --{only_with} is given" if only_with else "") + ")")
    p.set_defaults(fill_params=functools.partial(_fill_params, only_with=only_with))


def _fill_params(args: argparse.Namespace, only_with: str) -> None:
    """Resolve a left-out ``--params`` in place (see :func:`add_params_when_present`)."""
    if args.params is not None or (only_with and getattr(args, only_with, None) is None):
        return
    if os.path.isfile(PARAMS_FILE):
        args.params = PARAMS_FILE
