"""Verbs: train, evaluate, missing-modality (the probe engine in rightsize.probes)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from rightsize import console
from rightsize.errors import InputError
from rightsize.probe_registry import PROBES
from rightsize.verbs import headline
from rightsize.verbs import probe_metrics as pm

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
    p.add_argument("--out", required=True, help="model directory to write")
    p.add_argument("--events", default=None, help="directory for the tfevents file")
    p.add_argument("--curve", default=None, help="CSV of epoch,train_loss,val_loss")
    p.add_argument("--seed-curves", default=None, metavar="CSV",
                   help="CSV of seed,epoch,train_loss,val_loss: every replica's losses")
    p.add_argument("--metrics", default=None,
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
                    "(LVEF) and AUROC (EF<=40) with percentile bootstrap intervals (params\n"
                    "`evaluate` block), plus the train-mean baseline, parameter count,\n"
                    "checkpoint bytes, wall clock, peak RSS and hardware stamp, to --json."))
    _truth_arg(ev)
    _model_verb(sub, common, "missing-modality", run_missing, "metrics/missing/fused.json",
                summary="score a trained probe with the echo or the ECG taken away",
                description=(
                    "On test rows that have both modalities, score the probe as is, with the\n"
                    "echo absent and with the ECG absent (inputs zeroed and masked); paired\n"
                    "bootstrap with evaluate.n_bootstrap_missing resamples."))


def train_args(probe: str, cohort: str, folder: str) -> argparse.Namespace:
    """The arguments of a ``rightsize train`` run as ``train@<probe>`` runs it (checkpoint,
    events, curve, train/eval/missing metrics) on ``cohort``'s ``manifest.parquet`` and
    ``truth.parquet``, every output in ``folder``: what :func:`train_and_save` reads."""
    return argparse.Namespace(
        probe=probe, manifest=f"{cohort}/manifest.parquet", truth=f"{cohort}/truth.parquet",
        out=f"{folder}/model", events=f"{folder}/events", curve=f"{folder}/curve.csv",
        metrics=f"{folder}/train.json", eval_json=f"{folder}/eval.json",
        missing_json=f"{folder}/missing.json", headline=None)


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

    cfg = load_block(args.params, "train", TrainConfig)  # bad params name their key first
    est = Estimator(args.probe, cfg)
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
    start = time.perf_counter()
    cfg, device = _setup(args)
    # bad params and unwritable outputs fail before fitting
    if args.headline and not (args.eval_json and args.missing_json):
        raise InputError("--headline: needs --eval-json and --missing-json (its numbers "
                         "come from both)")
    ecfg = _evaluate_config(args) if args.eval_json or args.missing_json else None
    return train_and_save(args, cfg, device, ecfg, start)


def train_and_save(args: argparse.Namespace, cfg: Any, device: str, ecfg: Any,
                   start: float) -> int:
    """Train ``args.probe`` with the parsed ``train`` block ``cfg`` on ``device``, save it, and
    (with ``ecfg``, the ``evaluate`` block) evaluate it: every output ``args`` names, written
    as one set. ``rightsize train`` and ``rightsize token-cost`` both run this."""
    from rightsize.atomic import check_writable
    from rightsize.output_set import OutputSet

    check_writable(args.out, args.events, folder=True)
    check_writable(args.curve, args.metrics, args.eval_json, args.missing_json, args.headline,
                   getattr(args, "seed_curves", None))
    # Every output is staged and renamed in together at the end, the model folder first out
    # and last in: a failure or kill before then (a full disk included) leaves the previous
    # run's set whole, and a model folder in place has its own run's logs and metrics.
    with OutputSet(anchor=args.out) as outputs:
        return _train(args, cfg, device, ecfg, outputs, start)


def _train(args: argparse.Namespace, cfg: Any, device: str, ecfg: Any, outputs: Any,
           start: float) -> int:
    """Train, save, evaluate: every file into ``outputs`` (committed by the caller)."""
    from dataclasses import asdict

    from rightsize.cohort.load import load_arrays
    from rightsize.machine import stamp as machine_stamp
    from rightsize.measure import Timer, hardware_stamp, peak_rss_mb
    from rightsize.probes.engine.checkpoint import save_checkpoint
    from rightsize.probes.engine.integrity import record_contents
    from rightsize.probes.engine.replicas import save_replicas, seed_list
    from rightsize.probes.engine.runlog import RunLog, replica_curves_csv
    from rightsize.probes.engine.train import train_seeds
    from rightsize.probes.evaluation.spread import train_spread

    with Timer() as t_load:
        arrays = load_arrays(args.manifest)
        planted = _planted(args, arrays) if args.eval_json else None
    bar = console.Progress(f"{args.probe}: epoch", total=cfg.epochs(args.probe),
                           rate_unit="epochs")
    with Timer() as t_fit, bar, RunLog(args.events, args.curve, time.time(),
                                       on_epoch=_epoch_note(bar) if bar.enabled else None,
                                       outputs=outputs) as runlog:
        fits = train_seeds(args.probe, arrays, cfg, device, runlog)
    if getattr(args, "seed_curves", None):
        outputs.write_text(args.seed_curves, replica_curves_csv(fits, seed_list(cfg)))
    fit = fits[0]
    peak_train = peak_rss_mb()
    hardware = hardware_stamp(cfg.threads, device)
    best = fit.best_epoch - 1
    sub = asdict(getattr(cfg, args.probe))
    config = {"seed": cfg.seed, "threads": cfg.threads, "device": device,
              "batch_size": cfg.batch_size, "lr": cfg.lr, "weight_decay": cfg.weight_decay,
              "accelerate": cfg.accelerate, args.probe: sub}
    summary = {
        "best_epoch": fit.best_epoch, "epochs": fit.epochs, "steps": fit.steps,
        "train_loss": fit.train_loss[best], "val_loss": fit.val_loss[best],
        "train_mae": fit.train_mae, "val_mae": fit.val_mae,
        "n_train": int(arrays.index("train").size), "n_val": int(arrays.index("val").size),
    }
    # what the model is, nothing measured: the same training writes the same bytes (timings,
    # memory and the hardware stamp go to the metrics files)
    info = {"config": config, **summary,
            "manifest": {k: arrays.metadata.get(k) for k in ("source", "seed", "format")},
            **fit.extra}
    cost = {"train_s": t_fit.seconds, "peak_rss_mb_train": peak_train}
    with Timer() as t_save, outputs.folder(args.out) as staged:
        sidecar = save_checkpoint(staged, fit.probe, fit.arch, info)
        save_replicas(staged, fits, seed_list(cfg), {"config": config})
        record_contents(staged)
    model_dir = outputs.staged(args.out)
    total = time.perf_counter() - start
    if args.metrics:
        from rightsize.probes.evaluation.spread import merge

        metrics = {
            "probe": args.probe, "params": sidecar["params"], "arch": fit.arch, **summary,
            "val": {"mae": fit.val_mae}, "train": {"mae": fit.train_mae},
            "steps_per_epoch": fit.steps // fit.epochs, "batch_size": cfg.batch_size,
            "step_s": t_fit.seconds / fit.steps,
            "wall_clock_s": {"load": t_load.seconds, "train": t_fit.seconds,
                             "save": t_save.seconds, "total": total},
            "peak_rss_mb": peak_rss_mb(), "peak_rss_mb_train": peak_train,
            "hardware": hardware, "machine": machine_stamp(),
            "accelerator": fit.extra.get("accelerator", "none"),
            **({"accelerator_skipped": fit.extra["accelerator_skipped"]}
               if "accelerator_skipped" in fit.extra else {}),
        }
        merge(metrics, train_spread(fits, seed_list(cfg)))
        console.emit_json(args.metrics, pm.json_safe(metrics), outputs)
    console.info(f"{args.probe}: {sidecar['params']} params, best epoch {fit.best_epoch}/"
                 f"{fit.epochs}, val MAE {fit.val_mae:.3f}, {t_fit.seconds:.1f} s on {device}")
    if ecfg is not None:
        _torch_threads(cfg.threads)    # training restored torch's own setting
    results: dict[str, Any] = {}
    if args.eval_json:
        results["eval"] = pm.evaluate_and_emit(args, str(model_dir), args.eval_json, cfg,
                                               ecfg, arrays, sidecar, fit.probe, device,
                                               time.perf_counter(), planted, cost, outputs)
    if args.missing_json:
        results["missing"] = pm.missing_and_emit(args, args.missing_json, cfg, ecfg, arrays,
                                                 sidecar, fit.probe, device,
                                                 time.perf_counter(), cost, outputs)
    if args.headline:
        headline.write(args.headline, headline.headline("probe", args.probe, **results),
                       outputs)
    return 0


def _epoch_note(bar: console.Progress) -> Callable[[int, float, float], None]:
    """RunLog ``on_epoch`` callback: ``epoch k/E train_loss T val_loss V``."""
    def on_epoch(epoch: int, train_loss: float, val_loss: float) -> None:
        bar.set(epoch, f"train_loss {train_loss:.4f} val_loss {val_loss:.4f}")
    return on_epoch


def _evaluate_config(args: argparse.Namespace) -> Any:
    """The params file's ``evaluate`` block."""
    from rightsize.params import load_block
    from rightsize.probes.engine.config import EvaluateConfig

    return load_block(args.params, "evaluate", EvaluateConfig)


