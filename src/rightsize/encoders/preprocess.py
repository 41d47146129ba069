"""HuBERT-ECG's preprocessing, one function that the encoder bench times and ``extract`` runs.

The recipe is the reference's own (Edoar-do/HuBERT-ECG at commit affe1f9), step by step:

1. **band-pass** (``code/utils.py``, ``ecg_preprocessing`` -> ``apply_filter``): a FIR
   band-pass 0.05-47 Hz of order ``int(0.3 * fs)`` at the record's own rate, passed to
   biosppy's ``filter_signal``, whose ``get_filter`` makes an even order odd (``order += 1``)
   before ``scipy.signal.firwin``: 151 taps at 500 Hz, 301 at 1,000 Hz, 75 at 250 Hz. It is
   applied zero-phase, forward and backward (``scipy.signal.filtfilt``: odd extension of
   ``3 x taps`` samples, steady-state start). Here the two passes are computed as FFT
   convolutions (:func:`zero_phase_fir`): within 1e-6 of HuBERT-ECG's own function run with
   biosppy 2.2.3 (docs/numerics.md) at a fraction of the time of a direct-form ``lfilter``;
2. **resample to 500 Hz** (``ecg_preprocessing``, ``scipy.signal.resample`` along time) when
   the record is stored at another rate;
3. **per-lead min-max scaling** to [-1, 1] over the whole record (``code/utils.py``,
   ``scaling``: ``2 (x - min) / (max - min + 1e-8) - 1``);
4. **crop, flatten, decimate** (``code/dataset.py``, ``ECGDataset.__getitem__``): crop ``c``
   is samples ``[2500 c, 2500 (c + 1))`` (crop 0 is the first 5 s, the window the embedding
   dump, ``encode=True``, keeps), flattened lead after lead, then ``scipy.signal.decimate``
   x5 (order-8 Chebyshev I, zero phase) over the flattened signal -> 6,000 samples. The
   decimation filter runs across lead borders, as the reference's does.

The reference replaces NaN by the mean; here a NaN record is a bad record instead
(:class:`~rightsize.encoders.ecg_files.BadRecord`), so that no feature is silently imputed.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.encoders.ecg_files import BadRecord, EcgRecord, read_ecg, write_ecg
from rightsize.encoders.file_rate import per_file_rate
from rightsize.encoders.models import EcgGeometry
from rightsize.encoders.synthetic_ecg import synthetic_ecg

log = logging.getLogger(__name__)

BAND_HZ = (0.05, 47.0)     # code/utils.py ecg_preprocessing(band_pass=[0.05, 47])
TAPS_PER_HZ = 0.3          # code/utils.py apply_filter: order = int(0.3 * fs), made odd
MIN_HZ = 2 * BAND_HZ[1]    # the band's top edge must lie below the Nyquist frequency
#: Bumped whenever the model input of a record changes: a shard made under another is redone.
PREPROCESSING_VERSION = 2  # 2: biosppy's odd tap count (1: int(0.3 fs) taps)
SCALING_SMOOTH = 1e-8      # code/utils.py scaling(seq, smooth=1e-8)
RECORD_S = 10.0            # seconds per bench record (MIMIC-IV-ECG's length)
STEPS = ("read WFDB .hea + .dat (wfdb), 12 leads picked by name; zero-phase FIR band-pass "
         "0.05-47 Hz of int(0.3 fs) taps made odd (biosppy get_filter); resample to 500 Hz "
         "when stored at another rate; per-lead min-max scaling to [-1, 1]; per crop: "
         "flatten lead after lead, then decimate the flattened signal (scipy.signal.decimate, "
         "zero phase), as HuBERT-ECG's code/utils.py ecg_preprocessing and code/dataset.py do")


def load_readers() -> None:
    """Import what reading and preprocessing a record needs (wfdb, ``scipy.signal``): about
    0.8 s, paid once per process. An extraction worker and the worker bench call it while
    they start, so their start-up holds it and the first shard's preprocessing does not."""
    import scipy.signal  # noqa: F401

    from rightsize.encoders.ecg_files import load_wfdb

    load_wfdb()


def tap_count(fs: float) -> int:
    """Taps of the band-pass at ``fs`` Hz: ``int(0.3 fs)``, made odd as biosppy's
    ``get_filter`` does (an even FIR order gets one more tap)."""
    order = int(TAPS_PER_HZ * fs)
    return order + 1 if order % 2 == 0 else order


def band_pass_taps(fs: float) -> np.ndarray:
    """The FIR band-pass of ``code/utils.py`` ``apply_filter`` at ``fs`` Hz, as biosppy
    designs it."""
    from scipy.signal import firwin

    return firwin(tap_count(fs), list(BAND_HZ), pass_zero=False, fs=fs)


