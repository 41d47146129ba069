"""The encoder_bench and sizing stages at their default sizes: wall clock against the 60 s goal.

Runs ``rightsize bench-encoder <model>`` for every model of ``encoder_bench.models`` in
``params.yaml``, then ``rightsize sizing`` on those files (its disk measurement included:
float16 shards written and fsync'd at ``sizing.disk.path``), each in a fresh child process
exactly as ``dvc repro`` does, and writes ``benchmarks/results/encoders.md``: the wall clock
and peak RSS of each part and their total (goals: <= 60 s together on a 2-core CPU, the
bench <= ~2 GB RSS), then per model what was measured (tokens, FLOPs against the analytic
count, records/s per batch size with the spread of the repeats, peak memory, preprocessing
per core) and what was not, with the machine stamp and the commit. Needs the cohort
manifest (``dvc repro cohort``). Committed GPU files under ``measurements/gpu/`` are listed.
With ``--before REV`` the same parts of revision REV (its ``src`` and ``params.yaml``, from
``git archive``, run with ``PYTHONPATH`` at its ``src``) run in the same rounds, the order
alternating, and the table gives both sides and their ratio per round.

Usage::

    python benchmarks/encoder_bench.py                 # writes benchmarks/results/encoders.md
    python benchmarks/encoder_bench.py --before 4ceb899
    python benchmarks/encoder_bench.py --out-md /tmp/encoders.md
"""

from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import imported_from, machine_info, run_process, write_result  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GOAL_S = 60.0
RSS_GOAL_MB = 2048.0


def _models(params: Path) -> list[str]:
    import yaml

    return list(yaml.safe_load(params.read_text())["encoder_bench"]["models"])


def _model_lines(name: str, r: dict, wall: float, rss: float) -> list[str]:
    hw = r["hardware"]
    lines = [
        f"### {name}: {r['family']} {r['size']} ({r['architecture']['params'] / 1e6:.0f} M "
        f"encoder parameters, random weights)",
        "",
        f"Child process: {wall:.1f} s wall, {rss:,.0f} MB peak RSS; measured on {hw['cpu']}, "
        f"{hw['threads']} threads, torch {hw['torch']}, device {r['device']}, "
        f"{r['compute_dtype']}.",
        "",
        "| quantity | value |",
        "|---|---|",
        f"| model input | {r['input_shape']} x {r['inputs_per_record']} per record |",
        f"| tokens per input (output shapes / conv-patch arithmetic) | "
        f"{r['tokens_per_input']} / {r['tokens_per_input_arithmetic']} |",
        f"| tokens per record | {r['tokens_per_record']:,} |",
        f"| hidden states x width | {r['hidden_states']} x {r['hidden_size']} |",
        f"| bytes per record, one layer, float16 | "
        f"{r['bytes_per_record']['float16']['one_layer']:,} |",
        f"| FLOPs per record (flop_counter) | {r['flops_per_record'] / 1e9:,.1f} G |",
        f"| FLOPs per input: counted / analytic | {r['flops_per_input'] / 1e9:,.2f} G / "
        f"{r['flops_per_input_analytic'] / 1e9:,.2f} G "
        f"({r['flops_per_input'] / r['flops_per_input_analytic']:.4f}) |",
        f"| transformer layers' share of the FLOPs | "
        f"{r['flops_per_input_layers'] / r['flops_per_input']:.1%} |",
    ]
    for t in r["throughput"].values():
        if t["status"] != "ok":
            lines.append(f"| batch {t['batch']} | {t['status']} |")
            continue
        lines.append(f"| batch {t['batch']}: records/s (median [min, max] of {t['repeats']}) | "
                     f"{t['records_per_s']:.3g} [{t['records_per_s_min']:.3g}, "
                     f"{t['records_per_s_max']:.3g}], peak {t['peak_mem_mb']:,.0f} MB |")
    if r.get("preprocess"):
        p = r["preprocess"]
        lines.append(f"| preprocessing, records/s per core (median [min, max] of "
                     f"{p['repeats']}, {p['records']} records) | "
                     f"{p['records_per_s_per_core']:.0f} [{p['records_per_s_per_core_min']:.0f}, "
                     f"{p['records_per_s_per_core_max']:.0f}] |")
    lines += ["", f"Timing: {r['timing']['note']}. Not measured: {r['not_measured']}.", ""]
    return lines


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                             capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src", "params.yaml"],
                               cwd=REPO, text=True, capture_output=True).stdout.strip()
        return out + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _sizing_lines(r: dict, wall: float, rss: float) -> list[str]:
    d = r["disk"]
    w, rd = d["write"], d.get("read")
    disk_s = w["seconds"] + (rd["seconds"] if rd else 0.0)
    return [
        "### sizing (the disk measurement included)",
        "",
        f"Child process: {wall:.1f} s wall, {rss:,.0f} MB peak RSS; of which the disk "
        f"measurement at `{d['path']}`: {disk_s:.2f} s ({w['shards']} {w['format']} shards of "
        f"{w['shard_bytes'] / 1e6:,.0f} MB written and fsync'd at {w['bytes_per_s'] / 1e6:,.0f} "
        f"MB/s" + ("" if rd is None else f"; {rd['files']} files of {rd['file_bytes'] / 1e3:,.0f}"
                   f" kB read at {rd['bytes_per_s'] / 1e6:,.0f} MB/s, page cache "
                   f"{rd['page_cache'].split(' (')[0]}") + ").",
        "",
        f"The ask: {r['text']['ask']}",
        "",
    ]


