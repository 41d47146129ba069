"""`rightsize cohort` at token-level ECG: manifest bytes, wall clock and peak RSS per N.

For each ``cohort.ecg_tokens`` N (default 1, 16, 93, 186: pooled; coarse; one 5-s HuBERT-ECG
crop; a whole 10-s record) and otherwise the default params, runs the whole command
``rightsize cohort --params P --out M --truth T --metrics J`` in a fresh child process
(wall clock and ``wait4`` peak RSS), then ``load_arrays(M)`` in another (what every probe
process pays). The N are interleaved within each repeat; the table gives the median and
the fastest of the repeats. Writes ``benchmarks/results/cohort_tokens.md``.

Usage::

    python benchmarks/cohort_tokens_bench.py                 # 3 repeats, ~2 min on 2 cores
    python benchmarks/cohort_tokens_bench.py --tokens 1 16 --repeats 1 --out-md /tmp/t.md
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import child_json, machine_info, run_process  # noqa: E402

LOAD = ("import json, sys, time; t0 = time.perf_counter(); "
        "from rightsize.cohort.load_manifest import load_arrays; x = load_arrays(sys.argv[1]); "
        "print(json.dumps({'wall_s': time.perf_counter() - t0, 'ecg_shape': list(x.ecg.shape)}))")
CLI = "from rightsize.cli import console_main; console_main()"


def _params(path: Path, tokens: int) -> None:
    import yaml

    block = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))["cohort"]
    path.write_text(yaml.safe_dump({"cohort": {**block, "ecg_tokens": tokens}}),
                    encoding="utf-8")


def _commit() -> str:
    out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "src"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return (out.stdout.strip() or "unknown") + (" (src modified)" if dirty else "")


def measure(tokens: int, tmp: Path) -> dict:
    """One build and one load at ``tokens``: bytes, wall and peak RSS of each process."""
    params, out = tmp / f"params{tokens}.yaml", tmp / f"m{tokens}.parquet"
    metrics = tmp / f"cohort{tokens}.json"
    _params(params, tokens)
    build = run_process([sys.executable, "-c", CLI, "cohort", "--params", str(params),
                         "--out", str(out), "--truth", str(tmp / f"t{tokens}.parquet"),
                         "--metrics", str(metrics), "-q"])
    if build.rc != 0:
        raise SystemExit(f"rightsize cohort at ecg_tokens {tokens} failed: {build.stderr}")
    m = json.loads(metrics.read_text())
    load = run_process([sys.executable, "-c", LOAD, str(out)])
    loaded = child_json(load, f"load_arrays at ecg_tokens {tokens}")
    row = {"tokens": tokens, "manifest_bytes": out.stat().st_size,
           "payload_bytes": m["payload_bytes"], "build_wall_s": build.wall_s,
           "build_rss_mb": build.max_rss_mb, "build_inner_s": m["build_wall_clock_s"],
           "load_wall_s": load.wall_s, "load_rss_mb": load.max_rss_mb,
           "load_inner_s": loaded["wall_s"], "ecg_shape": loaded["ecg_shape"]}
    out.unlink()
    return row


def main(argv: list[str] | None = None) -> int:
    """Measure every N ``--repeats`` times, interleaved; write the markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[1, 16, 93, 186])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out-md", default=str(REPO / "benchmarks" / "results" / "cohort_tokens.md"))
    args = ap.parse_args(argv)
    runs: dict[int, list[dict]] = {n: [] for n in args.tokens}
    with tempfile.TemporaryDirectory(prefix="cohort_tokens_") as tmp:
        for rep in range(args.repeats):
            for n in args.tokens:
                row = measure(n, Path(tmp))
                runs[n].append(row)
                print(f"repeat {rep} ecg_tokens {n}: {row['manifest_bytes'] / 1e6:.0f} MB, "
                      f"build {row['build_wall_s']:.1f} s / {row['build_rss_mb']:.0f} MB, "
                      f"load {row['load_wall_s']:.1f} s / {row['load_rss_mb']:.0f} MB",
                      file=sys.stderr)
    info = machine_info()
    lines = [
        "# `rightsize cohort` at token-level ECG",
        "",
        f"{datetime.date.today().isoformat()}, commit {_commit()}; {info['cpu']}, "
        f"{info['cores']}, {info['memory']}, {info['python']}; load average at the end "
        f"{info['load average (1/5/15 min)']} (shared box: wall clocks are noisy).",
        "",
        "Default params (1,208 subjects, 8 clips x 1024-d echo, 768-d ECG, row groups of up "
        f"to 128 subjects and 16 MiB) but `cohort.ecg_tokens`; {args.repeats} repeats, the N "
        "interleaved in each. "
        "Build: the whole `rightsize cohort` process (manifest + truth + metrics). Load: "
        "`load_arrays` in a fresh process (what each probe process pays). Wall: median "
        "(fastest); peak RSS: `wait4` of the process, median.",
        "",
        "| ecg_tokens | ECG array | payload (MB) | manifest (MB) | build wall (s) | "
        "build peak RSS (MB) | load wall (s) | load peak RSS (MB) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for n, rows in runs.items():
        def med(key: str, rows: list[dict] = rows) -> float:
            return statistics.median(r[key] for r in rows)

        def low(key: str, rows: list[dict] = rows) -> float:
            return min(r[key] for r in rows)

        shape = " x ".join(str(d) for d in rows[0]["ecg_shape"])
        lines.append(f"| {n} | {shape} | {rows[0]['payload_bytes'] / 1e6:.0f} | "
                     f"{rows[0]['manifest_bytes'] / 1e6:.0f} | {med('build_wall_s'):.1f} "
                     f"({low('build_wall_s'):.1f}) | {med('build_rss_mb'):.0f} | "
                     f"{med('load_wall_s'):.1f} ({low('load_wall_s'):.1f}) | "
                     f"{med('load_rss_mb'):.0f} |")
    text = "\n".join(lines) + "\n"
    Path(args.out_md).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out_md).write_text(text, encoding="utf-8")
    (Path(args.out_md).with_suffix(".json")).write_text(
        json.dumps({"machine": info, "commit": _commit(), "runs": runs}, indent=2) + "\n",
        encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