def _torch_threads(threads: int) -> None:
    """Set torch's thread count where torch is loaded (a numpy probe's process never loads it)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def _load(args: argparse.Namespace) -> tuple[Any, Any, Any, dict[str, Any], Any, str]:
    """Shared start of evaluate / missing-modality: configs, arrays, checkpoint."""
    cfg, device = _setup(args)
    from rightsize.atomic import check_writable
    from rightsize.cohort.load import load_arrays
    from rightsize.probes.engine.checkpoint import load_checkpoint, read_sidecar
    from rightsize.probes.engine.estimator import check_inputs
    from rightsize.probes.engine.integrity import check_contents

    ecfg = _evaluate_config(args)
    check_writable(args.json)
    side = read_sidecar(args.model, args.probe)    # fail fast on a missing/wrong model
    if not check_contents(args.model, side):
        console.warn(f"{args.model}: written before model folders recorded their file hashes; "
                     "cannot check that its files belong together (retrain to record them)")
    arrays = load_arrays(args.manifest)
    check_inputs(side["arch"], arrays, args.model, args.manifest)
    probe, sidecar = load_checkpoint(args.model, args.probe, device, cfg.accelerate)
    _torch_threads(cfg.threads)
    return cfg, ecfg, arrays, sidecar, probe, device


def run_evaluate(args: argparse.Namespace) -> int:
    """``rightsize evaluate``: test metrics with bootstrap CIs to --json."""
    start = time.perf_counter()
    cfg, ecfg, arrays, sidecar, probe, device = _load(args)
    pm.evaluate_and_emit(args, args.model, args.json, cfg, ecfg, arrays, sidecar, probe,
                         device, start, _planted(args, arrays), pm.train_cost(sidecar))
    return 0


def _planted(args: argparse.Namespace, arrays: Any) -> Any:
    """Each manifest row's planted event, ``(n, N)`` bool over its ECG tokens in the
    manifest's row order, from ``--truth``; None without the flag or when the truth file
    holds no planted token (a pooled or ``files`` cohort).

    A truth file built at another token count than the manifest's, or lacking one of its
    subjects, is an error naming both files.
    """
    if not getattr(args, "truth", None):
        return None
    from rightsize.cohort.truth import load_truth
    from rightsize.errors import DataError

    truth = load_truth(args.truth)
    if truth is None:
        return None
    if truth.ecg_tokens != arrays.ecg_tokens:
        raise InputError(f"{args.truth}: planted at {truth.ecg_tokens} ECG tokens per subject, "
                         f"manifest {args.manifest} has {arrays.ecg_tokens} (rebuild both with "
                         "rightsize cohort)")
    try:
        truth = truth.aligned(arrays.subject_id)
    except DataError as exc:
        raise DataError(f"{args.truth}: {exc} of manifest {args.manifest}") from None
    return truth.planted_mask()


def run_missing(args: argparse.Namespace) -> int:
    """``rightsize missing-modality``: both present / echo absent / ECG absent to --json."""
    start = time.perf_counter()
    cfg, ecfg, arrays, sidecar, probe, device = _load(args)
    pm.missing_and_emit(args, args.json, cfg, ecfg, arrays, sidecar, probe, device, start,
                        pm.train_cost(sidecar))
    return 0
