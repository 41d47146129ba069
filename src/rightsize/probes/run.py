"""Train and evaluate one probe: the library call of ``rightsize train``, ``token-cost`` and
the tests. :func:`train_and_evaluate` trains ``train.seeds`` replicas, saves the model folder
and, when asked, evaluates the saved replicas (bootstrap CIs, a modality taken away); the
metrics come back as values (:class:`ProbeRun`). Its own files (model folder, events, curve)
are staged in the caller's :class:`~rightsize.output_set.OutputSet`; metrics files are the
caller's to write.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from rightsize import console
from rightsize.output_set import OutputSet
from rightsize.probes.engine.config import EvaluateConfig, TrainConfig


@dataclass(frozen=True)
class RunFiles:
    """Where a run's own files go: the model folder, the tfevents folder and the curve CSV
    (None: not written)."""

    model: str
    events: str | None = None
    curve: str | None = None


@dataclass(frozen=True)
class ProbeRun:
    """What one run measured: the metrics of ``train``, ``evaluate`` and ``missing-modality``
    (None where not asked for), the saved model's sidecar and every replica's fit."""

    train: dict[str, Any]
    checkpoint: dict[str, Any]        # the model's sidecar (checkpoint.json less hashes)
    fits: list[Any]                   # one fit per replica, in seed order
    seeds: list[int]
    val_walls: tuple[float, ...]      # seed 0's validation wall time of each epoch (events')
    eval: dict[str, Any] | None = None
    missing: dict[str, Any] | None = None


def train_and_evaluate(probe: str, manifest: str, cfg: TrainConfig, device: str,
                       outputs: OutputSet, files: RunFiles, ecfg: EvaluateConfig | None = None,
                       *, evaluate: bool = False, missing: bool = False,
                       truth: str | None = None, start: float | None = None) -> ProbeRun:
    """Train ``probe`` on ``manifest`` with the parsed ``train`` block ``cfg`` on ``device``,
    save it to ``files.model`` (staged in ``outputs``) and, with ``evaluate`` / ``missing``
    (and ``ecfg``, the ``evaluate`` block), evaluate the saved replicas. ``truth``: the
    cohort's truth file (planted ECG tokens scored by the evaluation). Wall clocks count
    from ``start`` (default: now)."""
    from rightsize.cohort.load_manifest import load_arrays
    from rightsize.machine import stamp as machine_stamp
    from rightsize.measure import Timer, hardware_stamp, peak_rss_mb
    from rightsize.probes.engine.checkpoint import save_checkpoint
    from rightsize.probes.engine.data import ecg_tokens
    from rightsize.probes.engine.integrity import record_contents
    from rightsize.probes.engine.replicas import save_replicas, seed_list
    from rightsize.probes.engine.runlog import RunLog
    from rightsize.probes.engine.train import train_seeds
    from rightsize.probes.evaluation.spread import merge, train_spread
    from rightsize.probes.registry import spec

    start = time.perf_counter() if start is None else start
    if (evaluate or missing) and ecfg is None:
        raise ValueError("evaluate / missing need ecfg, the evaluate block")
    with Timer() as t_load:
        arrays = load_arrays(manifest)
        planted = planted_mask(truth, manifest, arrays) if evaluate else None
    n_tokens = ecg_tokens(arrays.ecg)
    bar = console.Progress(f"{probe}: epoch", total=cfg.epochs(probe, n_tokens),
                           rate_unit="epochs")

    def note(epoch: int, train_loss: float, val_loss: float) -> None:   # epoch k/E ...
        bar.set(epoch, f"train_loss {train_loss:.4f} val_loss {val_loss:.4f}")

    with Timer() as t_fit, bar, RunLog(files.events, files.curve, time.time(),
                                       on_epoch=note if bar.enabled else None,
                                       outputs=outputs) as runlog:
        fits = train_seeds(spec(probe), arrays, cfg, device, runlog, count_flops=True)
    seeds = seed_list(cfg)
    fit = fits[0]
    peak_train = peak_rss_mb()
    speed = fit_throughput(fit.flops, cfg.threads)
    hardware = hardware_stamp(cfg.threads, device)
    best = fit.best_epoch - 1
    batch = cfg.batch(probe, n_tokens)
    config = {"seed": cfg.seed, "threads": cfg.threads, "device": device,
              "batch_size": batch, "lr": cfg.lr, "weight_decay": cfg.weight_decay,
              "accelerate": cfg.accelerate, probe: asdict(cfg.block(probe, n_tokens))}
    summary = {
        "best_epoch": fit.best_epoch, "epochs": fit.epochs, "steps": fit.steps,
        "train_loss": fit.train_loss[best], "val_loss": fit.val_loss[best],
        "train_mae": fit.train_mae, "val_mae": fit.val_mae,
        "n_train": int(arrays.index("train").size), "n_val": int(arrays.index("val").size),
    }
    # what the model is, nothing measured: the same training writes the same bytes (timings,
    # memory and the hardware stamp go to the metrics)
    info = {"config": config, **summary,
            "manifest": {k: arrays.metadata.get(k) for k in ("source", "seed", "format")},
            **fit.extra}
    cost = {"train_s": t_fit.seconds, "peak_rss_mb_train": peak_train}
    with Timer() as t_save, outputs.folder(files.model) as staged:
        sidecar = save_checkpoint(staged, fit.probe, fit.arch, info)
        save_replicas(staged, fits, seeds, {"config": config})
        record_contents(staged)
    model_dir = str(outputs.staged(files.model))
    total = time.perf_counter() - start
    train = {
        "probe": probe, "params": sidecar["params"], "arch": fit.arch, **summary,
        "val": {"mae": fit.val_mae}, "train": {"mae": fit.train_mae},
        "steps_per_epoch": fit.steps // fit.epochs, "batch_size": batch,
        "step_s": t_fit.seconds / fit.steps,
        "wall_clock_s": {"load": t_load.seconds, "train": t_fit.seconds,
                         "save": t_save.seconds, "total": total},
        "peak_rss_mb": peak_rss_mb(), "peak_rss_mb_train": peak_train,
        "hardware": hardware, "machine": machine_stamp(),
        "accelerator": fit.extra.get("accelerator", "none"),
        **({"accelerator_skipped": fit.extra["accelerator_skipped"]}
           if "accelerator_skipped" in fit.extra else {}),
        **({"gemm_route": fit.extra["gemm_route"]} if "gemm_route" in fit.extra else {}),
        "throughput": speed,
    }
    merge(train, train_spread(fits, seeds))
    console.info(f"{probe}: {sidecar['params']} params, best epoch {fit.best_epoch}/"
                 f"{fit.epochs}, val MAE {fit.val_mae:.3f}, {t_fit.seconds:.1f} s on {device}")
    if speed["counted"]:
        from rightsize.probes.measurements.throughput import words

        console.info(words(probe, speed))
    ev = ms = None
    if evaluate or missing:
        assert ecfg is not None
        torch_threads(cfg.threads)    # training restored torch's own setting
        if evaluate:
            ev = evaluate_saved(probe, model_dir, cfg, ecfg, arrays, sidecar, fit.probe, device,
                                time.perf_counter(), planted, cost)
        if missing:
            ms = score_missing(probe, cfg, ecfg, arrays, fit.probe, device, time.perf_counter(),
                               cost)
    return ProbeRun(train, sidecar, fits, seeds, tuple(runlog.val_walls), ev, ms)


def fit_throughput(flops: dict[str, Any] | None, threads: int) -> dict[str, Any]:
    """The loop's GFLOP/s beside this process's fp32 GEMM rate
    (:mod:`rightsize.probes.measurements.throughput`); for a probe trained without torch,
    why it is not counted."""
    if flops is None:
        return {"counted": False, "why": "trained without torch (numpy or closed-form), which "
                                         "torch's FLOP counter does not see, or the count "
                                         "failed (the run warned)"}
    from rightsize.probes.measurements.throughput import throughput

    return {"counted": True, **throughput(flops, threads)}


def torch_threads(threads: int) -> None:
    """Set torch's thread count where torch is loaded (a numpy probe's process never loads it)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


