"""Verb: compare-probes (two probes' test MAE, seed by seed, with a 95% interval)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rightsize import console
from rightsize.verbs import headline
from rightsize.verbs.arglists import add_params_when_present


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's verb to the rightsize parser."""
    p = sub.add_parser(
        "compare-probes", parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="paired test-MAE gain of one probe over another, by seed",
        description=(
            "Read two probes' evaluation files (<eval-dir>/<probe>.json, written by\n"
            "`rightsize train --eval-json` or `rightsize evaluate`), pair their seed replicas\n"
            "by seed and write the gain AGAINST's test MAE - PROBE's test MAE per seed, its\n"
            "mean and a 95% Student-t interval over the seeds\n"
            "(rightsize.probes.evaluation.paired; docs/numerics.md). A probe not in\n"
            "train.probes (--params; default params.yaml when present) or whose file is\n"
            "absent gives a JSON that says so and exit 0; files with other seeds or test\n"
            "rows are an error naming both."),
        epilog=("example:\n  rightsize compare-probes fused concat --eval-dir metrics/eval "
                "--json metrics/fused_vs_concat.json"))
    p.add_argument("probe", metavar="PROBE", help="the probe judged (e.g. fused)")
    p.add_argument("against", metavar="AGAINST", help="the probe it is judged against (concat)")
    p.add_argument("--eval-dir", default="metrics/eval",
                   help="folder of the evaluation files (default: metrics/eval)")
    p.add_argument("--json", required=True, help="detail JSON to write ('-' prints it)")
    add_params_when_present(p, "compare only probes in its train.probes (a file left from "
                               "another probe list is not read)")
    headline.add_argument(p, "the mean test-MAE gain and its 95%% interval")
    p.set_defaults(func=run_compare)


def run_compare(args: argparse.Namespace) -> int:
    """``rightsize compare-probes``: the paired gain, one JSON."""
    from rightsize.atomic import check_writable
    from rightsize.probes.evaluation.paired import compare_probes

    check_writable(args.json, args.headline)
    paths = {name: Path(args.eval_dir) / f"{name}.json" for name in (args.probe, args.against)}
    absent = [str(p) for p in paths.values() if not p.is_file()]
    if args.params:
        from rightsize.params import load_params

        trained = (load_params(args.params).get("train") or {}).get("probes") or []
        absent = [f"{name} (not in {args.params}: train.probes)" for name in paths
                  if name not in trained] or absent
    out: dict[str, Any]
    if absent:
        out = {"probe": args.probe, "against": args.against,
               "note": f"not compared: {', '.join(absent)} missing (train both probes)"}
        console.warn(f"compare-probes: {out['note']}")
    else:
        docs = {name: _read(p) for name, p in paths.items()}
        out = compare_probes(docs[args.probe], docs[args.against], str(paths[args.probe]),
                             str(paths[args.against]))
        console.info(f"{args.probe} against {args.against}: test MAE gain "
                     f"{out['mae_gain_mean']:+.3f} [{out['mae_gain_lo']:+.3f}, "
                     f"{out['mae_gain_hi']:+.3f}] (95% t-interval over {out['n_pairs']} seeds; "
                     "positive: lower error)")
    console.emit_json(args.json, out)
    if args.headline:
        headline.write(args.headline, headline.headline("compare", f"{args.probe}_vs_"
                                                        f"{args.against}", compare=out))
    return 0


def _read(path: Path) -> dict[str, Any]:
    """An evaluation file as a dict; unreadable or not a JSON object: DataError naming it."""
    import json

    from rightsize.errors import DataError

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(doc, dict):
        raise DataError(f"{path}: expected a JSON object, got {type(doc).__name__}")
    return doc
