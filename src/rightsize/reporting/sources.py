"""Read the metrics files the report is built from, tolerating missing and unreadable ones.

Every input becomes a :class:`Source`: the data (parsed JSON, or CSV columns as numpy
arrays) plus a status, so a section can say *not run* instead of crashing. Nothing here
interprets the numbers; :func:`rightsize.fmt.get` and :func:`~rightsize.fmt.num` look up
dotted keys defensively.
"""

from __future__ import annotations

import csv
import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rightsize import console

log = logging.getLogger(__name__)

MISSING = "missing"
DETECTION = "benchmarks/results/token_detection.json"   # beside the metrics folder, committed
OK = "ok"


def _kind(data: Any) -> str:
    """``data``'s JSON kind in words, with its size for a container."""
    if isinstance(data, dict):
        return f"object of {len(data)} keys" if data else "empty object"
    if isinstance(data, list):
        return f"list of {len(data)} items" if data else "empty list"
    return {bool: "boolean", str: "string", type(None): "null"}.get(type(data), "number")


@dataclass(frozen=True)
class Source:
    """One metrics file: where it is, what it held and whether it could be read."""

    path: Path                 # as shown in the report (``metrics/eval/ecg.json``)
    data: Any = None           # dict/list for JSON; {column: float64 array} for CSV
    status: str = MISSING      # "ok", "missing" or "unreadable: <reason>"

    @property
    def ok(self) -> bool:
        """True when the file existed and parsed."""
        return self.status == OK

    def note(self) -> str:
        """One line for a section whose input is absent: names the file and why."""
        if self.status == MISSING:
            return f"Not run: {self.path} is missing"
        if self.status == OK:   # read, but not the shape the section reads (e.g. ``[]``)
            return (f"Not available: {self.path} does not hold what this section reads "
                    f"(a JSON {_kind(self.data)})")
        return f"Not available: {self.path} is {self.status}"


@dataclass(frozen=True)
class ReportInputs:
    """All sources the report reads, keyed by run or probe name."""

    runs: tuple[str, ...]
    probes: tuple[str, ...]
    telemetry: dict[str, Source]
    val_csv: dict[str, Source]
    probe_telemetry: dict[str, Source]
    evals: dict[str, Source]
    curves: dict[str, Source]
    missing: dict[str, Source]   # metrics/missing/<probe>.json
    footprint: Source
    sizing: Source
    cohort: Source
    seeds: Source | None = None
    token_cost: Source = Source(Path("metrics/token_cost.json"))
    extract: Source = Source(Path("metrics/extract.json"))
    ceiling: Source = Source(Path("metrics/eval/fused_ceiling.json"))   # planted-token oracle
    compare: Source = Source(Path("metrics/fused_vs_concat.json"))      # paired by seed
    detection: Source = Source(Path(DETECTION))                         # committed table
    train: dict[str, Source] = field(default_factory=dict)   # metrics/train/<probe>.json

    def statuses(self) -> dict[str, str]:
        """``{display path: status}`` for every file looked at."""
        out: dict[str, str] = {}
        groups = (self.telemetry, self.val_csv, self.probe_telemetry, self.evals, self.curves,
                  self.missing, self.train)
        for group in groups:
            for src in group.values():
                out[str(src.path)] = src.status
        for src in (self.footprint, self.sizing, self.cohort, self.seeds, self.token_cost,
                    self.extract, self.ceiling, self.compare, self.detection):
            if src is not None:
                out[str(src.path)] = src.status
        return out


def read_json(path: Path, shown: Path | None = None) -> Source:
    """Parse a JSON file into a :class:`Source`; a missing or bad file gives a status."""
    shown = shown or path
    if not path.is_file():
        return Source(shown)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        console.warn(f"{shown}: unreadable ({reason}); its report section is left out")
        return Source(shown, None, f"unreadable: {reason}")
    return Source(shown, data, OK)


def read_csv(path: Path, shown: Path | None = None) -> Source:
    """Read a small CSV with a header row into ``{column: float64 array}`` (non-numbers -> NaN)."""
    import numpy as np

    shown = shown or path
    if not path.is_file():
        return Source(shown)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            rows = list(reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        console.warn(f"{shown}: unreadable ({exc}); its report section is left out")
        return Source(shown, None, f"unreadable: {exc}")
    if not header:
        return Source(shown, None, "unreadable: no header row")
    columns: dict[str, Any] = {}
    for i, name in enumerate(header):
        columns[name.strip()] = np.array(
            [_to_float(r[i]) if i < len(r) else math.nan for r in rows], dtype=np.float64)
    return Source(shown, columns, OK)


def _to_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def load_inputs(metrics_dir: Path, runs: tuple[str, ...] | None, probes: tuple[str, ...],
                seeds_json: Path | None = None) -> ReportInputs:
    """Read every metrics file under ``metrics_dir`` the report knows about, and the
    committed detection table beside it (``<metrics_dir>/../`` :data:`DETECTION`).

    ``runs=None`` discovers run names from ``metrics_dir/telemetry/*.json`` (probe logs
    excluded). Files are shown as ``<metrics dir name>/<relative path>`` in the report.
    """
    metrics_dir = Path(metrics_dir)
    base = Path(metrics_dir.name)
    if runs is None:
        tel_dir = metrics_dir / "telemetry"
        runs = tuple(sorted(p.stem for p in tel_dir.glob("*.json")
                            if not p.stem.startswith("probe_"))) if tel_dir.is_dir() else ()

    def js(rel: str) -> Source:
        return read_json(metrics_dir / rel, base / rel)

    def tab(rel: str) -> Source:
        return read_csv(metrics_dir / rel, base / rel)

    if not metrics_dir.is_dir():
        console.warn(f"{metrics_dir}: metrics directory not found; every section will say not run")
    seeds = None
    if seeds_json is not None:
        seeds = read_json(Path(seeds_json))
        if seeds.status == MISSING:
            console.warn(f"{seeds_json}: seeds summary not found; the across-seeds section says so")
    inputs = ReportInputs(
        runs=tuple(runs),
        probes=tuple(probes),
        telemetry={r: js(f"telemetry/{r}.json") for r in runs},
        val_csv={r: tab(f"telemetry/{r}_val.csv") for r in runs},
        probe_telemetry={p: js(f"telemetry/probe_{p}.json") for p in probes},
        evals={p: js(f"eval/{p}.json") for p in probes},
        curves={p: tab(f"curves/{p}.csv") for p in probes},
        missing={p: js(f"missing/{p}.json") for p in probes},
        footprint=js("footprint.json"),
        sizing=js("sizing.json"),
        cohort=js("cohort.json"),
        seeds=seeds,
        token_cost=js("token_cost.json"),
        extract=js("extract.json"),
        ceiling=js("eval/fused_ceiling.json"),
        compare=js("fused_vs_concat.json"),
        detection=read_json(metrics_dir.parent / DETECTION, Path(DETECTION)),
        train={p: js(f"train/{p}.json") for p in probes},
    )
    log.debug("report inputs: %s", inputs.statuses())
    return inputs
