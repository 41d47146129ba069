"""One split's probe inputs as whole arrays, and the train-split target standardization.

Every probe reads the same :class:`SplitData` (numpy, sliced from
:class:`~rightsize.cohort.arrays.CohortArrays` by split index); torch probes move it to
tensors once with :meth:`SplitData.tensors` and batch by index slices. A modality is
"absent" when its inputs are zero and its tokens masked, which is how both real missing
data and the missing-modality evaluation look to a probe.

A subject's ECG is one pooled vector ``(m, ecg_dim)`` or ``N`` tokens ``(m, N, ecg_dim)``
(:func:`ecg_tokens`), all present or all absent (``has_ecg``; no per-token mask).
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
    ecg: np.ndarray        # (m, ecg_dim) or (m, N, ecg_dim) float32, zero where absent
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


def ecg_tokens(ecg: np.ndarray) -> int:
    """ECG tokens per subject of a cohort's or split's ECG array: 1 when pooled (2-D)."""
    return 1 if ecg.ndim == 2 else int(ecg.shape[1])


def split_data(arrays: CohortArrays, split: str) -> SplitData:
    """Slice ``split`` out of ``arrays``; rows without echo get an all-False clip mask.

    A token-level ECG of one token per subject is handed on pooled (2-D).
    """
    idx = arrays.index(split)
    if idx.size == 0:
        raise DataError(f"manifest has no rows in split {split!r}")
    mask = arrays.clip_mask[idx] & arrays.has_echo[idx, None]
    echo = arrays.echo[idx].astype(np.float32, copy=False)
    has_ecg = arrays.has_ecg[idx].astype(bool)
    ecg = arrays.ecg[idx].astype(np.float32, copy=False)
    if ecg.ndim == 3 and ecg.shape[1] == 1:
        ecg = ecg[:, 0]
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
    """Train-split input statistics of echo clips (present ones) and ECGs (present ones;
    every token of a token-level ECG is one row).

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
    def fit(cls, data: SplitData, rank: int = 0, ecg: bool = True,
            threads: int | None = None) -> Moments:
        """Moments over present clips / present ECGs (zeros and ones when none present).

        ``ecg=False`` skips the ECG (zeros, ones, no basis) for a probe that never reads it.
        ``threads`` caps numpy's BLAS threads for the principal directions (None: as set).
        """
        em, es, eb = _moments(data.echo[data.clip_mask], data.echo.shape[-1], rank, threads)
        if not ecg:
            dim = data.ecg.shape[-1]
            return cls(em, es, np.zeros(dim, np.float32), np.ones(dim, np.float32), eb, None)
        dim = data.ecg.shape[-1]
        if data.ecg.ndim == 3:          # N > 1 tokens: every token a row, in chunks
            gm, gs, gb = token_moments(data.ecg, data.has_ecg, rank, threads)
        else:
            gm, gs, gb = _moments(data.ecg[data.has_ecg], dim, rank, threads)
        return cls(em, es, gm, gs, eb, gb)


