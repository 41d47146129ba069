"""The ECG preprocessing path: WFDB-format-16 files in, HuBERT-ECG inputs out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.signal import decimate

from rightsize.encoders.models import EcgGeometry
from rightsize.encoders.preprocess import (
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


def test_default_is_the_first_5_s_as_the_reference_dump_keeps(tmp_path: Path) -> None:
    g = EcgGeometry()
    assert g.crops_per_record == 1
    (path,) = write_records(tmp_path, g, 1, seed=2)
    out = preprocess_record(path, g)
    assert out.shape == (1, 6000) and out.dtype == np.float32
    raw = np.fromfile(path, dtype="<i2").reshape(5000, 12).astype(np.float32) / ADC_GAIN
    first_5s = raw[:2500].T.reshape(-1)                  # crop, then flatten lead after lead
    np.testing.assert_allclose(out[0], decimate(first_5s, 5, zero_phase=True), rtol=1e-4,
                               atol=1e-5)


def test_crop_flatten_then_decimate_as_hubert_ecg_does(tmp_path: Path) -> None:
    """Decimating the flattened crop (HuBERT-ECG's hubert_ecg/dataset.py order) filters
    across the lead borders: it differs from per-lead decimation there, not mid-lead."""
    g = EcgGeometry(crops_per_record=2)
    (path,) = write_records(tmp_path, g, 1, seed=3)
    out = preprocess_record(path, g)
    assert out.shape == (2, 6000)
    raw = np.fromfile(path, dtype="<i2").reshape(5000, 12).astype(np.float32) / ADC_GAIN
    crop1 = raw[2500:5000].T                                   # (12, 2500), second 5 s
    np.testing.assert_allclose(out[1], decimate(crop1.reshape(-1), 5, zero_phase=True),
                               rtol=1e-4, atol=1e-5)
    per_lead = decimate(crop1, 5, axis=-1, zero_phase=True).reshape(-1)
    border = slice(7 * 500 - 3, 7 * 500 + 3)                   # lead 6 | lead 7
    middle = slice(7 * 500 + 200, 7 * 500 + 300)               # inside lead 7
    assert np.abs(out[1, border] - per_lead[border]).max() > 1e-3
    np.testing.assert_allclose(out[1, middle], per_lead[middle], atol=1e-3)


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
