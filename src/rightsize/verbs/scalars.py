"""Verb: ``rightsize scalars`` -- rescue every scalar under a log directory into one table."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from rightsize import console
from rightsize.errors import InputError, RightsizeError
from rightsize.verbs.arglists import ExistingPath

if TYPE_CHECKING:
    from rightsize.telemetry.table import ScalarTable

EPILOG = """\
examples:
  rightsize scalars ../shared/telemetry/rampnet1_stage2 -o scalars.parquet
  rightsize scalars logs/ -o loss.csv --tags 'Loss/*' --json
  rightsize scalars logs/ -o loss.csv --json loss_summary.json
  rightsize scalars logs/ -o scalars.parquet --strict   # exit 3 at the first damaged record

Damaged records (bad CRCs, torn tails, garbage) are skipped and reported as warnings on
stderr; reading resynchronises at the next valid record. Directories that cannot be listed
and files that cannot be read are named as warnings too (and counted in --json). Hidden
(dot) files and folders are not read. Exit codes: 0 ok, 2 bad input (missing directory, no
event files, nothing readable, bad output suffix), 3 damage or an unreadable path under
--strict.
"""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's verbs to the rightsize parser."""
    p = sub.add_parser(
        "scalars",
        parents=[common],
        help="TensorBoard event files -> a parquet/csv table of scalars",
        description=(
            "Read every run (directory holding *tfevents* files) under ROOT and write all "
            "scalar points -- run, tag, step, wall_time, value, file -- to a .parquet or "
            ".csv table. Re-logged steps stay as separate rows, in file order."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("root", metavar="ROOT", action=ExistingPath,
                   help="log directory (or one event file)")
    p.add_argument("-o", "--out", "--output", dest="output", required=True, metavar="OUT",
                   help="output table: OUT.parquet or OUT.csv (written atomically; --output is "
                        "the older spelling)")
    p.add_argument("--tags", metavar="GLOB", default=None,
                   help="only tags matching this glob (fnmatch, case-sensitive), e.g. 'Loss/*'")
    p.add_argument("--strict", action="store_true",
                   help="fail (exit 3) at the first damaged or undecodable record, or when a "
                        "directory or file cannot be read (all of them listed)")
    p.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                   help="write the summary as JSON to PATH; '-' or no PATH prints it on stdout "
                        "instead of the summary line")
    p.set_defaults(func=run_scalars)


@contextlib.contextmanager
def files_progress(root: str) -> Iterator[Callable[[str], None] | None]:
    """The ``on_file`` callback showing ``files read N/total`` with the rate and time left
    (None when progress is off).

    The total costs one extra directory walk, paid only when progress is shown.
    """
    bar = console.Progress("files read", rate_unit="files")
    if not bar.enabled:
        yield None
        return
    from rightsize.telemetry.runs import discover

    try:
        bar.total = sum(len(files) for files in discover(root).values())
    except RightsizeError:                         # read_scalars reports a bad root itself
        yield None
        return
    with bar:
        yield bar
        bar.close(final=f"files read {bar.count}/{bar.total} in {bar.seconds:.1f} s")


def summarize(table: ScalarTable, output: str, seconds: float) -> dict:
    """The summary printed by the verb (plain JSON-able dict)."""
    cols = table.columns
    kinds: dict[str, int] = {}
    for p in table.problems:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    return {
        "output": output,
        "runs": len(table.runs),
        "files": len(table.files),
        "header_only_files": sum(f.header_only for f in table.files),
        "tags": len(table.tags),
        "points": cols.num_rows,
        "problems": len(table.problems),
        "problem_kinds": kinds,
        "unreadable": len(table.unreadable),
        "unreadable_paths": [u.message() for u in table.unreadable],
        "seconds": round(seconds, 3),
    }


def run_scalars(args: argparse.Namespace) -> int:
    """Read ``args.root``, write ``args.output``, warn about damage, print the summary."""
    if not args.output.lower().endswith((".parquet", ".csv")):
        raise InputError(f"{args.output}: output must end in .parquet or .csv")
    if "numpy" not in sys.modules:
        # This verb does no linear algebra: one OpenBLAS thread instead of one per core
        # saves about 0.1 s of numpy start-up (no effect once numpy is loaded).
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from rightsize.atomic import check_writable
    from rightsize.telemetry.scalars import read_scalars, write_table

    check_writable(args.output, args.json)
    start = time.perf_counter()
    with files_progress(args.root) as on_file:
        table = read_scalars(args.root, tags=args.tags, strict=args.strict, on_file=on_file)
    for problem in table.problems:
        console.warn(problem.message())
    for u in table.unreadable:
        console.warn(u.message())
    write_table(table, args.output)
    summary = summarize(table, args.output, time.perf_counter() - start)
    if args.json:
        console.emit_json(args.json, summary)
    if args.json != "-" and not console.quiet():
        print(f"{summary['points']} points, {summary['tags']} tags, {summary['runs']} runs, "
              f"{summary['files']} files ({summary['header_only_files']} header-only), "
              f"{summary['problems']} problems{_unread(summary)} -> {args.output} "
              f"({summary['seconds']} s)")
    return 0


def _unread(summary: dict) -> str:
    n = summary["unreadable"]
    return f", {n} unreadable paths" if n else ""