def feature_moments(x: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per-feature mean and sd of the rows ``x`` and their top-``rank`` principal directions
    (None when ``rank`` is 0 or not below the width): what :meth:`Moments.fit` computes for
    the present echo clips."""
    return _moments(x, x.shape[-1], rank, None)


def _moments(x: np.ndarray, dim: int, rank: int, threads: int | None
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per-feature mean and sd of ``x`` (rows) and its top-``rank`` principal directions.

    Mean and sd are numpy ufunc reductions in float64 (no BLAS); the Gram matrix and its
    eigenvectors go through numpy's BLAS and LAPACK (:func:`principal_basis`), whose kernel
    set :mod:`rightsize.blas_kernel` pins on x86-64, then are rounded once to float32.
    """
    if x.shape[0] == 0:
        return np.zeros(dim, np.float32), np.ones(dim, np.float32), None
    mean = x.mean(axis=0, dtype=np.float64)
    sd = x.std(axis=0, dtype=np.float64)
    sd = np.where(sd > 1e-8, sd, 1.0)
    basis = principal_basis((x - mean) / sd, rank, threads) if 0 < rank < dim else None
    return mean.astype(np.float32), sd.astype(np.float32), basis


TOKEN_CHUNK_BYTES = 32 * 2**20     # float64 bytes of token rows per chunk of token_moments


def token_moments(ecg: np.ndarray, present: np.ndarray, rank: int, threads: int | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """:func:`_moments` of every token of the subjects ``present`` (``ecg`` (m, N, dim)
    float32), the token rows never gathered into one array.

    Two passes over chunks of subjects (at most :data:`TOKEN_CHUNK_BYTES` of float64 rows
    each): the mean, then the centred sums of squares and the centred Gram matrix ``D^T D``
    (float64, numpy's BLAS under ``threadpool_limits(threads)``). The standardized Gram
    matrix is ``diag(1/sd) D^T D diag(1/sd)`` and its top-``rank`` eigenvectors are the
    principal directions (:func:`top_eigenvectors`), as :func:`_moments` gets them from
    ``z^T z`` with every row in memory: the same quantities up to rounding (summation
    order), in O(chunk + dim^2) memory instead of three copies of every token (float32
    gathered, float64 centred, float64 standardized: 2.8 GB at 186 tokens, 829 subjects).
    A pooled ECG (2-D) never comes here: its moments stay :func:`_moments`' bits.
    """
    from threadpoolctl import threadpool_limits

    rows = np.flatnonzero(present)
    _, n_tok, dim = ecg.shape
    if rows.size == 0:
        return np.zeros(dim, np.float32), np.ones(dim, np.float32), None
    step = max(1, TOKEN_CHUNK_BYTES // (n_tok * dim * 8))
    chunks = [rows[i:i + step] for i in range(0, rows.size, step)]
    count = rows.size * n_tok
    total = np.zeros(dim)
    for c in chunks:
        total += ecg[c].reshape(-1, dim).sum(axis=0, dtype=np.float64)
    mean = total / count
    basis_wanted = 0 < rank < dim
    squares = np.zeros(dim)
    gram = np.zeros((dim, dim)) if basis_wanted else None
    with threadpool_limits(limits=threads):
        for c in chunks:
            d = ecg[c].reshape(-1, dim) - mean                  # float64 (rows, dim)
            squares += np.einsum("ij,ij->j", d, d)
            if gram is not None:
                gram += d.T @ d
    sd = np.sqrt(squares / count)
    sd = np.where(sd > 1e-8, sd, 1.0)
    basis = None
    if gram is not None:
        with threadpool_limits(limits=threads):
            basis = top_eigenvectors(gram / np.outer(sd, sd), rank)
    return mean.astype(np.float32), sd.astype(np.float32), basis


def top_eigenvectors(gram: np.ndarray, rank: int) -> np.ndarray:
    """Top-``rank`` eigenvectors of the symmetric ``gram`` (dim, dim), largest first,
    signs fixed as :func:`principal_basis` fixes them, float32."""
    _, vecs = np.linalg.eigh(gram)
    return _signed(vecs[:, -rank:][:, ::-1])


def _signed(top: np.ndarray) -> np.ndarray:
    """``top`` (dim, rank) with each column's largest-magnitude entry positive, float32."""
    rank = top.shape[1]
    pivot = np.abs(top).argmax(axis=0)
    signs = np.where(top[pivot, np.arange(rank)] < 0, -1.0, 1.0)
    return np.ascontiguousarray(top * signs, dtype=np.float32)


def principal_basis(z: np.ndarray, rank: int, threads: int | None = None) -> np.ndarray:
    """Top-``rank`` eigenvectors of ``z^T z`` (``z`` (n, dim) float64), largest first, float32.

    numpy in float64 (``matmul`` and ``linalg.eigh``: OpenBLAS with the kernel set
    :mod:`rightsize.blas_kernel` pins, under ``threadpool_limits(threads)``), each vector's
    sign fixed so its largest-magnitude entry is positive, rounded once. numpy rather than
    torch so that a probe without torch (ECG, echo) and the torch probes share one
    implementation. With fewer rows than features (``n < dim``, e.g. one pooled clip per
    subject) the smaller ``n x n`` matrix ``z z^T`` is decomposed instead and its
    eigenvectors ``u`` are mapped to ``z^T u / sqrt(lambda)`` (same vectors, same
    eigenvalues; ~0.1 s instead of ~0.2 s for 800 x 1024 here).
    """
    from threadpoolctl import threadpool_limits

    n, dim = z.shape
    z = np.ascontiguousarray(z, dtype=np.float64)
    with threadpool_limits(limits=threads):
        if rank < n - 1 < dim:
            vals, vecs = np.linalg.eigh(z @ z.T)                    # ascending eigenvalues
            lam = vals[-rank:][::-1]
            if bool((lam > 1e-9 * vals[-1]).all()):
                v = z.T @ np.ascontiguousarray(vecs[:, -rank:][:, ::-1])   # (dim, rank)
                return _signed(v / np.linalg.norm(v, axis=0))
        return top_eigenvectors(z.T @ z, rank)                      # (dim, rank), largest first
