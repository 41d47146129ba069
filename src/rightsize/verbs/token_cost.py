"""Verb: token-cost (the fused probe's cost at ECG token counts, measured on this CPU)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from rightsize import console
from rightsize.errors import InputError
from rightsize.verbs import headline


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's verb to the rightsize parser."""
    p = sub.add_parser(
        "token-cost", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="fused probe cost at ECG token counts (s, RSS, bytes)",
        description=(
            "With --tokens N (stage token_cost_case@N, one process per count so that each peak\n"
            "RSS is its own): build a synthetic cohort of the configured geometry at\n"
            "cohort.ecg_tokens N, then train and evaluate the fused probe on it with one\n"
            "seed, in this process, as train@fused does (checkpoint, eval and missing-\n"
            "modality metrics, planted truth). Records the manifest's bytes, the build's and\n"
            "the train + evaluate's wall-clock and peak RSS. With token_cost.epochs_timed\n"
            "E_t > 0 the training runs E_t epochs and the train + evaluate is extrapolated to\n"
            "the recipe's epochs (train.fused.tokens.epochs at N > 1, else train.fused.epochs)\n"
            "from the median of epochs 2..E_t (read from the run's event file); every number\n"
            "says whether it was measured whole or extrapolated. Scratch\n"
            "files go to a temporary folder (--workdir), removed when the count finishes.\n"
            "With --cases DIR (stage token_cost): join DIR/tokens_<N>.json of every count of\n"
            "token_cost.tokens into one JSON (and the headline)."),
        epilog=("examples:\n  rightsize token-cost --params params.yaml --tokens 186 "
                "--json metrics/token_cost/tokens_186.json\n"
                "  rightsize token-cost --params params.yaml --cases metrics/token_cost "
                "--json metrics/token_cost.json\n"
                "    --headline metrics/headline/token_cost.json"))
    p.add_argument("--params", default="params.yaml",
                   help="params file: token_cost, cohort, train, evaluate (default: params.yaml)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--tokens", type=int, metavar="N",
                      help="measure the fused probe at N ECG tokens per subject")
    what.add_argument("--cases", metavar="DIR",
                      help="join DIR/tokens_<N>.json for every N of token_cost.tokens")
    p.add_argument("--json", required=True,
                   help="metrics JSON to write ('-' prints it on stdout)")
    headline.add_argument(p, "the largest token count's ECG tokens, seconds, peak RSS, "
                             "manifest bytes (with --cases)")
    p.add_argument("--workdir", default=None,
                   help="where the scratch cohort and model go (default: the system's "
                        "temporary folder; 186 tokens take about 0.7 GB)")
    p.set_defaults(func=run_token_cost)


def run_token_cost(args: argparse.Namespace) -> int:
    """``rightsize token-cost``: measure one token count, or join every count's JSON."""
    from rightsize.atomic import check_writable

    if args.tokens is not None and args.headline:
        raise InputError("--headline: needs --cases (the headline is the largest count's)")
    check_writable(args.json, args.headline)
    return _measure(args) if args.tokens is not None else _gather(args)


def _measure(args: argparse.Namespace) -> int:
    """One count: the case's params parsed once, the cohort built and the probe trained,
    evaluated and timed in this process; the case's JSON."""
    import tempfile

    from rightsize.machine import stamp
    from rightsize.measure import memory_hwm_mb
    from rightsize.params import load_params
    from rightsize.probes.measurements.token_cost import parse_case

    case = parse_case(load_params(args.params), args.tokens)
    floor = memory_hwm_mb()
    with tempfile.TemporaryDirectory(prefix="rightsize-token-cost-", dir=args.workdir) as tmp, \
            console.task(f"token cost: fused at {case.tokens} ECG token(s), one seed"):
        node, hardware = _run_case(Path(tmp), case)
    console.info(f"{case.tokens} ECG token(s): manifest {node['manifest_bytes'] / 1e6:,.0f} MB, "
                 f"train + evaluate {node['train_eval_s']:.1f} s ({node['basis']}), "
                 f"peak RSS {node['peak_rss_mb']:,.0f} MiB")
    console.emit_json(args.json, {"case": node, "epochs": case.epochs,
                                  "epochs_timed": case.epochs_timed, "rss_floor_mb": floor,
                                  "hardware": hardware, "machine": stamp()})
    return 0