def _round(cmd: list[str], params: str, manifest: str, tmp: Path,
           env: dict[str, str] | None = None) -> tuple[list, list, dict] | None:
    """One run of every part in a fresh process each: (parts, bench results, sizing JSON)."""
    results, parts = [], []
    for name in _models(Path(params)):
        out = tmp / f"{name}.json"
        m = run_process([*cmd, "bench-encoder", name, "--params", params, "--json", str(out),
                         "-q"], cwd=REPO, env=env, timeout_s=600)
        if m.rc != 0:
            print(f"{name}: exit {m.rc}: {m.stderr.strip()[-500:]}", file=sys.stderr)
            return None
        parts.append((f"encoder_bench@{name}", m.wall_s, m.cpu_s, m.max_rss_mb))
        results.append((name, json.loads(out.read_text()), m.wall_s, m.max_rss_mb))
    sized = tmp / "sizing.json"
    m = run_process([*cmd, "sizing", "--params", params, "--manifest", manifest,
                     "--bench-dir", str(tmp), "--gpu-dir", str(REPO / "measurements" / "gpu"),
                     "--json", str(sized), "-q"], cwd=REPO, env=env, timeout_s=600)
    if m.rc != 0:
        print(f"sizing: exit {m.rc}: {m.stderr.strip()[-500:]}", file=sys.stderr)
        return None
    parts.append(("sizing", m.wall_s, m.cpu_s, m.max_rss_mb))
    return parts, results, json.loads(sized.read_text())


