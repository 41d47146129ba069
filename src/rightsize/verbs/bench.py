"""Verb: bench-encoder (measure one shape-matched encoder on this machine's CPU or GPU)."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import time
from typing import Any

from rightsize import console
from rightsize.errors import ParamsError
from rightsize.verbs import headline

log = logging.getLogger(__name__)

_EPILOG = """\
examples:
  rightsize bench-encoder ecg --params params.yaml --json metrics/encoders/ecg.json
  # on a GPU node (commit the file; `dvc repro sizing` then uses it for GPU-hours):
  rightsize bench-encoder ecg --params params.yaml --device cuda --compute-dtype bfloat16 \\
      --batch-sizes 16,64,256 --json measurements/gpu/ecg-h100.json

Measures tokens per record and per layer from the real output shapes, hidden-state bytes
per record, forward FLOPs (torch.utils.flop_counter), records/s and peak memory per batch
size (median and spread of the repeats) and, for the ECG encoder, the preprocessing path
per CPU core. Models are built from transformers configs with random weights: nothing is
downloaded.
"""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``bench-encoder`` verb to the rightsize parser."""
    p = sub.add_parser(
        "bench-encoder", parents=[common],
        help="measure an encoder's tokens, bytes, FLOPs, records/s here",
        description="Benchmark one shape-matched encoder (encoder_bench.models.<MODEL>) on "
                    "this machine and write what was measured, with the hardware stamp.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a key of encoder_bench.models (e.g. ecg, echo)")
    p.add_argument("--params", default="params.yaml", help="params file (block encoder_bench)")
    p.add_argument("--json", required=True, help="output JSON ('-' prints it on stdout)")
    p.add_argument("--device", default=None, help="cpu, cuda or cuda:N (overrides the params)")
    p.add_argument("--size", default=None, help="encoder size (overrides the params)")
    p.add_argument("--batch-sizes", default=None, metavar="B,B,...",
                   help="model inputs per forward, comma-separated (overrides the params)")
    p.add_argument("--compute-dtype", default=None,
                   help="auto, float32, bfloat16 or float16 (overrides the params); auto: "
                        "bfloat16 on a GPU or a CPU with AMX, else float32")
    p.add_argument("--repeats", default=None, help="timed forwards per batch size (>= 3)")
    p.add_argument("--full-depth", action="store_true",
                   help="time the full model on CPU too (ignore cpu_timing_layers)")
    p.add_argument("--require-quiet", nargs="?", type=float, const=300.0, default=None,
                   metavar="SECONDS",
                   help="before the CPU timings wait up to SECONDS (default 300) for the "
                        "1-minute load average to fall to half the cores, and keep no timing "
                        "taken above it: exit 5 instead. Without it a loaded machine is "
                        "recorded and said ('measured under load L: may be slow'), exit 0")
    headline.add_argument(p, "tokens and FLOPs per record, records/s")
    p.set_defaults(func=run_bench_encoder)


def bench_config_from(args: argparse.Namespace) -> tuple[Any, Any]:
    """The ``encoder_bench`` block with flag overrides, and the chosen model's entry."""
    from rightsize.params import load_params, parse, require_one_of
    from rightsize.sizing.config import EncoderBenchConfig
    from rightsize.verbs.arglists import int_list

    raw = load_params(args.params)
    if "encoder_bench" not in raw:
        raise ParamsError(f"{args.params}: missing key encoder_bench")
    cfg = parse(EncoderBenchConfig, raw["encoder_bench"], "encoder_bench")
    require_one_of(args.model, list(cfg.models), "encoder_bench.models", "model")
    model = cfg.models[args.model]
    over: dict[str, Any] = {}
    if args.size is not None:
        over["size"] = args.size
    if args.batch_sizes is not None:
        over["batch_sizes"] = int_list(args.batch_sizes,
                                       "encoder_bench.batch_sizes (--batch-sizes)")
    if args.full_depth:
        over["cpu_timing_layers"] = None
    model = dataclasses.replace(model, **over)
    model.validate(f"encoder_bench.models.{args.model}")
    top: dict[str, Any] = {}
    if args.device is not None:
        top["device"] = args.device
    if args.compute_dtype is not None:
        top["compute_dtype"] = args.compute_dtype
    if args.repeats is not None:
        repeats = int_list(args.repeats, "encoder_bench.repeats (--repeats)")
        if len(repeats) != 1:
            raise ParamsError(f"encoder_bench.repeats (--repeats): expected one integer, "
                              f"got {args.repeats!r}")
        top["repeats"] = repeats[0]
    cfg = dataclasses.replace(cfg, **top)
    cfg.validate("encoder_bench")
    return cfg, model


