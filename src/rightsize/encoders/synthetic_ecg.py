"""ECG-like synthetic signals: beats of P, QRS and T waves, baseline wander and noise.

Not physiology: a signal with an ECG's scale (about 1 mV), rhythm (50-100 beats per minute)
and spectrum, so that the band-pass, the scaling and the model see realistic inputs. Every
record built from it is marked synthetic where it is written.
"""

from __future__ import annotations

import numpy as np

# (centre within the beat as a fraction of the RR interval, width s, amplitude mV)
_WAVES = ((0.16, 0.025, 0.12), (0.30, 0.008, -0.15), (0.32, 0.010, 1.0),
          (0.34, 0.008, -0.25), (0.58, 0.045, 0.30))


def synthetic_ecg(rng: np.random.Generator, fs: float, seconds: float,
                  leads: int = 12) -> np.ndarray:
    """``(leads, round(seconds * fs))`` float64 mV of an ECG-like rhythm drawn from ``rng``."""
    n = int(round(seconds * fs))
    t = np.arange(n) / fs
    rr = 60.0 / rng.uniform(50, 100)
    beats = np.arange(-rr, seconds + rr, rr) + rng.uniform(0, rr)
    template = np.zeros(n)
    for centre, width, amp in _WAVES:
        at = beats + centre * rr
        template += amp * np.exp(-0.5 * ((t[:, None] - at[None, :]) / width) ** 2).sum(axis=1)
    gains = rng.uniform(-1.2, 1.2, size=(leads, 1))
    wander = 0.1 * np.sin(2 * np.pi * rng.uniform(0.1, 0.4, size=(leads, 1)) * t
                          + rng.uniform(0, 2 * np.pi, size=(leads, 1)))
    return gains * template + wander + rng.normal(0, 0.02, size=(leads, n))
