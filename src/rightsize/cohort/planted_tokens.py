"""The synthetic cohort's token-level ECG (``ecg_tokens = N > 1``): codes and a planted event.

The generative model is documented in :mod:`rightsize.cohort.synthetic`; this module holds
its token part. The record is ``E`` *events* (``cohort.ecg_events``; ``E = N`` when that is
0 or not below ``N``): token ``t`` belongs to event ``e(t) = floor(t E / N)``, so each event
is a run of ``N/E`` consecutive tokens (:func:`token_events`) and keeps its share ``1/E``
of the record whatever the tokenisation: at ``E = 16`` a 93-token crop gives each event 5-6
tokens, as a finer tokenisation of the same signal splits an event, not shrinks it.

Event ``e`` has a *code* ``c_e``, a unit vector in ``R^r`` (``r = min(E - 1, R_CODE)``):
the rows of a centred random tight frame (a gaussian ``E x r`` matrix, columns centred and
orthonormalised, rows scaled to unit length). For ``E <= R_CODE + 1`` the codes are a
regular simplex (every pair at cosine ``-1/(E-1)``); for larger ``E`` they are as spread as
``r`` dimensions allow. ``r`` is capped so that the codes fit, beside the other planted
latents, in the probes' rank-32 input PCA of each modality.

Each code is mapped into both embedding spaces by fixed random projections (entries
``N(0, 1/L)``, ``L`` the modality's latent count, as for every other latent): ``P_ecg c_e``
is part of every token of event ``e`` of every ECG, ``P_echo c_e`` its echo-space
counterpart. A subject's planted event ``e*`` is drawn uniformly; every event carries a
content latent ``w_e`` (standard normal, along one fixed ECG direction ``g``, the same in
each of its tokens, whose noise is their own), and only ``w_{e*}`` enters LVEF, so no
token's content tells which event is planted. The subject's echo clips carry
``P_echo c_{e*}``: attention from an echo clip to the ECG tokens can find the planted
event's tokens by matching codes, while the mean over tokens keeps ``w_{e*}`` at weight
``1/E``. ``planted`` holds the first token of each subject's planted event ("t*"),
``span`` its token count.
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


def code_dim(n_events: int) -> int:
    """``r``: dimensions of the codes of ``n_events`` events."""
    return min(n_events - 1, R_CODE)


def event_count(n_tokens: int, ecg_events: int) -> int:
    """``E``: events in a record of ``n_tokens`` tokens for ``cohort.ecg_events`` (0 or not
    below ``n_tokens``: one event per token)."""
    return n_tokens if ecg_events <= 0 or ecg_events >= n_tokens else int(ecg_events)


def token_events(n_tokens: int, n_events: int) -> np.ndarray:
    """``(N,)`` int64: the event of each token, ``floor(t E / N)`` (runs of ``N/E``)."""
    return np.arange(n_tokens, dtype=np.int64) * n_events // n_tokens


def event_starts(n_tokens: int, n_events: int) -> np.ndarray:
    """``(E,)`` int64: the first token of each event."""
    return np.searchsorted(token_events(n_tokens, n_events), np.arange(n_events))


def planted_mask(first: np.ndarray, n_tokens: int, n_events: int) -> np.ndarray:
    """``(n, N)`` bool: the tokens of the event that starts at token ``first`` (n,), none
    where ``first`` is -1."""
    event = token_events(n_tokens, n_events)
    first = np.asarray(first, dtype=np.int64)
    planted = event[np.clip(first, 0, n_tokens - 1)]
    return (event[None, :] == planted[:, None]) & (first >= 0)[:, None]


def token_codes(n_events: int, gen: np.random.Generator) -> np.ndarray:
    """``(E, r)`` float32 unit codes: a regular simplex if ``E <= r + 1``, else the rows of a
    centred tight frame scaled to unit length.

    The orthonormalisation is one small float64 QR, rounded once to float32.
    """
    r = code_dim(n_events)
    draw = gen.standard_normal((n_events, r))
    draw -= draw.mean(axis=0)
    q, _ = np.linalg.qr(draw)
    q /= np.sqrt((q * q).sum(axis=1, keepdims=True))
    return q.astype(np.float32)


@dataclass(frozen=True)
class PlantedTokens:
    """Per token: its event's code and projections; per subject: the planted event (its
    first token and length) and each token's content."""

    codes: np.ndarray       # (N, r) float32 unit codes, c_e(t)
    echo_code: np.ndarray   # (N, echo_dim) float32: CODE_SCALE_ECHO * P_echo c_e(t)
    ecg_code: np.ndarray    # (N, ecg_dim) float32: CODE_SCALE_ECG * P_ecg c_e(t)
    direction: np.ndarray   # (ecg_dim,) float32: g, the direction of the content latent
    planted: np.ndarray     # (n,) int64: t*, the first token of the planted event e*
    content: np.ndarray     # (n, N) float32: w_e(t), standard normal per event
    n_events: int           # E

    @classmethod
    def draw(cls, seed: int, n: int, n_tokens: int, echo_dim: int, ecg_dim: int,
             echo_latents: int, ecg_latents: int, ecg_events: int = 0) -> PlantedTokens:
        """Draw the token model of ``n`` subjects; ``*_latents`` scale the projections.

        ``ecg_events`` as in :func:`event_count`; at ``E = N`` every draw is the one-token-
        per-event model's, number for number.
        """
        n_events = event_count(n_tokens, ecg_events)
        event = token_events(n_tokens, n_events)
        proj = rng(seed, _STREAM_TOKEN_PROJ)
        codes = token_codes(n_events, proj)
        r = codes.shape[1]
        p_echo = (proj.standard_normal((r, echo_dim)) / math.sqrt(echo_latents)).astype(np.float32)
        p_ecg = (proj.standard_normal((r, ecg_dim)) / math.sqrt(ecg_latents)).astype(np.float32)
        direction = (CONTENT_SCALE * proj.standard_normal(ecg_dim)
                     / math.sqrt(ecg_latents)).astype(np.float32)
        lat = rng(seed, _STREAM_TOKEN_LATENT)
        planted = lat.integers(0, n_events, n)
        content = lat.standard_normal((n, n_events), dtype=np.float32)
        first = event_starts(n_tokens, n_events)
        return cls(codes=codes[event],
                   echo_code=lincomb(np.float32(CODE_SCALE_ECHO) * codes, p_echo)[event],
                   ecg_code=lincomb(np.float32(CODE_SCALE_ECG) * codes, p_ecg)[event],
                   direction=direction, planted=first[planted],
                   content=content[:, event], n_events=n_events)

    @property
    def n_tokens(self) -> int:
        """``N``."""
        return int(self.codes.shape[0])

    def events(self) -> np.ndarray:
        """(N,) int64: each token's event."""
        return token_events(self.n_tokens, self.n_events)

    def first_tokens(self) -> np.ndarray:
        """(E,) int64: each event's first token."""
        return event_starts(self.n_tokens, self.n_events)

    @property
    def span(self) -> np.ndarray:
        """(n,) int64: tokens in each subject's planted event."""
        events = self.events()
        return np.bincount(events, minlength=self.n_events)[events[self.planted]]

    def mask(self) -> np.ndarray:
        """(n, N) bool: each subject's planted event's tokens."""
        return planted_mask(self.planted, self.n_tokens, self.n_events)

    @property
    def signal(self) -> np.ndarray:
        """(n,) float32: ``w[i, t*_i]``, the planted event's content (what enters LVEF)."""
        return self.content[np.arange(len(self.planted)), self.planted]

    def echo_term(self, rows: slice) -> np.ndarray:
        """(r, echo_dim): the planted event code's echo counterpart of subjects ``rows``."""
        return self.echo_code[self.planted[rows]]

    def tokens(self, rows: slice, subject: np.ndarray) -> np.ndarray:
        """(r, N, ecg_dim) noise-free tokens: ``subject`` (r, ecg_dim) + code + content."""
        out = np.multiply(self.content[rows, :, None], self.direction)
        out += self.ecg_code
        out += subject[:, None, :]
        return out
