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
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import imported_from, machine_info, run_process  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RAMPNET = REPO.parent / "shared" / "telemetry" / "rampnet1_stage2"
FLAGS = ["--train-records", "150063", "--global-batch", "16", "--gpus", "16", "--drop-last",
         "--base-records", "150063", "--base-units", "150063", "--records", "600000",
         "--epochs", "1,5,12"]
CHILD = "import sys, rightsize; from rightsize.cli import main; sys.exit(main(sys.argv[1:]))"
GOAL = 1.10


def extract(rev: str, dest: Path) -> Path:
    """``src/`` of ``rev`` under ``dest`` (git archive, no worktree)."""
    blob = subprocess.run(["git", "archive", "--format=tar", rev, "src"], cwd=REPO,
                          check=True, capture_output=True).stdout
    tar = dest / "src.tar"
    tar.write_bytes(blob)
    with tarfile.open(tar) as tf:
        tf.extractall(dest, filter="data")
    return dest / "src"


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
    base = args.base or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=REPO,
                                       check=True, capture_output=True,
                                       text=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, check=True,
                          capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="tel_account_bench.") as tmp:
        tmp = Path(tmp)
        sides = {"before": extract(base, tmp), "after": REPO / "src"}
        for name, src in sides.items():
            got = imported_from(src)
            assert got.startswith(str(src)), f"{name}: imports rightsize from {got}"
        times: dict[str, list[float]] = {k: [] for k in sides}
        rss: dict[str, list[float]] = {k: [] for k in sides}
        for i in range(args.repeat):
            order = ("before", "after") if i % 2 == 0 else ("after", "before")
            for name in order:
                argv, env = child(sides[name], tmp / f"{name}.json")
                m = run_process(argv, env=env, timeout_s=300)
                if m.rc != 0:
                    print(m.stderr[-2000:], file=sys.stderr)
                    return 1
                times[name].append(m.wall_s)
                rss[name].append(m.max_rss_mb)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["after"] / med["before"]
    machine = machine_info()
    lines = [
        "# Whole-process `rightsize telemetry` on RampNet: before / after the calendar account",
        "",
        f"before = `{base[:12]}` (src via git archive), after = `{head}`; {args.repeat} runs "
        "per side, interleaved ABBA in one run, each a fresh child process.",
        "",
        "| side | median s | min s | max s | median peak RSS MB |",
        "|---|---|---|---|---|",
        *(f"| {k} | {med[k]:.3f} | {min(times[k]):.3f} | {max(times[k]):.3f} | "
          f"{statistics.median(rss[k]):.0f} |" for k in sides),
        "",
        f"after / before (medians): **{ratio:.3f}** — goal ≤ {GOAL:.2f}: "
        f"{'PASS' if ratio <= GOAL else 'FAIL'} (fastest runs: "
        f"{min(times['after']) / min(times['before']):.3f})",
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
