"""Verbs: extract (token-level HuBERT-ECG states from WFDB records) and ecg-demo (a corpus).

Only the standard library and rightsize.errors/console are imported at module level; the
engines load inside the run functions.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from rightsize import console
from rightsize.errors import InputError
from rightsize.verbs import headline

EPILOG = """\
examples:
  rightsize ecg-demo data/ecg_demo --params params.yaml
  rightsize extract --params params.yaml --out data/ecg_tokens --events data/extract_runs \\
      --metrics metrics/extract.json --bench metrics/encoders/ecg.json --sizing metrics/sizing.json
  rightsize extract --params params.yaml --out /scratch/ecg --skip-bad --workers 8
  rightsize extract --params params.yaml --out /scratch/ecg --task 3/16   # task 3 of 16

The record list and root come from extract.records / extract.root (MIMIC-IV-ECG's
record_list.csv and the folder holding files/). A rerun does only the shards missing or
invalid; the output folder's layout: docs/outputs.md.

exit codes: 0 ok; 2 bad params or flag; 4 bad data (a bad record, named; weights that do not
fit, naming the tensor); 5 scheduler (--executor slurm)
"""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add extract and ecg-demo to the rightsize parser."""
    p = sub.add_parser(
        "extract", parents=[common], epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="token-level HuBERT-ECG states of WFDB records",
        description="Read the record list (extract.records, MIMIC-IV-ECG layout), preprocess "
                    "each WFDB record with HuBERT-ECG's recipe (the encoder bench's function), "
                    "encode it and write the chosen layers' hidden states into shards of "
                    "extract.shard_records records, with an index, an errors table and "
                    "SHA256SUMS. Resumable: a rerun redoes only missing or invalid shards.")
    p.add_argument("--params", default="params.yaml",
                   help="params file holding the `extract` block (default: params.yaml)")
    p.add_argument("-o", "--out", required=True,
                   help="output folder (created; resumed if present)")
    p.add_argument("--events", default=None,
                   help="write each worker's tfevents log (records/s, batch time) under here, "
                        "one run <host>.rank<r> per worker: `rightsize telemetry` reads it")
    p.add_argument("--json", "--metrics", dest="metrics", default=None, metavar="PATH",
                   help="write the run's detail JSON here ('-': stdout; --metrics is the older "
                        "spelling)")
    headline.add_argument(p, "records, wall clock, the ask's predicted range and the ratio")
    p.add_argument("--bench", default=None, metavar="JSON",
                   help="the encoder bench file (metrics/encoders/ecg.json): with --sizing, "
                        "the ask's prediction for this run is set beside its wall clock")
    p.add_argument("--sizing", default=None, metavar="JSON",
                   help="metrics/sizing.json: the disk rates the prediction uses")
    p.add_argument("--task", default=None, metavar="I/N",
                   help="run only task I of N (0-based): its contiguous range of shards")
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes (default: extract.workers; 0 = one per "
                        "threads_per_worker cores)")
    p.add_argument("--skip-bad", action="store_true", default=None,
                   help="list bad records in errors.csv and go on (default: extract.skip_bad; "
                        "otherwise the first bad record stops the run, exit 4)")
    p.add_argument("--verify-inputs", action="store_true",
                   help="on a rerun, compare each record file's SHA-256 with the one its "
                        "shard was made from (default: size and modification time)")
    p.add_argument("--compute-dtype", choices=("auto", "float32", "bfloat16"), default=None,
                   metavar="DTYPE",
                   help="auto, float32 or bfloat16: the dtype the forwards run in (default: "
                        "extract.compute_dtype; auto = "
                        "bfloat16 on a GPU or a CPU with AMX, else float32)")
    p.add_argument("--executor", choices=("local", "slurm"), default=None,
                   help="local worker processes (default) or a Slurm array job")
    p.add_argument("--dry-run", action="store_true",
                   help="with --executor slurm: print the job script, submit nothing")
    p.set_defaults(func=run_extract)

    d = sub.add_parser(
        "ecg-demo", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  rightsize ecg-demo data/ecg_demo --params params.yaml\n\n"
               "exit codes: 0 ok; 2 bad params or an output that cannot be written",
        help="a synthetic WFDB corpus, MIMIC-IV-ECG layout",
        description="Write ecg_demo.records synthetic 12-lead records (marked synthetic in "
                    "every header and in SYNTHETIC.txt) and record_list.csv into FOLDER.")
    d.add_argument("folder", help="folder to write (replaced whole)")
    d.add_argument("--params", default="params.yaml",
                   help="params file holding the `ecg_demo` block (default: params.yaml)")
    d.set_defaults(func=run_ecg_demo)


