"""In-memory cohort arrays: the contract between the manifest and the probes.

Loaded once from ``data/manifest.parquet``; every probe slices these numpy arrays by split
index (no per-row Python objects). ``n`` subjects, ``c = max_clips``, ``t = ecg_tokens``.

A pooled manifest (``t = 1``) gives a 2-D ``ecg`` ``(n, ecg_dim)``; a token-level one
(``t > 1``) a 3-D ``ecg`` ``(n, t, ecg_dim)``. A subject's ECG is all present or all absent
(``has_ecg``; zeros when absent): there is no per-token mask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class CohortArrays:
    """Whole-cohort arrays, aligned by row."""

    subject_id: np.ndarray   # (n,) str (object) or int64
    split: np.ndarray        # (n,) int8: 0 train, 1 val, 2 test (index into SPLITS)
    lvef: np.ndarray         # (n,) float32, percent
    ef_le_40: np.ndarray     # (n,) bool
    echo: np.ndarray         # (n, c, echo_dim) float32; padded clips are zeros
    n_clips: np.ndarray      # (n,) int16, 0 when echo is missing
    ecg: np.ndarray          # (n, ecg_dim) or, t > 1, (n, t, ecg_dim) float32; zeros if missing
    has_echo: np.ndarray     # (n,) bool
    has_ecg: np.ndarray      # (n,) bool
    metadata: dict           # manifest metadata (e.g. perfect_model_mae, seed, source)

    @property
    def ecg_tokens(self) -> int:
        """ECG vectors per subject: 1 for a pooled (2-D) ``ecg``, else ``ecg.shape[1]``."""
        return 1 if self.ecg.ndim == 2 else int(self.ecg.shape[1])

    @property
    def clip_mask(self) -> np.ndarray:
        """(n, c) bool: True where a clip is present."""
        return np.arange(self.echo.shape[1])[None, :] < self.n_clips[:, None]

    def index(self, split: str) -> np.ndarray:
        """Row indices of ``split`` (``train``/``val``/``test``)."""
        return np.flatnonzero(self.split == SPLITS.index(split))
