"""Benchmark: rightsize's tfevents reader vs tbparse vs TensorBoard's EventAccumulator.

Cases: the RampNet run (``../shared/telemetry/rampnet1_stage2``, read in place) and a generated
single-file run of ``--records`` scalar events. Each measurement is a fresh child process
(modes ``--child ...`` below) timed by this deliberately small driver, whole process (as a
user runs it, parquet written) and read only (timed inside the process); outputs' rows,
per-tag counts and step sums are compared. See benchmarks/README.md. Usage::

    python benchmarks/telemetry_bench.py                  # writes benchmarks/results/telemetry.md
    python benchmarks/telemetry_bench.py --records 400000 --repeat 1 --profile
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _measure as ms  # noqa: E402
from _measure import Measurement, child_json, machine_info, run_process  # noqa: E402
from telemetry_report import CONTENDERS, case_rows, goals_section, render  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RAMPNET = REPO.parent / "shared" / "telemetry" / "rampnet1_stage2"
RESULTS = REPO / "benchmarks" / "results" / "telemetry.md"
HEAVY = ("torch", "sklearn", "pandas")


def _tag_summary(tags: list[str], counts: list[int], step_sum: int, rows: int) -> dict:
    return {"rows": rows, "tags": dict(sorted(zip(tags, counts, strict=True))),
            "step_sum": step_sum}


def child_ours(root: str) -> dict:
    """In-process read with rightsize: import, ``read_scalars`` alone, result size."""
    t0 = time.perf_counter()
    from rightsize.telemetry.scalars import read_scalars
    t1 = time.perf_counter()
    table = read_scalars(root)
    t2 = time.perf_counter()
    hwm = ms.self_peak_rss_mb()
    heavy = [m for m in HEAVY if m in sys.modules]
    import pyarrow.compute as pc

    cols = table.columns
    tag = cols.column("tag").combine_chunks()
    counts = pc.value_counts(tag.dictionary.take(tag.indices)).to_pylist()
    summary = _tag_summary([c["values"] for c in counts], [c["counts"] for c in counts],
                           int(pc.sum(cols.column("step")).as_py() or 0), cols.num_rows)
    return {"import_s": t1 - t0, "read_s": t2 - t1, "read_hwm_mb": hwm,
            "nbytes": cols.nbytes, "problems": len(table.problems), **summary,
            "heavy_modules": heavy}


def child_tbparse(root: str, out: str) -> dict:
    """A user's tbparse script: all scalar points with wall time, written to parquet."""
    t0 = time.perf_counter()
    from tbparse import SummaryReader
    t1 = time.perf_counter()
    df = SummaryReader(root, extra_columns={"wall_time"}).scalars
    t2 = time.perf_counter()
    hwm = ms.self_peak_rss_mb()
    df.to_parquet(out)
    t3 = time.perf_counter()
    return {"import_s": t1 - t0, "read_s": t2 - t1, "read_hwm_mb": hwm, "write_s": t3 - t2,
            "rows": len(df)}


def child_tensorboard(root: str, out: str) -> dict:
    """A user's EventAccumulator script (keep every point, no purging), written to parquet."""
    t0 = time.perf_counter()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    t1 = time.perf_counter()
    acc = EventAccumulator(root, size_guidance={"scalars": 0, "tensors": 0},
                           purge_orphaned_data=False)
    acc.Reload()
    series = {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}
    t2 = time.perf_counter()
    hwm = ms.self_peak_rss_mb()
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = list(series)
    idx = np.concatenate([np.full(len(ev), i, np.int32) for i, ev in enumerate(series.values())]
                         or [np.empty(0, np.int32)])
    flat = [e for ev in series.values() for e in ev]
    table = pa.table({
        "tag": pa.DictionaryArray.from_arrays(pa.array(idx), pa.array(names, pa.string())),
        "step": pa.array([e.step for e in flat], pa.int64()),
        "wall_time": pa.array([e.wall_time for e in flat], pa.float64()),
        "value": pa.array([e.value for e in flat], pa.float64()),
    })
    pq.write_table(table, out)
    t3 = time.perf_counter()
    return {"import_s": t1 - t0, "read_s": t2 - t1, "read_hwm_mb": hwm, "write_s": t3 - t2,
            "rows": table.num_rows}


