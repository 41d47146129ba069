"""rightsize extract in float32 and in bfloat16 on this CPU: wall clock, rate and token difference.

The same corpus (``rightsize ecg-demo``, ``--records`` synthetic WFDB records), the same
model (HuBERT-ECG ``--size``, random weights, seed 0), workers and threads; only
``extract.compute_dtype`` differs. Each run is a fresh ``rightsize extract`` process into its
own folder, the two dtypes alternated (ABBA) over ``--rounds`` rounds. The result file gives
per dtype the median and range of the wall clock and of the steady rate (records over the
wall clock less start-up), their ratio, and how far bf16's stored tokens are from float32's:
over every stored value of the corpus, the relative RMS difference and the largest absolute
one, and per hidden state on the first batch (``bf16_vs_float32`` of the run's metrics).

A CPU without AMX or AVX512-BF16 emulates bf16 (``auto`` picks float32 there): the table
says what ``auto`` resolved to on this machine.

Usage::

    python benchmarks/extract_dtype_bench.py                 # results/extract_dtype.md
    python benchmarks/extract_dtype_bench.py --records 64 --rounds 1 --out-md /tmp/x.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import machine_info, run_process, write_result  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LAYER = {"small": 8, "base": 12, "large": 16}
DTYPES = ("float32", "bfloat16")


def _rs(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "rightsize"), *args]


def _params(folder: Path, records: int, size: str, dtype: str) -> None:
    p = yaml.safe_load((REPO / "params.yaml").read_text())
    p["ecg_demo"]["records"] = records
    p["extract"].update(size=size, layers=[LAYER[size]], records="corpus/record_list.csv",
                        root="corpus", compute_dtype=dtype)
    (folder / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))


def _distance(a_dir: Path, b_dir: Path) -> dict[str, float]:
    """Relative RMS and max |diff| of every stored token value, ``b`` against ``a`` (in a
    child: the driver stays small)."""
    code = (
        "import json,sys,glob,numpy as np,pyarrow.parquet as pq\n"
        "def load(d):\n"
        "    parts=[np.asarray(pq.read_table(p).column('embedding').to_pylist(),np.float32)\n"
        "           for p in sorted(glob.glob(d+'/shards/*.parquet'))]\n"
        "    return np.concatenate(parts)\n"
        "a,b=load(sys.argv[1]),load(sys.argv[2]); d=b-a\n"
        "print(json.dumps({'values':int(a.size),'rel_rms':float(np.sqrt((d**2).mean()/(a**2)"
        ".mean())),'max_abs':float(np.abs(d).max()),'ref_max_abs':float(np.abs(a).max())}))\n")
    out = subprocess.run([sys.executable, "-c", code, str(a_dir), str(b_dir)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200)
    ap.add_argument("--size", default="base", choices=sorted(LAYER))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out-md", default=str(REPO / "benchmarks/results/extract_dtype.md"))
    args = ap.parse_args()
    info = machine_info()
    runs: dict[str, list[dict]] = {d: [] for d in DTYPES}
    with tempfile.TemporaryDirectory(prefix="rightsize-extract-dtype-") as tmp:
        t = Path(tmp)
        _params(t, args.records, args.size, "float32")
        demo = run_process(_rs("ecg-demo", "corpus", "--params", "params.yaml", "-q"), cwd=t)
        assert demo.rc == 0, demo.stderr
        order = [d for r in range(args.rounds) for d in (DTYPES if r % 2 == 0 else DTYPES[::-1])]
        for i, dtype in enumerate(order):
            _params(t, args.records, args.size, dtype)
            out, m_path = f"out_{dtype}_{i}", f"m_{dtype}_{i}.json"
            run = run_process(_rs("extract", "--params", "params.yaml", "--out", out,
                                  "--metrics", m_path, "-q"), cwd=t,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
            assert run.rc == 0, run.stderr
            m = json.loads((t / m_path).read_text())
            busy = m["wall_s"] - m["startup_and_other_s"]
            runs[dtype].append({"wall_s": m["wall_s"], "out": t / out, "metrics": m,
                                "steady": args.records / busy if busy > 0 else None,
                                "rss_mb": m.get("peak_rss_mb_max_worker")})
            print(f"{dtype}: {m['wall_s']:.1f} s", file=sys.stderr, flush=True)
        dist = _distance(runs["float32"][0]["out"], runs["bfloat16"][0]["out"])
    med = {d: statistics.median(r["wall_s"] for r in runs[d]) for d in DTYPES}
    steady = {d: statistics.median(r["steady"] for r in runs[d]) for d in DTYPES}
    m16 = runs["bfloat16"][0]["metrics"]
    auto = m16["compute_dtype"]
    from_auto = json.loads(subprocess.run(
        [sys.executable, "-c", "import json; from rightsize.encoders.compute_dtype import "
         "resolve; print(json.dumps(resolve('auto', 'cpu').as_dict()))"],
        check=True, capture_output=True, text=True).stdout)
    lines = [
        f"# extract in float32 and bfloat16 (HuBERT-ECG {args.size}, {args.records} records, "
        f"{m16['workers']} worker(s) x {m16['threads_per_worker']} thread, batch "
        f"{m16['batch_size']})", "",
        "Machine: " + "; ".join(f"{k}: {v}" for k, v in info.items()), "",
        f"`extract.compute_dtype: auto` resolves here to **{from_auto['dtype']}** "
        f"({from_auto['why']}). Runs alternated {' '.join(order)}; bf16 runs ({auto['dtype']}, "
        f"requested {auto['requested']}).", "",
        "| dtype | wall s (median, range) | steady records/s (median) | worker peak RSS MB |",
        "|---|---|---|---|"]
    for d in DTYPES:
        walls = [r["wall_s"] for r in runs[d]]
        lines.append(f"| {d} | {med[d]:.1f} ({min(walls):.1f}-{max(walls):.1f}) | "
                     f"{steady[d]:.2f} | {max(r['rss_mb'] or 0 for r in runs[d]):.0f} |")
    lines += ["", f"**bf16 / float32: wall clock {med['float32'] / med['bfloat16']:.2f}x "
              f"faster, steady rate {steady['bfloat16'] / steady['float32']:.2f}x.**", "",
              f"Stored tokens ({m16['dtype']}, hidden state {LAYER[args.size]}, "
              f"{dist['values']:,} values): bf16 against float32 relative RMS "
              f"{dist['rel_rms']:.2%}, largest |diff| {dist['max_abs']:.3g} (largest float32 "
              f"|value| {dist['ref_max_abs']:.3g}).", "",
              "First batch, every hidden state (rank 0, `bf16_vs_float32` in the run's "
              "metrics):", "", "| hidden state | max abs diff | relative RMS |", "|---|---|---|"]
    check = m16["bf16_vs_float32"]
    for k in sorted((k for k in check if k.startswith("layer_")),
                    key=lambda k: int(k.split("_")[1])):
        lines.append(f"| {k.split('_')[1]} | {check[k]['max_abs']:.3g} | "
                     f"{check[k]['rel_rms']:.2%} |")
    target = write_result(args.out_md, "\n".join(lines), "extract_dtype_bench.py", info)
    print(f"wrote {target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
