"""Deterministic randomness of the synthetic cohort: keyed RNG streams and ordered projections.

Every random draw of :mod:`rightsize.cohort.synthetic` comes from a generator keyed by
``(seed, stream, ...)``, so adding a stream never moves the draws of another, and every
projection of low-dimensional latents into embedding space is an explicit elementwise sum
in a fixed order (no BLAS), so a vector is bit-identical however rows are batched and on
whichever BLAS the machine has.
"""

from __future__ import annotations

import numpy as np


def rng(seed: int, *stream: int) -> np.random.Generator:
    """The generator of stream ``stream`` (one or more integers) under ``seed``."""
    return np.random.default_rng([seed, *stream])


def lincomb(z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_l z[..., l] * w[l]`` accumulated in order ``l = 0, 1, ...`` (float32)."""
    out = np.multiply(z[..., 0, None], w[0])
    for col in range(1, w.shape[0]):
        out += z[..., col, None] * w[col]
    return out
