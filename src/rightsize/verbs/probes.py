"""Verbs: train, evaluate, missing-modality (the probe engine in rightsize.probes)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from rightsize import console
from rightsize.errors import InputError
from rightsize.probe_names import PROBES
from rightsize.verbs import headline

_PROBES = " | ".join(PROBES)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("probe", metavar="PROBE", help=f"probe name: {_PROBES}")
    p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    p.add_argument("--manifest", required=True, help="cohort manifest parquet")
    p.add_argument("--device", default=None,
                   help="cpu | cuda | auto (default: params train.device)")


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's verbs to the rightsize parser."""
    raw = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser(
        "train", parents=[common], formatter_class=raw,
        help="train one probe on cached embeddings, save its checkpoint",
        description=(
            "Train PROBE on the manifest's train split, keep the epoch with the lowest\n"
            "validation loss, and write the checkpoint (weights + checkpoint.json) to --out:\n"
            "the whole folder is written beside it and swapped in at the end, so a killed\n"
            "run leaves the previous folder or the new one, never a mix.\n"
            "Settings come from the params file's `train` block; train.seeds replicas are\n"
            "trained (seed 0 in --out, the others in --out/replicas/r<k>). Seed 0's per-epoch\n"
            "losses go to the --curve CSV and its per-step losses to a tfevents file in\n"
            "--events (previous event files there are replaced). With --eval-json the same\n"
            "process then evaluates the saved replicas as `rightsize evaluate` does (params\n"
            "`evaluate` block) and writes the same metrics JSON: one process, one import and\n"
            "one manifest load. With --missing-json it also scores the saved probe with a\n"
            "modality taken away, as `rightsize missing-modality` does."),
        epilog=("example:\n  rightsize train fused --params params.yaml "
                "--manifest data/manifest.parquet \\\n    --out models/fused "
                "--events data/probe_runs/fused --curve metrics/curves/fused.csv \\\n"
                "    --metrics metrics/train/fused.json --eval-json metrics/eval/fused.json \\\n"
                "    --missing-json metrics/missing/fused.json"))
    _common(p)
    p.add_argument("-o", "--out", required=True, help="model directory to write")
    p.add_argument("--events", default=None, help="directory for the tfevents file")
    p.add_argument("--curve", default=None, help="CSV of epoch,train_loss,val_loss")
    p.add_argument("--seed-curves", default=None, metavar="CSV",
                   help="CSV of seed,epoch,train_loss,val_loss: every replica's losses")
    p.add_argument("--json", "--metrics", dest="metrics", default=None, metavar="JSON",
                   help="JSON of training metrics ('-' prints it on stdout)")
    p.add_argument("--eval-json", default=None, metavar="JSON",
                   help="also evaluate the saved probe on the test split and write the "
                        "`rightsize evaluate` metrics JSON here ('-' prints it on stdout)")
    p.add_argument("--missing-json", default=None, metavar="JSON",
                   help="also score the saved probe with the echo or the ECG absent and write "
                        "the `rightsize missing-modality` JSON here ('-' prints it on stdout)")
    headline.add_argument(p, "test MAE and its spread, AUROC, seconds, RSS, MAE without a "
                             "modality; needs --eval-json and --missing-json")
    _truth_arg(p)
    p.set_defaults(func=run_train)

    ev = _model_verb(sub, common, "evaluate", run_evaluate, "metrics/eval/fused.json",
                summary="test MAE and AUROC of a trained probe, with bootstrap CIs",
                description=(
                    "Load the checkpoint in --model, predict the test split and write MAE\n"
                    "(of cohort.target: LVEF by default) and AUROC (target <= its threshold:\n"
                    "EF<=40) with percentile bootstrap intervals (params `evaluate` block),\n"
                    "plus the train-mean baseline, parameter count, checkpoint bytes, wall\n"
                    "clock, peak RSS and hardware stamp, to --json."))
    _truth_arg(ev)
    _model_verb(sub, common, "missing-modality", run_missing, "metrics/missing/fused.json",
                summary="score a trained probe with the echo or the ECG taken away",
                description=(
                    "On test rows that have both modalities, score the probe as is, with the\n"
                    "echo absent and with the ECG absent (inputs zeroed and masked); paired\n"
                    "bootstrap with evaluate.n_bootstrap_missing resamples."))


def _truth_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--truth", default=None, metavar="PARQUET",
                   help="the cohort's truth file (data/cohort.truth.parquet): when it holds "
                        "planted ECG tokens, the evaluation also scores the echo->ECG "
                        "attention on them (attention.echo_to_ecg; probes that attend only)")


def _model_verb(sub: argparse._SubParsersAction, common: argparse.ArgumentParser, name: str,
                func: Callable[[argparse.Namespace], int], example_json: str, summary: str,
                description: str) -> argparse.ArgumentParser:
    """A verb that reads a saved probe (--model) and writes one JSON (--json)."""
    p = sub.add_parser(
        name, parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help=summary, description=description,
        epilog=(f"example:\n  rightsize {name} fused --params params.yaml "
                "--manifest data/manifest.parquet \\\n    --model models/fused "
                f"--json {example_json}"))
    _common(p)
    p.add_argument("--model", required=True, help="model directory written by `train`")
    p.add_argument("--json", required=True,
                   help="metrics JSON to write ('-' prints it on stdout)")
    p.set_defaults(func=func)
    return p


