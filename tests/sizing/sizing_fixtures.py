"""Bench dicts, disk measurements, manifests and params for the sizing tests.

:func:`bench_dict` takes tokens, widths and FLOPs from the real meta-device forward
(:func:`rightsize.sizing.bench.count_shapes_and_flops`) and adds the throughput and
preprocessing figures a test wants, so plan tests run in milliseconds without timing.
:func:`disk_dict` is a disk measurement with hand-set rates (the real measurement is
tested in ``test_disk.py``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from rightsize.encoders.models import EcgGeometry, VideoGeometry, make_spec
from rightsize.machine import stamp
from rightsize.sizing.bench import count_shapes_and_flops, geometry_dict

CPU_STAMP = {"cpu": "Test CPU", "cores": 2, "threads": 2, "torch": "2.13.0+cpu",
             "device": "cpu"}
RECORD_FILE_BYTES = 120_000          # a 10 s, 12-lead WFDB format-16 ECG


@functools.cache
def _shapes(family: str, size: str, inputs: int, resolution: int) -> tuple[dict[str, Any], Any]:
    geometry = (EcgGeometry(crops_per_record=inputs) if family == "hubert_ecg"
                else VideoGeometry(resolution=resolution, clips_per_record=inputs))
    spec = make_spec(family, size, geometry)
    return count_shapes_and_flops(spec), spec


def bench_dict(family: str = "hubert_ecg", size: str = "base", inputs: int | None = None,
               preprocess_rate: float | None = 200.0, device: str = "cpu",
               records_per_s: float | None = 1.0, gpu: str | None = None,
               resolution: int = 224) -> dict[str, Any]:
    """A bench file's content: shapes/FLOPs measured on meta, rates as given.

    ``inputs`` is crops per ECG record (default 1) or clips per video (default 2).
    """
    n = inputs if inputs is not None else (1 if family == "hubert_ecg" else 2)
    full, spec = _shapes(family, size, n, resolution)
    hardware = dict(CPU_STAMP, device=device)
    if gpu:
        hardware["gpu"] = gpu
    tokens = full["tokens_per_state"][-1]
    return {
        "model": "ecg" if family == "hubert_ecg" else "echo",
        "family": family, "size": size,
        "geometry": geometry_dict(spec), "inputs_per_record": n,
        "tokens_per_input": tokens, "tokens_per_record": tokens * n,
        "hidden_size": full["hidden_size"], "hidden_states": len(full["tokens_per_state"]),
        "flops_per_record": full["flops"] * n, "device": device, "compute_dtype": "float32",
        "records_per_s": records_per_s, "best_batch": 8,
        "timing": {"extrapolated": False},
        "preprocess": None if preprocess_rate is None else
        {"records_per_s_per_core": preprocess_rate, "record_file_bytes": RECORD_FILE_BYTES},
        "hardware": hardware,
        "machine": stamp(),                 # measured on this machine
    }


def disk_dict(write_bps: float = 1e9, read_bps: float | None = 5e8, path: str = ".",
              free: int | None = 10**12) -> dict[str, Any]:
    """A disk measurement with one write rate (no spread) and one read rate."""
    write = {"format": "npy", "dtype": "float16", "record_shape": [4, 93, 768],
             "records_per_shard": 10, "shards": 4, "shard_bytes": 64 * 10**6,
             "array_bytes": 256 * 10**6, "file_bytes": 256 * 10**6, "seconds": 256e6 / write_bps,
             "bytes_per_s": write_bps, "bytes_per_s_shard_median": write_bps,
             "bytes_per_s_shard_min": write_bps, "bytes_per_s_shard_max": write_bps}
    read = None if read_bps is None else {
        "files": 200, "file_bytes": RECORD_FILE_BYTES, "bytes": 200 * RECORD_FILE_BYTES,
        "seconds": 200 * RECORD_FILE_BYTES / read_bps, "bytes_per_s": read_bps,
        "files_per_s": read_bps / RECORD_FILE_BYTES,
        "page_cache": "dropped before reading (posix_fadvise DONTNEED)"}
    return {"path": path, "free_bytes": free, "write": write, "read": read,
            "where": "this machine's path; measure the target machine's disk there"}


def write_manifest(path: Path, has_ecg: list[bool], n_clips: list[int],
                   source: str = "synthetic") -> Path:
    """A parquet with the two columns sizing reads and the cohort metadata (its source)."""
    meta = {"format": 1, "source": source, "geometry": {"n_subjects": len(has_ecg)}}
    table = pa.table({"has_ecg": pa.array(has_ecg, pa.bool_()),
                      "n_clips": pa.array(n_clips, pa.int16())})
    table = table.replace_schema_metadata({b"rightsize.cohort": json.dumps(meta).encode()})
    pq.write_table(table, path)
    return path


SOURCES = {"recovered": "cohort-recovery analysis: 4,103 subjects with both modalities",
           "ecg": "MIMIC-IV-ECG v1.0: about 800,000 ten-second 12-lead ECGs",
           "echo": "MIMIC-IV-ECHO v0.1: about 525,000 videos"}
SIZING_BLOCK: dict[str, Any] = {
    "models": {"ecg": {"layers_kept": 4, "keep": "tokens"},
               "echo": {"layers_kept": 1, "keep": "pooled"}},
    "dtype": "float16",
    "scenarios": {"recovered_cohort": {"ecg": {"records": 4103,
                                               "source": SOURCES["recovered"]}},
                  "ecg_corpus": {"ecg": {"records": 800_000, "source": SOURCES["ecg"]}},
                  "echo_corpus": {"echo": {"records": 525_000, "source": SOURCES["echo"]}}},
    "ask": {"scenario": "paired_cohort", "models": ["ecg"]},
    "deadline_h": 24,
    "gpus": 8, "cpu_cores_per_gpu": 8, "gpu": None,
    "estimate": {"gpu": "A100 SXM", "utilisation": [0.25, 0.5]},
    "disk": {"path": ".", "quota": "2TB", "write_mb": 4, "shard_mb": 2, "format": "npy",
             "read_files": 5},
    "prices": {"gpu_hour": None, "cpu_core_hour": None},
}


def write_params(path: Path, **overrides: Any) -> Path:
    """A params.yaml holding a sizing block (overrides replace top-level keys)."""
    block = {**SIZING_BLOCK, **overrides}
    path.write_text(yaml.safe_dump({"sizing": block}))
    return path
