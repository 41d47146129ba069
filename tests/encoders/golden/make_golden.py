"""Make the golden model inputs: HuBERT-ECG's own preprocessing, run with its pinned libraries.

Run it in a throwaway environment holding the pins of ``pins.txt`` beside this file (biosppy
2.2.3, scipy 1.16.1: what HuBERT-ECG's preprocessing ran with), never in rightsize's own
environment, and point it at a checkout of Edoar-do/HuBERT-ECG (nothing of it is copied here)::

    python -m venv /tmp/golden && /tmp/golden/bin/pip install -r tests/encoders/golden/pins.txt
    git clone https://github.com/Edoar-do/HuBERT-ECG /tmp/HuBERT-ECG
    /tmp/golden/bin/python tests/encoders/golden/make_golden.py /tmp/HuBERT-ECG

For each record it writes ``<name>.hea`` + ``<name>.dat`` (WFDB format 16, MIMIC-IV-ECG's lead
order; a seeded ECG-like signal made here) and ``<name>.npz``: ``inputs`` ``(crops, 6000)``
float64, the model inputs of crops 0 and 1. Each is computed by HuBERT-ECG's code alone:
``code/utils.py`` ``ecg_preprocessing`` (biosppy's FIR band-pass, ``resample`` to 500 Hz,
``scaling``) on the 12 leads picked by name, then ``code/dataset.py`` ``ECGDataset.__getitem__``
with ``encode=True`` and ``downsampling_factor=5`` (first 5 s, flatten, ``decimate``) on the
preprocessed array saved as ``.npy``; crop ``c`` is that call on the array from sample
``2500 c`` on. The reference modules import training libraries this function never calls
(torch, torchmetrics, ...): those imports get empty stand-ins, and torch's ``from_numpy(x)
.float()`` at the end of ``__getitem__`` returns ``x`` unchanged (float64, before the cast).
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
LEADS = ("I", "II", "III", "aVR", "aVL", "aVF", "V1", "V2", "V3", "V4", "V5", "V6")
MIMIC_ORDER = ("I", "II", "III", "aVR", "aVF", "aVL", "V1", "V2", "V3", "V4", "V5", "V6")
RECORDS = {"rec250": (250, 11), "rec500": (500, 12), "rec1000": (1000, 13)}   # name: (Hz, seed)
SECONDS = 10.0
CROPS = 2
STUBBED = ("torch", "torch.utils", "torch.utils.data", "torchmetrics",
           "torchmetrics.classification", "torcheval", "torcheval.metrics", "iterstrat",
           "iterstrat.ml_stratifiers", "loguru", "neurokit2")


class _Tensor:
    """What ``torch.from_numpy(x)`` gives ``__getitem__``: ``.float()`` hands ``x`` back."""

    def __init__(self, x: np.ndarray) -> None:
        self.x = x

    def float(self) -> np.ndarray:
        return self.x


def _stub_imports() -> None:
    """Empty stand-ins for the training libraries the two reference modules import."""
    for name in STUBBED:
        mod = types.ModuleType(name)
        mod.__getattr__ = lambda attr, _n=name: type(attr, (), {})   # any name: a class
        sys.modules[name] = mod
    torch = sys.modules["torch"]
    torch.from_numpy = _Tensor                                        # type: ignore[attr-defined]
    torch.utils = sys.modules["torch.utils"]                          # type: ignore[attr-defined]
    sys.modules["torch.utils.data"].Dataset = type("Dataset", (), {})  # type: ignore[attr-defined]
    sys.modules["loguru"].logger = types.SimpleNamespace(info=lambda *a, **k: None)  # type: ignore[attr-defined]


def ecg_like(rng: np.random.Generator, fs: float) -> np.ndarray:
    """``(12, samples)`` mV: beats of Gaussian waves, baseline wander, mains hum and noise."""
    t = np.arange(int(SECONDS * fs)) / fs
    beats = np.arange(rng.uniform(0.1, 0.4), SECONDS, 60 / rng.uniform(55, 95))
    out = np.empty((12, len(t)))
    for lead in range(12):
        gain = rng.uniform(-1.5, 1.5, 3)
        x = np.zeros_like(t)
        for b in beats:
            for (shift, width), g in zip(((-0.18, 0.025), (0.0, 0.01), (0.25, 0.04)), gain,
                                         strict=True):
                x += g * np.exp(-0.5 * ((t - b - shift) / width) ** 2)
        x += 0.2 * np.sin(2 * np.pi * rng.uniform(0.1, 0.4) * t + rng.uniform(0, 6))
        x += 0.03 * np.sin(2 * np.pi * 50 * t) + 0.02 * rng.standard_normal(len(t))
        out[lead] = x
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hubert_ecg", type=Path, help="a checkout of Edoar-do/HuBERT-ECG")
    parser.add_argument("--out", type=Path, default=HERE, help="where to write (default: here)")
    args = parser.parse_args()
    import wfdb

    _stub_imports()
    sys.path.insert(0, str(args.hubert_ecg / "code"))
    utils = importlib.import_module("utils")
    dataset = importlib.import_module("dataset")
    commit = subprocess.run(["git", "-C", str(args.hubert_ecg), "rev-parse", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    from importlib.metadata import version  # biosppy's own __version__ lags its release

    args.out.mkdir(parents=True, exist_ok=True)
    for name, (fs, seed) in RECORDS.items():
        signal = ecg_like(np.random.default_rng(seed), fs)[[LEADS.index(x) for x in MIMIC_ORDER]]
        digital = np.round(signal.T * 1000).astype(np.int32)
        wfdb.wrsamp(name, fs=fs, units=["mV"] * 12, sig_name=list(MIMIC_ORDER),
                    d_signal=digital, fmt=["16"] * 12, adc_gain=[1000.0] * 12,
                    baseline=[0] * 12, write_dir=str(args.out))
        rec = wfdb.rdrecord(str(args.out / name))
        x = rec.p_signal.T[[rec.sig_name.index(lead) for lead in LEADS]]
        pre = utils.ecg_preprocessing(x, rec.fs)
        inputs = []
        with tempfile.TemporaryDirectory() as tmp:
            for crop in range(CROPS):
                np.save(Path(tmp) / f"{crop}.npy", pre[:, 2500 * crop:])
            (Path(tmp) / "list.csv").write_text(
                "filename\n" + "".join(f"{crop}.npy\n" for crop in range(CROPS)))
            data = dataset.ECGDataset(str(Path(tmp) / "list.csv"), tmp, downsampling_factor=5,
                                      pretrain=False, encode=True)
            for crop in range(CROPS):
                inputs.append(np.asarray(data[crop][0], dtype=np.float64))
        np.savez(args.out / f"{name}.npz", inputs=np.stack(inputs), fs=float(rec.fs),
                 hubert_ecg_commit=commit,
                 **{lib: version(lib) for lib in ("biosppy", "scipy", "numpy", "wfdb")})
        print(f"{name}: {rec.fs:g} Hz -> inputs {np.stack(inputs).shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
