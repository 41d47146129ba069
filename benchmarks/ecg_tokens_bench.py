"""The fused probe at ECG token counts: train + evaluate time, peak RSS and quality, per path.

Every case is one whole ``rightsize train fused`` process, 1 thread (torch, BLAS, OpenMP),
exactly as ``train@fused`` runs in ``dvc repro`` (``--eval-json``, ``--missing-json`` and
``--truth``), on a planted synthetic cohort built by ``rightsize cohort`` at
``cohort.ecg_tokens = N`` (the shipped params otherwise). Per case: the process's wall
seconds and peak RSS, its in-process load / fit seconds, and what it measured (test MAE
across the seed replicas, the best head's weight on the planted token).

* ``--tokens`` x ``--seeds`` with the accelerators on (``fused_pooled`` at N = 1,
  ``fused_tokens`` above); ``--textbook N ...`` adds those counts with
  ``train.accelerate: false`` (autograd of the textbook forward): the time per path;
* the speed goal (16 tokens within 3x the pooled fused, 5 seeds) is the pair
  ``N = 1`` / ``N = 16`` at the largest ``--seeds``, run ``--ratio-repeat`` times in
  alternating order (ABBA...): the ratio of medians and of the fastest runs;
* ``--before REV --before-tokens N ...``: the same one-seed case with ``src/`` of ``REV``
  (default: none), without ``--truth`` on both sides (older revisions lack it): peak RSS
  before/after the chunked token moments;
* the ``token_cost`` stage (``rightsize token-cost``, one seed, epochs extrapolated) beside
  the one-seed cases measured whole: how far its extrapolation is off (``--no-stage`` skips).

    python benchmarks/ecg_tokens_bench.py --before c3ad47d     # ~25 min on 2 cores

Writes ``benchmarks/results/ecg_tokens.md`` (stamped, :func:`_measure.write_result`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import (  # noqa: E402
    extract,
    last_line,
    machine_info,
    run_process,
    self_peak_rss_mb,
    write_result,
)

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, **{v: "1" for v in THREAD_VARS}, "PYTHONPATH": str(src)}


def _params(tokens: int, seeds: int, accelerate: bool) -> dict[str, Any]:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params.pop("token_cost", None)         # older revisions (--before) refuse unknown blocks
    params["cohort"]["ecg_tokens"] = tokens
    params["train"].update(seeds=seeds, accelerate=accelerate, threads=1)
    return params


def build(root: Path, tokens: int, timeout: float) -> dict[str, Any]:
    """The planted cohort at ``tokens`` under ``root/n<tokens>``: its folder and build cost."""
    folder = root / f"n{tokens}"
    folder.mkdir()
    (folder / "params.yaml").write_text(yaml.safe_dump(_params(tokens, 1, True)))
    m = run_process([sys.executable, "-m", "rightsize.cli", "-q", "cohort", "--params",
                     str(folder / "params.yaml"), "--out", str(folder / "manifest.parquet"),
                     "--truth", str(folder / "truth.parquet")], env=_env(REPO / "src"),
                    cwd=REPO, timeout_s=timeout)
    if m.rc:
        raise RuntimeError(f"cohort at {tokens} tokens: {last_line(m)}")
    return {"folder": folder, "bytes": (folder / "manifest.parquet").stat().st_size,
            "build_s": m.wall_s, "build_rss_mb": m.max_rss_mb}


def train(cohort: dict[str, Any], tokens: int, seeds: int, accelerate: bool, src: Path,
          truth: bool, timeout: float, tag: str) -> dict[str, Any]:
    """One whole ``rightsize train fused`` process; its cost and what it measured."""
    out = Path(tempfile.mkdtemp(prefix=f"{tag}-", dir=cohort["folder"]))
    (out / "params.yaml").write_text(yaml.safe_dump(_params(tokens, seeds, accelerate)))
    argv = [sys.executable, "-m", "rightsize.cli", "-q", "train", "fused", "--params",
            str(out / "params.yaml"), "--manifest", str(cohort["folder"] / "manifest.parquet"),
            "--out", str(out / "model"), "--events", str(out / "events"),
            "--curve", str(out / "curve.csv"), "--metrics", str(out / "train.json"),
            "--eval-json", str(out / "eval.json"), "--missing-json", str(out / "missing.json")]
    if truth:
        argv += ["--truth", str(cohort["folder"] / "truth.parquet")]
    m = run_process(argv, env=_env(src), cwd=REPO, timeout_s=timeout)
    if m.rc:
        raise RuntimeError(f"{tag}: {last_line(m)}")
    tr, ev = (json.loads((out / f).read_text()) for f in ("train.json", "eval.json"))
    mi = json.loads((out / "missing.json").read_text())
    side = json.loads((out / "model" / "checkpoint.json").read_text())
    att = (ev.get("attention") or {}).get("echo_to_ecg") or {}
    return {"tokens": tokens, "seeds": seeds, "accelerate": accelerate, "tag": tag,
            "accelerator": side.get("accelerator", "?"), "wall_s": m.wall_s,
            "rss_mb": m.max_rss_mb, "load_s": tr["wall_clock_s"]["load"],
            "fit_s": tr["wall_clock_s"]["train"], "mae": ev["test"]["mae_mean"],
            "mae_sd": ev["test"]["mae_sd"], "best_head": att.get("best_head_val_mean"),
            "best_head_sd": att.get("best_head_val_sd"),
            "ecg_cost": mi["ecg_absent"]["mae"] - mi["both_present"]["mae"]}


def main() -> int:
    """Build the cohorts, run every case in a fresh child, write the stamped result."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[1, 16, 93, 186])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 5])
    ap.add_argument("--textbook", type=int, nargs="*", default=[16, 186],
                    help="token counts also run with train.accelerate: false")
    ap.add_argument("--ratio-repeat", type=int, default=3)
    ap.add_argument("--before", default=None, help="a revision whose src/ to compare with")
    ap.add_argument("--before-tokens", type=int, nargs="*", default=[186])
    ap.add_argument("--no-stage", action="store_true", help="skip the token_cost stage check")
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--out", default=str(HERE / "results" / "ecg_tokens.md"))
    args = ap.parse_args()
    info = machine_info()
    info["torch"] = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True, check=True).stdout.strip()
    rows, ratio, before, stage = [], {}, [], None
    wanted = sorted({*args.tokens, *args.before_tokens, *args.textbook})
    with tempfile.TemporaryDirectory(prefix="ecg-tokens-bench-") as tmp:
        cohorts = {n: build(Path(tmp), n, args.timeout) for n in wanted}
        k_max = max(args.seeds)
        for i in range(args.ratio_repeat):          # the speed goal: ABBA over N = 1 / 16
            for n in (1, 16) if i % 2 == 0 else (16, 1):
                ratio.setdefault(n, []).append(train(cohorts[n], n, k_max, True, REPO / "src",
                                                     True, args.timeout, f"ratio-{n}-{i}"))
                _say(ratio[n][-1])
        for k in args.seeds:
            for n in args.tokens:
                for acc in (True, False) if n in args.textbook else (True,):
                    if acc and k == k_max and n in ratio:
                        rows.append(ratio[n][0])
                        continue
                    rows.append(train(cohorts[n], n, k, acc, REPO / "src", True, args.timeout,
                                      f"n{n}-k{k}-{'acc' if acc else 'textbook'}"))
                    _say(rows[-1])
        if args.before:
            (Path(tmp) / "before").mkdir()
            src = extract(args.before, Path(tmp) / "before")
            for n in args.before_tokens:
                for name, side in (("before", src), ("after", REPO / "src")):
                    before.append({**train(cohorts[n], n, 1, True, side, False, args.timeout,
                                           f"{name}-{n}"), "side": name})
                    _say(before[-1])
        if not args.no_stage:
            stage = _stage(Path(tmp), args.timeout)
        text = _render(args, info, cohorts, rows, ratio, before, stage)
    path = write_result(args.out, text, Path(__file__).name, info)
    print(path.read_text())
    return 0


