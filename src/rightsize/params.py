"""Parse ``params.yaml`` blocks into frozen dataclasses, once, at the CLI edge.

Unknown keys, missing keys and values of the wrong type are :class:`ParamsError`s whose
one-line message names the dotted key (``train.epochs.fused``). Libraries never read
params files themselves: verbs call :func:`load_block` and pass the dataclass on.

Whatever block a verb reads, the whole file is checked for what no block's schema can
catch: a key written twice in one mapping (YAML would silently keep the last), a top-level
key that is no stage's block (:data:`BLOCKS`), bytes that are not UTF-8, a run name under
``telemetry.runs`` that is not :data:`RUN_NAME` (names become file names), and YAML aliases
(``*name``): a few nested aliases expand to billions of nodes (an "alias bomb"), and DVC's
``-S key=value`` edits one copy of an aliased value, so params are written out in full.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from rightsize.errors import ParamsError

C = TypeVar("C")

# The top-level blocks of params.yaml: one per stage (or family of stages) that reads one.
# The keys inside each block are checked by that block's dataclass.
BLOCKS = (
    "demo",
    "telemetry",
    "cohort",
    "train",
    "evaluate",
    "footprint",
    "token_cost",
    "planted_ceiling",
    "encoder_bench",
    "sizing",
    "ecg_demo",
    "extract",
    "report",
)

# A run name becomes file names (metrics/telemetry/<name>.json, reports/figures/<name>_*.png)
# and report text: letters, digits, dot, underscore and dash only, and no leading dot.
#: The largest ``seed`` any block takes: numpy's legacy seeding stops at 2**32 - 1, and
#: ``train.seed`` + ``train.seeds`` must stay below it.
MAX_SEED = 2**31 - 1

RUN_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


def check_run_name(name: object, key: str) -> None:
    """Raise a ParamsError naming ``key`` unless ``name`` is a :data:`RUN_NAME`."""
    if not isinstance(name, str) or RUN_NAME.fullmatch(name) is None:
        raise ParamsError(f"{key}: run name {name!r} must be letters, digits, '.', '_' or '-' "
                          "(not starting with '.'); it becomes file names")


def _check_run_names(data: dict[str, Any], path: Path) -> None:
    telemetry = data.get("telemetry")
    runs = telemetry.get("runs") if isinstance(telemetry, dict) else None
    if isinstance(runs, dict):
        for name in runs:
            check_run_name(name, f"{path}: telemetry.runs")


def _refuse_duplicates(node: Any, path: Path, where: str = "") -> None:
    """Walk a composed YAML node tree; a key given twice in one mapping is a ParamsError
    naming the dotted key and both lines (YAML itself would keep the last silently)."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key_node, value in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            dotted = f"{where}.{key}" if where else str(key)
            line = key_node.start_mark.line + 1
            if key is not None and key in first:
                raise ParamsError(f"{path}:{line}: duplicate key {dotted} (first at line "
                                  f"{first[key]})")
            if key is not None:
                first[key] = line
            _refuse_duplicates(value, path, dotted)
    elif isinstance(node, yaml.SequenceNode):
        for i, value in enumerate(node.value):
            _refuse_duplicates(value, path, f"{where}[{i}]")


def _refuse_aliases(text: str, path: Path, loader: Any) -> None:
    """A YAML alias anywhere in ``text`` is a ParamsError naming its line (checked on the
    parser's event stream, linear in the text, before anything is expanded)."""
    import yaml

    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            raise ParamsError(f"{path}:{event.start_mark.line + 1}: YAML alias "
                              f"*{event.anchor} is not allowed in a params file; write the "
                              "value out in full")


# The last file's checked mapping, by path and text: the CLI's whole-file check and the verb's
# blocks parse the file once per process (a changed file is parsed again; callers get copies).
_PARSED: dict[str, tuple[str, dict[str, Any]]] = {}


