"""Verbs: spread (mean ± sd across DVC experiments; ``seeds`` is its old name, still
accepted) and sweep (queue one experiment per seed)."""

from __future__ import annotations

import argparse
import json
import sys

from rightsize import console
from rightsize.errors import InputError

SPREAD_EPILOG = """\
example:
  dvc exp run --queue -S train.seed=5,10,15 && dvc queue start -j 1   # or: rightsize sweep
  rightsize spread --metrics-prefix metrics/headline/probes/
  rightsize spread --json metrics-spread.json

Rows: the baseline and the HEAD commit's finished experiments; failed, queued and
running experiments are left out. The baseline is the workspace (the metrics files the
report reads), or HEAD's committed numbers with --baseline head; a line says when they
differ (dvc repro on another CPU). sd is the sample standard deviation (n-1).
`rightsize seeds` is the old name of this verb and still works (an alias).
"""

SWEEP_EPILOG = """\
example:
  rightsize sweep --seeds 5,10,15,20 -j 2           # train.seeds (5) replicas from each
  rightsize sweep --seeds 1,2 --param evaluate.seed --run-all
  rightsize sweep --seeds 5,10,15 train@fused        # only train@fused (trains + evaluates)
  rightsize sweep --seeds 5,10,15 --json -           # the summary as JSON on stdout

Runs: dvc exp run --queue -S PARAM=v1,v2,...  then  dvc queue start -j N, and polls
dvc queue status until every experiment finished. A failed experiment's worker log
(dvc queue logs NAME) is printed on stderr. Queued experiments run in a temporary
copy of the last commit plus staged changes: files that are not tracked by git or DVC
are not there. --run-all runs the queue in the foreground (dvc exp run --run-all).
"""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``spread`` (alias ``seeds``) and ``sweep`` verbs to the rightsize parser."""
    p = sub.add_parser(
        "spread", aliases=["seeds"], parents=[common],
        help="mean ± sd of every metric across DVC experiments",
        description="Summarize every numeric metric across the HEAD commit and its DVC\n"
                    "experiments (dvc exp show --json): mean ± sd, n, min and max.",
        epilog=SPREAD_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--json", metavar="PATH", help="write the summary as JSON ('-' = stdout)")
    p.add_argument("--metrics-prefix", metavar="PREFIX", action="append", default=[],
                   help="keep metric keys starting with PREFIX (repeatable), "
                        "e.g. metrics/headline/probes/ or "
                        "metrics/headline/probes/fused.json:fused.test")
    p.add_argument("--baseline", choices=("workspace", "head"), default="workspace",
                   help="the baseline row: the workspace's metrics files, as the report "
                        "reads them (default), or HEAD's committed ones")
    p.set_defaults(func=run_spread)

    q = sub.add_parser(
        "sweep", parents=[common], help="queue and run one DVC experiment per seed",
        description="Queue one DVC experiment per value (dvc exp run --queue -S), run the\n"
                    "queue, wait, surface failures, then print the spread summary.",
        epilog=SWEEP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    q.add_argument("targets", nargs="*", metavar="STAGE",
                   help="stages to reproduce in each experiment (default: the whole pipeline)")
    q.add_argument("--seeds", required=True, metavar="LIST",
                   help="comma-separated integers, e.g. 1,2,3,4,5")
    q.add_argument("-j", "--jobs", type=int, default=1, help="parallel queue workers (1)")
    q.add_argument("--param", default="train.seed", help="params.yaml key to set (train.seed)")
    q.add_argument("--run-all", action="store_true",
                   help="run the queue in the foreground with dvc exp run --run-all")
    q.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="give up waiting after S seconds")
    q.add_argument("--poll", type=float, default=2.0, metavar="S",
                   help="seconds between dvc queue status polls (2)")
    q.add_argument("--metrics-prefix", metavar="PREFIX", action="append", default=[],
                   help="summary: keep metric keys starting with PREFIX (repeatable)")
    q.add_argument("--json", metavar="PATH", help="write the summary as JSON ('-' = stdout)")
    q.set_defaults(func=run_sweep)


def _summary_payload(rows, summary) -> dict:
    from rightsize.experiments import varying_params

    varying = varying_params(rows)
    return {
        "n_rows": len(rows),
        "rows": [{"name": r.name, "rev": r.rev, "baseline": r.is_baseline,
                  "params": {k: r.params.get(k) for k in varying}} for r in rows],
        "metrics": {k: s.as_dict() for k, s in summary.items()},
    }


def _print_table(rows, summary) -> None:
    from rich.console import Console
    from rich.table import Table

    from rightsize.experiments import format_pm

    names = ", ".join(("*" if r.is_baseline else "") + r.name for r in rows)
    table = Table(title=f"{len(rows)} rows: {names}", title_justify="left",
                  show_edge=False, box=None, pad_edge=False)
    table.add_column("metric")
    table.add_column("n", justify="right")
    table.add_column("mean ± sd", justify="right")
    table.add_column("min", justify="right")
    table.add_column("max", justify="right")
    for key, s in summary.items():
        table.add_row(key, str(s.n), format_pm(s), f"{s.min:.6g}", f"{s.max:.6g}")
    Console(width=200, soft_wrap=True).print(table)


def _emit(rows, summary, json_path: str | None) -> None:
    from rightsize import atomic

    if not rows:
        raise InputError("dvc exp show: no baseline commit with metrics (commit, then dvc repro)")
    if json_path:
        payload = _summary_payload(rows, summary)
        if json_path == "-":
            json.dump(payload, sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            atomic.write_json(json_path, payload)
            console.info(f"wrote {json_path}")
    if json_path != "-" and not console.quiet():
        _print_table(rows, summary)


def run_spread(args: argparse.Namespace) -> int:
    """``rightsize spread`` (or ``seeds``): mean ± sd per metric across HEAD and its experiments."""
    from rightsize import experiments as ex

    records = ex.exp_show()
    rows = ex.parse_exp_show(records, args.baseline)
    moved = ex.baseline_moved(records)
    if moved:
        used = "the workspace's, as the report reads" if args.baseline == "workspace" \
            else "HEAD's (--baseline head); the report reads the workspace's"
        console.info(f"the workspace's metrics differ from HEAD's in {len(moved)} keys (e.g. "
                     f"{moved[0]}): the baseline row uses {used}")
    summary = ex.summarize(rows, tuple(args.metrics_prefix))
    if rows and not summary:
        raise InputError(f"no numeric metric matches --metrics-prefix {args.metrics_prefix}")
    _emit(rows, summary, args.json)
    return 0


def run_sweep(args: argparse.Namespace) -> int:
    """``rightsize sweep``: queue one experiment per seed, run, wait, surface failures."""
    from rightsize import experiments as ex
    from rightsize.verbs.arglists import int_list

    seeds = list(int_list(args.seeds, "--seeds", unique=True))
    if not seeds:
        raise InputError(f"--seeds: expected comma-separated integers, got {args.seeds!r}")
    if args.jobs < 1:
        raise InputError(f"--jobs: must be >= 1, got {args.jobs}")
    if not args.param or "=" in args.param or " " in args.param:
        raise InputError(f"--param: expected a dotted params key, got {args.param!r}")
    queued = ex.queue_sweep(args.param, seeds, args.targets)
    names = [name for name, _ in queued]
    overrides = dict(queued)
    console.info(f"queued {len(names)} experiments: "
                 + ", ".join(f"{n} ({o})" for n, o in queued))
    if args.run_all:
        # Foreground: failures are reported through the queue status below, not here.
        ex.run_dvc(["exp", "run", "--run-all", "-j", str(args.jobs)], check=False)
    else:
        ex.start_queue(args.jobs)
    states = ex.wait_queue(names, poll_s=args.poll, timeout_s=args.timeout)
    ex.raise_failures(states, overrides)
    console.info(f"{len(names)} experiments succeeded")
    rows = ex.parse_exp_show(ex.exp_show())
    _emit(rows, ex.summarize(rows, tuple(args.metrics_prefix)), args.json)
    return 0
