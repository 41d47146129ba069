"""One split's probe inputs as whole arrays, and the train-split target standardization.

Every probe reads the same :class:`SplitData` (numpy, sliced from
:class:`~rightsize.cohort.arrays.CohortArrays` by split index); torch probes move it to
tensors once with :meth:`SplitData.tensors` and batch by index slices. A modality is
"absent" when its inputs are zero and its tokens masked, which is how both real missing
data and the missing-modality evaluation look to a probe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from rightsize.cohort.arrays import CohortArrays
from rightsize.errors import DataError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class SplitData:
    """Rows of one split: inputs, masks and targets (``m`` rows, ``c`` clips)."""

    echo: np.ndarray       # (m, c, echo_dim) float32, zero where masked
    clip_mask: np.ndarray  # (m, c) bool, True where a clip is present
    ecg: np.ndarray        # (m, ecg_dim) float32, zero where absent
    has_ecg: np.ndarray    # (m,) bool
    lvef: np.ndarray       # (m,) float64, percent
    ef_le_40: np.ndarray   # (m,) bool

    def __len__(self) -> int:
        return int(self.lvef.shape[0])

    @property
    def has_echo(self) -> np.ndarray:
        """(m,) bool: at least one clip present."""
        return self.clip_mask.any(axis=1)

    def drop(self, echo: bool = False, ecg: bool = False) -> SplitData:
        """A copy with the echo and/or ECG modality absent (zeroed and masked)."""
        out = self
        if echo:
            out = SplitData(np.zeros_like(out.echo), np.zeros_like(out.clip_mask), out.ecg,
                            out.has_ecg, out.lvef, out.ef_le_40)
        if ecg:
            out = SplitData(out.echo, out.clip_mask, np.zeros_like(out.ecg),
                            np.zeros_like(out.has_ecg), out.lvef, out.ef_le_40)
        return out

    def subset(self, rows: np.ndarray) -> SplitData:
        """The rows ``rows`` (index or boolean mask)."""
        return SplitData(self.echo[rows], self.clip_mask[rows], self.ecg[rows],
                         self.has_ecg[rows], self.lvef[rows], self.ef_le_40[rows])

    def tensors(self, device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
        """Model inputs as tensors on ``device``: echo, clip_mask, ecg, has_ecg."""
        import torch

        return {
            "echo": torch.from_numpy(np.ascontiguousarray(self.echo)).to(device),
            "clip_mask": torch.from_numpy(self.clip_mask).to(device),
            "ecg": torch.from_numpy(np.ascontiguousarray(self.ecg)).to(device),
            "has_ecg": torch.from_numpy(self.has_ecg).to(device),
        }


def split_data(arrays: CohortArrays, split: str) -> SplitData:
    """Slice ``split`` out of ``arrays``; rows without echo get an all-False clip mask."""
    idx = arrays.index(split)
    if idx.size == 0:
        raise DataError(f"manifest has no rows in split {split!r}")
    mask = arrays.clip_mask[idx] & arrays.has_echo[idx, None]
    echo = arrays.echo[idx].astype(np.float32, copy=False)
    has_ecg = arrays.has_ecg[idx].astype(bool)
    ecg = arrays.ecg[idx].astype(np.float32, copy=False)
    lvef = arrays.lvef[idx].astype(np.float64)
    if not np.isfinite(lvef).all():
        raise DataError(f"manifest column lvef has non-finite values in split {split!r}")
    return SplitData(echo=echo, clip_mask=mask, ecg=ecg, has_ecg=has_ecg, lvef=lvef,
                     ef_le_40=arrays.ef_le_40[idx].astype(bool))


@dataclass(frozen=True)
class Standardizer:
    """``z = (y - mean) / sd`` with constants from the train split."""

    mean: float
    sd: float

    @classmethod
    def fit(cls, y: np.ndarray) -> Standardizer:
        """Constants of ``y`` (sd of a constant target is taken as 1)."""
        sd = float(np.std(y))
        return cls(mean=float(np.mean(y)), sd=sd if sd > 0 else 1.0)

    def forward(self, y: np.ndarray) -> np.ndarray:
        """Standardize ``y`` (float64)."""
        return (np.asarray(y, dtype=np.float64) - self.mean) / self.sd

    def inverse(self, z: np.ndarray) -> np.ndarray:
        """Back to percent (float64)."""
        return np.asarray(z, dtype=np.float64) * self.sd + self.mean


@dataclass(frozen=True)
class Moments:
    """Train-split input statistics of echo clips (present ones) and ECGs (present ones).

    Per-feature mean and sd, and optionally the top-``rank`` principal directions of the
    standardized features (``(dim, rank)`` orthonormal columns; None when ``rank`` is 0 or
    not below ``dim``).
    """

    echo_mean: np.ndarray  # (echo_dim,) float32
    echo_sd: np.ndarray
    ecg_mean: np.ndarray   # (ecg_dim,) float32
    ecg_sd: np.ndarray
    echo_basis: np.ndarray | None = None   # (echo_dim, rank) float32
    ecg_basis: np.ndarray | None = None    # (ecg_dim, rank) float32

    @classmethod
    def fit(cls, data: SplitData, rank: int = 0, ecg: bool = True) -> Moments:
        """Moments over present clips / present ECGs (zeros and ones when none present).

        ``ecg=False`` skips the ECG (zeros, ones, no basis) for a probe that never reads it.
        """
        em, es, eb = _moments(data.echo[data.clip_mask], data.echo.shape[-1], rank)
        if not ecg:
            dim = data.ecg.shape[-1]
            return cls(em, es, np.zeros(dim, np.float32), np.ones(dim, np.float32), eb, None)
        gm, gs, gb = _moments(data.ecg[data.has_ecg], data.ecg.shape[-1], rank)
        return cls(em, es, gm, gs, eb, gb)


def _moments(x: np.ndarray, dim: int,
             rank: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per-feature mean and sd of ``x`` (rows) and its top-``rank`` principal directions.

    Every step is independent of numpy's BLAS (OpenBLAS picks its kernels per CPU, from
    ``OPENBLAS_CORETYPE`` and its own thread count, outside ``train.threads``): mean and sd
    are numpy ufunc reductions (no BLAS), and the Gram matrix and its eigenvectors are
    computed by torch in float64 under the caller's thread setting (:func:`principal_basis`),
    then rounded once to float32.
    """
    if x.shape[0] == 0:
        return np.zeros(dim, np.float32), np.ones(dim, np.float32), None
    mean = x.mean(axis=0, dtype=np.float64)
    sd = x.std(axis=0, dtype=np.float64)
    sd = np.where(sd > 1e-8, sd, 1.0)
    basis = principal_basis((x - mean) / sd, rank) if 0 < rank < dim else None
    return mean.astype(np.float32), sd.astype(np.float32), basis