def load_params(path: str | Path) -> dict[str, Any]:
    """Read a params YAML file into a dict (errors name the file, and the key or line)."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise ParamsError(f"{p}: params file not found")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParamsError(f"{p}: not UTF-8 text (byte {exc.start}: "
                          f"{exc.object[exc.start:exc.start + 1]!r})") from None
    except OSError as exc:
        raise ParamsError(f"{p}: cannot read ({exc.strerror or exc})") from None
    seen = _PARSED.get(str(p))
    if seen is not None and seen[0] == text:
        return copy.deepcopy(seen[1])
    # libyaml's loader when PyYAML has it: the same values, ~0.5 ms instead of ~21 ms for
    # params.yaml (every verb reads it; rightsize.cli checks train.probes in it first)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        _refuse_aliases(text, p, loader)
        _refuse_duplicates(yaml.compose(text, Loader=loader), p)
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise ParamsError(f"{p}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ParamsError(f"{p}: top level must be a mapping")
    unknown = [k for k in data if k not in BLOCKS]
    if unknown:
        raise ParamsError(f"{p}: unknown top-level key {unknown[0]!r} (known: "
                          f"{', '.join(BLOCKS)})")
    _check_run_names(data, p)
    _PARSED.clear()
    _PARSED[str(p)] = (text, copy.deepcopy(data))
    return data


def load_block(path: str | Path, key: str, cls: type[C]) -> C:
    """Parse block ``key`` (dotted, e.g. ``telemetry``) of params file ``path`` into ``cls``."""
    node: Any = load_params(path)
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ParamsError(f"{path}: missing key {key}")
        node = node[part]
    return parse(cls, node, key)


def parse(cls: type[C], data: Any, key: str) -> C:
    """Build dataclass ``cls`` from mapping ``data``; ``key`` prefixes error messages."""
    if not isinstance(data, dict):
        raise ParamsError(f"{key}: expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ParamsError(f"{key}.{unknown[0]}: unknown key (known: {', '.join(sorted(fields))})")
    hints = typing.get_type_hints(cls)
    values = {}
    for name, field in fields.items():
        if name in data:
            values[name] = _coerce(hints[name], data[name], f"{key}.{name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ParamsError(f"{key}.{name}: missing key")
    seed = values.get("seed")
    if isinstance(seed, int) and not 0 <= seed <= MAX_SEED:   # numpy and torch seeding range
        raise ParamsError(f"{key}.seed: must be an integer from 0 to {MAX_SEED}, got {seed}")
    obj = cls(**values)
    check = getattr(obj, "validate", None)
    if callable(check):
        check(key)
    return obj


def _coerce(tp: Any, value: Any, key: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(inner[0], value, key)
    if dataclasses.is_dataclass(tp):
        return parse(tp, value, key)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ParamsError(f"{key}: expected a list, got {value!r}")
        return tuple(_coerce(args[0], v, f"{key}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise ParamsError(f"{key}: expected a mapping, got {value!r}")
        return {k: _coerce(args[1], v, f"{key}.{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise ParamsError(f"{key}: expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParamsError(f"{key}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ParamsError(f"{key}: expected a number, got {value!r}")
        try:
            number = float(value)
        except OverflowError:   # an integer past float's range
            number = math.inf
        if not math.isfinite(number):   # no params value means infinity (null does, where taken)
            raise ParamsError(f"{key}: expected a finite number, got {value!r:.40}")
        return number
    if tp is str:
        if not isinstance(value, str):
            raise ParamsError(f"{key}: expected a string, got {value!r}")
        return value
    return value


def require(ok: bool, key: str, message: str) -> None:
    """Raise ``ParamsError`` naming ``key`` unless ``ok`` (for ``validate`` methods)."""
    if not ok:
        raise ParamsError(f"{key}: {message}")


def require_one_of(value: Any, known: Sequence[Any], key: str, what: str) -> None:
    """``require`` that ``value`` is in ``known``: ``<key>: unknown <what> 'x' (known: a, b)``."""
    require(value in known, key, f"unknown {what} {value!r} (known: {', '.join(map(str, known))})")
