"""rightsize extract against its goals: overlap, the ask's prediction, kill and resume.

Each case runs the verbs as the stages do, in child processes, in a temporary folder holding a
copy of ``params.yaml`` with the case's settings, and writes ``benchmarks/results/extract.md``:

* **prediction**: for each corpus (``--corpora``, default the demo's 200 records and 2,000
  records), ``rightsize bench-encoder ecg`` at the extraction's model size (the encoder bench's
  forward-only records/s at each batch size and the preprocessing rate, measured in this same
  run), then ``rightsize ecg-demo`` and ``rightsize extract --bench --sizing``: the ask's
  predicted range for the corpus beside the measured wall clock, the ratio, and outside the
  range the part that was furthest off (the 2,000-record corpus lists the demo's 200 WFDB
  files ten times under new ids: writing 2,000 files with wfdb takes longer than extracting
  them; reads then come from the page cache, as in the bench);
* **overlap**: from the same runs, extraction throughput (records over the workers' busy time:
  wall clock less start-up, and over the whole wall clock) against the bench's forward-only
  records/s at the same batch size (goal >= 0.8x), and the workers' peak RSS (goal <= 2 GB);
* **kill and resume**: an extraction killed (SIGKILL to its process group) once half its shards
  are written, then rerun: shards and records the rerun did against the whole corpus (the
  work saved) and both wall clocks.

The disk rates the prediction uses come from ``metrics/sizing.json`` (run ``dvc repro sizing``
first). Short by design: ``--size small`` (default) keeps the 2,000-record corpus to minutes.

Usage::

    python benchmarks/extract_bench.py                      # writes benchmarks/results/extract.md
    python benchmarks/extract_bench.py --corpora 200 --size base --out-md /tmp/extract.md
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import machine_info, run_process, write_result  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RSS_GOAL_MB = 2048.0
OVERLAP_GOAL = 0.8
MID_GOAL = 0.15           # the prediction and the pilot: within 15 % of the run
LAYER = {"small": 8, "base": 12, "large": 16}


def _params(folder: Path, records: int, size: str, batch: int, shard: int) -> Path:
    p = yaml.safe_load((REPO / "params.yaml").read_text())
    p["ecg_demo"]["records"] = records
    p["extract"].update(size=size, layers=[LAYER[size]], batch_size=batch, shard_records=shard,
                        records="corpus/record_list.csv", root="corpus")
    p["encoder_bench"]["models"]["ecg"].update(size=size, batch_sizes=[batch])
    path = folder / "params.yaml"
    path.write_text(yaml.safe_dump(p, sort_keys=False))
    return path


def _rs(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "rightsize"), *args]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1"}


def _extend(listing: Path, records: int) -> None:
    """Grow the record list to ``records`` rows by listing the files again under new ids
    (writing 2,000 WFDB files with wfdb would take longer than extracting them)."""
    import csv

    rows = list(csv.DictReader(listing.open()))
    out = []
    for i in range(records):
        row = dict(rows[i % len(rows)])
        row["subject_id"], row["study_id"] = str(10_000_000 + i), str(40_000_000 + i)
        out.append(row)
    with listing.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(out[0]))
        w.writeheader()
        w.writerows(out)


def prediction_case(records: int, size: str, batch: int, shard: int, files: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="rightsize-extract-bench-") as tmp:
        t = Path(tmp)
        _params(t, min(records, files), size, batch, shard)
        bench = run_process(_rs("bench-encoder", "ecg", "--params", "params.yaml", "--json",
                                "bench.json", "-q"), cwd=t, env=_env())
        assert bench.rc == 0, bench.stderr
        demo = run_process(_rs("ecg-demo", "corpus", "--params", "params.yaml", "-q"), cwd=t,
                           env=_env())
        assert demo.rc == 0, demo.stderr
        if records > files:
            _extend(t / "corpus" / "record_list.csv", records)
        run = run_process(_rs("extract", "--params", "params.yaml", "--out", "out", "--metrics",
                              "m.json", "--bench", "bench.json", "--sizing",
                              str(REPO / "metrics/sizing.json"), "-q"), cwd=t, env=_env())
        assert run.rc == 0, run.stderr
        m = json.loads((t / "m.json").read_text())
        b = json.loads((t / "bench.json").read_text())
    fwd_rate = (b["throughput"].get(f"batch_{batch}") or {}).get("records_per_s")
    busy = m["wall_s"] - m["startup_and_other_s"]
    return {"records": records, "size": size, "batch": batch, "metrics": m, "bench": b,
            "bench_records_per_s": fwd_rate, "bench_wall_s": bench.wall_s,
            "preprocess_per_core": (b.get("preprocess") or {}).get("records_per_s_per_core"),
            "demo_wall_s": demo.wall_s, "extract_wall_s": run.wall_s,
            "extract_peak_rss_mb": run.max_rss_mb,
            "steady_records_per_s": records / busy if busy > 0 else None}


def resume_case(records: int, size: str, batch: int, shard: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="rightsize-extract-resume-") as tmp:
        t = Path(tmp)
        _params(t, records, size, batch, shard)
        assert subprocess.run(_rs("ecg-demo", "corpus", "--params", "params.yaml", "-q"),
                              cwd=t, env=_env()).returncode == 0
        shards = -(-records // shard)
        t0 = time.perf_counter()
        proc = subprocess.Popen(_rs("extract", "--params", "params.yaml", "--out", "out",
                                    "-q"), cwd=t, env=_env(), start_new_session=True)
        folder = t / "out" / "shards"
        while proc.poll() is None:
            if folder.is_dir() and len(list(folder.glob("*.json"))) >= shards // 2:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.2)
        proc.wait()
        killed_after = time.perf_counter() - t0
        done_before = len(list(folder.glob("*.json")))
        rerun = run_process(_rs("extract", "--params", "params.yaml", "--out", "out",
                                "--metrics", "m.json", "-q"), cwd=t, env=_env())
        assert rerun.rc == 0, rerun.stderr
        m = json.loads((t / "m.json").read_text())
        shutil.rmtree(t / "out")
        fresh = run_process(_rs("extract", "--params", "params.yaml", "--out", "out", "-q"),
                            cwd=t, env=_env())
    return {"records": records, "shards": shards, "killed_after_s": killed_after,
            "shards_done_before_kill": done_before, "rerun_shards": m["shards_run"],
            "rerun_records": m["records"], "rerun_wall_s": rerun.wall_s,
            "fresh_wall_s": fresh.wall_s}


def _f(v: object, fmt: str = ".1f") -> str:
    return format(v, fmt) if isinstance(v, int | float) else "-"


def pilot_lines(cases: list[dict]) -> list[str]:
    """The smallest corpus's run as a pilot: each larger corpus re-predicted from it
    (``rightsize sizing --pilot``'s arithmetic) against that corpus's measured wall clock."""
    from rightsize.sizing.pilot import pilot_wall

    pilot = min(cases, key=lambda c: c["records"])
    rows = []
    for c in cases:
        if c is pilot:
            continue
        guess = pilot_wall(pilot["metrics"], c["records"], None)["wall_s"]
        got = c["metrics"]["wall_s"]
        rows.append(f"| {pilot['records']} records | {c['records']} records | {guess:.1f} | "
                    f"{got:.1f} | {got / guess:.3f} | {abs(got / guess - 1) <= MID_GOAL} |")
    if not rows:
        return []
    return ["", "## A pilot predicts a larger run", "",
            f"Goal: within +-{MID_GOAL:.0%} of the measured wall clock.", "",
            "| pilot | predicted run | predicted from the pilot (s) | measured (s) | "
            "measured / predicted | within goal |", "|---|---|---|---|---|---|", *rows]


def report(cases: list[dict], resume: dict) -> str:
    lines = ["# rightsize extract: prediction, overlap, kill and resume", "",
             "## The ask's prediction against the measured wall clock", "",
             f"Goal: inside the range, and within +-{MID_GOAL:.0%} of its midpoint.", "",
             "| corpus | model | predicted (s) | measured (s) | inside | ratio to midpoint | "
             "ratio to slow end | furthest off | start-up and the rest (s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        m, chk = c["metrics"], c["metrics"].get("prediction_check", {})
        off = (f"{chk.get('mispredicted_part')} ({_f(chk.get('mispredicted_excess_s'), '+.1f')}"
               f" s)" if chk.get("mispredicted_part") else "-")
        lines.append(f"| {c['records']} records | HuBERT-ECG {c['size']} | "
                     f"{_f(chk.get('predicted_wall_s_low'))} - "
                     f"{_f(chk.get('predicted_wall_s_high'))} | {_f(m['wall_s'])} | "
                     f"{chk.get('inside')} | {_f(chk.get('ratio_to_mid'), '.3f')} | "
                     f"{_f(chk.get('ratio_to_high'), '.2f')} | {off} | "
                     f"{_f(m['startup_and_other_s'])} |")
    lines += ["", "Parts measured (wall-clock equivalents over the workers) against the "
              "prediction's middle:", ""]
    for c in cases:
        parts = c["metrics"].get("prediction", {}).get("parts", {})
        got = c["metrics"]["parts_wall_s"]
        row = ", ".join(
            f"{k} {_f(got.get(k))} s vs {_f(((parts.get(k) or {}).get('low_s') or 0) / 2 + ((parts.get(k) or {}).get('high_s') or 0) / 2)} s"  # noqa: E501
            for k in ("compute", "preprocessing", "writing"))
        lines.append(f"- {c['records']} records: {row}")
    lines += pilot_lines(cases)
    lines += ["", "## Overlap: extraction throughput against the encoder bench", "",
              f"Goal: >= {OVERLAP_GOAL}x the bench's forward-only records/s at the same batch; "
              f"peak RSS <= {RSS_GOAL_MB / 1024:.0f} GB.", "",
              "| corpus | batch | bench forward-only (rec/s) | extract, busy (rec/s) | ratio | "
              "extract, whole wall (rec/s) | ratio | worker peak RSS (MB) | all processes "
              "(MB) |", "|---|---|---|---|---|---|---|---|---|"]
    for c in cases:
        m, fwd = c["metrics"], c["bench_records_per_s"]
        steady, whole = c["steady_records_per_s"], m["records_per_s"]
        rss = m["peak_rss_mb"]
        total = sum(v for v in rss.values() if isinstance(v, int | float))
        lines.append(f"| {c['records']} | {c['batch']} | {_f(fwd, '.2f')} | "
                     f"{_f(steady, '.2f')} | {_f(steady / fwd if fwd else None, '.2f')} | "
                     f"{_f(whole, '.2f')} | {_f(whole / fwd if fwd else None, '.2f')} | "
                     f"{_f(m['peak_rss_mb_max_worker'], '.0f')} | {_f(total, '.0f')} |")
    r = resume
    lines += ["", "## Kill and resume", "",
              f"{r['records']} records in {r['shards']} shards; the run was killed "
              f"(SIGKILL to its process group) {r['killed_after_s']:.1f} s in, with "
              f"{r['shards_done_before_kill']} shards written. The rerun did "
              f"{r['rerun_shards']} shards ({r['rerun_records']} records) in "
              f"{r['rerun_wall_s']:.1f} s; a fresh run of the whole corpus took "
              f"{r['fresh_wall_s']:.1f} s. Work saved: "
              f"{1 - r['rerun_records'] / r['records']:.0%} of the records, "
              f"{1 - r['rerun_wall_s'] / r['fresh_wall_s']:.0%} of the wall clock.", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", default="200,2000")
    ap.add_argument("--size", default="small", choices=sorted(LAYER))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--shard", type=int, default=64)
    ap.add_argument("--resume-records", type=int, default=192)
    ap.add_argument("--files", type=int, default=200,
                    help="distinct WFDB files written; a larger corpus lists them again")
    ap.add_argument("--out-md", default=str(REPO / "benchmarks/results/extract.md"))
    args = ap.parse_args()
    info = machine_info()
    cases = [prediction_case(int(n), args.size, args.batch, args.shard, args.files)
             for n in args.corpora.split(",")]
    resume = resume_case(args.resume_records, args.size, args.batch, args.shard // 2)
    info["load after"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    path = write_result(args.out_md, report(cases, resume), "extract_bench.py", info)
    Path(args.out_md).with_suffix(".json").write_text(
        json.dumps({"cases": cases, "resume": resume, "machine": info}, indent=1) + "\n")
    print(path.read_text())


if __name__ == "__main__":
    main()
