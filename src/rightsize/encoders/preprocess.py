"""The ECG loading and preprocessing path, measured per CPU core.

A record is written the way WFDB stores a 12-lead ECG (format 16: little-endian int16,
frames of ``leads`` samples, 10 s at 500 Hz -> a 5000 x 12 file of 120 kB). Preprocessing
one record follows HuBERT-ECG's own dataset code (Edoar-do/HuBERT-ECG,
``hubert_ecg/dataset.py``, ``ECGDataset.__getitem__``): crop, flatten, then decimate.

1. read the file from disk (``numpy.fromfile``), view it as ``(samples, leads)``;
2. convert to float32 millivolts (divide by the ADC gain), leads first: ``(leads, samples)``;
3. for each of ``crops_per_record`` crops of ``crop_s`` seconds (crop 0 is the first 5 s,
   the window the reference's embedding-dump path, ``encode=True``, keeps): flatten the
   ``(leads, crop samples)`` window lead after lead, then decimate the flattened signal
   x``decimate`` (``scipy.signal.decimate``: order-8 Chebyshev I, zero phase, the
   reference's call) -> ``input_samples`` values. Filtering the flattened signal runs
   across the lead borders, as the reference does; decimating each lead first would give
   different samples there.

Timed in this one process and thread, so records/s is per CPU core. The files were just
written, so reads come from the page cache: a cold disk is not measured here (the sizing
stage measures reads at ``sizing.disk.path``).
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.encoders.models import EcgGeometry

log = logging.getLogger(__name__)

ADC_GAIN = 1000.0        # ADC units per mV, as in a WFDB header
RECORD_S = 10.0          # seconds stored per record file


def write_records(directory: Path, geometry: EcgGeometry, n: int, seed: int = 0) -> list[Path]:
    """Write ``n`` WFDB-format-16 records (int16, ``samples x leads``) and return their paths."""
    rng = np.random.default_rng(seed)
    samples = int(RECORD_S * geometry.sample_hz)
    paths = []
    for i in range(n):
        data = rng.integers(-2000, 2000, size=(samples, geometry.leads), dtype=np.int16)
        path = directory / f"rec{i:05d}.dat"
        data.astype("<i2").tofile(path)
        paths.append(path)
    return paths


def preprocess_record(path: Path, geometry: EcgGeometry) -> np.ndarray:
    """One record file -> ``(crops_per_record, input_samples)`` float32 model inputs."""
    from scipy.signal import decimate

    raw = np.fromfile(path, dtype="<i2").reshape(-1, geometry.leads)
    signal = raw.T.astype(np.float32) / ADC_GAIN                 # (leads, samples) in mV
    n = geometry.crop_samples
    if signal.shape[1] < n * geometry.crops_per_record:
        raise ValueError(f"{path}: {signal.shape[1]} samples, need "
                         f"{n * geometry.crops_per_record}")
    out = np.empty((geometry.crops_per_record, geometry.input_samples), dtype=np.float32)
    for c in range(geometry.crops_per_record):
        flat = signal[:, c * n:(c + 1) * n].reshape(-1)           # crop, lead after lead
        out[c] = decimate(flat, geometry.decimate, zero_phase=True)
    return out


def bench_preprocess(geometry: EcgGeometry, records: int, repeats: int = 3) -> dict[str, Any]:
    """Records/s per CPU core of :func:`preprocess_record` over ``records`` fresh files."""
    with tempfile.TemporaryDirectory(prefix="rightsize-ecg-") as tmp:
        paths = write_records(Path(tmp), geometry, records)
        preprocess_record(paths[0], geometry)                     # import + warm-up
        seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            for p in paths:
                preprocess_record(p, geometry)
            seconds.append(time.perf_counter() - start)
        file_bytes = paths[0].stat().st_size
    median = statistics.median(seconds)
    return {
        "records": records,
        "repeats": repeats,
        "record_file_bytes": file_bytes,
        "median_s": median,
        "min_s": min(seconds),
        "max_s": max(seconds),
        "records_per_s_per_core": records / median,
        "records_per_s_per_core_min": records / max(seconds),
        "records_per_s_per_core_max": records / min(seconds),
        "steps": "read int16 WFDB-format-16 file, to float32 mV, per crop: flatten lead "
                 "after lead, then decimate the flattened signal (scipy.signal.decimate, zero "
                 "phase), as HuBERT-ECG's hubert_ecg/dataset.py does",
        "not_measured": "cold-disk reads (files were just written: page cache warm), "
                        "network storage, header parsing",
    }
