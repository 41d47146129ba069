"""Seed spread cost: all four probes x ``train.seeds`` replicas, train + evaluate, against
one seed on a base revision's code, side by side in one run.

Each contender is the probe stages as ``dvc repro`` runs them: for every probe a
``rightsize train`` process, then a ``rightsize evaluate`` process, on the same manifest,
each contender with its own revision's ``params.yaml`` (the base: one seed; this tree:
``train.seeds``). The base revision is checked out with ``git worktree add`` into a temp
directory and run with this environment's interpreter and ``PYTHONPATH`` pointing at its
``src`` (the child prints which ``rightsize`` it imported). Rounds alternate which side goes
first; the table keeps every round and the ratio of the medians.

    python benchmarks/seeds_bench.py                      # base: main, 3 rounds
    python benchmarks/seeds_bench.py --base main --rounds 2 --manifest data/manifest.parquet

Needs ``data/manifest.parquet`` (``dvc repro cohort``). Writes benchmarks/results/seeds.md.
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

from _measure import run_process

REPO = Path(__file__).resolve().parents[1]
PROBES = ("ecg", "echo", "concat", "fused")
sys.path.insert(0, str(REPO / "src"))


def _pipeline(src: Path, params: Path, manifest: Path, work: Path) -> dict[str, float]:
    """Seconds per stage process (``train@p``, ``evaluate@p``) and their total."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cli = [sys.executable, "-c", "import sys; from rightsize.cli import main; "
           "sys.exit(main(sys.argv[1:]))"]
    out: dict[str, float] = {}
    for p in PROBES:
        train = cli + ["train", p, "--params", str(params), "--manifest", str(manifest),
                       "--out", str(work / "models" / p), "--events", str(work / "runs" / p),
                       "--curve", str(work / f"{p}.csv"), "--metrics",
                       str(work / f"train_{p}.json"), "-q"]
        ev = cli + ["evaluate", p, "--params", str(params), "--manifest", str(manifest),
                    "--model", str(work / "models" / p), "--json", str(work / f"eval_{p}.json"),
                    "-q"]
        for stage, argv in ((f"train@{p}", train), (f"evaluate@{p}", ev)):
            m = run_process(argv, env=env, timeout_s=1800)
            if m.rc != 0:
                raise SystemExit(f"{stage} failed ({src}):\n{m.stderr[-2000:]}")
            out[stage] = m.wall_s
    out["total"] = sum(out.values())
    return out


def _imported_from(src: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([sys.executable, "-c", "import rightsize; print(rightsize.__file__)"],
                          env=env, capture_output=True, text=True, check=True).stdout.strip()


def main() -> int:
    """Run the comparison; print and write the markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="main", help="git revision to compare against")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--manifest", default=str(REPO / "data" / "manifest.parquet"))
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "seeds.md"))
    args = ap.parse_args()
    from rightsize.measure import cpu_model, hardware_stamp

    manifest = Path(args.manifest).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="seeds-bench-"))
    base = tmp / "base"
    subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], cwd=REPO,
                   check=True, capture_output=True)
    try:
        sides = {"base": (base / "src", base / "params.yaml"),
                 "seeds": (REPO / "src", REPO / "params.yaml")}
        for name, (src, _) in sides.items():
            print(f"{name}: imports {_imported_from(src)}", flush=True)
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
        for r in range(args.rounds):
            order = list(sides) if r % 2 == 0 else list(sides)[::-1]
            for name in order:
                src, params = sides[name]
                work = tmp / f"{name}-{r}"
                res = _pipeline(src, params, manifest, work)
                shutil.rmtree(work, ignore_errors=True)
                runs[name].append(res)
                print(f"round {r + 1} {name}: {res['total']:.1f} s", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO,
                       check=False, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)

    seeds_k = _seeds_of(REPO / "params.yaml")
    hw = hardware_stamp(threads=1, device="cpu")
    cap = subprocess.run([sys.executable, "-c", "import torch; "
                          "print(torch.backends.cpu.get_cpu_capability())"],
                         capture_output=True, text=True, check=True).stdout.strip()
    med = {k: statistics.median(r["total"] for r in v) for k, v in runs.items()}
    stages = [s for s in runs["base"][0] if s != "total"]
    lines = [f"# Seed spread cost ({seeds_k} seeds vs 1)", "",
             f"{cpu_model()}, {hw['cores']} cores, torch {hw['torch']}, "
             f"ATen {cap}, train.threads 1; shared 2-core box (other sessions running); base = "
             f"`{args.base}`; {args.rounds} rounds alternating which side runs first.", "",
             "| stage | base (1 seed), median s | this tree "
             f"({seeds_k} seeds), median s | ratio |", "|---|---|---|---|"]
    for s in stages + ["total"]:
        b = statistics.median(r[s] for r in runs["base"])
        n = statistics.median(r[s] for r in runs["seeds"])
        lines.append(f"| {s} | {b:.2f} | {n:.2f} | {n / b:.2f}x |")
    lines += ["", "Totals per round (s): " + "; ".join(
        f"{k}: " + ", ".join(f"{r['total']:.1f}" for r in v) for k, v in runs.items()),
        "", f"**{seeds_k} seeds / 1 seed = {med['seeds'] / med['base']:.2f}x** "
        f"(goal: <= 2x)."]
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


def _seeds_of(params: Path) -> int:
    import yaml

    return int((yaml.safe_load(params.read_text()).get("train") or {}).get("seeds", 1))


if __name__ == "__main__":
    raise SystemExit(main())
