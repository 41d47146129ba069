"""Verbs: ``rightsize cohort`` -- build (or ``--check``) the cohort manifest."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from rightsize import console
from rightsize.errors import InputError
from rightsize.verbs import headline

DEFAULT_OUT = "data/manifest.parquet"

EPILOG = """\
examples:
  rightsize cohort --params params.yaml --out data/manifest.parquet \\
      --truth data/cohort.truth.parquet --metrics metrics/cohort.json
  rightsize cohort --check data/manifest.parquet
  rightsize cohort --params params.yaml --out m.parquet --metrics - | jq .n_subjects

exit codes: 0 ok; 2 bad params or missing file; 4 invalid data (message names column and row)
"""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's verbs to the rightsize parser."""
    p = sub.add_parser(
        "cohort", parents=[common],
        help="build or check the cohort manifest (one row per subject)",
        description=(
            "Build data/manifest.parquet from the `cohort` block of params.yaml (synthetic "
            "cohort with planted truth, or joined echo/ECG embedding files and labels; the "
            "ECG pooled or as cohort.ecg_tokens tokens per subject), streaming row group by "
            "row group and validating as it goes; or, with --check, validate an existing "
            "manifest."),
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--params", default="params.yaml",
                   help="params file holding the `cohort` block (default: params.yaml)")
    p.add_argument("-o", "--out", default=None,
                   help=f"manifest to write, atomically (default: {DEFAULT_OUT})")
    p.add_argument("--truth", default=None,
                   help="also write the planted truth (matched clip, planted ECG token per "
                        "subject; -1 for none) here, atomically with the manifest")
    p.add_argument("--json", "--metrics", dest="metrics", default=None, metavar="PATH",
                   help="write flat build metrics as JSON here (atomically); '-' prints "
                        "them on stdout (--metrics is the older spelling)")
    headline.add_argument(p, "manifest rows, bytes and float32 payload bytes")
    p.add_argument("--check", metavar="MANIFEST", default=None,
                   help="validate MANIFEST instead of building; prints a one-line summary")
    p.set_defaults(func=run_cohort)


def _peak_rss_mb() -> float:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def run_cohort(args: argparse.Namespace) -> int:
    """Build the manifest (and metrics), or validate one with ``--check``."""
    if args.check is not None:
        if any(x is not None for x in (args.out, args.metrics, args.truth, args.headline)):
            raise InputError("--check validates an existing manifest: drop "
                             "--out/--metrics/--truth/--headline")
        return _check(args.check)
    from rightsize.cohort.config import CohortConfig
    from rightsize.output_set import OutputSet
    from rightsize.params import load_block

    cfg = load_block(args.params, "cohort", CohortConfig)
    out = args.out or DEFAULT_OUT
    # every output staged, then renamed into place together, the manifest last in and
    # first out: a failure anywhere (a full disk included) leaves the old set whole
    with OutputSet(anchor=out) as outputs:
        return _build(args, cfg, out, outputs)


def _build(args: argparse.Namespace, cfg: Any, out: str, outputs: Any) -> int:
    """Build the manifest, truth file and metrics of ``cfg`` into ``outputs``."""
    from rightsize.cohort.build import build_manifest
    from rightsize.machine import stamp as machine_stamp

    t0 = time.perf_counter()
    groups = -(-cfg.n_subjects // cfg.rows_per_group(cfg.ecg_tokens or 1))
    with console.Progress("row groups written", total=groups) as bar:
        report = build_manifest(
            cfg, out, on_chunk=(lambda rows: bar.advance(1, f"({rows}/{cfg.n_subjects} rows)"))
            if bar.enabled else None, truth=args.truth, outputs=outputs)
    wall = time.perf_counter() - t0
    s, meta = report.summary, report.metadata
    metrics: dict[str, Any] = {
        "n_subjects": s.n_rows,
        "n_train": s.split_counts["train"],
        "n_val": s.split_counts["val"],
        "n_test": s.split_counts["test"],
        "n_has_echo": s.n_has_echo,
        "n_has_ecg": s.n_has_ecg,
        "max_clips": cfg.max_clips,
        "echo_dim": cfg.echo_dim,
        "ecg_dim": cfg.ecg_dim,
        "ecg_tokens": s.geometry.ecg_tokens,
        "manifest_bytes": report.manifest_bytes,
        "payload_bytes": meta["payload_bytes"],
        "ef_le_40_prevalence": round(meta["ef_le_40_prevalence"], 6),
        "target": cfg.target.as_dict(),     # what the probes predict; the report names it
        "build_wall_clock_s": round(wall, 3),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "machine": machine_stamp(),
    }
    for key in ("perfect_model_mae", "perfect_model_mae_test"):
        if meta.get(key) is not None:   # unknown for source: files
            metrics[key] = round(float(meta[key]), 6)
    if args.metrics:
        console.emit_json(args.metrics, metrics, outputs)
    if args.headline:
        headline.write(args.headline, headline.headline("cohort", cohort=metrics), outputs)
    console.info(f"{out}: {s.n_rows} subjects ({_splits(s.split_counts)}), "
                 f"{report.manifest_bytes / 1e6:.1f} MB in {wall:.1f}s")
    return 0


def _splits(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items())


def _check(path: str) -> int:
    from rightsize.cohort.validate import validate_manifest

    s = validate_manifest(path)
    g = s.geometry
    print(f"{path}: ok: {s.n_rows} subjects ({_splits(s.split_counts)}), "
          f"echo {g.max_clips} x {g.echo_dim} (has_echo {s.n_has_echo}), "
          f"ecg {_ecg_shape(g)} (has_ecg {s.n_has_ecg}), source {s.metadata.get('source')}")
    return 0


def _ecg_shape(g: Any) -> str:
    return str(g.ecg_dim) if g.ecg_tokens == 1 else f"{g.ecg_tokens} x {g.ecg_dim}"
