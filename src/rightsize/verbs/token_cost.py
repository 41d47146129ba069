"""Verb: token-cost (the fused probe's cost at ECG token counts, measured on this CPU)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from rightsize import console
from rightsize.verbs import headline


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's verb to the rightsize parser."""
    p = sub.add_parser(
        "token-cost", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="fused probe cost at ECG token counts (s, RSS, bytes)",
        description=(
            "For every count N of params token_cost.tokens: build a synthetic cohort of the\n"
            "configured geometry at cohort.ecg_tokens N (`rightsize cohort`, a child\n"
            "process), then train and evaluate the fused probe on it with one seed\n"
            "(`rightsize train fused` with --eval-json, --missing-json and --truth, a child\n"
            "process, as train@fused runs it). Records the manifest's bytes, both processes'\n"
            "wall-clock and peak RSS. With token_cost.epochs_timed E_t > 0 the training runs\n"
            "E_t epochs and the whole process is extrapolated to train.fused.epochs from the\n"
            "median of epochs 2..E_t (read from the run's event file); every number says\n"
            "whether it was measured whole or extrapolated. Scratch files go to a temporary\n"
            "folder (--workdir), removed as each count finishes."),
        epilog=("example:\n  rightsize token-cost --params params.yaml "
                "--json metrics/token_cost.json\n  --headline metrics/headline/token_cost.json"))
    p.add_argument("--params", default="params.yaml",
                   help="params file: token_cost, cohort, train, evaluate (default: params.yaml)")
    p.add_argument("--json", required=True,
                   help="metrics JSON to write ('-' prints it on stdout)")
    headline.add_argument(p, "the largest token count's ECG tokens, seconds, peak RSS, "
                             "manifest bytes")
    p.add_argument("--workdir", default=None,
                   help="where the scratch cohorts and models go (default: the system's "
                        "temporary folder; 186 tokens take about 0.7 GB)")
    p.set_defaults(func=run_token_cost)


def run_token_cost(args: argparse.Namespace) -> int:
    """``rightsize token-cost``: measure every token count, write the JSON."""
    import tempfile

    from rightsize.atomic import check_writable
    from rightsize.measure import memory_hwm_mb
    from rightsize.params import load_block, load_params, parse
    from rightsize.probes.engine.config import TrainConfig
    from rightsize.probes.measurements.token_cost import TokenCostConfig, summary

    raw = load_params(args.params)
    cfg = parse(TokenCostConfig, raw.get("token_cost") or {}, "token_cost")
    train = load_block(args.params, "train", TrainConfig)
    check_writable(args.json, args.headline)
    epochs = train.fused.epochs
    cases: list[dict[str, Any]] = []
    hardware: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rightsize-token-cost-", dir=args.workdir) as tmp:
        for n in cfg.tokens:
            with console.task(f"token cost: fused at {n} ECG token(s), one seed"):
                case, hardware = _measure(Path(tmp) / f"tokens_{n}", raw, n,
                                          cfg.epochs_run(epochs), epochs)
            cases.append(case)
            console.info(f"{n} ECG token(s): manifest {case['manifest_bytes'] / 1e6:,.0f} MB, "
                         f"train + evaluate {case['train_eval_s']:.1f} s ({case['basis']}), "
                         f"peak RSS {case['peak_rss_mb']:,.0f} MiB")
    out = summary(cases, cfg, epochs, hardware, memory_hwm_mb())
    console.emit_json(args.json, out)
    if args.headline:
        headline.write(args.headline, headline.headline("token_cost", token_cost=out))
    return 0


def _measure(folder: Path, raw: dict[str, Any], tokens: int, epochs_run: int,
             epochs: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """One token count: the cohort build and the fused train + evaluate, as child processes;
    the case's node and the training process's hardware stamp. ``folder`` is removed."""
    import shutil

    import yaml

    from rightsize.measure import run_measured
    from rightsize.probes.measurements.token_cost import (
        PROBE,
        case_params,
        case_result,
        epoch_seconds,
        extrapolate,
    )
    from rightsize.verbs.cohort import build_command
    from rightsize.verbs.probes import train_command

    folder.mkdir(parents=True)
    params = folder / "params.yaml"
    case = case_params(raw, tokens, epochs_run)
    params.write_text(yaml.safe_dump(case, sort_keys=False), encoding="utf-8")
    cli, env, where = [sys.executable, "-m", "rightsize.cli", "-q"], dict(os.environ), str(folder)
    build = _child(run_measured(cli + build_command(str(params), where), env),
                   f"rightsize cohort at {tokens} ECG token(s)")
    run = _child(run_measured(cli + train_command(PROBE, str(params), where, where), env),
                 f"rightsize train {PROBE} at {tokens} ECG token(s)")
    f = {k: folder / k for k in ("cohort.json", "train.json", "eval.json", "events", "model")}
    built, tm, em = (json.loads(f[k].read_text()) for k in ("cohort.json", "train.json",
                                                            "eval.json"))
    side = json.loads((f["model"] / "checkpoint.json").read_text())
    est = extrapolate(run.wall_s, epochs, epochs_run, epoch_seconds(_val_walls(f["events"])),
                      int(tm.get("steps_per_epoch", 0)))
    result = case_result(tokens, built["manifest_bytes"], built["payload_bytes"], build, run,
                         tm, em, est, str(side.get("accelerator", "none")))
    shutil.rmtree(folder)
    return result, em.get("hardware") or {}


def _val_walls(events: Path) -> Any:
    """Wall times of the run's ``Loss/val_epoch`` points (one per epoch), in step order."""
    import numpy as np

    from rightsize.telemetry.scalars import read_scalars

    cols = read_scalars(events, tags="Loss/val_epoch").columns
    steps = cols.column("step").to_numpy()
    walls = cols.column("wall_time").to_numpy()
    return walls[np.argsort(steps, kind="stable")]


def _child(cost: Any, what: str) -> Any:
    """``cost`` of a child that succeeded; else its error, with its exit code's class."""
    if cost.rc == 0:
        return cost
    from rightsize.errors import DataError, InputError, IntegrityError

    lines = [ln for ln in cost.output_tail.splitlines() if ln.strip()]
    last = lines[-1] if lines else "no output"
    cls = {c.exit_code: c for c in (InputError, IntegrityError, DataError)}.get(cost.rc)
    if cls is None:
        raise RuntimeError(f"{what} exited {cost.rc}: {last}")
    raise cls(f"{what} exited {cost.rc}: {last}")
