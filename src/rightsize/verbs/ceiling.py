"""Verb: planted-ceiling (what an oracle reads of the planted ECG event, per token count)."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from rightsize import console
from rightsize.verbs import headline


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's verb to the rightsize parser."""
    p = sub.add_parser(
        "planted-ceiling", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="an oracle's planted-event top-1, weight and MAE per count",
        description=(
            "For every ECG token count N > 1 of params token_cost.tokens, and cohort.ecg_tokens\n"
            "when it is above 1: regenerate the synthetic cohort of the configured geometry at\n"
            "N tokens (in memory, echo clips only) and let an oracle that knows the generator's\n"
            "projections and codes pick each test subject's planted event by likelihood from\n"
            "the echo clips, in the embedding and in the probes' PCA view (train.pca_rank).\n"
            "Writes its top-1 rate and posterior weight on the planted event (whether the\n"
            "clips identify it: a check of the data, not a target for the probe) and the test\n"
            "MAE of the perfect model that reads the planted event through it\n"
            "(rightsize.probes.evaluation.ceiling).\n"
            "Beside it, what the train split allows: a small learner told the codes'\n"
            "subspaces fits LVEF on the train subjects (planted_ceiling.learner_seeds seeds,\n"
            "at most learner_steps full-batch steps, kept at its best validation MSE) and\n"
            "its attention's weight on the planted event is scored on the test subjects\n"
            "(rightsize.probes.evaluation.learnable), beside the null: what a uniform head over\n"
            "the N tokens puts on the event's tokens (null_weight, |event| / N). At the\n"
            "cohort's own count (cohort.ecg_tokens > 1) the same learner not told the subspaces\n"
            "runs too (blind_learner): what that model learns from the data alone."),
        epilog="example:\n  rightsize planted-ceiling --json metrics/eval/fused_ceiling.json")
    p.add_argument("--params", default="params.yaml",
                   help="params file: cohort, token_cost, train.pca_rank, planted_ceiling "
                        "(default: params.yaml)")
    p.add_argument("--json", required=True, help="metrics JSON to write ('-' prints it)")
    headline.add_argument(p, "the largest count's oracle top-1, posterior weight and test MAE, "
                          "and the told learner's weight beside its null")
    p.set_defaults(func=run_ceiling)


def counts(tokens: tuple[int, ...], current: int) -> list[int]:
    """The token counts the ceiling is computed at: those above 1 of ``tokens`` and
    ``current`` (the cohort's own) when above 1, ascending."""
    return sorted({n for n in (*tokens, current) if n > 1})


def run_ceiling(args: argparse.Namespace) -> int:
    """``rightsize planted-ceiling``: the oracle at every count, one JSON."""
    from rightsize.atomic import check_writable
    from rightsize.cohort.config import CohortConfig
    from rightsize.cohort.synthetic import SyntheticCohort
    from rightsize.cohort.target import TargetConfig
    from rightsize.params import load_block, load_params, parse
    from rightsize.probes.engine.config import TrainConfig
    from rightsize.probes.evaluation.ceiling import planted_ceiling
    from rightsize.probes.evaluation.learnable import LearnerConfig, told_learner
    from rightsize.probes.measurements.token_cost import TokenCostConfig

    cohort = load_block(args.params, "cohort", CohortConfig)
    train = load_block(args.params, "train", TrainConfig)
    raw = load_params(args.params)
    tc = parse(TokenCostConfig, raw.get("token_cost") or {}, "token_cost")
    learner = parse(LearnerConfig, raw.get("planted_ceiling") or {}, "planted_ceiling")
    check_writable(args.json, args.headline)
    out: dict[str, Any] = {"pca_rank": train.pca_rank,
                           "counts": counts(tc.tokens, int(cohort.ecg_tokens or 1))}
    for n in out["counts"]:
        cfg = dataclasses.replace(cohort, source="synthetic", ecg_tokens=n, target=(
            cohort.target if cohort.target.is_default else TargetConfig()))   # LVEF only
        with console.task(f"planted ceiling at {n} ECG tokens"):
            node = planted_ceiling(cfg, train.pca_rank)
        out[f"tokens_{n}"] = node
        clip, mae = node["probe_input"]["clip"], node["test_mae"]
        console.info(f"{n} ECG tokens ({node['ecg_events']} events): oracle top-1 "
                     f"{clip['top1']:.3f}, posterior {clip['posterior']:.3f}, test MAE "
                     f"{mae['oracle']:.2f} (no token {mae['no_token']:.2f})")
        synthetic = SyntheticCohort(cfg) if learner.learner_seeds else None
        if synthetic is not None:
            with console.task(f"told learner at {n} ECG tokens, {learner.learner_seeds} seeds"):
                node["told_learner"] = told = told_learner(synthetic, train.pca_rank, learner)
            console.info(f"{n} ECG tokens: told learner weight on the planted event "
                         f"{told['planted_weight_mean']:.3f} ± {told['planted_weight_sd']:.3f} "
                         f"(null {told['null_weight']:.4f}) from {told['train_subjects']} "
                         f"train subjects")
        if synthetic is not None and n == cohort.ecg_tokens:     # the probe's own count
            with console.task(f"learner not told at {n} ECG tokens"):
                node["blind_learner"] = blind = told_learner(synthetic, train.pca_rank, learner,
                                                             told=False)
            console.info(f"{n} ECG tokens: the same learner not told the subspaces puts "
                         f"{blind['planted_weight_mean']:.3f} ± {blind['planted_weight_sd']:.3f}"
                         f" on the planted event")
    if out["counts"]:
        top = out[f"tokens_{out['counts'][-1]}"]
        out["max_tokens"] = {"ecg_tokens": top["ecg_tokens"],
                             **{k: top["probe_input"]["clip"][k] for k in ("top1", "posterior")},
                             "oracle_test_mae": top["test_mae"]["oracle"]}
        if "told_learner" in top:
            out["max_tokens"]["told_learner_weight"] = top["told_learner"]["planted_weight_mean"]
            out["max_tokens"]["told_learner_null"] = top["told_learner"]["null_weight"]
    console.emit_json(args.json, out)
    if args.headline:
        headline.write(args.headline, headline.headline("planted_ceiling", planted_ceiling=out))
    return 0
