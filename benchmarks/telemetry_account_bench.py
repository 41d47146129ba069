"""Whole-process `rightsize telemetry` on the RampNet run: before vs after the calendar account.

"Before" is the package source at a base revision (default: ``git merge-base HEAD main``),
extracted with ``git archive`` into a temporary folder and put first on ``PYTHONPATH``;
"after" is this checkout's ``src``. Both sides run the same command in fresh child processes,
interleaved (ABBA...) in one run so that load on a shared box hits both alike; each child's
``rightsize.__file__`` is checked to come from the side it claims. Writes
``benchmarks/results/telemetry_account.md``.

    python benchmarks/telemetry_account_bench.py --repeat 15
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import (  # noqa: E402
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
FLAGS = ["--train-records", "150063", "--global-batch", "16", "--gpus", "16", "--drop-last",
         "--base-records", "150063", "--base-units", "150063", "--records", "600000",
         "--epochs", "1,5,12"]
CHILD = "import sys, rightsize; from rightsize.cli import main; sys.exit(main(sys.argv[1:]))"
GOAL = 1.10


def child(src: Path, out: Path) -> tuple[list[str], dict[str, str]]:
    """The command and environment of one whole-process run with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return [sys.executable, "-c", CHILD, "telemetry", str(RAMPNET), *FLAGS, "--json",
            str(out)], env


def main() -> int:
    """Run the interleaved comparison and write the markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None, help="revision for 'before' (default: merge-base "
                    "of HEAD and main)")
    ap.add_argument("--repeat", type=int, default=15, help="runs per side (default 15)")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" /
                                         "telemetry_account.md"))
    args = ap.parse_args()
    if not RAMPNET.is_dir():
        print(f"{RAMPNET}: not present", file=sys.stderr)
        return 2
    head = git("rev-parse", "--short", "HEAD")
    with tempfile.TemporaryDirectory(prefix="tel_account_bench.") as tmp:
        tmp = Path(tmp)
        sides, base = source_sides(args.base, tmp)

        def one(name: str) -> Callable[[int], Measurement]:
            def run(_: int) -> Measurement:
                argv, env = child(sides[name], tmp / f"{name}.json")
                m = run_process(argv, env=env, timeout_s=300)
                if m.rc != 0:
                    raise RuntimeError(f"{name}: {m.stderr[-2000:]}")
                return m
            return run

        runs = interleaved({name: one(name) for name in sides}, args.repeat)
    machine = machine_info()
    lines = [
        "# Whole-process `rightsize telemetry` on RampNet: before / after the calendar account",
        "",
        f"before = `{base[:12]}` (src via git archive), after = `{head}`; {args.repeat} runs "
        "per side, interleaved ABBA in one run, each a fresh child process.",
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
