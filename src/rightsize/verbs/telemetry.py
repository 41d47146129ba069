"""Verbs: telemetry (cost report), rescue, verify and demo-run.

Only the standard library and rightsize.errors/console are imported at module level; the
engines (numpy, pyarrow) load inside the run functions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import Any

from rightsize import console
from rightsize.errors import DataError, InputError, IntegrityError
from rightsize.verbs import headline
from rightsize.verbs.arglists import (
    ExistingPath,
    add_params_when_present,
    int_list_type,
    nonneg_int,
    pos_float,
    pos_int,
)

_RAW = argparse.RawDescriptionHelpFormatter


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add telemetry, rescue, verify and demo-run to the rightsize parser."""
    p = sub.add_parser(
        "telemetry", parents=[common], formatter_class=_RAW,
        help="cost report of a rescued run, and a projection",
        description="Read every event file under RUN_DIR and report what training cost: median "
                    "step time, steps per epoch, epoch hours, active vs calendar hours, launches, "
                    "where every calendar hour went (useful, redone, pauses, start-up, tail, "
                    "waiting), restarts, the checkpoint interval and write cost with Young/Daly "
                    "advice, epochs after the best, an ETA (--target-epochs), the validation "
                    "curve and (optionally) a projection to a new dataset size. "
                    "A ROOT holding several runs gets one summary row per run.",
        epilog="example:\n  rightsize telemetry data/telemetry/demo --params params.yaml "
               "--run demo --json metrics/telemetry/demo.json\n"
               "  rightsize telemetry runs/x --train-records 150063 --global-batch 16 --gpus 16 "
               "--drop-last")
    p.add_argument("run_dir", metavar="RUN_DIR", help="folder of event files (or of runs)")
    g = p.add_argument_group("run geometry (flags win over --params)")
    add_params_when_present(g, "fill flags from telemetry.runs.NAME", only_with="run")
    g.add_argument("--run", metavar="NAME", help="entry of telemetry.runs in --params; "
                   "without --run no params file is read")
    g.add_argument("--train-records", type=pos_int, metavar="N",
                   help="loader units per training epoch")
    g.add_argument("--global-batch", type=pos_int, metavar="B", help="units per step, all GPUs")
    g.add_argument("--gpus", type=pos_int, metavar="G", help="GPUs in the job (default 1)")
    g.add_argument("--drop-last", dest="drop_last", action="store_true", default=None,
                   help="loader drops the partial last batch")
    g.add_argument("--keep-last", dest="drop_last", action="store_false",
                   help="loader keeps the partial last batch (default)")
    g.add_argument("--step-tag", metavar="TAG", help="training-step tag (default: densest)")
    g.add_argument("--val-tag", metavar="TAG", help="per-epoch tag (default: detected)")
    g.add_argument("--gap-s", type=pos_float, metavar="S",
                   help="deltas >= S seconds are pauses (default 600)")
    g.add_argument("--epoch-from", choices=("records", "val"), default=None,
                   help="steps per epoch from records / batch (default; the val spacing "
                        "must agree) or from the val tag's spacing")
    g.add_argument("--best", choices=("min", "max"), help="best epoch minimises (default) or "
                   "maximises the val tag")
    g.add_argument("--target-epochs", type=pos_int, metavar="E",
                   help="ETA: steps, compute and calendar hours left to reach E epochs")
    g = p.add_argument_group("projection and MFU")
    g.add_argument("--base-records", type=pos_int, metavar="R0", help="records measured")
    g.add_argument("--base-units", type=pos_int, metavar="U0", help="loader units they became")
    g.add_argument("--records", type=pos_int, metavar="R", help="target dataset size")
    g.add_argument("--epochs", type=int_list_type(minimum=1), metavar="E,E",
                   help="schedules, e.g. 1,5,12")
    g.add_argument("--flops-per-unit", type=pos_float, metavar="F", help="fwd+bwd FLOPs/unit")
    g.add_argument("--peak-tflops", type=pos_float, metavar="P", help="per-GPU peak TFLOP/s")
    g = p.add_argument_group("output")
    g.add_argument("--json", metavar="PATH",
                   help="write the report as JSON (the detail file); '-' prints it on stdout")
    g.add_argument("--val-csv", metavar="PATH", help="write epoch,step,value (DVC plots)")
    headline.add_argument(g, "step time, epoch hours, epochs, active and calendar hours, ETA; "
                             "named after --run, else after the file")
    g.add_argument("--headline-unit", choices=("hours", "seconds"), default="hours",
                   help="durations in the headline: hours (default; a rescued run) or "
                        "seconds (a run of seconds, as a probe's own)")
    g.add_argument("--format", choices=("text", "json"), default="text",
                   help="stdout format (default text)")
    g.add_argument("--strict", action="store_true",
                   help="exit 3 on any damaged record or unreadable path (all listed)")
    p.set_defaults(func=run_telemetry)

    p = sub.add_parser(
        "rescue", parents=[common], formatter_class=_RAW,
        help="copy event files into a folder with SHA256SUMS, atomically",
        description="Copy every event file under SRC to DEST (same relative paths) as one "
                    "transaction: the files are copied into a hidden folder beside DEST, "
                    "re-read against the hash taken while copying, listed in SHA256SUMS "
                    "(sha256sum format: `sha256sum -c SHA256SUMS` checks it), and only then "
                    "renamed into place. On any failure, Ctrl-C or kill, DEST is left exactly "
                    "as it was. A non-empty DEST is refused unless --into-existing. Hidden "
                    "(dot) files and folders are not copied; a file name holding a newline is "
                    "refused (SHA256SUMS cannot list it).",
        epilog="exit codes: 0 copied and verified; 2 bad input (SRC, DEST, an unreadable path, "
               "a non-empty DEST); 3 a file in DEST differs from its source, or the copy "
               "does not verify.\n\n"
               "example:\n  rightsize rescue /scratch/job123/tb data/telemetry/job123 --json -\n"
               "  rightsize rescue /scratch/job123/tb data/telemetry/job123 --into-existing"
               "   # the run went on")
    p.add_argument("src", metavar="SRC", action=ExistingPath,
                   help="folder of event files to copy (read only)")
    p.add_argument("dest", metavar="DEST", help="folder to create (or add to, --into-existing)")
    p.add_argument("--into-existing", action="store_true",
                   help="add to an earlier rescue in DEST: copy new files, update each file "
                        "that grew since (its old bytes a prefix of the new), keep the rest; "
                        "any other difference is refused (exit 3). SHA256SUMS is rewritten "
                        "under a lock, so concurrent rescues lose no entries")
    p.add_argument("--skip-unreadable", action="store_true",
                   help="leave out directories and files that cannot be read (each one warned "
                        "about and recorded as a '# skipped ...' line in SHA256SUMS) instead "
                        "of failing with exit 2")
    p.add_argument("--follow-links", action="store_true",
                   help="copy what symbolic links point to (each one reported); by default a "
                        "link is reported and not copied")
    p.add_argument("--json", metavar="PATH", help="write {dest, copied, updated, unchanged, "
                   "files, bytes, skipped, links} as JSON; '-' prints it on stdout instead of "
                   "the summary line")
    p.set_defaults(func=run_rescue)

    p = sub.add_parser(
        "verify", parents=[common], formatter_class=_RAW,
        help="check a folder against its SHA256SUMS (exit 3 if not)",
        description="Re-hash every file listed in DIR/SHA256SUMS. Missing, extra and mismatched "
                    "files are named one per line on stderr and the command exits 3. A "
                    "directory or listed file that cannot be read is named too, and the "
                    "command exits 2 (3 with --strict). Paths a `rescue --skip-unreadable` "
                    "recorded as skipped are shown as warnings.",
        epilog="example:\n  rightsize verify data/telemetry/demo --json metrics/verify/demo.json")
    p.add_argument("dir", metavar="DIR", action=ExistingPath,
                   help="folder holding SHA256SUMS (a rescue's DEST)")
    p.add_argument("--json", metavar="PATH", help="write {ok, files, bytes, missing, extra, "
                   "mismatched, unreadable}; '-' prints it on stdout instead of the summary line")
    p.add_argument("--strict", action="store_true",
                   help="exit 3 (integrity failure) instead of 2 when a path cannot be read")
    p.set_defaults(func=run_verify)

    p = sub.add_parser(
        "demo-run", parents=[common], formatter_class=_RAW,
        help="write a synthetic preempted run with planted truth",
        description="Write a synthetic multi-launch training run (preemptions, re-logged steps, "
                    "pauses, header-only launches) into DEST with its SHA256SUMS, and the truth "
                    "a cost report must recover into --truth. Deterministic per seed.",
        epilog="example:\n  rightsize demo-run data/telemetry/demo --params params.yaml "
               "--truth data/telemetry/demo.truth.json")
    p.add_argument("dest", metavar="DEST", help="folder to write the run into")
    add_params_when_present(p, "take the seed from demo.seed of this file")
    p.add_argument("--seed", type=nonneg_int, default=None,
                   help="random seed (default: demo.seed of --params, else 0)")
    p.add_argument("--truth", metavar="PATH", help="write the planted truth JSON here")
    p.add_argument("--log-every", type=pos_int, default=1, metavar="K",
                   help="log the step tag every K steps (default 1)")
    p.set_defaults(func=run_demo)


