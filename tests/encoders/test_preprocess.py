"""HuBERT-ECG's preprocessing against HuBERT-ECG's own function, run with its pinned libraries.

The oracle is ``tests/encoders/golden/``: WFDB records at 250, 500 and 1,000 Hz and, for each,
the model inputs of crops 0 and 1 that Edoar-do/HuBERT-ECG's ``ecg_preprocessing`` and
``ECGDataset.__getitem__`` gave with biosppy 2.2.3 and scipy 1.16.1 (``make_golden.py`` and
``pins.txt`` beside them; no rightsize code ran there). rightsize computes the filter's two
passes as FFT convolutions and returns float32: **max abs difference <= 1e-6** (docs/numerics.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import wfdb
from scipy.signal import filtfilt, firwin

from rightsize.encoders.ecg_files import LEADS, MIMIC_ORDER, BadRecord, read_ecg, write_ecg
from rightsize.encoders.models import EcgGeometry
from rightsize.encoders.preprocess import (
    band_pass_taps,
    bench_preprocess,
    preprocess_record,
    write_records,
    zero_phase_fir,
)
from rightsize.encoders.synthetic_ecg import synthetic_ecg

GOLDEN = Path(__file__).resolve().parent / "golden"
TOLERANCE = 1e-6


def _record(tmp_path: Path, fs: float, seconds: float = 10.0, seed: int = 0) -> Path:
    path = tmp_path / f"r{int(fs)}_{seed}"
    write_ecg(path, synthetic_ecg(np.random.default_rng(seed), fs, seconds), fs)
    return path


@pytest.mark.parametrize("name", ["rec250", "rec500", "rec1000"])
def test_matches_hubert_ecgs_own_preprocessing(name: str) -> None:
    golden = np.load(GOLDEN / f"{name}.npz")
    assert (str(golden["biosppy"]), str(golden["scipy"])) == ("2.2.3", "1.16.1")
    out = preprocess_record(GOLDEN / name, EcgGeometry(crops_per_record=2))
    assert out.shape == golden["inputs"].shape == (2, 6000) and out.dtype == np.float32
    assert np.abs(out - golden["inputs"]).max() <= TOLERANCE


@pytest.mark.parametrize("fs,taps", [(250, 75), (500, 151), (1000, 301)])
def test_the_band_pass_has_biosppys_odd_tap_count(fs: int, taps: int) -> None:
    assert len(band_pass_taps(fs)) == taps


def test_the_golden_check_can_fail_one_tap_short() -> None:
    """The even tap count (150 at 500 Hz) misses the golden inputs by far more than 1e-6."""
    from rightsize.encoders import preprocess

    golden = np.load(GOLDEN / "rec500.npz")["inputs"]
    even = firwin(150, [0.05, 47], pass_zero=False, fs=500)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(preprocess, "band_pass_taps", lambda fs: even)
        out = preprocess_record(GOLDEN / "rec500", EcgGeometry(crops_per_record=2))
    assert np.abs(out - golden).max() > 100 * TOLERANCE


def test_the_fft_filter_is_filtfilt() -> None:
    x = synthetic_ecg(np.random.default_rng(4), 500, 10)
    taps = band_pass_taps(500)
    np.testing.assert_allclose(zero_phase_fir(x, taps), filtfilt(taps, [1.0], x, axis=-1),
                               rtol=0, atol=1e-12)


def test_a_record_below_94_hz_is_a_bad_record_naming_it(tmp_path: Path) -> None:
    path = _record(tmp_path, 90, seconds=60.0)
    with pytest.raises(BadRecord, match="r90_0: sampling rate: 90 Hz") as e:
        preprocess_record(path, EcgGeometry(), "r90_0")
    assert e.value.reason == "sampling rate"


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


def test_two_leads_differing_only_in_case_are_a_bad_record(tmp_path: Path) -> None:
    signal = synthetic_ecg(np.random.default_rng(11), 500, 10)
    names = [lead if lead != "III" else "ii" for lead in LEADS]          # ii and II
    wfdb.wrsamp("dup", fs=500, units=["mV"] * 12, sig_name=names, p_signal=signal.T,
                fmt=["16"] * 12, adc_gain=[1000.0] * 12, baseline=[0] * 12,
                write_dir=str(tmp_path))
    with pytest.raises(BadRecord, match="dup: duplicate lead: signals II and ii") as e:
        read_ecg(tmp_path / "dup", "dup")
    assert e.value.reason == "duplicate lead"