def _say(r: dict[str, Any]) -> None:
    print(f"{r['tag']}: {r['wall_s']:.1f} s, {r['rss_mb']:.0f} MiB ({r['accelerator']})",
          file=sys.stderr, flush=True)


def _stage(tmp: Path, timeout: float) -> dict[str, Any]:
    """The token_cost stages with the shipped params (``rightsize token-cost --tokens N`` per
    count, as token_cost_case@N runs, then the join): the joined result and the summed wall."""
    cli = [sys.executable, "-m", "rightsize.cli", "-q", "token-cost", "--params",
           str(REPO / "params.yaml")]
    tokens = (yaml.safe_load((REPO / "params.yaml").read_text())["token_cost"] or {})["tokens"]
    cases, out, wall = tmp / "token_cost", tmp / "token_cost.json", 0.0
    cases.mkdir(exist_ok=True)
    for argv in [[*cli, "--tokens", str(n), "--json", str(cases / f"tokens_{n}.json"),
                  "--workdir", str(tmp)] for n in tokens] + [
                 [*cli, "--cases", str(cases), "--json", str(out)]]:
        m = run_process(argv, env=_env(REPO / "src"), cwd=REPO, timeout_s=timeout)
        if m.rc:
            raise RuntimeError(f"token-cost: {last_line(m)}")
        wall += m.wall_s
    return {"wall_s": wall, **json.loads(out.read_text())}


