"""Verbs: footprint (what the probe pipeline occupies) and sizing (GPU/storage calculator)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from rightsize import console
from rightsize.errors import ParamsError

log = logging.getLogger(__name__)

# (flag, params key, converter name): numeric flags are parsed here, not by argparse, so a
# bad value is one error line naming the key (argparse would print usage + error).
_SIZING_FLAGS = (
    ("--records", "records", "int"),
    ("--seconds-per-record", "seconds_per_record", "float"),
    ("--tokens-per-second", "tokens_per_second", "float"),
    ("--hidden-dim", "hidden_dim", "int"),
    ("--layers-kept", "layers_kept", "int"),
    ("--dtype", "dtype", "str"),
    ("--records-per-s-per-gpu", "records_per_s_per_gpu", "float"),
    ("--gpus", "gpus", "int"),
    ("--disk-bytes", "disk_bytes", "size"),
)

_FOOTPRINT_EPILOG = """\
example:
  rightsize footprint --params params.yaml --manifest data/manifest.parquet --models models \\
      --metrics-dir metrics --json metrics/footprint.json
"""

_SIZING_EPILOG = """\
examples:
  rightsize sizing --params params.yaml --json metrics/sizing.json
  rightsize sizing --records 1000000 --seconds-per-record 10 --tokens-per-second 50 \\
      --hidden-dim 768 --layers-kept 4 --dtype float16 --records-per-s-per-gpu 40 \\
      --gpus 8 --disk-bytes 2TB