def run_bench_encoder(args: argparse.Namespace) -> int:
    """``rightsize bench-encoder``: measure, write the JSON, print a summary."""
    from rightsize.atomic import check_writable
    from rightsize.errors import InputError

    cfg, model = bench_config_from(args)
    check_writable(args.headline)
    chosen = _compute_dtype(cfg.compute_dtype, cfg.device)
    import torch

    from rightsize.encoders.models import make_spec
    from rightsize.encoders.preprocess import bench_preprocess
    from rightsize.machine import stamp as machine_stamp
    from rightsize.measure import hardware_stamp
    from rightsize.sizing import memory
    from rightsize.sizing.bench import bench_encoder

    key = f"encoder_bench.models.{args.model}"
    if cfg.device.startswith("cuda") and not torch.cuda.is_available():
        raise InputError(f"encoder_bench.device: {cfg.device} requested but torch sees no CUDA "
                         f"device (torch {torch.__version__}); run on a GPU node or use cpu")
    threads = cfg.threads or os.cpu_count() or 1
    torch.set_num_threads(threads)
    geometry = model.geometry()
    spec = make_spec(model.family, model.size, geometry, key)
    from rightsize.sizing import load_average as cpu_load

    cpu = cfg.device == "cpu"
    loads = cpu_load.LoadLog(os.cpu_count() or 1, reader=cpu_load.read_load)
    if cpu and args.require_quiet is not None:
        console.info(f"{args.model}: waiting for a quiet machine (load <= "
                     f"{cpu_load.quiet_limit(loads.cores):g})")
        cpu_load.wait_for_quiet(loads.cores, args.require_quiet, reader=cpu_load.read_load)
    start = time.perf_counter()
    result: dict[str, Any] = {"model": args.model}
    result.update(loads.around("the encoder timing", lambda: bench_encoder(
        spec, cfg.device, model.batch_sizes, cfg.repeats, cfg.warmup, chosen["dtype"],
        model.cpu_timing_layers, on_step=lambda s: console.info(
            f"{args.model}: {s} (at {console.seconds_text(time.perf_counter() - start)})"))))
    measured = ["tokens per layer (output shapes)", "FLOPs (flop_counter)",
                f"records/s and peak memory on {cfg.device}"]
    not_measured = []
    if result["timing"]["extrapolated"]:
        not_measured.append(f"full-depth timing on {cfg.device} ({result['timing']['note']})")
    if model.family == "hubert_ecg" and model.preprocess_records > 0:
        console.info(f"{args.model}: preprocessing {model.preprocess_records} records")
        result["preprocess"] = loads.around("the preprocessing timing", lambda: bench_preprocess(
            geometry, model.preprocess_records, cfg.repeats))
        measured.append("preprocessing records/s per CPU core (page cache warm)")
    elif model.family == "echojepa" and model.preprocess_records > 0:
        from rightsize.encoders.echo_decode import bench_decode

        console.info(f"{args.model}: decoding {model.preprocess_records} DICOM videos")
        result["preprocess"] = loads.around("the decoding timing", lambda: bench_decode(
            geometry, model.preprocess_records, cfg.repeats))
        measured.append("video decoding records/s per CPU core (synthetic DICOM, page cache "
                        "warm)")
    else:
        result["preprocess"] = None
        not_measured.append(f"{'video decoding' if model.family == 'echojepa' else 'preprocessing'}"
                            f" (preprocess_records: 0)")
    if cpu and model.worker_threads is not None:
        from rightsize.sizing.worker_bench import bench_workers

        n = max(1, (os.cpu_count() or 1) // model.worker_threads)
        console.info(f"{args.model}: {n} extraction worker(s) of {model.worker_threads} "
                     f"thread(s): start-up and records/s")
        result["workers"] = loads.around("the worker timing", lambda: bench_workers(
            model.size, geometry.crops_per_record, spec.arch.layers, n, model.worker_threads,
            model.batch_sizes, cfg.repeats, cfg.warmup, chosen["dtype"]))
        measured.append("extraction workers' start-up (spawn, imports, model build) and "
                        "records/s per worker")
    if cpu or result.get("preprocess"):
        result["load"] = loads.as_dict()
        if args.require_quiet is not None:
            loads.require_quiet()
        elif loads.loaded:
            console.warn(f"{args.model}: measured under load {loads.as_dict()['max']:.2f} "
                         f"(above half of {loads.cores} cores): the CPU timings may be slow; "
                         f"--require-quiet waits for a quiet machine")
    result["compute_dtype_choice"] = chosen
    result["measured"] = "; ".join(measured)
    result["not_measured"] = "; ".join(not_measured) or "nothing"
    result["wall_s"] = time.perf_counter() - start
    result["hardware"] = {**hardware_stamp(threads=threads, device=cfg.device),
                          **memory.device_detail(cfg.device)}
    result["machine"] = machine_stamp()
    console.emit_json(args.json, result)
    if args.headline:
        headline.write(args.headline, headline.headline("encoder", args.model, bench=result))
    if args.json != "-" and not console.quiet():
        for line in summary_lines(result):
            console.info(line)
        console.info(f"wrote {args.json}")
    return 0


def _compute_dtype(requested: str, device: str) -> dict[str, str]:
    """``encoder_bench.compute_dtype`` resolved as extract resolves its own (float16 as set)."""
    from rightsize.encoders.compute_dtype import CHOICES, resolve

    if requested not in CHOICES:
        return {"dtype": requested, "requested": requested, "why": "set in the params"}
    return resolve(requested, device).as_dict()


def summary_lines(r: dict[str, Any]) -> list[str]:
    """What was measured, in a few lines (stderr)."""
    from rightsize.fmt import nbytes

    hw = r["hardware"]
    where = hw.get("gpu") or f"{hw['cpu']} ({hw['threads']} threads)"
    lines = [
        f"{r['model']}: {r['family']} {r['size']} on {where}, {r['wall_s']:.1f} s",
        f"  tokens: {r['tokens_per_input']} per input x {r['inputs_per_record']} = "
        f"{r['tokens_per_record']} per record (conv/patch arithmetic: "
        f"{r['tokens_per_input_arithmetic']}), {r['hidden_states']} hidden states of "
        f"{r['hidden_size']}",
        f"  bytes per record, one layer float16: "
        f"{nbytes(r['bytes_per_record']['float16']['one_layer'])}",
        f"  FLOPs per record: {r['flops_per_record'] / 1e9:,.1f} GFLOP (analytic per input "
        f"{r['flops_per_input_analytic'] / 1e9:,.1f}, measured {r['flops_per_input'] / 1e9:,.1f})",
    ]
    for t in r["throughput"].values():
        if t["status"] == "ok":
            lines.append(f"  batch {t['batch']}: {t['records_per_s']:.3g} records/s "
                         f"(median of {t['repeats']}, spread {t['spread_pct']:.0f} %), peak "
                         f"{t['peak_mem_mb']:,.0f} MB")
        else:
            lines.append(f"  batch {t['batch']}: {t['status']}")
    if r["timing"]["extrapolated"]:
        lines.append(f"  timing: {r['timing']['note']}")
    if r.get("workers"):
        w = r["workers"]
        lines.append(f"  workers: {w['workers']} x {w['threads_per_worker']} thread(s), start-up "
                     f"{w['startup_s']:.1f} s each; " + ", ".join(
                         f"batch {t['batch']}: {t['records_per_s_per_worker']:.3g} records/s "
                         f"per worker" for t in w["throughput"].values()))
    if r.get("preprocess"):
        p = r["preprocess"]
        lines.append(f"  preprocessing: {p['records_per_s_per_core']:.0f} records/s per core")
    lines.append(f"  not measured: {r['not_measured']}")
    return lines
