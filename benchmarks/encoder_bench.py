"""The encoder_bench stage at its default sizes: wall clock against the 60 s goal, and figures.

Runs ``rightsize bench-encoder <model>`` for every model of ``encoder_bench.models`` in
``params.yaml``, each in a fresh child process exactly as ``dvc repro`` does, and writes
``benchmarks/results/encoders.md``: the stage's wall clock (goal: <= 60 s for all models on
a 2-core CPU), then per model what was measured (tokens, FLOPs against the analytic count,
records/s per batch size with the spread of the repeats, peak memory, preprocessing per
core) and what was not, with the machine stamp. Committed GPU files under
``measurements/gpu/`` are listed with their GPU.

Usage::

    python benchmarks/encoder_bench.py                 # writes benchmarks/results/encoders.md
    python benchmarks/encoder_bench.py --out-md /tmp/encoders.md
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import machine_info, run_process, write_result  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GOAL_S = 60.0


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


def main() -> int:
    """Run every bench-encoder child, write the markdown, return 0 if all succeeded."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", default=str(REPO / "params.yaml"))
    ap.add_argument("--out-md", default=str(REPO / "benchmarks" / "results" / "encoders.md"))
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("rightsize"))
    results, total = [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name in _models(Path(args.params)):
            out = Path(tmp) / f"{name}.json"
            m = run_process([exe, "bench-encoder", name, "--params", args.params,
                             "--json", str(out), "-q"], cwd=REPO, timeout_s=600)
            if m.rc != 0:
                print(f"{name}: exit {m.rc}: {m.stderr.strip()[-500:]}", file=sys.stderr)
                return 1
            total += m.wall_s
            results.append((name, json.loads(out.read_text()), m.wall_s, m.max_rss_mb))
    info = machine_info()
    lines = [
        "Encoder bench (`encoder_bench` stage) at the default sizes of params.yaml, each model "
        "in a fresh `rightsize bench-encoder` process as `dvc repro` runs it.",
        "",
        f"Stage wall clock: **{total:.1f} s** for {len(results)} models (goal <= {GOAL_S:.0f} s "
        f"on 2 cores: {'met' if total <= GOAL_S else 'MISSED'}).",
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in info.items()) + ".",
        "",
    ]
    for name, r, wall, rss in results:
        lines += _model_lines(name, r, wall, rss)
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
