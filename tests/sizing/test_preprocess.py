"""The ECG preprocessing path: WFDB-format-16 files in, HuBERT-ECG inputs out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.signal import decimate

from rightsize.sizing.encoders import EcgGeometry
from rightsize.sizing.preprocess import (
    ADC_GAIN,
    bench_preprocess,
    preprocess_record,
    write_records,
)


def test_record_file_is_wfdb_format_16(tmp_path: Path) -> None:
    g = EcgGeometry()
    (path,) = write_records(tmp_path, g, 1)
    assert path.stat().st_size == 5000 * 12 * 2          # 10 s x 500 Hz x 12 leads x int16
    raw = np.fromfile(path, dtype="<i2").reshape(5000, 12)
    assert raw.dtype == np.int16 and raw.std() > 100


def test_crops_decimated_per_lead_and_flattened_lead_after_lead(tmp_path: Path) -> None:
    g = EcgGeometry(crops_per_record=2)
    (path,) = write_records(tmp_path, g, 1, seed=3)
    out = preprocess_record(path, g)
    assert out.shape == (2, 6000) and out.dtype == np.float32
    raw = np.fromfile(path, dtype="<i2").reshape(5000, 12).astype(np.float32) / ADC_GAIN
    # crop 1 (samples 2500-4999), lead 7: its 500 decimated samples sit at 7*500 ... 8*500
    lead7 = decimate(raw[2500:5000, 7], 5, zero_phase=True)
    np.testing.assert_allclose(out[1, 3500:4000], lead7, rtol=1e-4, atol=1e-5)


def test_short_record_is_an_error(tmp_path: Path) -> None:
    g = EcgGeometry(crops_per_record=3)                   # 15 s from a 10 s file
    (path,) = write_records(tmp_path, EcgGeometry(), 1)
    with pytest.raises(ValueError, match="5000 samples, need 7500"):
        preprocess_record(path, g)


def test_bench_preprocess_reports_rate_and_spread() -> None:
    out = bench_preprocess(EcgGeometry(), records=5, repeats=3)
    assert out["records"] == 5 and out["repeats"] == 3
    assert out["min_s"] <= out["median_s"] <= out["max_s"]
    assert out["records_per_s_per_core"] == pytest.approx(5 / out["median_s"])
    assert (out["records_per_s_per_core_min"] <= out["records_per_s_per_core"]
            <= out["records_per_s_per_core_max"])
    assert out["record_file_bytes"] == 120_000
