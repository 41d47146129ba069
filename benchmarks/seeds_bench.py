"""Seed spread cost: all four probes x ``train.seeds`` replicas, train + evaluate, against
one seed, side by side in one run.

Each contender is the probe stages as ``dvc repro`` runs them: for every probe one
``rightsize train --eval-json`` process (train, save, evaluate), on the same manifest.
Contenders: **seeds** (this tree, its ``params.yaml``: ``train.seeds`` replicas) and
**one seed** (this tree, the same params with ``train.seeds: 1``). With ``--base REV`` a third
contender runs that revision's code at one seed (checked out with ``git worktree add``, its own
``params.yaml``, its own stage shape: ``train`` then ``evaluate`` as two processes when its
``dvc.yaml`` has ``evaluate@`` stages). Every contender runs with this environment's
interpreter and ``PYTHONPATH`` pointing at its ``src``. Rounds rotate which side goes first;
the table keeps every round and the ratio of the medians.

    python benchmarks/seeds_bench.py                             # 3 rounds, this tree only
    python benchmarks/seeds_bench.py --base c50ba41 --rounds 2

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

from _measure import imported_from, run_process, write_result
from rightsize.probe_names import PROBES

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def _pipeline(src: Path, params: Path, manifest: Path, work: Path,
              one_process: bool) -> dict[str, float]:
    """Seconds per probe (its stage processes) and their total."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cli = [sys.executable, "-c", "import sys; from rightsize.cli import main; "
           "sys.exit(main(sys.argv[1:]))"]
    out: dict[str, float] = {}
    for p in PROBES:
        common = ["--params", str(params), "--manifest", str(manifest), "-q"]
        train = cli + ["train", p, *common, "--out", str(work / "models" / p),
                       "--events", str(work / "runs" / p), "--curve", str(work / f"{p}.csv"),
                       "--metrics", str(work / f"train_{p}.json")]
        ev_json = str(work / f"eval_{p}.json")
        argvs = [train + ["--eval-json", ev_json]] if one_process else [
            train, cli + ["evaluate", p, *common, "--model", str(work / "models" / p),
                          "--json", ev_json]]
        out[p] = 0.0
        for argv in argvs:
            m = run_process(argv, env=env, timeout_s=1800)
            if m.rc != 0:
                raise SystemExit(f"{p} failed ({src}):\n{m.stderr[-2000:]}")
            out[p] += m.wall_s
    out["total"] = sum(out.values())
    return out


def _one_seed_params(params: Path, dest: Path) -> Path:
    """``params`` with ``train.seeds: 1`` (the key left out when the revision lacks it)."""
    import yaml

    d = yaml.safe_load(params.read_text())
    if "seeds" in d["train"]:
        d["train"]["seeds"] = 1
    dest.write_text(yaml.safe_dump(d, sort_keys=False))
    return dest


def main() -> int:
    """Run the comparison; print and write the markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="", help="also time this git revision at one seed")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--manifest", default=str(REPO / "data" / "manifest.parquet"))
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "seeds.md"))
    args = ap.parse_args()
    from rightsize.measure import cpu_model, hardware_stamp

    manifest = Path(args.manifest).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="seeds-bench-"))
    base = tmp / "base"
    sides = {"seeds": (REPO / "src", REPO / "params.yaml", True),
             "one seed": (REPO / "src", _one_seed_params(REPO / "params.yaml",
                                                         tmp / "one.yaml"), True)}
    try:
        if args.base:
            subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base],
                           cwd=REPO, check=True, capture_output=True)
            two = "evaluate@" in (base / "dvc.yaml").read_text() or "evaluate:" in (
                base / "dvc.yaml").read_text()
            sides[f"base {args.base}"] = (base / "src", _one_seed_params(
                base / "params.yaml", tmp / "base.yaml"), not two)
        for name, (src, _, _) in sides.items():
            print(f"{name}: imports {imported_from(src)}", flush=True)
        runs: dict[str, list[dict[str, float]]] = {k: [] for k in sides}
        names = list(sides)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                src, params, one = sides[name]
                work = tmp / f"{name.replace(' ', '_')}-{r}"
                res = _pipeline(src, params, manifest, work, one)
                shutil.rmtree(work, ignore_errors=True)
                runs[name].append(res)
                print(f"round {r + 1} {name}: {res['total']:.1f} s", flush=True)
    finally:
        if args.base:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO,
                           check=False, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)

    seeds_k = _seeds_of(REPO / "params.yaml")
    hw = hardware_stamp(threads=1, device="cpu")
    cap = subprocess.run([sys.executable, "-c", "import torch; "
                          "print(torch.backends.cpu.get_cpu_capability())"],
                         capture_output=True, text=True, check=True).stdout.strip()
    med = {k: statistics.median(r["total"] for r in v) for k, v in runs.items()}
    lines = [f"# Seed spread cost ({seeds_k} seeds vs 1)", "",
             f"{cpu_model()}, {hw['cores']} cores, torch {hw['torch']}, "
             f"ATen {cap}, train.threads 1; shared 2-core box (other sessions running); "
             f"{args.rounds} rounds rotating which side runs first. Each probe's time is its "
             "stage processes' wall time (train + evaluate) as `dvc repro` runs them.", "",
             "| probe | " + " | ".join(f"{k}, median s" for k in runs)
             + f" | {seeds_k} seeds / 1 seed |", "|---|" + "---|" * (len(runs) + 1)]
    for s in [*PROBES, "total"]:
        m = {k: statistics.median(r[s] for r in v) for k, v in runs.items()}
        lines.append(f"| {s} | " + " | ".join(f"{v:.2f}" for v in m.values())
                     + f" | {m['seeds'] / m['one seed']:.2f}x |")
    lines += ["", "Totals per round (s): " + "; ".join(
        f"{k}: " + ", ".join(f"{r['total']:.1f}" for r in v) for k, v in runs.items()),
        "", f"**{seeds_k} seeds / 1 seed = {med['seeds'] / med['one seed']:.2f}x** "
        "(goal: <= 2x, same code)."]
    if args.base:
        b = med[f"base {args.base}"]
        lines.append(f"Against `{args.base}` at one seed: {med['seeds'] / b:.2f}x.")
    text = "\n".join(lines) + "\n"
    write_result(args.out, text, "seeds_bench.py")
    print(text)
    return 0


def _seeds_of(params: Path) -> int:
    import yaml

    return int((yaml.safe_load(params.read_text()).get("train") or {}).get("seeds", 1))


if __name__ == "__main__":
    raise SystemExit(main())
