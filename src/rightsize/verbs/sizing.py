"""Verbs: footprint (what the probe pipeline occupies) and sizing (from measured encoders)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from rightsize import console
from rightsize.atomic import check_writable
from rightsize.errors import ParamsError
from rightsize.verbs import headline

log = logging.getLogger(__name__)

_SIZING_EPILOG = """\
example:
  rightsize sizing --params params.yaml --manifest data/manifest.parquet \\
      --bench-dir metrics/encoders --gpu-dir measurements/gpu --json metrics/sizing.json

Every rate comes from a measurement: tokens, FLOPs, CPU records/s and CPU preprocessing
from metrics/encoders/<model>.json (the encoder_bench stage); GPU records/s from a
committed GPU file in --gpu-dir whose geometry matches (`rightsize bench-encoder --device
cuda`), else estimated from the measured FLOPs at sizing.estimate.utilisation and labelled
so; free space, the write rate of float16 token shards and the read rate of input files
are measured here at sizing.disk.path (run this on the target machine to measure its
disk). Every scenario count carries its source. The ask leads with the cheapest option
that finishes within sizing.deadline_h: this machine's CPU, else the fewest GPUs.
"""


#: What each task of the ask's job script runs (the extract stage's params and output; the
#: script appends --task I/N), as `rightsize extract --executor slurm` builds it.
ASK_TASK_COMMAND = ("rightsize", "extract", "--params", "params.yaml", "--out", "data/ecg_tokens",
                    "--executor", "local")


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``sizing`` verb to the rightsize parser."""
    sz = sub.add_parser(
        "sizing", parents=[common],
        help="re-extraction: cheapest hardware, time, storage",
        description="Size re-extracting embeddings from the measured encoder bench files: "
                    "per scenario (the paired cohort in the manifest and the sourced counts "
                    "of sizing.scenarios) and model, the records, tokens, storage, "
                    "wall-clock on this machine's CPU and on sizing.gpus GPUs (measured on a "
                    "GPU, or estimated from measured FLOPs), what bounds each (compute, "
                    "preprocessing, reading or writing) and whether it fits the disk; the "
                    "ask names the cheapest option within sizing.deadline_h.",
        epilog=_SIZING_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sz.add_argument("--params", default="params.yaml", help="params file (block sizing)")
    sz.add_argument("--manifest", default="data/manifest.parquet",
                    help="cohort manifest: the paired cohort's ECG records and echo clips")
    sz.add_argument("--bench-dir", default="metrics/encoders",
                    help="encoder bench files <model>.json (default: metrics/encoders)")
    sz.add_argument("--gpu-dir", default="measurements/gpu",
                    help="committed GPU bench files (default: measurements/gpu)")
    sz.add_argument("--json", help="write the result JSON here (atomically); '-' prints it on "
                                   "stdout instead of the table")
    sz.add_argument("--pilot", metavar="JSON",
                    help="a pilot extraction's metrics (metrics/extract.json): each ECG "
                         "scenario re-predicted from its measured seconds per record and "
                         "start-up, beside the bench's, with the pilot's machine named, and "
                         "the CPU request from it")
    sz.add_argument("--job-script",
                    help="write the ask's Slurm job script here (what `rightsize extract "
                         "--executor slurm --dry-run` prints, with the ask's GPUs and time)")
    headline.add_argument(sz, "the ask's wall hours and storage bytes")
    sz.set_defaults(func=run_sizing)


def _read_json(path: Path) -> dict[str, Any]:
    import json

    from rightsize.errors import DataError, InputError

    if not path.is_file():
        raise InputError(f"{path}: bench file not found (run `dvc repro encoder_bench` or "
                         f"`rightsize bench-encoder`)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not valid JSON: {exc}") from None
    from rightsize.sizing.bench_file import check_bench

    return check_bench(data, str(path))


def paired_counts(manifest: Path, benches: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The paired cohort's counts with their source: ECG rows with an ECG, echo clip vectors.

    The source names the manifest, the column counted, and "synthetic cohort" when the
    manifest's metadata says it was generated (``cohort.source: synthetic``).
    """
    from rightsize.cohort.manifest import metadata_of, open_manifest
    from rightsize.errors import DataError
    from rightsize.sizing.config import ScenarioCount

    pf = open_manifest(manifest)
    origin = metadata_of(pf.schema_arrow, manifest).get("source", "unknown")
    try:
        table = pf.read(columns=["has_ecg", "n_clips"])
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types
        raise DataError(f"{manifest}: cannot read has_ecg/n_clips: {exc}") from None
    ecg = int(table.column("has_ecg").to_numpy().sum())
    clips = int(table.column("n_clips").to_numpy().astype("int64").sum())
    cohort = "synthetic cohort" if origin == "synthetic" else f"cohort source {origin}"
    out = {}
    for m, b in benches.items():
        if b["family"] == "hubert_ecg":
            out[m] = ScenarioCount(ecg, f"{cohort}: rows of {manifest} with has_ecg")
        else:
            out[m] = ScenarioCount(clips, f"{cohort}: n_clips summed over {manifest}, "
                                          f"one video per clip vector")
    return out


def _shard_shape(cfg: Any, benches: dict[str, dict[str, Any]]) -> tuple[int, ...]:
    """One record's kept states as a re-extraction writes them: (layers, vectors, hidden)."""
    order = [*cfg.ask.models, *(m for m in cfg.models if m not in cfg.ask.models)]
    model = next((m for m in order if cfg.models[m].keep == "tokens"), order[0])
    from rightsize.sizing.plan import vectors_per_record

    b, ms = benches[model], cfg.models[model]
    return (ms.layers_kept, vectors_per_record(b, ms), int(b["hidden_size"]))


def _pilot(path: str | None) -> dict[str, Any] | None:
    """The pilot run's metrics, read and checked before any measuring (exit 4 naming it)."""
    if path is None:
        return None
    import json

    from rightsize.errors import DataError, InputError
    from rightsize.sizing.pilot import check_pilot

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read the pilot ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON: {exc}") from None
    return check_pilot(data, path)


def run_sizing(args: argparse.Namespace) -> int:
    """``rightsize sizing``: measure the disk, size every scenario; table and JSON."""
    from rightsize.machine import stamp as machine_stamp
    from rightsize.params import load_params, parse
    from rightsize.sizing.config import SizingConfig, check_retired
    from rightsize.sizing.disk import measure_disk
    from rightsize.sizing.plan import size_all
    from rightsize.sizing.report_rows import table_rows

    check_writable(args.headline, args.job_script)
    raw = load_params(args.params)
    if "sizing" not in raw:
        raise ParamsError(f"{args.params}: missing key sizing")
    if not isinstance(raw["sizing"], dict):
        raise ParamsError("sizing: expected a mapping")
    check_retired(raw["sizing"])
    cfg = parse(SizingConfig, raw["sizing"], "sizing")
    benches = {m: _read_json(Path(args.bench_dir) / f"{m}.json") for m in cfg.models}
    gpu_dir = Path(args.gpu_dir)
    gpu_files = {p.name: _read_json(p) for p in sorted(gpu_dir.glob("*.json"))} \
        if gpu_dir.is_dir() else {}
    from rightsize.sizing.gpu_files import check_gpu_files

    check_gpu_files(gpu_files, cfg.gpu)          # before the disk is measured: fail fast
    pilot = _pilot(args.pilot)
    paired = paired_counts(Path(args.manifest), benches)
    input_bytes = next((b["preprocess"]["record_file_bytes"] for b in benches.values()
                        if isinstance(b.get("preprocess"), dict)
                        and b["preprocess"].get("record_file_bytes")), None)
    d = cfg.disk
    console.info(f"sizing: measuring writes of {d.write_mb} MB of {d.format} shards at {d.path}")
    disk = measure_disk(d.path, _shard_shape(cfg, benches), d.write_mb, d.shard_mb, d.format,
                        input_bytes, d.read_files)
    result = size_all(cfg, benches, gpu_files, paired, disk)
    if pilot is not None:
        from rightsize.sizing.pilot import pilot_block, pilot_requests, pilot_words

        block = pilot_block(pilot, args.pilot, result)
        block["requests"] = pilot_requests(block, pilot, result, cfg)
        result["pilot"] = block
        result["text"]["pilot"] = pilot_words(block)
    result["machine"] = machine_stamp()
    if args.json:
        console.emit_json(args.json, result)
    if args.headline:
        headline.write(args.headline, headline.headline("sizing", sizing=result))
    if args.job_script:
        from rightsize.atomic import write_text
        from rightsize.extraction.slurm import ask_job, job_script

        job = ask_job(result["ask"], int(result["hardware"]["cores"]), ASK_TASK_COMMAND,
                      Path("data/ecg_tokens/slurm"))
        write_text(args.job_script, job_script(job))
    if args.json == "-":
        return 0
    if not console.quiet():
        import sys

        from rightsize.sizing.report_rows import request_text

        console.print_table("re-extraction sizing", table_rows(result))
        sys.stdout.write(request_text(result))
    if args.json:
        console.info(f"wrote {args.json}")
    return 0
