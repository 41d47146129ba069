"""The across-seeds section: mean ± sd per metric from ``rightsize spread --json`` output.

That file is ``{"n_rows", "rows": [{name, rev, baseline, params}], "metrics": {key: {n, mean,
sd, min, max}}}``; other shapes holding ``mean`` nodes (nested dicts or a list of
``{metric, mean, sd, n}``) are read too.
"""

from __future__ import annotations

from typing import Any

from rightsize import fmt
from rightsize.fmt import as_float
from rightsize.reporting.doc import Block, Heading, Note, Para, table
from rightsize.reporting.sources import Source


def seed_rows(data: Any, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    """``(metric, node)`` for every node holding a numeric ``mean``."""
    if isinstance(data, dict) and not prefix and isinstance(data.get("metrics"), dict):
        data = data["metrics"]
    rows: list[tuple[str, dict[str, Any]]] = []
    if isinstance(data, dict):
        if as_float(data.get("mean")) is not None:
            return [(prefix or str(data.get("metric") or data.get("name") or "value"), data)]
        for k, v in data.items():
            rows += seed_rows(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            label = v.get("metric") or v.get("name") if isinstance(v, dict) else None
            rows += seed_rows(v, str(label) if label else f"{prefix}[{i}]")
    return rows


def _varying(data: Any) -> str:
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return ""
    values: dict[str, list[str]] = {}
    for r in rows:
        for k, v in (r.get("params") or {}).items() if isinstance(r, dict) else ():
            values.setdefault(str(k), []).append(str(v))
    return "; ".join(f"{k} = {', '.join(v)}" for k, v in values.items())


def seed_sections(seeds: Source | None) -> list[Block]:
    """Blocks for the across-seeds table, or nothing when no ``--seeds-json`` was given."""
    if seeds is None:
        return []
    blocks: list[Block] = [Heading("Across seeds", 2, "seeds")]
    if not seeds.ok:
        return blocks + [Note(f"{seeds.note()} (rightsize spread --json PATH).")]
    rows = seed_rows(seeds.data)
    if not rows:
        return blocks + [Note(f"{seeds.path} holds no metric with a mean.")]
    varying = _varying(seeds.data)
    if varying:
        blocks.append(Para(f"Experiments varied: {varying}."))
    cells = []
    for name, node in rows:
        sd = as_float(node.get("sd", node.get("std")))
        lo, hi = as_float(node.get("min")), as_float(node.get("max"))
        span = f"{fmt.number(lo, 4)} to {fmt.number(hi, 4)}" if lo is not None else fmt.DASH
        cells.append([name, f"{fmt.number(as_float(node.get('mean')), 4)} ± "
                            f"{fmt.number(sd, 2) if sd is not None else fmt.DASH}",
                      span, fmt.integer(as_float(node.get("n")))])
    return blocks + [table(["metric", "across seeds: mean ± sd", "range", "n"], cells,
                           f"From {seeds.path}; sd is the sample standard deviation.")]
