"""Build the report: load the metrics files, answer the verdicts, draw, render, write.

Writes ``<out>/report.md``, ``<out>/report.html`` (self-contained) and
``<out>/figures/<name>.png``, every file atomically. PNGs left in ``figures/`` by an
earlier build that this build did not draw are removed, so the folder matches the report.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from rightsize import atomic
from rightsize.errors import DataError
from rightsize.machine import stamp
from rightsize.reporting.config import ReportSettings
from rightsize.reporting.doc import Block, Figure, Heading, Para, VerdictItem
from rightsize.reporting.render_html import render_html
from rightsize.reporting.render_md import render_markdown
from rightsize.reporting.sections_probes import (
    extraction_section,
    probe_sections,
    sizing_section,
)
from rightsize.reporting.sections_runs import run_sections
from rightsize.reporting.sections_seeds import seed_sections
from rightsize.reporting.sources import ReportInputs, load_inputs
from rightsize.reporting.verdicts import Verdict, all_verdicts

log = logging.getLogger(__name__)
FIGURE_DIR = "figures"


@dataclass(frozen=True)
class ReportResult:
    """What one build wrote and concluded."""

    markdown: Path
    html: Path
    figures: tuple[Path, ...]
    verdicts: tuple[Verdict, ...]
    inputs: dict[str, str]        # display path of every metrics file -> its status

    def as_dict(self) -> dict[str, object]:
        """Plain dict for ``--json``."""
        return {"markdown": str(self.markdown), "html": str(self.html),
                "figures": [str(p) for p in self.figures],
                "verdicts": [v.as_dict() for v in self.verdicts], "inputs": self.inputs}


def report_blocks(settings: ReportSettings, inputs: ReportInputs,
                  verdicts: list[Verdict]) -> list[Block]:
    """The report's blocks: title, verdicts (first), telemetry, probes, sizing, extraction,
    seeds."""
    blocks: list[Block] = [Heading(settings.config.title, 1, "top"),
                           Heading("Verdicts", 2, "verdicts")]
    blocks += [VerdictItem(v.question, v.text) for v in verdicts]
    blocks.append(Para("Every number above and below is read from the metrics files of this "
                       "workspace; a section whose file is absent says so. This report was "
                       f"built on {stamp()['words']}; a figure measured on another machine "
                       "says so beside it."))
    blocks += run_sections(inputs, settings.synthetic_runs)
    blocks += probe_sections(inputs, settings.synthetic_cohort)
    blocks += sizing_section(inputs)
    blocks += extraction_section(inputs)
    blocks += seed_sections(inputs.seeds)
    return blocks


def build_report(settings: ReportSettings, metrics_dir: str | Path, out_dir: str | Path,
                 seeds_json: str | Path | None = None) -> ReportResult:
    """Build and write the report from ``metrics_dir`` into ``out_dir``."""
    out = Path(out_dir)
    inputs = load_inputs(Path(metrics_dir), settings.runs, settings.probes,
                         Path(seeds_json) if seeds_json is not None else None)
    verdicts = all_verdicts(inputs, settings.config, settings.seeds,
                            settings.synthetic_cohort, settings.synthetic_runs)
    blocks = report_blocks(settings, inputs, verdicts)
    fig_dir = out / FIGURE_DIR
    written: list[Path] = []
    for b in blocks:
        if isinstance(b, Figure):
            path = fig_dir / f"{b.name}.png"
            if "/" in b.name or b.name.startswith("."):    # names come from run names
                raise DataError(f"figure name {b.name!r}: not a plain file name")
            atomic.write_bytes(path, b.png)
            written.append(path)
    if fig_dir.is_dir():
        for stale in sorted(set(fig_dir.glob("*.png")) - set(written)):
            log.debug("removing stale figure %s", stale)
            stale.unlink()
    md_path, html_path = out / "report.md", out / "report.html"
    atomic.write_text(md_path, render_markdown(blocks, FIGURE_DIR))
    atomic.write_text(html_path, render_html(blocks, settings.config.title))
    return ReportResult(md_path, html_path, tuple(written), tuple(verdicts), inputs.statuses())
