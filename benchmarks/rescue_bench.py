"""Whole-process `rightsize rescue` of the RampNet run: before vs after rescue became a transaction.

"Before" is the package source at a base revision (default: ``git merge-base HEAD main``),
extracted with ``git archive`` and put first on ``PYTHONPATH``; "after" is this checkout's
``src``. Both sides copy the 18 RampNet files (6.4 MB) into a fresh destination in fresh
child processes, interleaved (ABBA...) in one run so that load on a shared box hits both
alike; each child's ``rightsize.__file__`` is checked to come from the side it claims, and
every copy is checked against the run's own SHA256SUMS. Writes
``benchmarks/results/rescue.md``.

    python benchmarks/rescue_bench.py --repeat 21
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import imported_from, machine_info, run_process  # noqa: E402
from telemetry_account_bench import CHILD, RAMPNET, REPO, extract  # noqa: E402

GOAL = 1.20


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True,
                          text=True).stdout.strip()


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
    base = args.base or _git("merge-base", "HEAD", "main")
    head = _git("rev-parse", "--short", "HEAD")
    dirty = " (+ uncommitted changes)" if _git("status", "--porcelain", "src") else ""
    with tempfile.TemporaryDirectory(prefix="rescue_bench.") as tmp:
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
                dest = tmp / f"{name}-{i}"
                env = {**os.environ, "PYTHONPATH": str(sides[name])}
                m = run_process([sys.executable, "-c", CHILD, "rescue", str(RAMPNET),
                                 str(dest), "-q"], env=env, timeout_s=300)
                if m.rc != 0 or not _same_sums(dest):
                    print(m.stderr[-2000:], file=sys.stderr)
                    return 1
                times[name].append(m.wall_s)
                rss[name].append(m.max_rss_mb)
                shutil.rmtree(dest)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["after"] / med["before"]
    machine = machine_info()
    lines = [
        "# Whole-process `rightsize rescue` of RampNet (18 files, 6.4 MB): before / after the "
        "transaction",
        "",
        f"before = `{base[:12]}` (src via git archive), after = `{head}`{dirty}; "
        f"{args.repeat} runs per side, interleaved ABBA in one run, each a fresh child process "
        "copying into a fresh destination (page cache warm: the source is read every run).",
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
