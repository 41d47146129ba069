"""Verbs: report (verdicts, figures and tables from the metrics files, as Markdown and HTML)."""

from __future__ import annotations

import argparse

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
    p.add_argument("-o", "--out", default="reports", help="output directory (default: reports)")
    p.add_argument("--seeds-json", default=None, metavar="PATH",
                   help="output of `rightsize spread --json`: adds mean +- sd across seeds")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                   help="write what was written and the verdicts as JSON to PATH; '-' or no "
                        "PATH prints it on stdout instead of the verdict lines")
    p.set_defaults(func=run_report)


def run_report(args: argparse.Namespace) -> int:
    """Build the report; print the verdicts (or JSON) and return 0."""
    from rightsize.atomic import check_writable
    from rightsize.reporting.build import build_report
    from rightsize.reporting.config import load_settings

    check_writable(args.json)
    settings = load_settings(args.params)
    result = build_report(settings, args.metrics, args.out, args.seeds_json)
    if args.json:
        console.emit_json(args.json, result.as_dict())
    if args.json != "-":
        for v in result.verdicts:
            console.info(f"{v.question} {v.text}")
        console.info(f"wrote {result.markdown}, {result.html} and {len(result.figures)} figures")
    return 0