def _checkout(rev: str, dest: Path) -> Path:
    """``src`` and ``params.yaml`` of ``rev`` extracted under ``dest`` (no worktree made)."""
    tar = subprocess.run(["git", "archive", rev, "src", "params.yaml"], cwd=REPO,
                         capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(dest, filter="data")
    return dest


def _before_lines(rev: str, pairs: list[tuple[float, float, float, float]]) -> list[str]:
    ratios = sorted(n / b for n, b, _, _ in pairs)
    cpu = sorted(n / b for _, _, n, b in pairs)
    return [
        f"Side by side with {rev} (same rounds, order alternating; whole processes; the "
        f"same three parts as that revision runs them):",
        "",
        "| round | this commit s | " + rev + " s | ratio | CPU s ratio |",
        "|---:|---:|---:|---:|---:|",
        *(f"| {i + 1} | {n:.1f} | {b:.1f} | {n / b:.2f} | {nc / bc:.2f} |"
          for i, (n, b, nc, bc) in enumerate(pairs)),
        "",
        f"Median ratio this commit / {rev}: wall {ratios[len(ratios) // 2]:.2f}, CPU "
        f"{cpu[len(cpu) // 2]:.2f}.",
        "",
    ]


def main() -> int:
    """Run the bench-encoder children and the sizing child ``--rounds`` times; write markdown."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default=str(REPO / "params.yaml"))
    ap.add_argument("--manifest", default="data/manifest.parquet",
                    help="cohort manifest, relative to the repo root (the children's cwd)")
    ap.add_argument("--rounds", type=int, default=3, help="runs of all parts (fastest shown)")
    ap.add_argument("--before", default=None, metavar="REV",
                    help="also run revision REV's parts in the same rounds (interleaved)")
    ap.add_argument("--out-md", default=str(REPO / "benchmarks" / "results" / "encoders.md"))
    args = ap.parse_args()
    if not (REPO / args.manifest).is_file():
        print(f"{args.manifest}: not found (dvc repro cohort)", file=sys.stderr)
        return 1
    cmd = [sys.executable, "-m", "rightsize.cli"]
    rounds, pairs = [], []
    with tempfile.TemporaryDirectory() as keep:
        base = _checkout(args.before, Path(keep) / "base") if args.before else None
        env = {**os.environ, "PYTHONPATH": str(base / "src")} if base else None
        if base:
            print(f"{args.before}: imports {imported_from(base / 'src')}", flush=True)
        for r in range(args.rounds):
            sides = ["new", "before"] if base else ["new"]
            got: dict[str, tuple | None] = {}
            for side in (sides if r % 2 == 0 else sides[::-1]):
                with tempfile.TemporaryDirectory() as tmp:
                    got[side] = (_round(cmd, args.params, args.manifest, Path(tmp))
                                 if side == "new" else
                                 _round(cmd, str(base / "params.yaml"), args.manifest, Path(tmp),
                                        env))
                if got[side] is None:
                    return 1
            rounds.append(got["new"])
            if base:
                new, old = got["new"][0], got["before"][0]
                pairs.append((sum(p[1] for p in new), sum(p[1] for p in old),
                              sum(p[2] for p in new), sum(p[2] for p in old)))
            print(f"round {r + 1}: " + ", ".join(
                f"{k} {sum(p[1] for p in v[0]):.1f} s" for k, v in got.items()), flush=True)
    totals = [sum(p[1] for p in r[0]) for r in rounds]
    best = min(range(len(rounds)), key=lambda i: totals[i])
    parts, results, sizing = rounds[best]
    total = totals[best]
    bench_rss = max(p[3] for r in rounds for p in r[0] if p[0].startswith("encoder_bench"))
    info = machine_info()
    lines = [
        "Encoder bench (`encoder_bench` stage) and `sizing` stage at the default sizes of "
        "params.yaml, each in a fresh process as `dvc repro` runs it (whole process: "
        "interpreter start-up and imports included).",
        "",
        f"Run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC at commit {_commit()}. "
        f"Re-run: `python benchmarks/encoder_bench.py`.",
        "",
        f"Fastest of {len(rounds)} rounds (round totals: "
        f"{', '.join(f'{t:.1f}' for t in totals)} s); CPU s = the child's user + system time, "
        f"its own work whatever else runs on the box:",
        "",
        "| part | wall s | CPU s | peak RSS MB |",
        "|---|---:|---:|---:|",
        *(f"| {n} | {w:.1f} | {c:.1f} | {r:,.0f} |" for n, w, c, r in parts),
        f"| **total** | **{total:.1f}** | {sum(p[2] for p in parts):.1f} | |",
        "",
        f"Goals: total <= {GOAL_S:.0f} s on 2 cores: {'met' if total <= GOAL_S else 'MISSED'}; "
        f"bench peak RSS <= {RSS_GOAL_MB:,.0f} MB: "
        f"{'met' if bench_rss <= RSS_GOAL_MB else 'MISSED'} ({bench_rss:,.0f} MB, all rounds).",
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in info.items()) + ".",
        "",
    ]
    if pairs:
        lines += _before_lines(args.before, pairs)
    for name, r, wall, rss in results:
        lines += _model_lines(name, r, wall, rss)
    lines += _sizing_lines(sizing, parts[-1][1], parts[-1][3])
    gpu_files = sorted((REPO / "measurements" / "gpu").glob("*.json"))
    lines.append("GPU files committed under measurements/gpu/: " + (", ".join(
        f"{p.name} ({json.loads(p.read_text())['hardware'].get('gpu', '?')})"
        for p in gpu_files) or "none (GPU-hours are estimated from the FLOPs above)") + ".")
    text = "\n".join(lines) + "\n"
    write_result(args.out_md, text, "encoder_bench.py")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