def _clean(obj: Any) -> Any:
    """JSON-safe copy: non-finite floats become null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return obj


def _config(args: argparse.Namespace) -> Any:
    from rightsize.errors import ParamsError
    from rightsize.params import load_block
    from rightsize.telemetry.report_config import TelemetryParams, resolve

    run_params, gap = None, None
    if args.run and not args.params:
        raise InputError(f"--run {args.run}: no params file to read telemetry.runs from "
                         "(no params.yaml here; give --params YAML)")
    if args.params or args.run:
        if not args.run:
            raise InputError(f"--params {args.params}: give --run NAME (an entry of "
                             "telemetry.runs) too")
        block = load_block(args.params, "telemetry", TelemetryParams)
        if args.run not in block.runs:
            raise ParamsError(f"{args.params}: missing key telemetry.runs.{args.run}")
        run_params, gap = block.runs[args.run], block.gap_s
    flags = {k: getattr(args, k) for k in (
        "train_records", "global_batch", "gpus", "drop_last", "step_tag", "val_tag", "gap_s",
        "base_records", "base_units", "records", "epochs", "flops_per_unit", "peak_tflops",
        "best", "target_epochs", "epoch_from")}
    return resolve(flags, run_params, gap)


def run_telemetry(args: argparse.Namespace) -> int:
    """The ``telemetry`` verb."""
    from rightsize import atomic
    from rightsize.cost_text import render_report, render_runs
    from rightsize.telemetry.cost_report import cost_reports, live_tails
    from rightsize.telemetry.scalars import NothingReadable, read_scalars, unreadable_error
    from rightsize.verbs.scalars import files_progress

    if not os.path.lexists(args.run_dir):     # named before a geometry flag it also lacks
        raise InputError(f"{args.run_dir}: no such file or directory")
    cfg = _config(args)
    atomic.check_writable(args.json, args.val_csv, args.headline)
    root = Path(args.run_dir)
    try:
        with files_progress(args.run_dir) as on_file:
            table = read_scalars(root, strict=False, on_file=on_file)
    except NothingReadable as exc:
        if args.strict:
            raise unreadable_error(root, exc.unreadable) from None
        raise
    if not table.files:
        raise InputError(f"{root}: no event files (events.out.tfevents.*) found")
    if args.strict and table.unreadable:
        raise unreadable_error(root, table.unreadable)
    for u in table.unreadable:
        console.warn(u.message())
    live = live_tails(table)
    damaged = [p for p in table.problems if (p.file, p.offset) not in live]
    if args.strict and damaged:
        raise IntegrityError(f"{len(damaged)} damaged records under {root} "
                             f"(first: {damaged[0].message()})", details=_listed(damaged))
    try:
        reports = cost_reports(table, cfg)
    except DataError as exc:
        if not damaged:
            raise
        raise DataError(f"{exc}: {len(damaged)} damaged records (first: "
                        f"{damaged[0].message()})", details=_listed(damaged)) from None
    seen = set()
    for r in reports.values():
        for w in r["warnings"]:
            if w not in seen:
                seen.add(w)
                console.warn(w)
    for name, offset in sorted(live):
        console.info(f"{name}: unfinished last record at byte {offset} (a file still being "
                     "written; not damage)")
    single = len(reports) == 1
    doc = next(iter(reports.values())) if single else {"runs": reports}
    doc["unreadable"] = len(table.unreadable)
    doc["unreadable_paths"] = [u.message() for u in table.unreadable]
    doc = _clean(doc)
    if args.json:
        console.emit_json(args.json, doc)
    if args.headline:
        headline.write(args.headline, _headline(args, reports))
    if args.val_csv:
        lines = ["epoch,step,value"] if single else ["run,epoch,step,value"]
        for name, r in reports.items():
            pre = "" if single else f"{_csv(name)},"
            lines += [f"{pre}{p['epoch']},{p['step']},{p['value']!r}" for p in r["val_curve"]]
        atomic.write_text(args.val_csv, "\n".join(lines) + "\n")
    if args.json == "-":
        pass                                      # the JSON on stdout is the report
    elif args.format == "json":
        print(json.dumps(doc, indent=2))
    elif single:
        name, r = next(iter(reports.items()))
        print(render_report(str(root) if name in ("", ".") else f"{root}/{name}", r), end="")
    else:
        print(render_runs(reports), end="")
    return 0


def _headline(args: argparse.Namespace, reports: dict[str, Any]) -> dict[str, Any]:
    """The run's headline numbers under its name; a folder of runs: one entry per run."""
    name = args.run or Path(args.headline).stem
    kind = "run" if args.headline_unit == "hours" else "run_seconds"
    if len(reports) == 1:
        return headline.headline(kind, name, report=next(iter(reports.values())))
    return {name: {sub: headline.numbers(kind, {"report": r}) for sub, r in reports.items()}}


