"""The values DVC substitutes into stage commands, checked before any of them runs.

``dvc.yaml`` single-quotes every ``${...}`` in a stage command, so a substituted value is one
argument to ``rightsize``; a value holding a single quote or a control character would still
end the quoting and reach DVC's shell. DVC substitutes before any rightsize code runs, so the
``stage_values`` stage runs first (every stage whose command substitutes depends on its
output) and refuses such a value, naming its params key, before DVC forms those commands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from rightsize.errors import ParamsError

_EXPR = re.compile(r"\$\{\s*([^}]*?)\s*\}")
_UNSAFE = re.compile(r"['\x00-\x1f\x7f]")


def _lookup(params: Mapping[str, Any], dotted: str) -> Any:
    node: Any = params
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None                       # DVC itself reports a missing key
        node = node[part]
    return node


def _loops(stage: Mapping[str, Any], params: Mapping[str, Any]
           ) -> Iterator[tuple[dict[str, tuple[str, Any]], str]]:
    """``({"key": (where, value), "item": (where, value)}, cmd)`` per generated stage."""
    body = stage.get("do", stage)
    cmd = body.get("cmd", "") if isinstance(body, Mapping) else ""
    cmds = " ".join(cmd) if isinstance(cmd, list) else str(cmd)
    if "foreach" not in stage:
        yield {}, cmds
        return
    spec = stage["foreach"]
    where = "dvc.yaml foreach"
    match = _EXPR.fullmatch(spec.strip()) if isinstance(spec, str) else None
    if match:
        where = match.group(1)
        spec = _lookup(params, where)
    if isinstance(spec, Mapping):
        for key, item in spec.items():
            yield {"key": (f"{where} key", key), "item": (f"{where}.{key}", item)}, cmds
    elif isinstance(spec, list):
        for i, item in enumerate(spec):
            yield {"key": (f"{where}[{i}]", i), "item": (f"{where}[{i}]", item)}, cmds


def substitutions(dvc_yaml: Mapping[str, Any], params: Mapping[str, Any]
                  ) -> Iterator[tuple[str, str, Any]]:
    """``(stage, where, value)`` for every value a stage command substitutes."""
    for name, stage in (dvc_yaml.get("stages") or {}).items():
        if not isinstance(stage, Mapping):
            continue
        for loop, cmd in _loops(stage, params):
            for expr in _EXPR.findall(cmd):
                head, _, rest = expr.partition(".")
                if head in loop:
                    where, value = loop[head]
                    if rest:
                        where, value = f"{where}.{rest}", _lookup(value, rest)
                else:
                    where, value = expr, _lookup(params, expr)
                yield name, where, value


def check_substitutions(dvc_yaml: Mapping[str, Any], params: Mapping[str, Any]) -> int:
    """The number of substituted values; ParamsError naming the first unsafe one."""
    count = 0
    for stage, where, value in substitutions(dvc_yaml, params):
        text = str(value)
        bad = _UNSAFE.search(text)
        if isinstance(value, (Mapping, list)) or bad:
            why = (f"holds {bad.group(0)!r}" if bad else "is not a single value")
            raise ParamsError(f"params.yaml: {where}: {text[:60]!r} {why}, and stage {stage} "
                              "puts it on a command line; use letters, digits, '.', '_', "
                              "'-' or '/'")
        count += 1
    return count