def zero_phase_fir(x: np.ndarray, taps: np.ndarray) -> np.ndarray:
    """``scipy.signal.filtfilt(taps, [1.0], x, axis=-1)``, each pass as an FFT convolution.

    filtfilt extends ``x`` by an odd reflection of ``3 len(taps)`` samples at each end and
    starts each pass in the steady state of its first sample; for a FIR filter that start is
    the same as prefixing ``len(taps) - 1`` copies of that sample and keeping the full-overlap
    part of the convolution.
    """
    from scipy.signal import fftconvolve

    n_taps = len(taps)
    pad = 3 * n_taps
    if x.shape[-1] <= pad:
        raise ValueError(f"{x.shape[-1]} samples: the band-pass needs more than {pad}")
    left = 2 * x[..., :1] - x[..., pad:0:-1]
    right = 2 * x[..., -1:] - x[..., -2:-pad - 2:-1]
    ext = np.concatenate([left, x, right], axis=-1)
    kernel = taps[None, :] if x.ndim == 2 else taps

    def one_pass(s: np.ndarray) -> np.ndarray:
        head = np.repeat(s[..., :1], n_taps - 1, axis=-1)
        return fftconvolve(np.concatenate([head, s], axis=-1), kernel, mode="valid", axes=-1)

    forward = one_pass(ext)
    backward = one_pass(forward[..., ::-1])[..., ::-1]
    return backward[..., pad:-pad]


def min_max_scale(x: np.ndarray) -> np.ndarray:
    """Per lead (row) to [-1, 1]: ``code/utils.py`` ``scaling``."""
    lo = x.min(axis=1, keepdims=True)
    hi = x.max(axis=1, keepdims=True)
    return 2.0 * (x - lo) / (hi - lo + SCALING_SMOOTH) - 1.0


def preprocess_ecg(record: EcgRecord, geometry: EcgGeometry, name: str = "record") -> np.ndarray:
    """One record -> ``(crops_per_record, input_samples)`` float32 HuBERT-ECG inputs.

    Raises :class:`BadRecord` (reason ``too short``) when the record, at 500 Hz, holds fewer
    than ``crops_per_record`` crops.
    """
    from scipy.signal import decimate, resample

    signal, fs = record.signal, record.fs
    if not fs > MIN_HZ:
        raise BadRecord(name, "sampling rate", f"{fs:g} Hz: the {BAND_HZ[0]:g}-{BAND_HZ[1]:g} "
                        f"Hz band-pass needs more than {MIN_HZ:g} Hz")
    n_taps = tap_count(fs)
    if signal.shape[1] <= 3 * n_taps:
        raise BadRecord(name, "too short", f"{signal.shape[1]} samples at {fs:g} Hz; the "
                        f"band-pass needs more than {3 * n_taps}")
    x = zero_phase_fir(signal, band_pass_taps(fs))
    if fs != geometry.sample_hz:
        x = resample(x, int(x.shape[1] * (geometry.sample_hz / fs)), axis=1)
    x = min_max_scale(x)
    n, crops = geometry.crop_samples, geometry.crops_per_record
    if x.shape[1] < n * crops:
        raise BadRecord(name, "too short", f"{x.shape[1]} samples at {geometry.sample_hz} Hz, "
                        f"need {n * crops} ({crops} x {geometry.crop_s:g} s)")
    out = np.empty((crops, geometry.input_samples), dtype=np.float32)
    for c in range(crops):
        flat = x[:, c * n:(c + 1) * n].reshape(-1)              # crop, lead after lead
        out[c] = decimate(flat, geometry.decimate, zero_phase=True)
    return out


def model_input(path: Path, geometry: EcgGeometry, name: str | None = None
                ) -> tuple[np.ndarray, float]:
    """Read the WFDB record ``path`` (no extension) and preprocess it: the float32 model
    inputs ``(crops_per_record, input_samples)`` that ``extract`` feeds the model (and
    ``rightsize ecg-input`` writes), and the record's stored sampling rate."""
    record = read_ecg(path, name)
    return preprocess_ecg(record, geometry, name or str(path)), record.fs


def preprocess_record(path: Path, geometry: EcgGeometry, name: str | None = None) -> np.ndarray:
    """Read the WFDB record ``path`` (no extension) and preprocess it: what ``extract`` runs."""
    return model_input(path, geometry, name)[0]


def write_records(directory: Path, geometry: EcgGeometry, n: int, seed: int = 0,
                  seconds: float = RECORD_S) -> list[Path]:
    """Write ``n`` synthetic ECG-like WFDB records (format 16) and return their paths."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        path = directory / f"rec{i:05d}"
        write_ecg(path, synthetic_ecg(rng, geometry.sample_hz, seconds, geometry.leads),
                  geometry.sample_hz)
        paths.append(path)
    return paths


def bench_preprocess(geometry: EcgGeometry, records: int, repeats: int = 3) -> dict[str, Any]:
    """Records/s per CPU core of :func:`preprocess_record` over ``records`` fresh WFDB records."""
    with tempfile.TemporaryDirectory(prefix="rightsize-ecg-") as tmp:
        paths = write_records(Path(tmp), geometry, records)
        file_bytes = sum(paths[0].with_suffix(s).stat().st_size for s in (".dat", ".hea"))
        rate = per_file_rate(lambda p: preprocess_record(p, geometry), paths, repeats,
                             file_bytes)
    return {
        **rate,
        "steps": STEPS,
        "not_measured": "cold-disk reads (files were just written: page cache warm), "
                        "network storage",
    }