def _paths(n: int) -> str:
    return f"{n} path" if n == 1 else f"{n} paths"


LISTED = 50     # damaged records named one per line before an error (the rest counted)


def _listed(problems: list[Any]) -> list[str]:
    """Warning lines for damaged records after the first: up to :data:`LISTED`, then a count."""
    lines = [p.message() for p in problems[1:LISTED + 1]]
    if len(problems) > LISTED + 1:
        lines.append(f"... and {len(problems) - LISTED - 1} more damaged records")
    return lines


def _csv(text: str) -> str:
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if any(c in text for c in ',"\n') else text


def run_rescue(args: argparse.Namespace) -> int:
    """The ``rescue`` verb."""
    from rightsize import atomic
    from rightsize.telemetry.rescue import rescue

    atomic.check_writable(args.json)
    with console.task(f"rescue: copying and hashing the event files of {args.src}"):
        res = rescue(args.src, args.dest, into_existing=args.into_existing,
                     skip_unreadable=args.skip_unreadable, follow_links=args.follow_links)
    src = Path(args.src)
    for link in res.links:
        console.warn(f"{src / link.relpath}: symbolic link to {link.target}: " + (
            "followed, its target copied (--follow-links)" if link.followed else
            "not followed, not copied (a loop, a dangling link or not a file)"
            if args.follow_links else
            "not followed, not copied (--follow-links copies what it points to)"))
    for u in res.skipped:
        console.warn(f"{u.message()}: skipped (--skip-unreadable), recorded in "
                     f"{Path(args.dest) / 'SHA256SUMS'}")
    if args.json:
        console.emit_json(args.json, {
            "dest": str(args.dest), "copied": len(res.copied), "updated": len(res.updated),
            "unchanged": len(res.unchanged),
            "files": res.verify.files if res.verify is not None else None, "bytes": res.bytes,
            "skipped": len(res.skipped), "copied_files": list(res.copied),
            "updated_files": list(res.updated), "unchanged_files": list(res.unchanged),
            "skipped_paths": [u.message() for u in res.skipped],
            "links_followed": [lk.relpath for lk in res.links if lk.followed],
            "links_not_followed": [lk.relpath for lk in res.links if not lk.followed]})
    if args.json != "-":
        skipped = f", {len(res.skipped)} skipped" if res.skipped else ""
        print(f"{args.dest}: {len(res.copied)} copied, {len(res.updated)} updated, "
              f"{len(res.unchanged)} unchanged{skipped}, {res.bytes:,} bytes; "
              "SHA256SUMS verified")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    """The ``verify`` verb."""
    from rightsize import atomic
    from rightsize.telemetry.sha256sums import verify

    atomic.check_writable(args.json)
    with console.task(f"verify: hashing the files listed in {Path(args.dir) / 'SHA256SUMS'}"):
        res = verify(args.dir)
    if args.json:
        console.emit_json(args.json, res.to_json())
    for line in res.skipped:
        console.warn(f"{Path(args.dir) / 'SHA256SUMS'} records a path the rescue could not "
                     f"read: {line}")
    lines = res.problems()
    for line in lines:
        console.warn(f"{Path(args.dir) / line}")
    unread = [u.message() for u in res.unreadable]
    for line in unread:
        console.warn(line)
    if lines:
        raise IntegrityError(f"{args.dir}: {len(lines)} files fail SHA256SUMS "
                             f"(first: {lines[0]})")
    if unread:
        error = IntegrityError if args.strict else InputError
        raise error(f"{args.dir}: {_paths(len(unread))} cannot be read, so not verified "
                    f"(first: {unread[0]})")
    if args.json != "-":
        print(f"{args.dir}: {res.files} files, {res.bytes:,} bytes match SHA256SUMS")
    return 0


def run_demo(args: argparse.Namespace) -> int:
    """The ``demo-run`` verb."""
    from rightsize.telemetry.demo import DemoConfig, DemoParams, demo_run

    seed = args.seed
    if seed is None and args.params:
        from rightsize.params import load_block

        seed = load_block(args.params, "demo", DemoParams).seed
    facts = demo_run(args.dest, args.truth,
                     DemoConfig(seed=seed or 0, log_every=args.log_every))
    console.info(f"{args.dest}: {facts['launches']} launches, {facts['max_step']:,} steps, "
                 f"{facts['relogged_steps']:,} re-logged")
    return 0
