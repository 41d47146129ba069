"""Peak memory of building and loading the cohort manifest: streaming vs naive.

Each path runs in its own subprocess that reports its peak RSS (``ru_maxrss``) and wall
clock as one JSON line. Default geometry: 7,251 studies x 16 clips x 1024-d echo (+768-d
ECG), i.e. a ~475 MB float32 echo payload.

* ``imports``   -- interpreter + numpy + pyarrow + pandas + rightsize.cohort, nothing built.
* ``streaming`` -- :func:`rightsize.cohort.build.build_manifest` (row group by row group).
* ``naive``     -- same rows fully materialised in numpy, then pandas DataFrame ->
  ``pa.Table.from_pandas`` -> ``pq.write_table`` (the obvious in-memory approach).
* ``load``      -- :func:`rightsize.cohort.load_manifest.load_arrays` on the streaming output.

Usage::

    python benchmarks/cohort_bench.py                    # writes benchmarks/results/cohort.md
    python benchmarks/cohort_bench.py --subjects 1208 --clips 8 --out-md /tmp/cohort.md
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _config(args: argparse.Namespace):  # -> CohortConfig
    from rightsize.cohort.config import CohortConfig
    from rightsize.params import parse

    n = args.subjects
    train, val = int(n * 0.7), int(n * 0.1)
    return parse(CohortConfig, {
        "seed": 0, "n_subjects": n, "splits": {"train": train, "val": val, "test": n - train - val},
        "echo_dim": args.echo_dim, "ecg_dim": args.ecg_dim, "max_clips": args.clips,
        "row_group_size": args.row_group_size}, "cohort")


def _naive_build(cfg, out: Path) -> None:
    """Materialise every column in memory, then pandas -> arrow -> parquet in one go."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rightsize.cohort.build import cohort_metadata
    from rightsize.cohort.manifest import manifest_schema
    from rightsize.cohort.synthetic import SyntheticCohort

    src = SyntheticCohort(cfg)
    n = cfg.n_subjects
    echo = np.empty((n, cfg.max_clips * cfg.echo_dim), dtype=np.float32)
    ecg = np.empty((n, cfg.ecg_dim), dtype=np.float32)
    i = 0
    for chunk in src.chunks():
        echo[i:i + len(chunk)] = chunk.echo.reshape(len(chunk), -1)
        ecg[i:i + len(chunk)] = chunk.ecg
        i += len(chunk)
    df = pd.DataFrame({
        "subject_id": src.subject_id.to_pandas(),
        "split": np.asarray(["train", "val", "test"])[src.split],
        "lvef": src.lvef, "ef_le_40": src.ef_le_40,
        "echo": list(echo), "n_clips": src.n_clips, "ecg": list(ecg),
        "has_echo": src.has_echo, "has_ecg": src.has_ecg,
    })
    schema = manifest_schema(cfg.max_clips, cfg.echo_dim, cfg.ecg_dim,
                             cohort_metadata(cfg, src))
    table = pa.Table.from_pandas(df, schema=schema, preserve_index=False)
    pq.write_table(table, out, compression="zstd", row_group_size=cfg.row_group_size)


def child(args: argparse.Namespace) -> None:
    """Run one path in this process and print ``{"peak_rss_mb", "wall_s"}`` as JSON."""
    import numpy  # noqa: F401 - the baseline includes the libraries every path needs
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    from rightsize.cohort.build import build_manifest
    from rightsize.cohort.load_manifest import load_arrays

    cfg = _config(args)
    out = Path(args.path)
    t0 = time.perf_counter()
    if args.child == "streaming":
        build_manifest(cfg, out)
    elif args.child == "naive":
        _naive_build(cfg, out)
    elif args.child == "load":
        arrays = load_arrays(out)
        assert arrays.echo.shape == (cfg.n_subjects, cfg.max_clips, cfg.echo_dim)
    wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_rss_mb": peak_mb, "wall_s": wall}))


def _run_child(mode: str, path: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, "--path", str(path),
           "--subjects", str(args.subjects), "--clips", str(args.clips),
           "--echo-dim", str(args.echo_dim), "--ecg-dim", str(args.ecg_dim),
           "--row-group-size", str(args.row_group_size)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if res.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run every path in a subprocess and write the markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--subjects", type=int, default=7251)
    ap.add_argument("--clips", type=int, default=16)
    ap.add_argument("--echo-dim", type=int, default=1024)
    ap.add_argument("--ecg-dim", type=int, default=768)
    ap.add_argument("--row-group-size", type=int, default=128)
    ap.add_argument("--out-md", default=str(REPO / "benchmarks" / "results" / "cohort.md"))
    ap.add_argument("--child", choices=["imports", "streaming", "naive", "load"],
                    help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return 0

    sys.path.insert(0, str(REPO / "src"))
    from _measure import write_result

    echo_mb = args.subjects * args.clips * args.echo_dim * 4 / 1e6
    payload_mb = echo_mb + args.subjects * args.ecg_dim * 4 / 1e6
    rows = []
    with tempfile.TemporaryDirectory(prefix="cohort_bench_") as tmp:
        stream_out, naive_out = Path(tmp) / "streaming.parquet", Path(tmp) / "naive.parquet"
        for mode, label, path in [
            ("imports", "imports only (baseline)", stream_out),
            ("streaming", "streaming build (`build_manifest`)", stream_out),
            ("naive", "naive build (numpy -> pandas -> `write_table`)", naive_out),
            ("load", "`load_arrays` (streaming output)", stream_out),
        ]:
            r = _run_child(mode, path, args)
            size = path.stat().st_size / 1e6 if mode in ("streaming", "naive") else None
            rows.append((label, r["peak_rss_mb"], r["wall_s"], size))
            print(f"{label}: peak {r['peak_rss_mb']:.0f} MB, {r['wall_s']:.1f} s", file=sys.stderr)
    lines = [
        f"Cohort manifest, {args.subjects:,} studies x {args.clips} clips x {args.echo_dim}-d "
        f"echo + {args.ecg_dim}-d ECG (row groups of {args.row_group_size}): echo payload "
        f"{echo_mb:.0f} MB, all embeddings {payload_mb:.0f} MB. Peak RSS is `ru_maxrss` of a "
        "fresh subprocess (includes the interpreter and libraries, see baseline row).",
        "",
        "| path | peak RSS (MB) | x echo payload | wall (s) | file (MB) |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, peak, wall, size in rows:
        lines.append(f"| {label} | {peak:.0f} | {peak / echo_mb:.2f} | {wall:.1f} | "
                     f"{'' if size is None else f'{size:.0f}'} |")
    peaks = {label.split(" ")[0]: peak for label, peak, _, _ in rows}
    lines += ["", f"Streaming build: {peaks['streaming'] / echo_mb:.2f} x the echo payload "
              f"(target <= 1.5 x), naive: {peaks['naive'] / echo_mb:.2f} x. `load_arrays` "
              "must hold the arrays it returns (about the payload) plus one row group."]
    text = "\n".join(lines) + "\n"
    write_result(args.out_md, text, "cohort_bench.py")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
