"""Settings of the report: the ``report`` params block plus the run and probe names it covers.

Example block::

    report:
      title: rightsize report
      cpu_budget_s: 3600      # probes that train+evaluate on CPU within this need no GPU

The run names come from ``telemetry.runs`` and the probe names from ``train.probes`` of the
same params file, whether the cohort is synthetic from ``cohort.source``; the run named
``demo`` is the demo_run stage's synthetic run when params has a ``demo`` block. All are read
as plain values, so the report never depends on how other stages validate their own blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rightsize.errors import ParamsError
from rightsize.params import load_params, parse, require
from rightsize.probe_names import PROBES

DEFAULT_PROBES = PROBES           # the registry's, in pipeline order
DEMO_RUN = "demo"                 # the run the demo_run stage generates (synthetic, planted truth)


@dataclass(frozen=True)
class ReportConfig:
    """The ``report`` block of ``params.yaml``."""

    title: str = "rightsize report"
    cpu_budget_s: float = 3600.0

    def validate(self, key: str) -> None:
        """Raise ``ParamsError`` naming the dotted key that is out of range."""
        require(bool(self.title.strip()), f"{key}.title", "must not be empty")
        require(self.cpu_budget_s > 0, f"{key}.cpu_budget_s",
                f"must be > 0, got {self.cpu_budget_s}")


@dataclass(frozen=True)
class ReportSettings:
    """Everything the report reads from params: its own block, run names and probe names."""

    config: ReportConfig
    runs: tuple[str, ...] | None   # None: telemetry.runs absent, discover runs from the files
    probes: tuple[str, ...]
    seeds: int = 1                 # train.seeds: replicas per probe the pipeline trains
    cohort_source: str = "synthetic"   # cohort.source: synthetic (a planted signal) | files
    synthetic_runs: tuple[str, ...] = ()   # runs the demo_run stage generated (not a real run)

    @property
    def synthetic_cohort(self) -> bool:
        """True when the probes were trained on the generated cohort, not a user's files."""
        return self.cohort_source == "synthetic"


def load_settings(path: str | Path) -> ReportSettings:
    """Read ``report``, ``telemetry.runs`` (names), ``train.probes`` and ``train.seeds`` from
    params ``path``.

    A missing ``report`` block means the defaults; unknown keys inside it are errors.
    """
    data = load_params(path)
    block = data.get("report", {})
    config = parse(ReportConfig, {} if block is None else block, "report")
    runs: tuple[str, ...] | None = None
    telemetry = data.get("telemetry")
    if isinstance(telemetry, dict) and "runs" in telemetry:
        names = telemetry["runs"] or {}
        if not isinstance(names, dict):
            raise ParamsError(f"{path}: telemetry.runs: expected a mapping of run names")
        runs = tuple(str(k) for k in names)
    probes = DEFAULT_PROBES
    train = data.get("train")
    if isinstance(train, dict) and "probes" in train:
        listed = train["probes"]
        if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
            raise ParamsError(f"{path}: train.probes: expected a list of probe names")
        probes = tuple(listed)
    seeds = train.get("seeds", 1) if isinstance(train, dict) else 1
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise ParamsError(f"{path}: train.seeds: expected an integer >= 1, got {seeds!r}")
    cohort = data.get("cohort")
    source = cohort.get("source", "synthetic") if isinstance(cohort, dict) else "synthetic"
    # demo_run writes its synthetic run to data/telemetry/demo (dvc.yaml) when params has `demo`
    demo = (DEMO_RUN,) if "demo" in data and (runs is None or DEMO_RUN in runs) else ()
    return ReportSettings(config=config, runs=runs, probes=probes, seeds=seeds,
                          cohort_source=str(source), synthetic_runs=demo)