def _run_case(folder: Path, case: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Build ``case``'s cohort and train + evaluate the fused probe in ``folder``; the case's
    node and the training's hardware stamp."""
    from rightsize.cohort.build import build_manifest
    from rightsize.measure import memory_hwm_mb, reset_memory_hwm
    from rightsize.output_set import OutputSet
    from rightsize.probes.engine.train import resolve_device
    from rightsize.probes.measurements.token_cost import (
        PROBE,
        Measured,
        case_result,
        epoch_seconds,
        extrapolate,
    )
    from rightsize.probes.run import RunFiles, train_and_evaluate

    bar = console.Progress(f"token cost: cohort at {case.tokens} ECG token(s),",
                           total=case.cohort.n_subjects, unit="subjects")
    with bar:                  # its draws stay outside the measured build, its updates inside
        t0 = time.perf_counter()
        report = build_manifest(case.cohort, folder / "manifest.parquet",
                                on_chunk=bar.set if bar.enabled else None,
                                truth=folder / "truth.parquet")
        build = Measured(time.perf_counter() - t0, memory_hwm_mb())
    reset_memory_hwm()  # the training's peak is its own, not the build's (an upper bound where
                        # the mark cannot be reset)
    t0 = time.perf_counter()
    # as train@fused runs: checkpoint, events, curve, evaluate and missing-modality with the
    # planted truth (the scratch folder's files; the numbers come back as values)
    with OutputSet(anchor=str(folder / "model")) as outputs:
        res = train_and_evaluate(PROBE, str(folder / "manifest.parquet"), case.train,
                                 resolve_device(case.train.device), outputs,
                                 RunFiles(str(folder / "model"), str(folder / "events"),
                                          str(folder / "curve.csv")),
                                 case.evaluate, evaluate=True, missing=True,
                                 truth=str(folder / "truth.parquet"), start=t0)
    run = Measured(time.perf_counter() - t0, memory_hwm_mb())
    assert res.eval is not None
    est = extrapolate(run.wall_s, case.epochs, case.epochs_run,
                      epoch_seconds(res.val_walls),
                      int(res.train.get("steps_per_epoch", 0)))
    node = case_result(case.tokens, report.manifest_bytes, report.metadata["payload_bytes"],
                       build, run, res.train, res.eval, est,
                       str(res.checkpoint.get("accelerator", "none")))
    return node, res.eval.get("hardware") or {}


def _gather(args: argparse.Namespace) -> int:
    """Every count's JSON joined into the stage's JSON and headline."""
    from rightsize.errors import DataError
    from rightsize.machine import joined_stamp
    from rightsize.params import load_params, parse
    from rightsize.probes.measurements.token_cost import TokenCostConfig, summary

    cfg = parse(TokenCostConfig, load_params(args.params).get("token_cost") or {}, "token_cost")
    parts = []
    for n in cfg.tokens:
        path = Path(args.cases) / f"tokens_{n}.json"
        if not path.is_file():
            raise InputError(f"{path}: missing (dvc repro token_cost_case@{n})")
        part = json.loads(path.read_text(encoding="utf-8"))
        if part.get("epochs_timed") != cfg.epochs_timed:
            raise DataError(f"{path}: measured with token_cost.epochs_timed "
                            f"{part.get('epochs_timed')}, params say {cfg.epochs_timed} "
                            f"(dvc repro token_cost_case@{n})")
        parts.append(part)
    cases = [{**p["case"], "epochs": p["epochs"]} for p in parts]   # each count's recipe
    out = summary(cases, cfg, parts[-1]["hardware"], max(p["rss_floor_mb"] for p in parts))
    out["machine"] = joined_stamp([p.get("machine") for p in parts])
    console.emit_json(args.json, out)
    if args.headline:
        headline.write(args.headline, headline.headline("token_cost", token_cost=out))
    return 0
