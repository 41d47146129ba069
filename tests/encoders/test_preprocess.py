"""HuBERT-ECG's preprocessing against a direct transcription of the cited formulas.

The transcription below follows Edoar-do/HuBERT-ECG (commit affe1f9) line by line with scipy:
``code/utils.py`` ``ecg_preprocessing`` (biosppy ``filter_signal``: ``firwin`` of
``int(0.3 fs)`` taps at Nyquist-normalised 0.05 and 47 Hz, ``filtfilt``; then
``resample`` to 500 Hz; then ``scaling``) and ``code/dataset.py`` (crop the first 5 s,
flatten, ``decimate(x, 5)``). rightsize computes the two filter passes as FFT convolutions and
returns float32, so the outputs agree to rounding: **max abs difference <= 1e-5** on values in
[-1, 1] (docs/numerics.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import wfdb
from scipy.signal import decimate, filtfilt, firwin, resample

from rightsize.encoders.ecg_files import LEADS, MIMIC_ORDER, BadRecord, read_ecg, write_ecg
from rightsize.encoders.models import EcgGeometry
from rightsize.encoders.preprocess import (
    bench_preprocess,
    preprocess_record,
    write_records,
    zero_phase_fir,
)
from rightsize.encoders.synthetic_ecg import synthetic_ecg

TOLERANCE = 1e-5


def transcription(signal: np.ndarray, fs: float, crop: int = 0) -> np.ndarray:
    """The cited formulas, transcribed: (12, samples) mV at fs -> 6,000 samples of crop ``crop``."""
    nyquist = 0.5 * fs
    coeffs = firwin(int(0.3 * fs), [0.05 / nyquist, 47 / nyquist], pass_zero=False)
    x = filtfilt(coeffs, [1.0], signal, axis=-1)
    x = resample(x, int(x.shape[-1] * (500 / fs)), axis=1)
    x = 2 * (x - np.min(x, axis=1)[None].T) / (np.max(x, axis=1) - np.min(x, axis=1)
                                                + 1e-8)[None].T - 1
    x = x[:, 2500 * crop:2500 * (crop + 1)]
    return decimate(x.reshape(-1), 5)


def _record(tmp_path: Path, fs: float, seconds: float = 10.0, seed: int = 0) -> Path:
    path = tmp_path / f"r{int(fs)}_{seed}"
    write_ecg(path, synthetic_ecg(np.random.default_rng(seed), fs, seconds), fs)
    return path


@pytest.mark.parametrize("fs,seed", [(500, 0), (500, 1), (250, 2), (1000, 3)])
def test_matches_the_transcription_of_the_reference(tmp_path: Path, fs: float, seed: int):
    path = _record(tmp_path, fs, seed=seed)
    g = EcgGeometry(crops_per_record=2)
    out = preprocess_record(path, g)
    assert out.shape == (2, 6000) and out.dtype == np.float32
    raw = wfdb.rdrecord(str(path))
    signal = raw.p_signal.T[[raw.sig_name.index(lead) for lead in LEADS]]
    for crop in (0, 1):
        want = transcription(signal, fs, crop)
        assert np.abs(out[crop] - want).max() <= TOLERANCE
    assert 0.9 < np.abs(out).max() < 1.1        # scaled to [-1, 1]; decimation overshoots


def test_the_fft_filter_is_filtfilt() -> None:
    x = synthetic_ecg(np.random.default_rng(4), 500, 10)
    taps = firwin(150, [0.05, 47], pass_zero=False, fs=500)
    np.testing.assert_allclose(zero_phase_fir(x, taps), filtfilt(taps, [1.0], x, axis=-1),
                               rtol=0, atol=1e-12)


def test_the_check_can_fail_a_causal_filter_differs(tmp_path: Path) -> None:
    """A one-pass (causal) filter, what a lfilter-based transcription would give, is far off:
    the tolerance separates the recipes."""
    from scipy.signal import lfilter

    path = _record(tmp_path, 500, seed=5)
    out = preprocess_record(path, EcgGeometry())
    raw = wfdb.rdrecord(str(path))
    signal = raw.p_signal.T[[raw.sig_name.index(lead) for lead in LEADS]]
    causal = lfilter(firwin(150, [0.05, 47], pass_zero=False, fs=500), [1.0], signal, axis=-1)
    lo, hi = causal.min(axis=1, keepdims=True), causal.max(axis=1, keepdims=True)
    scaled = 2 * (causal - lo) / (hi - lo + 1e-8) - 1
    other = decimate(scaled[:, :2500].reshape(-1), 5)
    assert np.abs(out[0] - other).max() > 100 * TOLERANCE


def test_leads_are_picked_by_name_not_position(tmp_path: Path) -> None:
    signal = synthetic_ecg(np.random.default_rng(6), 500, 10)
    write_ecg(tmp_path / "mimic", signal, 500)                      # aVF before aVL on disk
    write_ecg(tmp_path / "std", signal, 500, leads=LEADS)
    assert MIMIC_ORDER != LEADS
    a, b = read_ecg(tmp_path / "mimic"), read_ecg(tmp_path / "std")
    np.testing.assert_array_equal(a.signal, b.signal)
    np.testing.assert_allclose(a.signal, signal, atol=1e-3)         # 1 uV ADC steps


def test_bad_records_name_the_reason(tmp_path: Path) -> None:
    signal = synthetic_ecg(np.random.default_rng(7), 500, 10)
    eleven = tuple(lead for lead in MIMIC_ORDER if lead != "V4")
    wfdb.wrsamp("nolead", fs=500, units=["mV"] * 11, sig_name=list(eleven),
                p_signal=np.delete(signal, LEADS.index("V4"), axis=0).T, fmt=["16"] * 11,
                adc_gain=[1000.0] * 11, baseline=[0] * 11, write_dir=str(tmp_path))
    with pytest.raises(BadRecord, match="missing lead: no V4") as e:
        read_ecg(tmp_path / "nolead")
    assert e.value.reason == "missing lead"
    nan = signal.copy()
    nan[LEADS.index("V2"), 100:200] = np.nan
    wfdb.wrsamp("nan", fs=500, units=["mV"] * 12, sig_name=list(LEADS), p_signal=nan.T,
                fmt=["16"] * 12, adc_gain=[1000.0] * 12, baseline=[0] * 12,
                write_dir=str(tmp_path))
    with pytest.raises(BadRecord, match="NaN: lead V2"):
        read_ecg(tmp_path / "nan")
    (tmp_path / "broken.hea").write_text("broken 12 five hundred\n")
    with pytest.raises(BadRecord, match="unreadable"):
        read_ecg(tmp_path / "broken")
    with pytest.raises(BadRecord, match="unreadable"):
        read_ecg(tmp_path / "absent")
    short = _record(tmp_path, 500, seconds=4.0, seed=8)
    with pytest.raises(BadRecord, match="too short: 2000 samples at 500 Hz, need 2500"):
        preprocess_record(short, EcgGeometry())


def test_bench_preprocess_times_the_extract_path() -> None:
    out = bench_preprocess(EcgGeometry(), records=4, repeats=3)
    assert out["records"] == 4 and out["repeats"] == 3
    assert out["min_s"] <= out["median_s"] <= out["max_s"]
    assert out["records_per_s_per_core"] == pytest.approx(4 / out["median_s"])
    assert out["record_file_bytes"] > 120_000                      # .dat 120,000 + .hea
    assert "band-pass" in out["steps"] and "code/dataset.py" in out["steps"]


def test_write_records_are_wfdb(tmp_path: Path) -> None:
    (path,) = write_records(tmp_path, EcgGeometry(), 1)
    assert path.with_suffix(".dat").stat().st_size == 5000 * 12 * 2
    assert wfdb.rdheader(str(path)).sig_name == list(MIMIC_ORDER)