def stamp(out: dict[str, Any], cost: dict[str, float] | None, eval_s: float, threads: int,
          device: str) -> dict[str, Any]:
    """Timings, memory and hardware: ``wall_clock_s.train`` and ``peak_rss_mb_train`` when
    ``cost`` (the process trained, or an older sidecar recorded them) says them."""
    from rightsize.machine import stamp as machine_stamp
    from rightsize.measure import hardware_stamp, peak_rss_mb

    if cost is None:
        out["wall_clock_s"] = {"eval": eval_s, "total": eval_s}
    else:
        train_s = cost["train_s"]
        out["wall_clock_s"] = {"train": train_s, "eval": eval_s, "total": train_s + eval_s}
    out["peak_rss_mb"] = peak_rss_mb()
    if cost is not None:
        out["peak_rss_mb_train"] = cost["peak_rss_mb_train"]
    out["hardware"] = hardware_stamp(threads, device)
    out["machine"] = machine_stamp()
    return out


def evaluate_saved(name: str, model_dir: str, cfg: TrainConfig, ecfg: EvaluateConfig,
                   arrays: Any, sidecar: dict[str, Any], probe: Any, device: str,
                   start: float, planted: Any = None, cost: dict[str, float] | None = None
                   ) -> dict[str, Any]:
    """The ``evaluate`` metrics of ``probe`` (saved in ``model_dir``): test MAE and AUROC with
    bootstrap CIs, every replica's, the checkpoint's bytes, timings and hardware.

    ``wall_clock_s.eval`` counts from ``start``. The probe predicts from the weights as saved
    (a torch probe at ``train.threads`` threads, which the caller sets; a numpy probe with the
    pinned OpenBLAS kernels), so the model metrics are the same bits in any process.
    """
    from rightsize.probes.engine.checkpoint import checkpoint_bytes
    from rightsize.probes.evaluation.evaluate import evaluate_probe
    from rightsize.probes.evaluation.replicas import evaluate_replicas
    from rightsize.probes.evaluation.spread import merge

    with console.task(f"{name}: predict and bootstrap {ecfg.n_bootstrap} resamples"):
        out = evaluate_probe(probe, sidecar, arrays, ecfg)
        merge(out, evaluate_replicas(model_dir, probe, sidecar, arrays, device, cfg.accelerate,
                                     planted))
    out["checkpoint_bytes"] = checkpoint_bytes(model_dir)
    stamp(out, cost, time.perf_counter() - start, cfg.threads, device)
    t = out["test"]
    console.info(f"{name}: test MAE {t['mae']:.3f} [{t['mae_lo']:.3f}, {t['mae_hi']:.3f}]"
                 f", AUROC {t['auroc']:.3f} [{t['auroc_lo']:.3f}, {t['auroc_hi']:.3f}]"
                 f" (mean predictor {out['mean_predictor_mae']:.3f})")
    node = out.get("attention", {}).get("echo_to_ecg")
    if node is not None:
        from rightsize.probes.evaluation.planted import FOUND

        console.info(f"{name}: echo->ECG weight on the planted event of the head "
                     f"validation chose: {node['best_head_val']:.3f} (seed 0), "
                     f"{node['best_head_val_mean']:.3f} ± {node['best_head_val_sd']:.3f} "
                     f"across {out['n_seeds']} seeds, found (≥ {FOUND}) in "
                     f"{node['found_share']:.0%} of them; uniform {node['uniform']:.3f}")
    return out


