"""Helpers for the report tests: a realistic metrics/ tree written on the spot.

The numbers mimic one preempted 8-GPU run (three launches on two hosts with two gaps) and
four CPU-trained probes; tests derive every expected string from these inputs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import yaml

from rightsize import cli
from rightsize.machine import stamp
from rightsize.probe_names import PROBES as REGISTRY_PROBES

REPO = Path(__file__).resolve().parents[2]
T0 = 1_714_550_400.0          # 2024-05-01 08:00 UTC
HOUR = 3600.0
HARDWARE = {"cpu": "Intel(R) Xeon(R) CPU @ 2.20GHz", "cores": 2, "threads": 1,
            "torch": "2.13.0+cpu", "device": "cpu"}
# probe -> (train s, eval s, peak RSS MB, epochs)
PROBES = dict(zip(REGISTRY_PROBES, ((2.5, 0.7, 410.0, 1), (18.0, 3.5, 505.0, 30),
                                    (26.0, 4.1, 530.0, 40), (49.9, 5.5, 612.0, 50)), strict=True))
# per-seed test MAE offsets from each probe's seed-0 MAE (3 seed replicas)
SEED_OFFSETS = {"ecg": (0.0, 0.0, 0.0), "echo": (0.0, 0.2, -0.1),
                "concat": (0.0, 0.1, -0.1), "fused": (0.0, 0.25, -0.3)}
# segment: host, pid, first step, steps, start offset (h), median step s
SEGMENTS = [("gpu-node-a", 4242, 0, 3000, 0.0, 1.2), ("gpu-node-b", 777, 3000, 6000, 2.5, 1.25),
            ("gpu-node-a", 4300, 9000, 3000, 6.0, 1.18)]
SCHEDULES = [(1, 2.0), (5, 10.0), (12, 24.0)]      # epochs, compute hours
GPUS = 8
# The sizing stage's inputs: a HuBERT-ECG base bench file (93 tokens per record: the first
# 5 s, 13 hidden states of 768, 19.1 GFLOP, 1.2 records/s on 1 thread, 200 records/s per
# core preprocessing of 120 kB files), the disk measured (500 MB/s writes, 1 GB/s reads,
# 52 GB free) and the block.
ECG_BENCH = {"family": "hubert_ecg", "size": "base", "geometry": {"crops_per_record": 1},
             "inputs_per_record": 1, "tokens_per_input": 93,
             "tokens_per_record": 93, "hidden_size": 768, "hidden_states": 13,
             "flops_per_record": 19.1e9, "device": "cpu", "records_per_s": 1.2, "best_batch": 4,
             "timing": {"extrapolated": False},
             "preprocess": {"records_per_s_per_core": 200.0, "record_file_bytes": 120_000},
             "hardware": HARDWARE, "machine": stamp()}      # measured on this machine
SIZING = {"models": {"ecg": {"layers_kept": 4, "keep": "tokens"}}, "dtype": "float16",
          "scenarios": {"ecg_corpus": {"ecg": {"records": 1_000_000,
                                               "source": "MIMIC-IV-ECG v1.0 (PhysioNet)"}}},
          "ask": {"scenario": "ecg_corpus", "models": ["ecg"]},
          "estimate": {"gpu": "A100 SXM", "utilisation": [0.2, 0.5]},
          "disk": {"path": ".", "quota": "500GB"}}
DISK = {"path": ".", "free_bytes": 52_000_000_000, "where": "this machine's path",
        "write": {"format": "npy", "shards": 4, "shard_bytes": 64_000_000,
                  "bytes_per_s": 5e8, "bytes_per_s_shard_min": 5e8,
                  "bytes_per_s_shard_max": 5e8},
        "read": {"files": 200, "file_bytes": 120_000, "bytes_per_s": 1e9,
                 "page_cache": "dropped before reading (posix_fadvise DONTNEED)"}}


def demo_telemetry() -> dict:
    """A telemetry JSON for a run preempted twice (keys as the telemetry stage writes them)."""
    rows, active = [], 0.0
    for i, (host, pid, first, n, off, med) in enumerate(SEGMENTS):
        start = T0 + off * HOUR
        end = start + n * med
        active += end - start
        rows.append({"file": f"events.out.tfevents.{int(start)}.{host}.{pid}.{i}", "host": host,
                     "pid": pid, "first_step": first, "last_step": first + n - 1,
                     "start_time": start, "end_time": end, "steps": n, "median_step_s": med})
    calendar = rows[-1]["end_time"] - rows[0]["start_time"]
    curve = [{"epoch": e, "step": e * 3000 - 1, "value": v}
             for e, v in zip(range(1, 5), (0.91, 0.72, 0.63, 0.66), strict=True)]
    overhead = calendar / active
    return {
        "step_time_s": {"median": 1.21, "p25": 1.18, "p75": 1.25, "n": 11_997},
        "steps_per_epoch": 3000, "steps_per_epoch_from_val": 3000,
        "steps_per_epoch_from_records": 3000, "epoch_hours": 1.0,
        "gpu_hours_per_epoch": 1.0 * GPUS, "max_step": 11_999, "epochs_run": 4.0,
        "active_hours": active / HOUR, "calendar_hours": calendar / HOUR,
        "calendar_overhead": overhead, "launches": 3, "segments": 3, "header_only_files": 0,
        "val_curve": curve, "best_epoch": 3, "best_val": 0.63,
        "damage": [{"file": rows[1]["file"], "offset": 81_920, "kind": "payload_crc",
                    "bytes_skipped": 57}],
        "damaged_records": 1, "relogged_steps": 40, "segment_table": rows, "mfu": 0.41,
        "projection": {"records": 48_000, "steps_per_epoch": 6000, "hours_per_epoch": 2.0,
                       "schedules": [{"epochs": e, "compute_hours": c, "gpu_hours": c * GPUS,
                                      "calendar_hours": c * overhead} for e, c in SCHEDULES]},
    }


def eval_json(probe: str) -> dict:
    """A metrics/eval/<probe>.json."""
    train_s, eval_s, rss, epochs = PROBES[probe]
    k = list(PROBES).index(probe)
    mae = 7.9 - 0.6 * k
    out = {"test": {"mae": mae, "mae_lo": mae - 0.5, "mae_hi": mae + 0.55,
                    "auroc": 0.78 + 0.03 * k, "auroc_lo": 0.72 + 0.03 * k,
                    "auroc_hi": 0.84 + 0.025 * k},
           "val": {"mae": mae - 0.1}, "best_epoch": max(1, epochs - 7),
           "mean_predictor_mae": 10.2, "params": 769 + 100_000 * k,
           "checkpoint_bytes": 4 * (769 + 100_000 * k) + 1200,
           "wall_clock_s": {"train": train_s, "eval": eval_s, "total": train_s + eval_s},
           "peak_rss_mb": rss, "hardware": dict(HARDWARE), "machine": stamp()}
    offsets = SEED_OFFSETS[probe]
    per_seed = [mae + o for o in offsets]
    sd = 0.0 if len(set(per_seed)) == 1 else float(np.std(per_seed, ddof=1))
    out["test"].update({"n": 248, "n_bootstrap": 200, "mae_mean": float(np.mean(per_seed)),
                        "mae_sd": sd, "mae_min": min(per_seed),
                        "mae_max": max(per_seed), "auroc_mean": 0.78 + 0.03 * k,
                        "auroc_sd": 0.01})
    out["ci"] = 0.95
    out["n_seeds"] = len(offsets)
    out["seeds"] = {f"r{j}": {"seed": j, "test_mae": v} for j, v in enumerate(per_seed)}
    shared = np.random.default_rng(5).normal(0.0, 0.3, 200)      # the same resamples
    out["bootstrap"] = {"test_mae": (mae + shared).tolist()}
    out["ecg_tokens"] = 1
    out["ecg_pooling"] = {"echo": "none", "fused": "attention (echo->ECG); mean (ECG->echo "
                                                 "query)"}.get(probe, "mean")
    if probe == "fused":
        out["attention_entropy"] = 1.23
    return out


# The token_cost stage at 1, 16 and 186 tokens: (train + evaluate s, peak RSS MB, manifest B)
TOKEN_COST = {1: (4.9, 498.0, 23_180_419), 16: (11.7, 717.0, 73_160_758),
              186: (50.9, 1937.0, 639_345_797)}


def token_cost_json(scale: float = 1.0) -> dict:
    """metrics/token_cost.json for :data:`TOKEN_COST` (seconds times ``scale``)."""
    basis = ("extrapolated: 3 of 50 epochs run (39 steps), the other 47 at the median of "
             "epochs 2-3 (2 epochs, 26 steps)")
    cases = {f"tokens_{n}": {"ecg_tokens": n, "manifest_bytes": b, "payload_bytes": b + 1000,
                             "build_s": 1.0, "build_peak_rss_mb": 200.0,
                             "train_eval_s": s * scale, "measured_whole": False, "basis": basis,
                             "peak_rss_mb": r, "accelerator": "fused_tokens" if n > 1
                             else "fused_pooled"}
             for n, (s, r, b) in TOKEN_COST.items()}
    return {"probe": "fused", "seeds": 1, "epochs": 50,
            "epochs_timed": 3, "cases": cases, "hardware": dict(HARDWARE), "machine": stamp()}


def write_curve(path: Path, epochs: int, seed: int) -> None:
    """metrics/curves/<probe>.csv with decaying losses."""
    rng = np.random.default_rng(seed)
    e = np.arange(1, epochs + 1)
    train = 60 * np.exp(-e / 6) + 20 + rng.normal(0, 0.3, e.size)
    val = 55 * np.exp(-e / 7) + 24 + 0.05 * e + rng.normal(0, 0.4, e.size)
    lines = ["epoch,train_loss,val_loss"] + [f"{a},{b:.5f},{c:.5f}" for a, b, c in
                                             zip(e, train, val, strict=True)]
    path.write_text("\n".join(lines) + "\n")


def write_metrics(metrics: Path) -> None:
    """Write a complete metrics/ tree."""
    for sub in ("telemetry", "eval", "curves"):
        (metrics / sub).mkdir(parents=True, exist_ok=True)
    tel = demo_telemetry()
    (metrics / "telemetry" / "demo.json").write_text(json.dumps(tel))
    (metrics / "telemetry" / "demo_val.csv").write_text(
        "epoch,step,value\n" + "".join(f"{p['epoch']},{p['step']},{p['value']}\n"
                                       for p in tel["val_curve"]))
    for probe, (train_s, _, _, epochs) in PROBES.items():
        (metrics / "eval" / f"{probe}.json").write_text(json.dumps(eval_json(probe)))
        write_curve(metrics / "curves" / f"{probe}.csv", epochs, seed=epochs)
        if probe != "ecg":
            probe_tel = {"step_time_s": {"median": 0.011, "p25": 0.010, "p75": 0.013, "n": 400},
                         "steps_per_epoch": 13, "epochs_run": float(epochs),
                         "active_hours": train_s / HOUR, "best_epoch": epochs - 7,
                         "launches": 1}
            (metrics / "telemetry" / f"probe_{probe}.json").write_text(json.dumps(probe_tel))
    mm = {}
    for j, key in enumerate(("echo_absent", "ecg_absent", "both_present")):
        mae = 6.9 + 0.8 * (2 - j)
        mm[key] = {"mae": mae, "mae_lo": mae - 0.5, "mae_hi": mae + 0.5, "auroc": 0.8 - 0.03 * j,
                   "auroc_lo": 0.74 - 0.03 * j, "auroc_hi": 0.86 - 0.03 * j, "n_bootstrap": 1000}
    (metrics / "missing").mkdir(exist_ok=True)
    (metrics / "missing" / "fused.json").write_text(json.dumps(mm))
    # concat: a little worse everywhere; ecg: unchanged without the echo
    concat = {k: {**v, "mae": v["mae"] + 0.25} for k, v in mm.items()}
    (metrics / "missing" / "concat.json").write_text(json.dumps(concat))
    ecg = {k: {"mae": 9.1 if k != "ecg_absent" else 9.8, "mae_lo": 8.6, "mae_hi": 10.3}
           for k in mm}
    (metrics / "missing" / "ecg.json").write_text(json.dumps(ecg))
    n = 1208
    footprint = {
        "manifest_bytes": 36_100_000,
        "checkpoints": {p: {"bytes": eval_json(p)["checkpoint_bytes"],
                            "params": eval_json(p)["params"]} for p in PROBES},
        "payload_table": [{"max_clips": k, "payload_bytes": n * k * 1024 * 4 + n * 768 * 4}
                          for k in (1, 8, 16, 32)],
        "peak_rss_mb": {"cohort": 380.0, **{f"train_{p}": v[2] - 20 for p, v in PROBES.items()},
                        **{f"eval_{p}": v[2] for p, v in PROBES.items()}},
        "writable": {"data": True, "models": True, "metrics": True, "reports": True},
        "free_disk_bytes": 52_000_000_000,
    }
    (metrics / "footprint.json").write_text(json.dumps(footprint))
    (metrics / "sizing.json").write_text(json.dumps(sizing_result()))
    (metrics / "token_cost.json").write_text(json.dumps(token_cost_json()))
    (metrics / "cohort.json").write_text(json.dumps(
        {"n_subjects": n, "max_clips": 8, "perfect_model_mae": 3.99, "peak_rss_mb": 380.0}))


def sizing_result() -> dict:
    """What the sizing stage writes for :data:`SIZING` over :data:`ECG_BENCH` and :data:`DISK`."""
    from rightsize.params import parse
    from rightsize.sizing.config import ScenarioCount, SizingConfig
    from rightsize.sizing.plan import size_all

    cfg = parse(SizingConfig, SIZING, "sizing")
    paired = {"ecg": ScenarioCount(1173, "synthetic cohort: manifest")}
    return {**size_all(cfg, {"ecg": ECG_BENCH}, {}, paired, DISK), "machine": stamp()}


def write_params(path: Path, report: dict | None = None, runs: tuple[str, ...] = ("demo",)) -> Path:
    """A params.yaml with the blocks the report reads."""
    data = {"telemetry": {"gap_s": 600, "runs": {r: {"train_records": 96000, "global_batch": 32}
                                                 for r in runs}},
            "train": {"probes": list(PROBES), "seeds": 5},
            "report": report if report is not None else {"title": "Test report"}}
    path.write_text(yaml.safe_dump(data))
    return path


@dataclass(frozen=True)
class Built:
    """One report build: where things are and what the verb said."""

    root: Path
    metrics: Path
    out: Path
    code: int
    stdout: str
    stderr: str

    @property
    def md(self) -> str:
        """report.md text."""
        return (self.out / "report.md").read_text(encoding="utf-8")

    @property
    def html(self) -> str:
        """report.html text."""
        return (self.out / "report.html").read_text(encoding="utf-8")


def run_report(root: Path, *extra: str, params: Path | None = None) -> Built:
    """Run ``rightsize report --json`` in-process on ``root/metrics`` into ``root/reports``."""
    params = params or root / "params.yaml"
    out, err = io.StringIO(), io.StringIO()
    argv = ["report", "--params", str(params), "--metrics", str(root / "metrics"),
            "--out", str(root / "reports"), "--json", *extra]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return Built(root, root / "metrics", root / "reports", code, out.getvalue(), err.getvalue())


def chromium() -> str:
    """Path of the chromium binary; fail in CI (it is installed there), skip elsewhere."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return path