def principal_basis(z: np.ndarray, rank: int) -> np.ndarray:
    """Top-``rank`` eigenvectors of ``z^T z`` (``z`` (n, dim) float64), largest first, float32.

    Torch in float64 (``torch.mm`` and ``torch.linalg.eigh``: one library, one fixed
    reduction order for a given thread count, which the caller sets from ``train.threads``),
    each vector's sign fixed so its largest-magnitude entry is positive, rounded once.
    With fewer rows than features (``n < dim``, e.g. one pooled clip per subject) the
    smaller ``n x n`` matrix ``z z^T`` is decomposed instead and its eigenvectors ``u`` are
    mapped to ``z^T u / sqrt(lambda)`` (same vectors, same eigenvalues; 0.11 s instead of
    0.20 s for 800 x 1024 here).
    """
    import torch

    n, dim = z.shape
    zt = torch.from_numpy(np.ascontiguousarray(z, dtype=np.float64))
    top = None
    if rank < n - 1 < dim:
        vals, vecs = torch.linalg.eigh(torch.mm(zt, zt.t()))      # ascending eigenvalues
        lam = vals[-rank:].flip(0)
        if bool((lam > 1e-9 * vals[-1]).all()):
            v = torch.mm(zt.t(), vecs[:, -rank:].flip(1))             # (dim, rank)
            top = (v / torch.linalg.vector_norm(v, dim=0)).numpy()
    if top is None:
        _, vecs = torch.linalg.eigh(torch.mm(zt.t(), zt))
        top = vecs[:, -rank:].flip(1).numpy()                     # (dim, rank), largest first
    pivot = np.abs(top).argmax(axis=0)
    signs = np.where(top[pivot, np.arange(rank)] < 0, -1.0, 1.0)
    return np.ascontiguousarray(top * signs, dtype=np.float32)