def run_ecg_demo(args: argparse.Namespace) -> int:
    """Write the demo corpus into a staged folder and swap it into place."""
    from rightsize import atomic
    from rightsize.extraction.config import EcgDemoConfig
    from rightsize.extraction.demo_corpus import write_demo_corpus
    from rightsize.params import load_block

    cfg = load_block(args.params, "ecg_demo", EcgDemoConfig)
    atomic.check_writable(args.folder, folder=True)
    with atomic.staged_dir(args.folder) as stage:
        write_demo_corpus(Path(stage), cfg.records, cfg.seed, cfg.seconds, cfg.sample_hz)
    console.info(f"{args.folder}: {cfg.records} synthetic ECG records (seed {cfg.seed})")
    return 0


def _config(args: argparse.Namespace) -> Any:
    import dataclasses

    from rightsize.extraction.config import ExtractConfig
    from rightsize.params import load_block

    cfg = load_block(args.params, "extract", ExtractConfig)
    over = {k: v for k, v in (("workers", args.workers), ("skip_bad", args.skip_bad),
                              ("executor", args.executor),
                              ("compute_dtype", getattr(args, "compute_dtype", None)))
            if v is not None}
    cfg = dataclasses.replace(cfg, **over)
    cfg.validate("extract")
    return cfg


def _prediction_inputs(args: argparse.Namespace, cfg: Any) -> tuple[Any, Any, Any] | None:
    """The bench and the disk measurement the prediction uses, read and checked before any
    work (exit 4 naming the file: not a bench, a bad rate, another model, size, geometry or
    batch); None without --bench/--sizing."""
    if not args.bench or not args.sizing:
        return None
    from rightsize.sizing.bench_file import check_bench, check_scenarios, check_sizing_file
    from rightsize.sizing.predict import check_bench_fits

    bench = check_bench(_read_json(args.bench), args.bench)
    sizing = _read_json(args.sizing)
    disk = check_sizing_file(sizing, args.sizing)
    check_bench_fits(bench, _shape(cfg, (1,)), args.bench)
    return bench, disk, check_scenarios(sizing, args.sizing)


def _shape(cfg: Any, shard_sizes: tuple[int, ...]) -> Any:
    from rightsize.extraction.run import default_workers
    from rightsize.sizing.predict import RunShape
    from rightsize.sizing.units import DTYPE_BYTES

    return RunShape(workers=default_workers(cfg), threads_per_worker=cfg.threads_per_worker,
                    batch_size=cfg.batch_size, size=cfg.size,
                    crops_per_record=cfg.crops_per_record, depth=max(cfg.layers),
                    stored_layers=len(cfg.stored_layers), dtype_bytes=DTYPE_BYTES[cfg.dtype],
                    shard_sizes=shard_sizes, device=cfg.device, compute_dtype=cfg.computes_in)


def _prediction(inputs: tuple[Any, Any, Any] | None, cfg: Any, shard_sizes: tuple[int, ...]
                ) -> dict[str, Any] | None:
    """The ask's CPU prediction for these shards, or None without --bench/--sizing."""
    if inputs is None or not sum(shard_sizes):
        return None
    from rightsize.sizing.predict import predict_cpu_run

    bench, disk, _ = inputs
    return predict_cpu_run(bench, _shape(cfg, shard_sizes), disk)


def _records_done(bar: console.Progress, workers: int) -> Any:
    """The run's ``on_records``: the records done on ``bar``; until the first, the workers'
    start-up and its seconds so far."""
    def on_records(done: int) -> None:
        bar.set(done, "" if done else f"(starting {workers} worker(s), {bar.seconds:.0f} s)")
    bar.note = f"(starting {workers} worker(s))"
    return on_records


def _read_json(path: str) -> dict[str, Any]:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise InputError(f"{path}: not JSON ({exc})") from None


