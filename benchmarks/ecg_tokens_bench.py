"""The fused probe at ECG token counts: train + evaluate time and peak RSS, per engine path.

Each case is a fresh process, 1 thread (torch, BLAS, OpenMP): load the pipeline's manifest
(``data/manifest.parquet`` unless ``--manifest``), give every subject ``N`` ECG tokens (its
pooled ECG plus independent noise per token, sd ``--spread`` in embedding units; zeros where
the ECG is absent: the shape and contract of a token-level manifest, synthesized in memory
until the cohort writes one), train ``train.seeds`` replicas of the fused probe with the
shipped ``params.yaml`` (as ``rightsize train`` does, :func:`rightsize.probes.train.train_seeds`),
then evaluate replica 0 and run the missing-modality test. At N = 1 the ECG stays pooled, so
the default path runs (accelerator ``fused_pooled``); ``--textbook`` adds each N with
``train.accelerate: false`` (the textbook forward and autograd); at N > 1 the fused
accelerator does not apply, so that is the path without ``--textbook`` too.

    python benchmarks/ecg_tokens_bench.py --tokens 1 16 186 --seeds 1 5    # ~20 min, 2 cores

Prints and writes ``benchmarks/results/ecg_tokens.md``: per case the whole process's wall
seconds and peak RSS, and in-process seconds of the load, the fit and the evaluation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import child_json, machine_info, run_process  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def child(manifest: str, tokens: int, seeds: int, accelerate: bool, spread: float) -> dict:
    """One case in this process (see the module docstring); timings and what ran."""
    t0 = time.perf_counter()
    import dataclasses

    import numpy as np

    from rightsize.cohort.arrays import load_arrays
    from rightsize.params import load_block
    from rightsize.probes.config import EvaluateConfig, TrainConfig
    from rightsize.probes.evaluate import evaluate_probe
    from rightsize.probes.missing import missing_modality
    from rightsize.probes.train import train_seeds

    cfg = load_block(REPO / "params.yaml", "train", TrainConfig)
    cfg = dataclasses.replace(cfg, threads=1, seeds=seeds, accelerate=accelerate)
    ecfg = load_block(REPO / "params.yaml", "evaluate", EvaluateConfig)
    arrays = load_arrays(manifest)
    if tokens > 1:
        rng = np.random.default_rng(0)
        n, dim = arrays.ecg.shape
        ecg = np.empty((n, tokens, dim), np.float32)
        for lo in range(0, n, 64):                       # no float64 copy of the whole array
            part = arrays.ecg[lo:lo + 64, None, :] + spread * rng.standard_normal(
                (min(64, n - lo), tokens, dim), dtype=np.float32)
            ecg[lo:lo + 64] = part * arrays.has_ecg[lo:lo + 64, None, None]
        arrays = dataclasses.replace(arrays, ecg=ecg)
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    fits = train_seeds("fused", arrays, cfg)
    fit_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    fit = fits[0]
    metrics = evaluate_probe(fit.probe, {"best_epoch": fit.best_epoch, "epochs": fit.epochs},
                             arrays, ecfg)
    missing_modality(fit.probe, arrays, ecfg)
    eval_s = time.perf_counter() - t2
    return {"tokens": tokens, "seeds": seeds, "accelerate": accelerate,
            "accelerator": fit.extra["accelerator"], "load_s": load_s, "fit_s": fit_s,
            "eval_s": eval_s, "steps": fit.steps, "test_mae": metrics["test"]["mae"],
            "ecg_bytes": int(arrays.ecg.nbytes)}


def main() -> int:
    """Run every case in a fresh child; print and write the markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[1, 16, 186])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 5])
    ap.add_argument("--textbook", action="store_true",
                    help="also run every case with train.accelerate: false")
    ap.add_argument("--spread", type=float, default=0.5)
    ap.add_argument("--manifest", default=str(REPO / "data" / "manifest.parquet"))
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--out", default=str(HERE / "results" / "ecg_tokens.md"))
    ap.add_argument("--child", nargs=5, metavar=("MANIFEST", "N", "K", "ACCEL", "SPREAD"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        m, n, k, acc, spread = args.child
        print(json.dumps(child(m, int(n), int(k), acc == "1", float(spread))))
        return 0
    env = {**os.environ, **{v: "1" for v in THREAD_VARS},
           "PYTHONPATH": str(REPO / "src")}
    info = machine_info()
    info["torch"] = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True, check=True).stdout.strip()
    rows = []
    for k in args.seeds:
        for n in args.tokens:
            for acc in ((True, False) if args.textbook else (True,)):
                m = run_process([sys.executable, __file__, "--child", args.manifest, str(n),
                                 str(k), "1" if acc else "0", str(args.spread)], env=env,
                                cwd=REPO, timeout_s=args.timeout)
                doc = child_json(m, f"tokens {n} seeds {k}")
                doc.update(wall_s=m.wall_s, rss_mb=m.max_rss_mb)
                rows.append(doc)
                print(f"N={n} K={k} accelerate={acc}: {m.wall_s:.1f} s, {m.max_rss_mb:.0f} MiB "
                      f"({doc['accelerator']})", file=sys.stderr, flush=True)
    text = _render(args, info, rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


def _render(args: argparse.Namespace, info: dict[str, Any], rows: list[dict]) -> str:
    pooled = {r["seeds"]: r["wall_s"] for r in rows if r["tokens"] == 1 and r["accelerate"]}
    lines = ["# The fused probe at ECG token counts (train + evaluate, whole process, 1 thread)",
             "", f"`python benchmarks/ecg_tokens_bench.py --tokens "
             f"{' '.join(map(str, args.tokens))} --seeds {' '.join(map(str, args.seeds))}"
             + (" --textbook" if args.textbook else "") + f"`, {time.strftime('%Y-%m-%d %H:%M')}"
             f"; tokens synthesized in memory from `{Path(args.manifest).name}` (pooled ECG + "
             f"noise sd {args.spread}); shipped `params.yaml` (fusion_dim 256, 50 epochs). "
             "Measured whole, nothing extrapolated.", ""]
    lines += [f"- {k}: {v}" for k, v in info.items()]
    lines += ["", "| ECG tokens | seeds | path (accelerator) | wall s | vs pooled | peak RSS MiB "
              "| load s | fit s | evaluate s | ECG array MB | test MAE |",
              "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ratio = r["wall_s"] / pooled[r["seeds"]] if r["seeds"] in pooled else float("nan")
        path = ("accelerated" if r["accelerate"] else "accelerate: false") + \
            f" ({r['accelerator']})"
        lines.append(f"| {r['tokens']} | {r['seeds']} | {path} | {r['wall_s']:.1f} | "
                     f"{ratio:.2f}x | {r['rss_mb']:.0f} | {r['load_s']:.1f} | {r['fit_s']:.1f} | "
                     f"{r['eval_s']:.1f} | {r['ecg_bytes'] / 1e6:.0f} | {r['test_mae']:.3f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