def score_missing(name: str, cfg: TrainConfig, ecfg: EvaluateConfig, arrays: Any, probe: Any,
                  device: str, start: float, cost: dict[str, float] | None = None
                  ) -> dict[str, Any]:
    """The ``missing-modality`` metrics: ``probe`` scored as is, with the echo absent and
    with the ECG absent (paired bootstrap), timings and hardware."""
    from rightsize.probes.evaluation.missing import CONDITIONS, missing_modality

    with console.task(f"{name}: {len(CONDITIONS)} conditions, paired bootstrap "
                      f"{ecfg.n_bootstrap_missing} resamples"):
        out = missing_modality(probe, arrays, ecfg)
    stamp(out, cost, time.perf_counter() - start, cfg.threads, device)
    if not out["n_rows"]:
        console.warn(f"{name} missing-modality: {out['note']}")
    for cond in CONDITIONS if out["n_rows"] else ():
        m = out[cond]
        console.info(f"{name} {cond}: MAE {m['mae']:.3f} [{m['mae_lo']:.3f}, "
                     f"{m['mae_hi']:.3f}], AUROC {m['auroc']:.3f}")
    return out


def planted_mask(truth: str | None, manifest: str, arrays: Any) -> Any:
    """Each manifest row's planted event, ``(n, N)`` bool over its ECG tokens in the
    manifest's row order, from the truth file ``truth``; None without one or when it holds
    no planted token (a pooled or ``files`` cohort).

    A truth file built at another token count than the manifest's, or lacking one of its
    subjects, is an error naming both files.
    """
    if not truth:
        return None
    from rightsize.cohort.truth import load_truth
    from rightsize.errors import DataError, InputError

    loaded = load_truth(truth)
    if loaded is None:
        return None
    if loaded.ecg_tokens != arrays.ecg_tokens:
        raise InputError(f"{truth}: planted at {loaded.ecg_tokens} ECG tokens per subject, "
                         f"manifest {manifest} has {arrays.ecg_tokens} (rebuild both with "
                         "rightsize cohort)")
    try:
        loaded = loaded.aligned(arrays.subject_id)
    except DataError as exc:
        raise DataError(f"{truth}: {exc} of manifest {manifest}") from None
    return loaded.planted_mask()