def run_extract(args: argparse.Namespace) -> int:
    """Plan, run the shards still to do, close the folder when complete, write metrics."""
    from rightsize import atomic
    from rightsize.extraction.record_list import parse_task, read_record_list, shard_sizes

    cfg = _config(args)
    if args.dry_run and cfg.executor != "slurm":
        raise InputError("--dry-run applies to --executor slurm only")
    if cfg.executor == "slurm" and args.task:
        raise InputError("--task: a task of --executor local (the slurm executor sets it)")
    atomic.check_writable(args.out, folder=True)
    atomic.check_writable(args.metrics, args.headline)
    task = parse_task(args.task) if args.task else None
    inputs = _prediction_inputs(args, cfg)
    records = read_record_list(Path(cfg.records), Path(cfg.root))
    if cfg.executor == "slurm":
        from rightsize.verbs.extract_slurm import run_extract_slurm

        return run_extract_slurm(args, cfg, records, lambda n: _prediction(
            inputs, cfg, shard_sizes(n, cfg.shard_records)))
    return _run(args, cfg, records, task, inputs)


def _run(args: argparse.Namespace, cfg: Any, records: Any, task: tuple[int, int] | None,
         inputs: tuple[Any, Any, Any] | None) -> int:
    from rightsize.extraction.finalize import errors_csv
    from rightsize.extraction.plan import make_plan
    from rightsize.extraction.report import LocalRun, close_if_complete, run_metrics
    from rightsize.extraction.run import BadRecordError, default_workers, run_local
    from rightsize.machine import stamp as machine_stamp

    out, events = Path(args.out), Path(args.events) if args.events else None
    start = time.perf_counter()
    plan = make_plan(cfg, records, out, task, getattr(args, "verify_inputs", False))
    workers = min(default_workers(cfg), max(len(plan.todo), 1))
    shard_sizes = plan.todo_sizes
    todo_records = sum(shard_sizes)
    console.info(f"extract: {len(records)} records in {plan.shards} shards; this run "
                 f"{len(plan.todo)} shard(s) ({todo_records} records) on {workers} worker(s), "
                 f"{len(plan.done)} already done; {plan.identity['features']}")
    rank_base = task[0] * workers if task else 0
    if plan.todo:
        console.info(f"extract: starting {workers} worker(s)")
    bar = console.Progress("extract:", total=todo_records, unit="records")
    on_records = _records_done(bar, workers) if bar.enabled else None
    with bar:
        try:
            stats = run_local(plan, workers, events, rank_base,
                              lambda f: plan.done.__setitem__(f.shard, f), on_records)
        except BadRecordError as exc:
            from rightsize import atomic

            atomic.write_text(out / "errors.csv", errors_csv([exc.error]))
            raise
    counts = close_if_complete(plan)
    wall = time.perf_counter() - start
    prediction = _prediction(inputs, cfg, shard_sizes)
    metrics = run_metrics(plan, LocalRun(stats, workers, task), wall, todo_records, counts)
    metrics["machine"] = machine_stamp()
    if prediction is not None:
        from rightsize.sizing.predict import STARTUP, compare

        metrics["prediction"] = prediction
        metrics["prediction_check"] = compare(
            prediction, wall, {**metrics["parts_wall_s"], STARTUP: metrics["startup_and_other_s"]})
    if inputs is not None and inputs[2] is not None and todo_records:
        from rightsize.sizing.pilot import pilot_block, pilot_words

        pilot = pilot_block(metrics, "this run", inputs[2])
        metrics["pilot"] = {**pilot, "words": pilot_words(pilot)}
    if args.metrics:
        console.emit_json(args.metrics, metrics)
    if args.headline:
        headline.write(args.headline, headline.headline("extract", extract=metrics))
    rate = todo_records / wall if wall > 0 else 0.0
    console.info(f"{out}: {todo_records} records in {wall:.1f} s ({rate:.1f} records/s); "
                 + (f"complete: {counts['good']} good, {counts['bad']} bad"
                    if counts else "not complete yet (other tasks' shards missing)")
                 + (f"; predicted {metrics['prediction_check']['predicted_wall_s_low']:.0f}-"
                    f"{metrics['prediction_check']['predicted_wall_s_high']:.0f} s"
                    if prediction and prediction.get("wall_s_low") else ""))
    if todo_records and metrics.get("compute_words"):
        console.info(f"extract: {metrics['compute_words']}")
    return 0
