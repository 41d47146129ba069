"""The probe stages as ``dvc repro`` runs them, this tree against a git revision, side by side.

For each case (every probe of ``train.probes`` with the params as they are, and the fused
probe at ``--large-fusion-dim``) both sides run their own ``dvc.yaml`` train stage command
exactly (``rightsize train <probe> ... --eval-json ... --missing-json ...``: train every
seed replica, save, evaluate, missing-modality test), each its own ``params.yaml``, in a
fresh process with 1 thread (torch, BLAS, OpenMP), on the same manifest (the pipeline's
``data/manifest.parquet`` unless ``--manifest``). The revision is exported with
``git archive`` (``src``, ``dvc.yaml``, ``params.yaml``, ``pyproject.toml``) and run by
this interpreter, so only the code differs. Rounds alternate which side goes first; the
table has the median and the fastest wall seconds of each side, their ratios (ours /
revision) and the peak RSS of each side (largest of its runs).

    python benchmarks/engine_ab_bench.py --before 4ceb899 --rounds 5     # ~25 min on 2 cores
    python benchmarks/engine_ab_bench.py --before 4ceb899 --probes fused --no-large

Writes ``benchmarks/results/engine_ab.md`` (the command, machine and every run's seconds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import machine_info, run_process, write_result  # noqa: E402
from probes_e2e_bench import _env, _export, _git, _project, probe_commands  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent


def _params(root: Path, fusion_dim: int | None, seeds: int | None = None) -> dict[str, Any]:
    """``root``'s params.yaml, the fused probe at ``fusion_dim`` and ``train.seeds`` at
    ``seeds`` when given."""
    import yaml

    params = yaml.safe_load((root / "params.yaml").read_text())
    if fusion_dim is not None:
        params["train"]["fused"] = dict(params["train"]["fused"], fusion_dim=fusion_dim)
    if seeds is not None:
        params["train"]["seeds"] = seeds
    return params


def _run(cmds: list[tuple[str, str, str]], probe: str, proj: Path, env: dict[str, str],
         timeout: float) -> dict[str, float]:
    """Run ``probe``'s train stage command in ``proj``: wall seconds and peak RSS (MiB)."""
    (stage, _, cmd), = [c for c in cmds if c[1] == probe and c[0].startswith("train")]
    m = run_process(["bash", "-c", f"exec {cmd}"], cwd=proj, env=env, timeout_s=timeout)
    if m.rc != 0:
        raise RuntimeError(f"{stage} failed (exit {m.rc}): {m.stderr[-2000:]}")
    return {"wall_s": m.wall_s, "rss_mb": m.max_rss_mb}


def main() -> int:
    """Run both sides round by round; print and write the markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="git revision to compare against")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--probes", nargs="+", default=None, help="default: train.probes")
    ap.add_argument("--large-fusion-dim", type=int, default=1024)
    ap.add_argument("--no-large", action="store_true", help="skip the large fused case")
    ap.add_argument("--seeds", type=int, default=None,
                    help="train.seeds on both sides (default: each side's params.yaml)")
    ap.add_argument("--manifest", default=str(REPO / "data" / "manifest.parquet"))
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--out", default=str(HERE / "results" / "engine_ab.md"))
    args = ap.parse_args()

    manifest = Path(args.manifest).resolve()
    if not manifest.is_file():
        raise SystemExit(f"{manifest}: not found (dvc repro cohort)")
    info = machine_info()
    info["torch"] = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True, check=True).stdout.strip()
    info["commit"] = _git("rev-parse", "--short", "HEAD") + (
        " + uncommitted changes" if _git("status", "--porcelain", "--", "src", "dvc.yaml")
        else "")
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="engine-ab-") as tmp_s:
        tmp = Path(tmp_s)
        before = _export(args.before, tmp / "before")
        sides = {"ours": (REPO, None), f"{args.before}": (before, before / "src")}
        probes = args.probes or _params(REPO, None)["train"]["probes"]
        cases = [(p, None) for p in probes]
        if not args.no_large:
            cases.append(("fused", args.large_fusion_dim))
        setup: dict[tuple[str, int | None], tuple[list, Path]] = {}
        for who, (root, _) in sides.items():
            for fd in {fd for _, fd in cases}:
                prm = _params(root, fd, args.seeds)
                setup[(who, fd)] = (probe_commands(root / "dvc.yaml", prm),
                                    _project(tmp / f"{who}-{fd}", manifest, prm))
        runs: dict[tuple[str, str, int | None], list[dict[str, float]]] = {}
        names = list(sides)
        for r in range(args.rounds):
            for probe, fd in cases:
                for who in (names if r % 2 == 0 else names[::-1]):
                    cmds, proj = setup[(who, fd)]
                    res = _run(cmds, probe, proj, _env(1, sides[who][1]), args.timeout)
                    runs.setdefault((who, probe, fd), []).append(res)
                print(f"round {r + 1} {probe}{'' if fd is None else f' d{fd}'}: " + "; ".join(
                    f"{w} {runs[(w, probe, fd)][-1]['wall_s']:.2f} s" for w in names),
                    file=sys.stderr, flush=True)
    info["load average at end"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    text = _render(args, info, names, cases, runs, time.perf_counter() - t_all)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_result(args.out, text, Path(__file__).name)
    print(text)
    return 0


def _render(args: argparse.Namespace, info: dict[str, Any], names: list[str],
            cases: list[tuple[str, int | None]], runs: dict, seconds: float) -> str:
    ours, base = names
    lines = [f"# Probe stages, this tree vs `{base}` (whole process, 1 thread)", "",
             f"`python benchmarks/engine_ab_bench.py --before {base} --rounds {args.rounds}"
             + (" --no-large" if args.no_large else "")
             + (f" --seeds {args.seeds}" if args.seeds else "")
             + (f" --probes {' '.join(args.probes)}" if args.probes else "") + "`, "
             f"{time.strftime('%Y-%m-%d %H:%M')}, {seconds / 60:.1f} min. Each side runs its "
             "own `dvc.yaml` train stage command with its own `params.yaml` on "
             f"`{Path(args.manifest).name}`; rounds alternate which side goes first.", ""]
    lines += [f"- {k}: {v}" for k, v in info.items()]
    lines += ["", f"| case | {ours} median s | {base} median s | median ratio | {ours} best s"
              f" | {base} best s | best ratio | {ours} peak RSS MiB | {base} peak RSS MiB "
              "| RSS ratio |", "|---|" + "---:|" * 9]
    for probe, fd in cases:
        a, b = runs[(ours, probe, fd)], runs[(base, probe, fd)]
        ma, mb = (statistics.median(x["wall_s"] for x in v) for v in (a, b))
        ba, bb = (min(x["wall_s"] for x in v) for v in (a, b))
        ra, rb = (max(x["rss_mb"] for x in v) for v in (a, b))
        name = f"train@{probe}" + ("" if fd is None else f" (fusion_dim {fd})")
        lines.append(f"| {name} | {ma:.2f} | {mb:.2f} | {ma / mb:.3f} | {ba:.2f} | {bb:.2f} "
                     f"| {ba / bb:.3f} | {ra:.0f} | {rb:.0f} | {ra / rb:.3f} |")
    lines += ["", "Every run's seconds (in round order):", ""]
    for probe, fd in cases:
        name = f"train@{probe}" + ("" if fd is None else f" d{fd}")
        lines.append(f"- {name}: " + "; ".join(
            f"{w} " + ", ".join(f"{x['wall_s']:.2f}" for x in runs[(w, probe, fd)])
            for w in names))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
