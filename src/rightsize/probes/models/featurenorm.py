"""Input normalization shared by the torch probes, and their masked mean over clips.

A probe sees an embedding ``x`` through :class:`FeatureNorm`: standardized with train-split
moments, optionally projected on the train split's top principal directions, and zeroed
where the modality is absent. Everything here is a fixed buffer, so the probes split their
forward pass in two: :meth:`FeatureNorm.coords` (no parameters; computed once per split by
the training loop) and the trained layers, which read the low-rank coordinates directly
(:meth:`FeatureNorm.lift` turns a first-layer weight into its coordinate form).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from rightsize.probes.accel.gemm import mm


class FeatureNorm(nn.Module):
    """``(x - mean) / sd``, optionally denoised, times the presence mask.

    With ``rank > 0`` the standardized vector ``z`` is projected onto the top-``rank``
    principal directions of the train split (``z -> B B^T z``, ``B`` a fixed ``(dim, rank)``
    buffer): the remaining directions of a 1024-d embedding carry mostly noise that a probe
    trained on a few hundred subjects would otherwise memorize. Buffers only: nothing here
    is trained.
    """

    def __init__(self, dim: int, rank: int = 0) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("inv_sd", torch.ones(dim))
        self.rank = rank if 0 < rank < dim else 0
        if self.rank:
            self.register_buffer("basis", torch.eye(dim, self.rank))

    def set_moments(self, mean: np.ndarray, sd: np.ndarray,
                    basis: np.ndarray | None = None) -> None:
        """Load train-split moments (float32 arrays of length ``dim``; basis ``(dim, rank)``)."""
        with torch.no_grad():
            self.mean.copy_(torch.from_numpy(np.asarray(mean, np.float32)))
            self.inv_sd.copy_(torch.from_numpy(1.0 / np.asarray(sd, np.float32)))
            if self.rank and basis is not None:      # None: no train rows to fit it on
                self.basis.copy_(torch.from_numpy(np.asarray(basis, np.float32)))

    def forward(self, x: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """The normalized vector in input space (..., dim), zero where ``present`` is False."""
        return self.expand(self.coords(x, present))

    def expand(self, coords: torch.Tensor) -> torch.Tensor:
        """Coordinates back in input space: ``B c`` (..., dim) (the identity without a basis)."""
        return coords @ self.basis.T if self.rank else coords

    def coords(self, x: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
        """Masked coordinates: ``B^T z`` (..., rank) with a basis, else ``z`` itself (..., dim).

        ``present`` masks the leading dimensions of ``x`` ((B,) for an ECG, pooled or
        tokens; (B, c) for clips).
        """
        z = (x - self.mean) * self.inv_sd
        if self.rank:
            z = z @ self.basis
        return z * present.view(*present.shape, *[1] * (z.dim() - present.dim())).to(z.dtype)

    def lift(self, weight: torch.Tensor) -> torch.Tensor:
        """``W B`` (out, rank): a linear layer on ``forward(x)`` as a layer on ``coords(x)``.

        ``W (B B^T z) = (W B)(B^T z)``: the same function and the same gradient for ``W``,
        but each token costs ``rank x out`` multiply-adds instead of ``dim x out``.
        Through :func:`rightsize.probes.accel.gemm.mm` (oneDNN where it applies), with a strided
        ``weight`` (one input block of a wider layer) copied contiguous first: 0.10 instead of
        0.16 ms for a 256 x 1024 block on the benchmark machine, the copy included.
        """
        if not self.rank:
            return weight
        return mm(weight if weight.is_contiguous() else weight.contiguous(), self.basis)

    def unlift(self, grad: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """The gradient for ``W`` from the gradient for ``lift(W)``: ``grad B^T`` (out, dim).

        With no basis ``lift`` is the identity and so is this; ``out`` receives the result
        (a strided ``out``, one input block of a wider layer's gradient, is fine).
        """
        if not self.rank:
            return grad if out is None else out.copy_(grad)
        return mm(grad, self.basis.t(), out=out)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over the clips where ``mask`` is True; 0 with none.

    The clip axis is ``mask``'s last: ``x`` (B, c, ...) with ``mask`` (B, c), or with a
    leading replica axis ``x`` (K, B, c, ...) with ``mask`` (K, B, c).
    """
    clips = mask.dim() - 1
    m = mask.to(x.dtype).view(*mask.shape, *([1] * (x.dim() - mask.dim())))
    return (x * m).sum(dim=clips) / m.sum(dim=clips).clamp(min=1)
