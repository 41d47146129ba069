"""Whole-process `rightsize rescue` of the RampNet run: before vs after rescue became a transaction.

Sides as in ``telemetry_account_bench`` (:func:`_measure.source_sides`: the base revision's
``src`` via ``git archive`` against this checkout's). Each run copies the 18 RampNet files
(6.4 MB) into a fresh destination, and every copy's SHA256SUMS must list what the run's own
does. Writes ``benchmarks/results/rescue.md``.

    python benchmarks/rescue_bench.py --repeat 21
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import (  # noqa: E402
    CHILD,
    REPO,
    Measurement,
    before_after_table,
    git,
    interleaved,
    machine_info,
    run_process,
    source_sides,
)

RAMPNET = REPO.parent / "shared" / "telemetry" / "rampnet1_stage2"

GOAL = 1.20


def _same_sums(dest: Path) -> bool:
    """The copy's SHA256SUMS lists what the source's does (comments aside)."""
    def entries(p: Path) -> list[str]:
        return sorted(ln for ln in p.read_text().splitlines() if ln and not ln.startswith("#"))
    return entries(dest / "SHA256SUMS") == entries(RAMPNET / "SHA256SUMS")


def main() -> int:
    """Run the interleaved comparison and write the markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None, help="revision for 'before' (default: merge-base "
                    "of HEAD and main)")
    ap.add_argument("--repeat", type=int, default=21, help="runs per side (default 21)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "rescue.md"))
    args = ap.parse_args()
    if not RAMPNET.is_dir():
        print(f"{RAMPNET}: not present", file=sys.stderr)
        return 2
    head = git("rev-parse", "--short", "HEAD")
    dirty = " (+ uncommitted changes)" if git("status", "--porcelain", "src") else ""
    with tempfile.TemporaryDirectory(prefix="rescue_bench.") as tmp:
        tmp = Path(tmp)
        sides, base = source_sides(args.base, tmp)

        def one(name: str) -> Callable[[int], Measurement]:
            def run(i: int) -> Measurement:
                dest = tmp / f"{name}-{i}"
                env = {**os.environ, "PYTHONPATH": str(sides[name])}
                m = run_process([sys.executable, "-c", CHILD, "rescue", str(RAMPNET),
                                 str(dest), "-q"], env=env, timeout_s=300)
                if m.rc != 0 or not _same_sums(dest):
                    raise RuntimeError(f"{name}: exit {m.rc}: {m.stderr[-2000:]}")
                shutil.rmtree(dest)
                return m
            return run

        runs = interleaved({name: one(name) for name in sides}, args.repeat)
    machine = machine_info()
    lines = [
        "# Whole-process `rightsize rescue` of RampNet (18 files, 6.4 MB): before / after the "
        "transaction",
        "",
        f"before = `{base[:12]}` (src via git archive), after = `{head}`{dirty}; "
        f"{args.repeat} runs per side, interleaved ABBA in one run, each a fresh child process "
        "copying into a fresh destination (page cache warm: the source is read every run).",
        "",
        *before_after_table(runs, GOAL),
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in machine.items()),
    ]
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