def _render(args: argparse.Namespace, info: dict[str, str], cohorts: dict[int, Any],
            rows: list[dict], ratio: dict[int, list[dict]], before: list[dict],
            stage: dict[str, Any] | None) -> str:
    def best(v: Any) -> str:
        return "—" if v is None else f"{v:.3f}"

    cmd = " ".join(["python benchmarks/ecg_tokens_bench.py", *sys.argv[1:]])
    lines = ["# The fused probe at ECG token counts (train + evaluate, whole process, 1 thread)",
             "", f"`{cmd}`, {time.strftime('%Y-%m-%d %H:%M')}; planted synthetic cohorts "
             "built by `rightsize cohort` at each token count (shipped params otherwise: "
             "fusion_dim 256, 50 epochs); every case one whole `rightsize train fused` "
             "process with --eval-json, --missing-json and --truth, as train@fused runs it. "
             "Measured whole, nothing extrapolated. Driver peak RSS "
             f"{self_peak_rss_mb():.0f} MiB (the floor of every RSS below).", ""]
    lines += [f"- {k}: {v}" for k, v in info.items()]
    lines += ["- box: shared 2-core VM (other sessions running): read the ratios", "",
              "## Cohorts", "", "| ECG tokens | manifest MB | build s | build peak RSS MiB |",
              "|---:|---:|---:|---:|"]
    lines += [f"| {n} | {c['bytes'] / 1e6:.0f} | {c['build_s']:.1f} | {c['build_rss_mb']:.0f} |"
              for n, c in cohorts.items()]
    k_max = max(args.seeds)
    med = {n: statistics.median(r["wall_s"] for r in rs) for n, rs in ratio.items()}
    fast = {n: min(r["wall_s"] for r in rs) for n, rs in ratio.items()}
    if 1 in med and 16 in med:
        lines += ["", "## Speed goal: 16 tokens within 3x the pooled fused (5 seeds)", "",
                  f"{len(ratio[1])} runs each at {k_max} seeds, alternating order: pooled "
                  f"median {med[1]:.1f} s, 16 tokens median {med[16]:.1f} s: **"
                  f"{med[16] / med[1]:.2f}x** (fastest runs {fast[16] / fast[1]:.2f}x); goal "
                  f"<= 3x: {'PASS' if med[16] / med[1] <= 3 else 'FAIL'}."]
    pooled = {r["seeds"]: r["wall_s"] for r in rows if r["tokens"] == 1 and r["accelerate"]}
    lines += ["", "## Every case", "", "| ECG tokens | seeds | path (accelerator) | wall s | "
              "vs pooled | peak RSS MiB | load s | fit s | test MAE (mean ± sd, seeds) | "
              "validation-chosen head on t* (mean ± sd) | MAE cost of no ECG (seed 0) |",
              "|---:|---:|---|---:|---:|---:|---:|---:|---|---|---:|"]
    for r in rows:
        path = ("accelerated" if r["accelerate"] else "accelerate: false") + \
            f" ({r['accelerator']})"
        vs = r["wall_s"] / pooled[r["seeds"]] if r["seeds"] in pooled else float("nan")
        lines.append(f"| {r['tokens']} | {r['seeds']} | {path} | {r['wall_s']:.1f} | {vs:.2f}x "
                     f"| {r['rss_mb']:.0f} | {r['load_s']:.1f} | {r['fit_s']:.1f} | "
                     f"{r['mae']:.3f} ± {r['mae_sd']:.3f} | {best(r['best_head'])} ± "
                     f"{best(r['best_head_sd'])} | {r['ecg_cost']:+.2f} |")
    if before:
        lines += ["", f"## Before/after the chunked token moments (`{args.before}` vs this "
                  "commit, 1 seed, without --truth)", "",
                  "| ECG tokens | side | wall s | peak RSS MiB | fit s | test MAE |",
                  "|---:|---|---:|---:|---:|---:|"]
        lines += [f"| {r['tokens']} | {r['side']} | {r['wall_s']:.1f} | {r['rss_mb']:.0f} | "
                  f"{r['fit_s']:.1f} | {r['mae']:.3f} |" for r in before]
    if stage is not None:
        whole = {r["tokens"]: r["wall_s"] for r in rows if r["seeds"] == 1 and r["accelerate"]}
        lines += ["", f"## The token_cost stage beside the cases measured whole (stage wall "
                  f"{stage['wall_s']:.1f} s)", "",
                  "| ECG tokens | stage: train + evaluate s | basis | measured whole s | "
                  "stage / whole |", "|---:|---:|---|---:|---:|"]
        for c in sorted(stage["cases"].values(), key=lambda c: c["ecg_tokens"]):
            w = whole.get(c["ecg_tokens"])
            lines.append(f"| {c['ecg_tokens']} | {c['train_eval_s']:.1f} | {c['basis']} | "
                         + (f"{w:.1f} | {c['train_eval_s'] / w:.2f} |" if w else "— | — |"))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