def child_verify(paths: list[str]) -> dict:
    """Rows, per-tag counts and the sum of steps of each parquet output."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out = {}
    for p in paths:
        t = pq.read_table(p, columns=["tag", "step"])
        tag = t.column("tag").combine_chunks()
        if hasattr(tag, "dictionary"):
            tag = tag.dictionary.take(tag.indices)
        counts = pc.value_counts(tag).to_pylist()
        out[p] = _tag_summary([c["values"] for c in counts], [c["counts"] for c in counts],
                              int(pc.sum(t.column("step")).as_py() or 0), t.num_rows)
    return out


def child_modules(root: str, out: str) -> dict:
    """Heavy modules loaded after building the CLI parser, then after running ``scalars``."""
    from rightsize import cli

    cli.build_parser()
    after_parser = [m for m in HEAVY if m in sys.modules]
    rc = cli.main(["scalars", root, "-o", out, "--quiet"])
    return {"rc": rc, "after_parser": after_parser,
            "after_verb": [m for m in HEAVY if m in sys.modules]}


def child_profile(root: str) -> dict:
    """cProfile of ``read_scalars(root)``: the top functions by own time and by cumulative."""
    import cProfile
    import io
    import pstats

    from rightsize.telemetry.scalars import read_scalars

    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    table = read_scalars(root)
    prof.disable()
    wall = time.perf_counter() - t0
    report = {}
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(key).print_stats(18)
        report[key] = buf.getvalue()
    return {"wall_s": wall, "rows": table.columns.num_rows, **report}


def _child_main(mode: str, args: list[str]) -> int:
    fn = {"ours": child_ours, "tbparse": child_tbparse, "tensorboard": child_tensorboard,
          "modules": child_modules, "profile": child_profile}.get(mode)
    result = child_verify(args) if mode == "verify" else fn(*args)
    print(json.dumps(result))
    return 0


def _me(mode: str, *args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", mode, *args]


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("rightsize")
    return [str(script)] if script.exists() else [sys.executable, "-m", "rightsize.cli"]


def ours_available() -> bool:
    """True once the reader module exists and ``rightsize scalars --help`` works."""
    if not (REPO / "src" / "rightsize" / "telemetry" / "scalars.py").exists():
        return False
    return run_process([*_cli(), "scalars", "--help"], timeout_s=60).rc == 0


def bench_case(name: str, root: Path, repeats: dict[str, int], tmp: Path,
               timeout_s: float, errors: list[str]) -> dict:
    """Time every contender on ``root``: whole-process runs interleaved, then ours in process."""
    outs = {c: tmp / f"{name}.{c}.parquet" for c in repeats}
    e2e: dict[str, list[Measurement]] = {c: [] for c in repeats}
    inner: dict[str, list[dict]] = {c: [] for c in repeats}
    for r in range(max(repeats.values())):
        for c in (c for c in CONTENDERS if repeats.get(c, 0) > r):
            argv = ([*_cli(), "scalars", str(root), "-o", str(outs[c])] if c == "rightsize"
                    else _me(c, str(root), str(outs[c])))
            m = run_process(argv, timeout_s=timeout_s)
            print(f"  {name:8s} {c:11s} whole process run {r + 1}: {m.wall_s:7.2f} s, "
                  f"{m.max_rss_mb:7.1f} MB", flush=True)
            if m.timed_out:
                print(f"  {c} timed out after {timeout_s:.0f} s: not repeated", flush=True)
                repeats[c] = r + 1
            e2e[c].append(m)
            if m.rc != 0 and not m.timed_out:
                errors.append(_failed(f"{name}, {c}, whole process", m))
            elif c != "rightsize" and not m.timed_out:
                inner[c].append(child_json(m, f"{c} on {name}"))
    if "rightsize" in repeats:
        for r in range(repeats["rightsize"]):
            m = run_process(_me("ours", str(root)), timeout_s=timeout_s)
            if m.rc != 0:
                errors.append(_failed(f"{name}, rightsize, read only", m))
                continue
            inner["rightsize"].append(child_json(m, f"rightsize read on {name}"))
            print(f"  {name:8s} rightsize   read in process run {r + 1}: "
                  f"{inner['rightsize'][-1]['read_s']:7.2f} s", flush=True)
    done = [str(p) for c, p in outs.items() if p.exists()]
    verified = child_json(run_process(_me("verify", *done), timeout_s=timeout_s), "verify")
    checks = {c: verified.get(str(outs[c])) for c in repeats}
    for p in outs.values():
        p.unlink(missing_ok=True)
    return {"e2e": e2e, "inner": inner, "checks": checks}


def _failed(what: str, m: Measurement) -> str:
    print(f"  FAILED {what} (exit {m.rc}): {ms.last_line(m)}", flush=True)
    return f"{what}: exit {m.rc}: `{ms.last_line(m)}`"


def startup_section(root: Path, tmp: Path, repeat: int) -> list[str]:
    """``rightsize scalars --help`` process time and heavy modules after the verb."""
    helps = [run_process([*_cli(), "scalars", "--help"], timeout_s=60) for _ in range(repeat)]
    bare = [run_process([sys.executable, "-c", "pass"], timeout_s=60) for _ in range(repeat)]
    mods = child_json(run_process(_me("modules", str(root), str(tmp / "modules.parquet")),
                             timeout_s=300), "modules check")
    heavy = ", ".join(mods["after_verb"]) or "none"
    return [
        f"- `rightsize scalars --help`: {min(m.wall_s for m in helps) * 1000:.0f} ms whole "
        f"process (best of {repeat}; bare `python -c pass`: "
        f"{min(m.wall_s for m in bare) * 1000:.0f} ms), peak RSS "
        f"{max(m.max_rss_mb for m in helps):.0f} MB.",
        f"- Heavy modules ({', '.join(HEAVY)}) in `sys.modules` after building the parser: "
        f"{', '.join(mods['after_parser']) or 'none'}; after running `scalars` in process "
        f"(exit {mods['rc']}): {heavy} — "
        f"**{'OK' if not mods['after_verb'] and not mods['after_parser'] else 'FAIL'}**.",
    ]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the markdown table and write it to ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=4_000_000, help="generated file size")
    ap.add_argument("--repeat", type=int, default=3, help="runs per contender on RampNet")
    ap.add_argument("--repeat-large", type=int, default=2, help="rightsize runs on the big file")
    ap.add_argument("--repeat-large-others", type=int, default=1,
                    help="tbparse / TensorBoard runs on the big file")
    ap.add_argument("--rampnet", type=Path, default=RAMPNET, help="RampNet run directory")
    ap.add_argument("--timeout", type=float, default=420.0, help="seconds per child process")
    ap.add_argument("--profile", action="store_true", help="also cProfile read_scalars")
    ap.add_argument("--out", type=Path, default=RESULTS, help="markdown report to write")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return _child_main(args.child[0], args.child[1:])

    started = time.perf_counter()
    machine = machine_info()
    have_ours = ours_available()
    contenders = CONTENDERS if have_ours else CONTENDERS[1:]
    if not have_ours:
        print("rightsize scalars is not available yet: timing tbparse and TensorBoard only")
    table: list[list[str]] = []
    nums: dict[str, dict] = {}
    notes: list[str] = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rightsize-bench-") as tmpdir:
        tmp = Path(tmpdir)
        big = tmp / "generated"
        gen = run_process([sys.executable, str(REPO / "benchmarks" / "gen_scalar_file.py"),
                           str(big), "--records", str(args.records)], timeout_s=args.timeout)
        if gen.rc != 0:
            raise RuntimeError(f"generator failed: {gen.stderr.strip()}")
        size = int(gen.stdout.split()[-1])
        cases = [("RampNet", args.rampnet,
                  dict.fromkeys(contenders, args.repeat)),
                 ("generated", big, {c: args.repeat_large if c == "rightsize"
                                     else args.repeat_large_others for c in contenders})]
        for name, root, reps in cases:
            print(f"{name}: {root}", flush=True)
            rows, nums[name] = case_rows(name, bench_case(name, root, reps, tmp, args.timeout,
                                                          errors))
            table.extend(rows)
        startup = (startup_section(args.rampnet, tmp, args.repeat) if have_ours
                   else ["- rightsize scalars not available: not measured."])
        if have_ours:
            lib = nums["RampNet"]["heavy_in_read"]
            startup.append(f"- Heavy modules after `read_scalars` alone (library use): "
                           f"{'not measured' if lib is None else ', '.join(lib) or 'none'}.")
        profile = (child_json(run_process(_me("profile", str(big)), timeout_s=args.timeout),
                         "profile") if args.profile and have_ours else None)
        shutil.rmtree(big, ignore_errors=True)
    rampnet_mb = sum(f.stat().st_size for f in args.rampnet.glob("events.out.tfevents*")) / 1e6
    notes += [
        f"- RampNet: {len(list(args.rampnet.glob('events.out.tfevents*')))} event files, "
        f"{rampnet_mb:.1f} MB, read in place. Generated: one file of {args.records:,} scalar "
        f"records (4 tags round-robin, step = record index), {size / 1e6:.0f} MB, written by "
        "`benchmarks/gen_scalar_file.py` (byte-identical to `rightsize.ground.event_writer`).",
        "- *whole process*: the whole command (start-up, imports, parquet write), peak RSS "
        "from `wait4`; rightsize runs the real CLI, tbparse/TensorBoard the scripts in "
        "`child_tbparse` / `child_tensorboard`. *read only*: the read call alone, timed in the "
        "process (tbparse/TensorBoard inside their whole-process runs), peak RSS = `VmHWM` "
        "right after it. Details: benchmarks/README.md.",
        f"- Repeats: RampNet best of {args.repeat} for every contender; generated file: "
        f"rightsize best of {args.repeat_large}, tbparse and TensorBoard "
        f"{args.repeat_large_others}× (each takes minutes on this file). Whole-process runs "
        "are interleaved across contenders, so background load hits all of them alike; on a "
        "shared box compare the speed-ups, not the absolute seconds.",
        "- rows: points in each output; per-tag counts and the sum of steps are compared too, "
        "and any difference from tbparse is marked **MISMATCH**.",
        "- Columnar result (`ScalarTable.columns.nbytes`): "
        + (", ".join(f"{k} {v['nbytes'] / 2**20:.1f} MB" for k, v in nums.items()
                     if v["nbytes"]) or "not measured") + ".",
        f"- Driver peak RSS {ms.self_peak_rss_mb():.0f} MB (a floor under every child's `wait4` "
        f"figure); total benchmark time {time.perf_counter() - started:.0f} s; load average "
        f"at the end {', '.join(f'{x:.2f}' for x in os.getloadavg())}.",
    ]
    notes += [f"- **failed run** ({e})" for e in errors]
    report = render(machine, table, goals_section(nums), startup, notes)
    print(report)
    if profile:
        print(f"cProfile of read_scalars on the generated file: {profile['wall_s']:.2f} s "
              f"under the profiler, {profile['rows']:,} rows")
        print(profile["tottime"])
        print(profile["cumulative"])
    ms.write_result(args.out, report, "telemetry_bench.py")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
