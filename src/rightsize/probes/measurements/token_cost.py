"""The cost of the next experiment: the fused probe at token-level ECG, measured on this CPU.

The ``token_cost_case@N`` stages (``rightsize token-cost --tokens N``, one process per count ``N``
of ``token_cost.tokens``, so that each peak RSS is its own) answer "is probe training still
CPU-light when the ECG is a sequence of HuBERT-ECG tokens?". Each measures, one seed:

1. the build of a synthetic cohort with the configured geometry (``cohort.n_subjects``,
   splits, dims, clips, seed) at ``ecg_tokens = N``: the manifest's bytes on disk, the
   build's wall-clock and peak RSS;
2. the fused probe's train + evaluate on it (checkpoint, eval and missing-modality metrics,
   planted truth), the code path of ``train@fused`` but with ``train.seeds: 1``: its
   wall-clock and peak RSS (the process's high-water mark, reset after the build).

The ``token_cost`` stage joins the counts (:func:`summary`).

Training all ``train.fused.epochs`` epochs at 186 tokens would take about a minute per
count, so the stage trains ``token_cost.epochs_timed`` epochs (E_t) and extrapolates
(:func:`extrapolate`): the process as measured, plus ``E - E_t`` times the median duration
of epochs ``2 .. E_t`` (the first epoch carries one-time warm-up, which a full run pays once
too). Epoch durations come from the run's own event file: the wall times of its
``Loss/val_epoch`` points, one per epoch. ``epochs_timed: 0`` trains every epoch and the
number is measured whole. Every number says which it is (``basis``).

This module is the case's params (:func:`parse_case`), the arithmetic and the result's
layout (no processes, no files); the verb (:mod:`rightsize.verbs.token_cost`) runs a case.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from rightsize.cohort.config import CohortConfig
from rightsize.params import parse, require
from rightsize.probes.engine.config import EvaluateConfig, TrainConfig

PROBE = "fused"
# What a case sets itself (case_params), so no stage depends on it: the cohort's source,
# token count and input files; every other cohort key shapes the measured cohort.
CASE_SETS_COHORT = ("source", "ecg_tokens", "files")
# The train keys the fused probe's training reads (the other probes' blocks, train.probes
# and train.seeds, set to 1, do not change what a case measures).
CASE_READS_TRAIN = ("seed", "threads", "device", "batch_size", "lr", "weight_decay",
                    "pca_rank", "accelerate", PROBE)


@dataclass(frozen=True)
class TokenCostConfig:
    """The ``token_cost`` params block."""

    tokens: tuple[int, ...] = (1, 16, 93, 186)
    epochs_timed: int = 3

    def validate(self, key: str = "token_cost") -> None:
        """``ParamsError`` naming ``<key>.tokens[i]`` or ``<key>.epochs_timed``."""
        require(len(self.tokens) > 0, f"{key}.tokens", "must list at least one token count")
        for i, n in enumerate(self.tokens):
            require(n >= 1, f"{key}.tokens[{i}]", f"must be an integer >= 1, got {n!r}")
        require(len(set(self.tokens)) == len(self.tokens), f"{key}.tokens",
                f"lists a token count twice: {list(self.tokens)}")
        require(self.epochs_timed == 0 or self.epochs_timed >= 2, f"{key}.epochs_timed",
                "must be 0 (train every epoch: measured whole) or at least 2 (epoch 1 "
                f"warms up, epochs 2.. are timed), got {self.epochs_timed}")

    def epochs_run(self, epochs: int) -> int:
        """Epochs the measured run trains when the configuration asks for ``epochs``."""
        return epochs if self.epochs_timed == 0 else min(self.epochs_timed, epochs)


def case_params(params: dict[str, Any], tokens: int, epochs_run: int) -> dict[str, Any]:
    """The params of one measured case: ``params`` with a synthetic cohort at ``tokens`` ECG
    tokens (its other keys as configured; ``files`` inputs dropped), one seed, and
    ``epochs_run`` fused epochs (also in ``train.fused.tokens``, the block's overrides at
    ``tokens > 1``, which the estimator applies; never scaled per crop)."""
    out = copy.deepcopy(params)
    cohort = out["cohort"]
    cohort.update(source="synthetic", ecg_tokens=int(tokens))
    if isinstance(cohort.get("files"), dict):
        cohort["files"] = {k: None for k in cohort["files"]}
    out["train"]["seeds"] = 1
    block = {**out["train"].get(PROBE, {}), "epochs": int(epochs_run)}
    block.pop("epochs_per_crop", None)          # the timed run trains epochs_run as given
    if block.get("tokens"):          # train.fused.tokens: its epochs too, the rest as set
        block["tokens"] = {k: v for k, v in block["tokens"].items() if k != "epochs_per_crop"}
        block["tokens"]["epochs"] = int(epochs_run)
    out["train"][PROBE] = block
    return out


@dataclass(frozen=True)
class TokenCase:
    """One measured count's params, parsed once: the synthetic cohort at ``tokens`` ECG
    tokens, the one-seed ``train`` block training ``epochs_run`` fused epochs (``epochs``
    configured), and the ``evaluate`` block."""

    tokens: int
    epochs: int
    epochs_run: int
    epochs_timed: int
    cohort: CohortConfig
    train: TrainConfig
    evaluate: EvaluateConfig


def parse_case(params: dict[str, Any], tokens: int) -> TokenCase:
    """The :class:`TokenCase` of count ``tokens`` from the whole params mapping (blocks
    ``token_cost``, ``cohort``, ``train``, ``evaluate``); errors name the key."""
    require(int(tokens) >= 1, "--tokens", f"must be an integer >= 1, got {tokens!r}")
    cfg = parse(TokenCostConfig, params.get("token_cost") or {}, "token_cost")
    for block in ("cohort", "train", "evaluate"):
        require(isinstance(params.get(block), dict), block, "missing block")
    epochs = parse(TrainConfig, params["train"], "train").epochs(PROBE, int(tokens))
    case = case_params(params, tokens, cfg.epochs_run(epochs))
    return TokenCase(int(tokens), epochs, cfg.epochs_run(epochs), cfg.epochs_timed,
                     parse(CohortConfig, case["cohort"], "cohort"),
                     parse(TrainConfig, case["train"], "train"),
                     parse(EvaluateConfig, case["evaluate"], "evaluate"))


def case_param_keys(params: dict[str, Any]) -> list[str]:
    """The dotted keys of ``params`` (a params file's mapping) that change what a case
    measures: a ``token_cost_case@N`` stage's params (tests/probes checks dvc.yaml against it)."""
    cohort = [f"cohort.{k}" for k in params.get("cohort") or {} if k not in CASE_SETS_COHORT]
    train = [f"train.{k}" for k in CASE_READS_TRAIN if k in (params.get("train") or {})]
    return [*cohort, *train, "evaluate", "token_cost.epochs_timed"]


def epoch_seconds(val_walls: np.ndarray) -> np.ndarray:
    """Durations of epochs ``2 .. E`` from the wall times of the ``E`` per-epoch validation
    points (one per epoch, in epoch order): ``wall[e] - wall[e - 1]``."""
    walls = np.asarray(val_walls, dtype=np.float64)
    return np.diff(walls)


@dataclass(frozen=True)
class Extrapolation:
    """A whole-process time for the configured epochs, and how it was obtained."""

    seconds: float
    measured: bool                  # True: every epoch ran (nothing extrapolated)
    epoch_s: float | None           # median timed epoch (None when measured whole)
    basis: str                      # one line: measured whole, or extrapolated from what


def extrapolate(process_s: float, epochs: int, epochs_run: int, epoch_s: np.ndarray,
                steps_per_epoch: int) -> Extrapolation:
    """``process_s`` (a whole process that trained ``epochs_run`` epochs) scaled to
    ``epochs``: plus ``epochs - epochs_run`` median epochs of ``epoch_s`` (epochs 2 ..)."""
    if epochs_run >= epochs:
        return Extrapolation(process_s, True, None,
                             f"measured whole ({epochs} of {epochs} epochs, "
                             f"{epochs * steps_per_epoch} steps)")
    if len(epoch_s) == 0:
        raise ValueError(f"no epoch after the first was timed ({epochs_run} run)")
    median = float(np.median(epoch_s))
    seconds = process_s + (epochs - epochs_run) * median
    timed = len(epoch_s)
    return Extrapolation(
        seconds, False, median,
        f"extrapolated: {epochs_run} of {epochs} epochs run "
        f"({epochs_run * steps_per_epoch} steps), the other {epochs - epochs_run} at the "
        f"median of epochs 2-{1 + timed} ({timed} epochs, {timed * steps_per_epoch} steps)")


@dataclass(frozen=True)
class Measured:
    """A measured part of one count: its wall-clock and its peak resident memory."""

    wall_s: float
    peak_rss_mb: float


def case_result(tokens: int, manifest_bytes: int, payload: int, build: Measured,
                train: Measured, train_metrics: dict[str, Any], eval_metrics: dict[str, Any],
                est: Extrapolation, accelerator: str) -> dict[str, Any]:
    """One token count's node of ``metrics/token_cost.json``: ``build`` and ``train`` are
    the measured cohort build and train + evaluate (:class:`Measured`), the metrics the
    training's JSONs, ``accelerator`` the one that trained the probe (its checkpoint's sidecar)."""
    wall = train_metrics.get("wall_clock_s") or {}
    return {
        "ecg_tokens": int(tokens),
        "manifest_bytes": int(manifest_bytes),
        "payload_bytes": int(payload),
        "build_s": float(build.wall_s),
        "build_peak_rss_mb": float(build.peak_rss_mb),
        "train_eval_s": float(est.seconds),
        "measured_whole": bool(est.measured),
        "basis": est.basis,
        "process_s": float(train.wall_s),
        "epoch_s": est.epoch_s,
        "epochs_run": int(train_metrics.get("epochs", 0)),
        "steps_per_epoch": int(train_metrics.get("steps_per_epoch", 0)),
        "load_s": float(wall.get("load", 0.0)),
        "fit_s": float(wall.get("train", 0.0)),
        "eval_s": float((eval_metrics.get("wall_clock_s") or {}).get("eval", 0.0)),
        "peak_rss_mb": float(train.peak_rss_mb),
        "accelerator": accelerator,
    }


def summary(cases: list[dict[str, Any]], cfg: TokenCostConfig, hardware: dict[str, Any],
            floor_mb: float) -> dict[str, Any]:
    """``metrics/token_cost.json``: one node ``cases.tokens_<N>`` per count (with the epochs
    of the recipe it trains: ``train.fused.tokens`` at N > 1), plus what every count shares
    (``rss_floor_mb``: the measuring process's own peak, below which a child's peak RSS cannot
    read) and the largest count's headline numbers under ``max_tokens`` (``epochs``: its
    recipe's)."""
    top = max(cases, key=lambda c: c["ecg_tokens"])
    out: dict[str, Any] = {
        "probe": PROBE, "seeds": 1, "epochs": int(top["epochs"]),
        "epochs_timed": cfg.epochs_timed,
        "tokens": [int(n) for n in cfg.tokens],
        "cases": {f"tokens_{c['ecg_tokens']}": c for c in cases},
        "rss_floor_mb": float(floor_mb),
        "hardware": hardware,
    }
    out["max_tokens"] = {k: top[k] for k in ("ecg_tokens", "train_eval_s", "peak_rss_mb",
                                             "manifest_bytes", "measured_whole")}
    return out
