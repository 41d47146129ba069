"""The metrics files of a saved probe (``evaluate``, ``missing-modality``, and the same step
of ``train --eval-json --missing-json``): evaluate, stamp timings and hardware, write."""

from __future__ import annotations

import argparse
import time
from typing import Any

from rightsize import console


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


def evaluate_and_emit(args: argparse.Namespace, model_dir: str, target: str, cfg: Any,
                      ecfg: Any, arrays: Any, sidecar: dict[str, Any], probe: Any,
                      device: str, start: float, planted: Any = None,
                      cost: dict[str, float] | None = None, outputs: Any = None
                      ) -> dict[str, Any]:
    """Evaluate ``probe`` (saved in ``model_dir``), write its metrics JSON to ``target`` and
    return it.

    ``wall_clock_s.eval`` counts from ``start``: the whole ``evaluate`` process, or the
    evaluation step of a ``train --eval-json`` process. Either way the probe predicts from
    the weights as saved (a torch probe at ``train.threads`` threads, which the caller sets;
    a numpy probe with the pinned OpenBLAS kernels), so the model metrics are the same bits.
    """
    from rightsize.probes.engine.checkpoint import checkpoint_bytes
    from rightsize.probes.evaluation.evaluate import evaluate_probe
    from rightsize.probes.evaluation.replicas import evaluate_replicas
    from rightsize.probes.evaluation.spread import merge

    with console.task(f"{args.probe}: predict and bootstrap {ecfg.n_bootstrap} resamples"):
        out = evaluate_probe(probe, sidecar, arrays, ecfg)
        merge(out, evaluate_replicas(model_dir, probe, sidecar, arrays, device, cfg.accelerate,
                                     planted))
    out["checkpoint_bytes"] = checkpoint_bytes(model_dir)
    stamp(out, cost, time.perf_counter() - start, cfg.threads, device)
    console.emit_json(target, json_safe(out), outputs)
    t = out["test"]
    console.info(f"{args.probe}: test MAE {t['mae']:.3f} [{t['mae_lo']:.3f}, {t['mae_hi']:.3f}]"
                 f", AUROC {t['auroc']:.3f} [{t['auroc_lo']:.3f}, {t['auroc_hi']:.3f}]"
                 f" (mean predictor {out['mean_predictor_mae']:.3f})")
    node = out.get("attention", {}).get("echo_to_ecg")
    if node is not None:
        from rightsize.probes.evaluation.planted import FOUND

        console.info(f"{args.probe}: echo->ECG weight on the planted event of the head "
                     f"validation chose: {node['best_head_val']:.3f} (seed 0), "
                     f"{node['best_head_val_mean']:.3f} ± {node['best_head_val_sd']:.3f} "
                     f"across {out['n_seeds']} seeds, found (≥ {FOUND}) in "
                     f"{node['found_share']:.0%} of them; uniform {node['uniform']:.3f}")
    return out


def missing_and_emit(args: argparse.Namespace, target: str, cfg: Any, ecfg: Any, arrays: Any,
                     sidecar: dict[str, Any], probe: Any, device: str, start: float,
                     cost: dict[str, float] | None = None, outputs: Any = None
                     ) -> dict[str, Any]:
    """Score ``probe`` with each modality taken away, write the JSON to ``target``, return it."""
    from rightsize.probes.evaluation.missing import CONDITIONS, missing_modality

    with console.task(f"{args.probe}: {len(CONDITIONS)} conditions, paired bootstrap "
                      f"{ecfg.n_bootstrap_missing} resamples"):
        out = missing_modality(probe, arrays, ecfg)
    stamp(out, cost, time.perf_counter() - start, cfg.threads, device)
    console.emit_json(target, json_safe(out), outputs)
    if not out["n_rows"]:
        console.warn(f"{args.probe} missing-modality: {out['note']}")
    for name in CONDITIONS if out["n_rows"] else ():
        m = out[name]
        console.info(f"{args.probe} {name}: MAE {m['mae']:.3f} [{m['mae_lo']:.3f}, "
                     f"{m['mae_hi']:.3f}], AUROC {m['auroc']:.3f}")
    return out
