"""Verb: footprint (bytes, parameters, peak RSS and writable paths of the probe pipeline)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rightsize import console
from rightsize.atomic import check_writable
from rightsize.errors import ParamsError
from rightsize.verbs import headline

_FOOTPRINT_EPILOG = """\
example:
  rightsize footprint --params params.yaml --manifest data/manifest.parquet --models models \\
      --metrics-dir metrics --json metrics/footprint.json
"""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``footprint`` verb to the rightsize parser."""
    fp = sub.add_parser(
        "footprint", parents=[common],
        help="bytes, params, peak RSS and paths of the probe pipeline",
        description="Report checkpoint bytes and parameter counts, manifest bytes next to the "
                    "float32 payload arithmetic for several clip counts, peak RSS of the "
                    "cohort/train/evaluate stages, and whether the output locations are "
                    "writable.",
        epilog=_FOOTPRINT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    fp.add_argument("--params", default="params.yaml",
                    help="params file: blocks footprint, cohort, train (default: params.yaml)")
    fp.add_argument("--manifest", required=True, help="cohort manifest parquet")
    fp.add_argument("--models", default="models", help="checkpoint root (models/<probe>/)")
    fp.add_argument("--metrics-dir", default="metrics",
                    help="metrics root (cohort.json, train/<probe>.json, eval/<probe>.json)")
    fp.add_argument("--reports", default="reports", help="reports directory to check (writable)")
    fp.add_argument("--json", required=True,
                    help="where to write the footprint JSON ('-' prints it on stdout instead "
                         "of the table)")
    headline.add_argument(fp, "checkpoint bytes and parameters, peak RSS")
    fp.set_defaults(func=run_footprint)


def run_footprint(args: argparse.Namespace) -> int:
    """``rightsize footprint``: measure and write the footprint JSON."""
    from rightsize.machine import stamp as machine_stamp
    from rightsize.params import load_params, parse
    from rightsize.probes.measurements.footprint import (
        CohortShape,
        FootprintConfig,
        FootprintPaths,
        measure_footprint,
    )

    check_writable(args.headline)
    raw = load_params(args.params)
    cfg = parse(FootprintConfig, _block(raw, "footprint", args.params), "footprint")
    cohort = _block(raw, "cohort", args.params)
    shape = parse(CohortShape, {k: cohort[k] for k in ("n_subjects", "max_clips", "echo_dim",
                                                       "ecg_dim", "ecg_tokens") if k in cohort},
                  "cohort")
    probes = _block(raw, "train", args.params).get("probes")   # checked by rightsize.cli
    if probes is None:
        raise ParamsError(f"{args.params}: missing key train.probes")

    paths = FootprintPaths(manifest=Path(args.manifest), models=Path(args.models),
                           metrics_dir=Path(args.metrics_dir), reports=Path(args.reports))
    result = measure_footprint(paths, cfg, shape, tuple(probes))
    result["free_disk_path"] = str(paths.metrics_dir)
    result["machine"] = machine_stamp()
    console.emit_json(args.json, result)
    if args.headline:
        headline.write(args.headline, headline.headline("footprint", footprint=result))
    if args.json == "-":
        return 0
    if not console.quiet():
        console.print_table("footprint", _footprint_rows(result))
    console.info(f"wrote {args.json}")
    return 0


def _block(raw: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    if key not in raw:
        raise ParamsError(f"{path}: missing key {key}")
    if not isinstance(raw[key], dict):
        raise ParamsError(f"{key}: expected a mapping, got {type(raw[key]).__name__}")
    return raw[key]


def _footprint_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    from rightsize.fmt import nbytes

    rows = [("manifest", f"{nbytes(result['manifest_bytes'])} "
                         f"({result['payload_measured_ratio']:.2f}x the float32 payload "
                         f"at max_clips={result['max_clips']})")]
    for probe, c in result["checkpoints"].items():
        rows.append((f"checkpoint {probe}", f"{nbytes(c['bytes'])}, {c['params']:,} params"))
    for row in result["payload_table"]:
        rows.append((f"payload max_clips={row['max_clips']}, ecg_tokens={row['ecg_tokens']}",
                     nbytes(row["payload_bytes"])))
    for stage, mb in result["peak_rss_mb"].items():
        rows.append((f"peak RSS {stage}", f"{mb:,.0f} MB"))
    for name, ok in result["writable"].items():
        rows.append((f"writable {name}/", "yes" if ok else "NO"))
    rows.append((f"free disk at {result['free_disk_path']}", nbytes(result["free_disk_bytes"])))
    return rows