def _setup(args: argparse.Namespace) -> tuple[Any, str]:
    """Check the probe name, parse the train block, resolve the device."""
    from rightsize.params import load_block
    from rightsize.probes.engine.config import DEVICES, TrainConfig
    from rightsize.probes.engine.estimator import Estimator
    from rightsize.probes.registry import spec

    cfg = load_block(args.params, "train", TrainConfig)  # bad params name their key first
    est = Estimator(spec(args.probe), cfg)
    name = args.device or cfg.device
    if name not in DEVICES:
        raise InputError(f"--device: must be one of {', '.join(DEVICES)}, got {name!r}")
    if not est.uses_torch:                  # numpy, CPU only: train.device is for torch
        if name != "cpu":
            console.info(f"{args.probe}: a numpy probe, runs on the CPU (device {name!r} "
                         "applies to the torch probes, concat and fused)")
        return cfg, "cpu"
    from rightsize.probes.engine.train import resolve_device

    return cfg, resolve_device(name)


def run_train(args: argparse.Namespace) -> int:
    """``rightsize train``: fit, select on val, save checkpoint, curve, events, metrics."""
    from rightsize.atomic import check_writable
    from rightsize.output_set import OutputSet
    from rightsize.probes.engine.runlog import replica_curves_csv
    from rightsize.probes.run import RunFiles, train_and_evaluate

    start = time.perf_counter()
    cfg, device = _setup(args)
    # bad params and unwritable outputs fail before fitting
    if args.headline and not (args.eval_json and args.missing_json):
        raise InputError("--headline: needs --eval-json and --missing-json (its numbers "
                         "come from both)")
    ecfg = _evaluate_config(args) if args.eval_json or args.missing_json else None
    check_writable(args.out, args.events, folder=True)
    check_writable(args.curve, args.metrics, args.eval_json, args.missing_json, args.headline,
                   args.seed_curves)
    # Every output is staged and renamed in together at the end, the model folder first out
    # and last in: a failure or kill before then (a full disk included) leaves the previous
    # run's set whole, and a model folder in place has its own run's logs and metrics.
    with OutputSet(anchor=args.out) as outputs:
        run = train_and_evaluate(args.probe, args.manifest, cfg, device, outputs,
                                 RunFiles(args.out, args.events, args.curve), ecfg,
                                 evaluate=bool(args.eval_json), missing=bool(args.missing_json),
                                 truth=args.truth, start=start)
        if args.seed_curves:
            outputs.write_text(args.seed_curves, replica_curves_csv(run.fits, run.seeds))
        for target, metrics in ((args.metrics, run.train), (args.eval_json, run.eval),
                                (args.missing_json, run.missing)):
            if target:
                console.emit_json(target, json_safe(metrics), outputs)
        if args.headline:
            headline.write(args.headline, headline.headline(
                "probe", args.probe, eval=run.eval, missing=run.missing), outputs)
    return 0


def _evaluate_config(args: argparse.Namespace) -> Any:
    """The params file's ``evaluate`` block."""
    from rightsize.params import load_block
    from rightsize.probes.engine.config import EvaluateConfig

    return load_block(args.params, "evaluate", EvaluateConfig)


def _load(args: argparse.Namespace) -> tuple[Any, Any, Any, dict[str, Any], Any, str]:
    """Shared start of evaluate / missing-modality: configs, arrays, checkpoint."""
    cfg, device = _setup(args)
    from rightsize.atomic import check_writable
    from rightsize.cohort.load_manifest import load_arrays
    from rightsize.probes.engine.checkpoint import load_checkpoint, read_sidecar
    from rightsize.probes.engine.estimator import check_inputs
    from rightsize.probes.engine.integrity import check_contents
    from rightsize.probes.run import torch_threads

    ecfg = _evaluate_config(args)
    check_writable(args.json)
    side = read_sidecar(args.model, args.probe)    # fail fast on a missing/wrong model
    if not check_contents(args.model, side):
        console.warn(f"{args.model}: written before model folders recorded their file hashes; "
                     "cannot check that its files belong together (retrain to record them)")
    arrays = load_arrays(args.manifest)
    check_inputs(side["arch"], arrays, args.model, args.manifest)
    probe, sidecar = load_checkpoint(args.model, args.probe, device, cfg.accelerate)
    torch_threads(cfg.threads)
    return cfg, ecfg, arrays, sidecar, probe, device


def run_evaluate(args: argparse.Namespace) -> int:
    """``rightsize evaluate``: test metrics with bootstrap CIs to --json."""
    from rightsize.probes.run import evaluate_saved, planted_mask

    start = time.perf_counter()
    cfg, ecfg, arrays, sidecar, probe, device = _load(args)
    out = evaluate_saved(args.probe, args.model, cfg, ecfg, arrays, sidecar, probe, device,
                         start, planted_mask(args.truth, args.manifest, arrays),
                         train_cost(sidecar))
    console.emit_json(args.json, json_safe(out))
    return 0


def run_missing(args: argparse.Namespace) -> int:
    """``rightsize missing-modality``: both present / echo absent / ECG absent to --json."""
    from rightsize.probes.run import score_missing

    start = time.perf_counter()
    cfg, ecfg, arrays, sidecar, probe, device = _load(args)
    out = score_missing(args.probe, cfg, ecfg, arrays, probe, device, start,
                        train_cost(sidecar))
    console.emit_json(args.json, json_safe(out))
    return 0


def json_safe(obj: Any) -> Any:
    """Replace non-finite floats (an AUROC with one class) by None: strict JSON for jq & co."""
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return None
    return obj


def train_cost(sidecar: dict[str, Any]) -> dict[str, float] | None:
    """The training's seconds and peak RSS where an older sidecar recorded them (a folder
    of today records none: they are measurements, and the folder holds only the model)."""
    train_s = (sidecar.get("wall_clock_s") or {}).get("train")
    if train_s is None:
        return None
    return {"train_s": float(train_s),
            "peak_rss_mb_train": float(sidecar.get("peak_rss_mb_train", 0.0))}
