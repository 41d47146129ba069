"""Whole-process `rightsize extract` as `dvc repro` runs it: a revision's code against this tree.

Sides as in ``rescue_bench`` (:func:`_measure.source_sides`: the base revision's ``src`` via
``git archive`` against this checkout's). Each run is the extract stage's command (the
``params.yaml`` of this checkout, its record list and root: the demo's 200 WFDB records after
``dvc repro ecg_demo``) in a fresh child process writing a fresh output folder; rounds
alternate which side goes first. The table has each side's wall clock, and from its metrics
file the shard sizes, the run's wall clock and its "start-up and the rest" (wall less the
parts: start-up and idle workers). Writes ``benchmarks/results/extract_ab.md``.

    python benchmarks/extract_ab_bench.py --base 67d948e --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _measure as measure  # noqa: E402

GOAL = 1.0                        # after / before: no slower


def main() -> int:
    """Run the interleaved comparison and write the markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None, help="revision for 'before' (default: merge-base "
                    "of HEAD and main)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per side (default 3)")
    ap.add_argument("--out", default=str(measure.REPO / "benchmarks" / "results" / "extract_ab.md"))
    args = ap.parse_args()
    head = measure.git("rev-parse", "--short", "HEAD")
    dirty = "+dirty" if measure.git("status", "--porcelain", "src") else ""
    metrics: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="extract_ab.") as tmp:
        tmp_path = Path(tmp)
        sides, base = measure.source_sides(args.base, tmp_path)

        def one(name: str) -> Callable[[int], measure.Measurement]:
            def run(i: int) -> measure.Measurement:
                out, m_json = tmp_path / f"{name}-{i}", tmp_path / f"{name}-{i}.json"
                env = {**os.environ, "PYTHONPATH": str(sides[name])}
                argv = [sys.executable, "-c", measure.CHILD, "extract", "--params",
                        "params.yaml", "--out", str(out), "--metrics", str(m_json)]
                m = measure.run_process(argv, cwd=measure.REPO, env=env, timeout_s=900)
                if m.rc != 0:
                    raise RuntimeError(f"{name}: exit {m.rc}: {m.stderr[-2000:]}")
                metrics.setdefault(name, []).append(json.loads(m_json.read_text()))
                shutil.rmtree(out)
                return m
            return run

        runs = measure.interleaved({name: one(name) for name in sides}, args.repeat)
    rows = ["| side | shard sizes | run wall s (each) | start-up and the rest s (median) |",
            "|---|---|---|---|"]
    for name, ms in metrics.items():
        rows.append(f"| {name} | {ms[0].get('shard_sizes')} | "
                    f"{', '.join(format(m['wall_s'], '.1f') for m in ms)} | "
                    f"{statistics.median(m['startup_and_other_s'] for m in ms):.1f} |")
    first = metrics["after"][0]
    text = "\n".join([
        f"# Whole-process `rightsize extract` ({first['records']} records, {first['model']}, "
        f"{first['workers']} workers): before / after",
        "",
        f"before = `{base[:12]}` (src via git archive), after = `{head}{dirty}`; "
        f"{args.repeat} runs per side, interleaved (the order alternates each round), each a "
        "fresh child process writing a fresh folder; compute in "
        f"{first.get('compute_dtype', {}).get('dtype', 'float32')}.",
        "",
        *measure.before_after_table(runs, GOAL),
        "",
        *rows,
    ]) + "\n"
    print(measure.write_result(args.out, text, "extract_ab_bench.py"))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