storage = records x seconds x tokens/s x hidden x layers x dtype bytes;
GPU-hours = records / (records/s/GPU) / 3600; wall clock = GPU-hours / GPUs.
Flags override the params block; --disk-bytes accepts 2TB, 500GiB, 2e12.
"""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``footprint`` and ``sizing`` verbs to the rightsize parser."""
    fp = sub.add_parser(
        "footprint", parents=[common],
        help="bytes, params, peak RSS and paths of the probe pipeline",
        description="Report checkpoint bytes and parameter counts, manifest bytes next to the "
                    "float32 payload arithmetic for several clip counts, peak RSS of the "
                    "cohort/train/evaluate stages, and whether the output locations are "
                    "writable.",
        epilog=_FOOTPRINT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    fp.add_argument("--params", required=True, help="params.yaml (blocks footprint, cohort, train)")
    fp.add_argument("--manifest", required=True, help="cohort manifest parquet")
    fp.add_argument("--models", default="models", help="checkpoint root (models/<probe>/)")
    fp.add_argument("--metrics-dir", default="metrics",
                    help="metrics root (cohort.json, train/<probe>.json, eval/<probe>.json)")
    fp.add_argument("--reports", default="reports", help="reports directory to check (writable)")
    fp.add_argument("--json", required=True,
                    help="where to write the footprint JSON ('-' prints it on stdout instead "
                         "of the table)")
    fp.set_defaults(func=run_footprint)

    sz = sub.add_parser(
        "sizing", parents=[common],
        help="GPU-hours and storage to re-extract token-level embeddings",
        description="Size a re-extraction of token-level hidden states (e.g. HuBERT-ECG): "
                    "storage bytes, a pooled alternative, GPU-hours, wall clock on G GPUs and "
                    "whether the result fits the disk. Values come from the params block "
                    "`sizing` and/or flags (flags win).",
        epilog=_SIZING_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sz.add_argument("--params", help="params.yaml with a `sizing` block (optional with flags)")
    sz.add_argument("--json", help="write the flat result JSON here (atomically); '-' prints "
                                   "it on stdout instead of the table")
    for flag, key, _kind in _SIZING_FLAGS:
        sz.add_argument(flag, dest=key, default=None, metavar=key.upper(),
                        help=f"overrides sizing.{key}")
    sz.set_defaults(func=run_sizing)


def _convert(flag: str, key: str, kind: str, text: str) -> Any:
    from rightsize.probes.sizing_config import parse_size

    name = f"sizing.{key} ({flag})"
    if kind == "str":
        return text
    if kind == "size":
        return parse_size(text, name)
    want = "an integer" if kind == "int" else "a number"
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            pass
    try:
        value = float(text)
    except ValueError:
        raise ParamsError(f"{name}: expected {want}, got {text!r}") from None
    if kind == "float":
        return value
    if not value.is_integer():  # ints may be written 1e6 or 1_000_000
        raise ParamsError(f"{name}: expected {want}, got {text!r}")
    return int(value)


def sizing_config_from(args: argparse.Namespace) -> Any:
    """Build the :class:`SizingConfig` from ``--params`` (block ``sizing``) and flag overrides."""
    from rightsize.params import load_params, parse
    from rightsize.probes.sizing_config import SizingConfig, parse_size

    block: dict[str, Any] = {}
    if args.params:
        raw = load_params(args.params)
        if "sizing" not in raw:
            raise ParamsError(f"{args.params}: missing key sizing")
        if not isinstance(raw["sizing"], dict):
            raise ParamsError("sizing: expected a mapping")
        block = dict(raw["sizing"])
        if isinstance(block.get("disk_bytes"), str):
            block["disk_bytes"] = parse_size(block["disk_bytes"], "sizing.disk_bytes")
    for flag, key, kind in _SIZING_FLAGS:
        text = getattr(args, key)
        if text is not None:
            block[key] = _convert(flag, key, kind, text)
    if not args.params:
        missing = [(f, k) for f, k, _ in _SIZING_FLAGS if k not in block and k != "disk_bytes"]
        if missing:
            flag, key = missing[0]
            raise ParamsError(f"sizing.{key}: missing (give {flag} or --params; also missing: "
                              f"{', '.join(f for f, _ in missing[1:]) or 'nothing else'})")
    return parse(SizingConfig, block, "sizing")


def run_sizing(args: argparse.Namespace) -> int:
    """``rightsize sizing``: print the sizing table and optionally write the JSON."""
    from rightsize.probes.sizing import size_extraction, table_rows

    cfg = sizing_config_from(args)
    result = size_extraction(cfg)
    if args.json:
        console.emit_json(args.json, result)
    if args.json == "-":
        return 0
    if not console.quiet():
        _print_table("re-extraction sizing", table_rows(result))
    if args.json:
        console.info(f"wrote {args.json}")
    return 0


def run_footprint(args: argparse.Namespace) -> int:
    """``rightsize footprint``: measure and write the footprint JSON."""
    from rightsize.params import load_params, parse
    from rightsize.probes.footprint import (
        CohortShape,
        FootprintConfig,
        FootprintPaths,
        measure_footprint,
    )

    raw = load_params(args.params)
    cfg = parse(FootprintConfig, _block(raw, "footprint", args.params), "footprint")
    cohort = _block(raw, "cohort", args.params)
    shape = parse(CohortShape, {k: cohort[k] for k in ("n_subjects", "max_clips", "echo_dim",
                                                       "ecg_dim") if k in cohort}, "cohort")
    probes = _block(raw, "train", args.params).get("probes")
    if (not isinstance(probes, list) or not probes
            or not all(isinstance(p, str) and p for p in probes)):
        raise ParamsError(f"train.probes: expected a non-empty list of probe names, got {probes!r}")

    paths = FootprintPaths(manifest=Path(args.manifest), models=Path(args.models),
                           metrics_dir=Path(args.metrics_dir), reports=Path(args.reports))
    result = measure_footprint(paths, cfg, shape, tuple(probes))
    console.emit_json(args.json, result)
    if args.json == "-":
        return 0
    if not console.quiet():
        _print_table("footprint", _footprint_rows(result))
    console.info(f"wrote {args.json}")
    return 0


def _block(raw: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    if key not in raw:
        raise ParamsError(f"{path}: missing key {key}")
    if not isinstance(raw[key], dict):
        raise ParamsError(f"{key}: expected a mapping, got {type(raw[key]).__name__}")
    return raw[key]


def _footprint_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    from rightsize.probes.sizing_config import format_bytes

    rows = [("manifest", f"{format_bytes(result['manifest_bytes'])} "
                         f"({result['payload_measured_ratio']:.2f}x the float32 payload "
                         f"at max_clips={result['max_clips']})")]
    for probe, c in result["checkpoints"].items():
        rows.append((f"checkpoint {probe}", f"{format_bytes(c['bytes'])}, {c['params']:,} params"))
    for row in result["payload_table"]:
        rows.append((f"payload max_clips={row['max_clips']}", format_bytes(row["payload_bytes"])))
    for stage, mb in result["peak_rss_mb"].items():
        rows.append((f"peak RSS {stage}", f"{mb:,.0f} MB"))
    for name, ok in result["writable"].items():
        rows.append((f"writable {name}/", "yes" if ok else "NO"))
    rows.append(("free disk", format_bytes(result["free_disk_bytes"])))
    return rows


def _print_table(title: str, rows: list[tuple[str, str]]) -> None:
    """Print (label, value) rows with rich when importable, else as aligned plain text."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is a dependency, but stay usable without it
        width = max(len(label) for label, _ in rows)
        print(title)
        for label, value in rows:
            print(f"  {label:<{width}}  {value}")
        return
    table = Table(title=title, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for label, value in rows:
        table.add_row(label, value)
    Console().print(table)
