"""Verbs: report (verdicts, figures and tables from the metrics files, as Markdown and HTML)."""

from __future__ import annotations

import argparse
import json
import sys

from rightsize import console


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's verbs to the rightsize parser."""
    p = sub.add_parser(
        "report", parents=[common],
        help="build report.md and a self-contained report.html",
        description=(
            "Build the report from the metrics files only: it opens with the verdicts (does\n"
            "probe work need a GPU, what the re-extraction needs, what each rescued run cost),\n"
            "then per-run figures (validation curve, step time per segment, preemption\n"
            "timeline, projection) and the probes' metrics, curves, wall-clock, footprint and\n"
            "hardware. Missing metrics files make their sections say 'not run'.\n"
            "Writes <out>/report.md, <out>/report.html (figures embedded, no external URL)\n"
            "and <out>/figures/*.png."),
        epilog=("example:\n"
                "  rightsize report --params params.yaml --metrics metrics --out reports\n"
                "  rightsize report --seeds-json seeds.json --json   # also across-seeds table"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--params", default="params.yaml",
                   help="params file: report block, telemetry.runs, train.probes "
                        "(default: params.yaml)")
    p.add_argument("--metrics", default="metrics", help="metrics directory (default: metrics)")
    p.add_argument("--out", default="reports", help="output directory (default: reports)")
    p.add_argument("--seeds-json", default=None, metavar="PATH",
                   help="output of `rightsize seeds --json`: adds mean +- sd across seeds")
    p.add_argument("--json", action="store_true",
                   help="print what was written and the verdicts as JSON on stdout")
    p.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    """Build the report; print the verdicts (or JSON) and return 0."""
    from rightsize.reporting.build import build_report
    from rightsize.reporting.config import load_settings

    settings = load_settings(args.params)
    result = build_report(settings, args.metrics, args.out, args.seeds_json)
    if args.json:
        json.dump(result.as_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for v in result.verdicts:
            console.info(f"{v.question} {v.text}")
        console.info(f"wrote {result.markdown}, {result.html} and {len(result.figures)} figures")
    return 0
