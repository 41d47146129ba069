"""The synthetic cohort's token-level ECG (``ecg_tokens = N > 1``): codes and a planted token.

The generative model is documented in :mod:`rightsize.cohort.synthetic`; this module holds
its token part. Token index ``t`` has a *code* ``c_t``, a unit vector in ``R^r``
(``r = min(N - 1, R_CODE)``): the rows of a centred random tight frame (a gaussian
``N x r`` matrix, columns centred and orthonormalised, rows scaled to unit length). For
``N <= R_CODE + 1`` the codes are a regular simplex (every pair at cosine ``-1/(N-1)``);
for larger ``N`` they are as spread as ``r`` dimensions allow. ``r`` is capped so that
the codes fit, beside the other planted latents, in the probes' rank-32 input PCA of
each modality.

Each code is mapped into both embedding spaces by fixed random projections (entries
``N(0, 1/L)``, ``L`` the modality's latent count, as for every other latent): ``P_ecg c_t``
is part of token ``t`` of every ECG, ``P_echo c_t`` its echo-space counterpart. A subject's
planted token ``t*`` is drawn uniformly; every token carries a content latent ``w_t``
(standard normal, along one fixed ECG direction ``g``), and only ``w_{t*}`` enters LVEF, so
no token's content tells which one is planted. The subject's echo clips carry
``P_echo c_{t*}``: attention from an echo clip to the ECG tokens can find ``t*`` by
matching codes, while the mean over tokens keeps ``w_{t*}`` at weight ``1/N``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rightsize.cohort.latent import lincomb, rng

R_CODE = 15               # code dimensions at most (per modality, inside the rank-32 PCA)
CODE_SCALE_ECHO = 4.0     # amplitude of the planted code in the echo clips (latent units)
CODE_SCALE_ECG = 4.0      # amplitude of each token's code in the ECG (latent units)
WEIGHT_TOKEN = 10.0       # LVEF points per SD of the planted token's content w[t*]
CONTENT_SCALE = 1.0       # amplitude of each token's content w_t in the ECG (latent units)

# Streams of rightsize.cohort.latent.rng beside synthetic.py's (0-3, 10, 11): drawn only at
# N > 1, so a pooled cohort's draws are untouched.
_STREAM_TOKEN_PROJ, _STREAM_TOKEN_LATENT = 4, 5


def code_dim(n_tokens: int) -> int:
    """``r``: dimensions of the token codes for ``n_tokens`` tokens."""
    return min(n_tokens - 1, R_CODE)


def token_codes(n_tokens: int, gen: np.random.Generator) -> np.ndarray:
    """``(N, r)`` float32 unit codes: a regular simplex if ``N <= r + 1``, else the rows of a
    centred tight frame scaled to unit length.

    The orthonormalisation is one small float64 QR, rounded once to float32.
    """
    r = code_dim(n_tokens)
    draw = gen.standard_normal((n_tokens, r))
    draw -= draw.mean(axis=0)
    q, _ = np.linalg.qr(draw)
    q /= np.sqrt((q * q).sum(axis=1, keepdims=True))
    return q.astype(np.float32)


@dataclass(frozen=True)
class PlantedTokens:
    """Token codes, their projections, and each subject's planted token and token contents."""

    codes: np.ndarray       # (N, r) float32 unit codes
    echo_code: np.ndarray   # (N, echo_dim) float32: CODE_SCALE_ECHO * P_echo c_t
    ecg_code: np.ndarray    # (N, ecg_dim) float32: CODE_SCALE_ECG * P_ecg c_t
    direction: np.ndarray   # (ecg_dim,) float32: g, the direction of the content latent
    planted: np.ndarray     # (n,) int64: t*, uniform in {0..N-1}
    content: np.ndarray     # (n, N) float32: w, standard normal

    @classmethod
    def draw(cls, seed: int, n: int, n_tokens: int, echo_dim: int, ecg_dim: int,
             echo_latents: int, ecg_latents: int) -> PlantedTokens:
        """Draw the token model of ``n`` subjects; ``*_latents`` scale the projections."""
        proj = rng(seed, _STREAM_TOKEN_PROJ)
        codes = token_codes(n_tokens, proj)
        r = codes.shape[1]
        p_echo = (proj.standard_normal((r, echo_dim)) / math.sqrt(echo_latents)).astype(np.float32)
        p_ecg = (proj.standard_normal((r, ecg_dim)) / math.sqrt(ecg_latents)).astype(np.float32)
        direction = (CONTENT_SCALE * proj.standard_normal(ecg_dim)
                     / math.sqrt(ecg_latents)).astype(np.float32)
        lat = rng(seed, _STREAM_TOKEN_LATENT)
        planted = lat.integers(0, n_tokens, n)
        content = lat.standard_normal((n, n_tokens), dtype=np.float32)
        return cls(codes=codes,
                   echo_code=lincomb(np.float32(CODE_SCALE_ECHO) * codes, p_echo),
                   ecg_code=lincomb(np.float32(CODE_SCALE_ECG) * codes, p_ecg),
                   direction=direction, planted=planted, content=content)

    @property
    def n_tokens(self) -> int:
        """``N``."""
        return int(self.codes.shape[0])

    @property
    def signal(self) -> np.ndarray:
        """(n,) float32: ``w[i, t*_i]``, the planted token's content (what enters LVEF)."""
        return self.content[np.arange(len(self.planted)), self.planted]

    def echo_term(self, rows: slice) -> np.ndarray:
        """(r, echo_dim): the planted code's echo counterpart of subjects ``rows``."""
        return self.echo_code[self.planted[rows]]

    def tokens(self, rows: slice, subject: np.ndarray) -> np.ndarray:
        """(r, N, ecg_dim) noise-free tokens: ``subject`` (r, ecg_dim) + code + content."""
        out = np.multiply(self.content[rows, :, None], self.direction)
        out += self.ecg_code
        out += subject[:, None, :]
        return out
