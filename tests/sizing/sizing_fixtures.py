"""Bench dicts, manifests and params for the sizing tests.

:func:`bench_dict` takes tokens, widths and FLOPs from the real meta-device forward
(:func:`rightsize.sizing.bench.count_shapes_and_flops`) and adds the throughput and
preprocessing figures a test wants, so plan tests run in milliseconds without timing.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from rightsize.sizing.bench import count_shapes_and_flops
from rightsize.sizing.encoders import EcgGeometry, VideoGeometry, make_spec

CPU_STAMP = {"cpu": "Test CPU", "cores": 2, "threads": 2, "torch": "2.13.0+cpu",
             "device": "cpu"}


@functools.cache
def _shapes(family: str, size: str, crops: int) -> tuple[dict[str, Any], Any]:
    geometry = EcgGeometry(crops_per_record=crops) if family == "hubert_ecg" else VideoGeometry()
    spec = make_spec(family, size, geometry)
    return count_shapes_and_flops(spec), spec


def bench_dict(family: str = "hubert_ecg", size: str = "base", crops: int = 2,
               preprocess_rate: float | None = 200.0, device: str = "cpu",
               records_per_s: float | None = 1.0, gpu: str | None = None) -> dict[str, Any]:
    """A bench file's content: shapes/FLOPs measured on meta, rates as given."""
    full, spec = _shapes(family, size, crops)
    n_in = spec.inputs_per_record
    hardware = dict(CPU_STAMP, device=device)
    if gpu:
        hardware["gpu"] = gpu
    return {
        "model": "ecg" if family == "hubert_ecg" else "echo",
        "family": family, "size": size,
        "geometry": dict(vars(spec.geometry)),
        "tokens_per_record": full["tokens_per_state"][-1] * n_in,
        "hidden_size": full["hidden_size"], "hidden_states": len(full["tokens_per_state"]),
        "flops_per_record": full["flops"] * n_in, "device": device,
        "records_per_s": records_per_s, "best_batch": 8,
        "timing": {"extrapolated": False},
        "preprocess": None if preprocess_rate is None else
        {"records_per_s_per_core": preprocess_rate},
        "hardware": hardware,
    }


def write_manifest(path: Path, has_ecg: list[bool], n_clips: list[int]) -> Path:
    """A parquet with the two columns sizing reads (the rest of the manifest is not needed)."""
    table = pa.table({"has_ecg": pa.array(has_ecg, pa.bool_()),
                      "n_clips": pa.array(n_clips, pa.int16())})
    pq.write_table(table, path)
    return path


SIZING_BLOCK: dict[str, Any] = {
    "models": {"ecg": {"layers_kept": 4, "keep": "tokens"},
               "echo": {"layers_kept": 1, "keep": "pooled"}},
    "dtype": "float16",
    "scenarios": {"expansion": {"ecg": 12000, "echo": 96000},
                  "full_corpus": {"ecg": 1_000_000, "echo": 8_000_000}},
    "ask": {"scenario": "paired_cohort", "models": ["ecg"]},
    "gpus": 8, "cpu_cores_per_gpu": 8, "gpu": None,
    "estimate": {"gpu": "Test GPU", "peak_tflops": 100.0, "utilisation": [0.25, 0.5]},
    "disk": {"path": ".", "quota": "2TB"},
}


def write_params(path: Path, **overrides: Any) -> Path:
    """A params.yaml holding a sizing block (overrides replace top-level keys)."""
    block = {**SIZING_BLOCK, **overrides}
    path.write_text(yaml.safe_dump({"sizing": block}))
    return path
