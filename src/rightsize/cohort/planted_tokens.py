"""The synthetic cohort's token-level ECG (``ecg_tokens = N > 1``): codes and a planted event.

The generative model is documented in :mod:`rightsize.cohort.synthetic`; this module holds
its token part. The record holds ``E`` *events* (``cohort.ecg_events``), laid out on the
tokens one of two ways (:func:`token_event_map`; ``-1``: a token in no event):

* **HuBERT-ECG layout** (``N = 93 k``, ``k`` 5-s crops; :mod:`rightsize.cohort.token_layout`):
  an event is one of ``E`` equal time windows of the record, seen in leads
  ``0 .. L-1`` (``cohort.ecg_event_leads``): it occupies, in each of those leads, the token
  that holds the window's centre, as the encoder lays the leads out (lead after lead, 0.64 s
  a token, tokens that straddle two leads included). ``E`` is ``ecg_events`` or fewer: the
  most windows whose tokens are all distinct (:func:`rightsize.cohort.token_layout.max_windows`:
  6 at 93 tokens, 12 at 186), so an event of 12 leads is 12 tokens ~7.8 apart;
* **abstract layout** (any other ``N``, e.g. 16): event ``e`` is the run of consecutive tokens
  ``t`` with ``floor(t E / N) = e`` (the model before the HuBERT layout).

``ecg_events: 0`` (or not below ``N``) is the one-token model: every token its own event.

Event ``e`` has a *code* ``c_e``, a unit vector in ``R^r`` (``r = min(E - 1, R_CODE)``):
the rows of a centred random tight frame (a regular simplex for ``E <= R_CODE + 1``), and a
content latent ``w_e`` per subject (standard normal, along one fixed ECG direction ``g``).
``P_ecg c_e`` and ``w_e g`` are in each of the event's tokens, times ``gain / sqrt(K)``
(``cohort.ecg_event_energy: split``, ``K`` the event's tokens: the event's energy is the same
however many tokens it takes) or times ``gain`` (``copy``: every token carries all of it, so
the event's energy grows with ``K``; the model before ``split``). ``gain`` is
``cohort.ecg_event_gain``. Each token keeps its own noise. A subject's planted event ``e*``
is uniform; only ``w_{e*}`` enters LVEF; the subject's echo clips carry ``P_echo c_{e*}``.
``planted`` holds the first token of each subject's planted event ("t*").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rightsize.cohort.latent import lincomb, rng
from rightsize.cohort.token_layout import LEADS, crops, max_windows, window_tokens

R_CODE = 15               # code dimensions at most (per modality, inside the rank-32 PCA)
CODE_SCALE_ECHO = 4.0     # amplitude of the planted code in the echo clips (latent units)
CODE_SCALE_ECG = 4.0      # amplitude of an event's code in the ECG (latent units, gain 1)
WEIGHT_TOKEN = 10.0       # LVEF points per SD of the planted event's content w[e*]
CONTENT_SCALE = 1.0       # amplitude of an event's content w_e in the ECG (latent units)

# Streams of rightsize.cohort.latent.rng beside synthetic.py's (0-3, 10, 11): drawn only at
# N > 1, so a pooled cohort's draws are untouched.
_STREAM_TOKEN_PROJ, _STREAM_TOKEN_LATENT = 4, 5


def code_dim(n_events: int) -> int:
    """``r``: dimensions of the codes of ``n_events`` events."""
    return min(n_events - 1, R_CODE)


def event_count(n_tokens: int, ecg_events: int) -> int:
    """``E``: events in a record of ``n_tokens`` tokens for ``cohort.ecg_events`` (0 or not
    below ``n_tokens``: one event per token; at the HuBERT layout, at most the windows whose
    tokens are all distinct)."""
    if ecg_events <= 0 or ecg_events >= n_tokens:
        return n_tokens
    k = crops(n_tokens)
    return max_windows(k, int(ecg_events)) if k else int(ecg_events)


def token_layout_name(n_tokens: int, n_events: int) -> str:
    """``one_token`` (every token its own event), ``hubert`` (HuBERT-ECG's layout) or
    ``runs`` (the abstract layout): how :func:`token_event_map` lays the events out."""
    if n_events >= n_tokens:
        return "one_token"
    return "hubert" if crops(n_tokens) else "runs"


def token_event_map(n_tokens: int, n_events: int, leads: int = LEADS) -> np.ndarray:
    """``(N,)`` int64: the event of each token, -1 where a token is in none (module
    docstring: one event per token, the HuBERT layout, or runs)."""
    if n_events >= n_tokens:
        return np.arange(n_tokens, dtype=np.int64)
    k = crops(n_tokens)
    if not k:
        return np.arange(n_tokens, dtype=np.int64) * n_events // n_tokens
    event = np.full(n_tokens, -1, dtype=np.int64)
    tok = window_tokens(n_events, k, leads)                       # (E, L)
    event[tok] = np.arange(n_events)[:, None]
    return event


def event_starts(event: np.ndarray, n_events: int) -> np.ndarray:
    """``(E,)`` int64: the first token of each event of the map ``event``."""
    first = np.full(n_events, len(event), dtype=np.int64)
    mine = event >= 0
    np.minimum.at(first, event[mine], np.flatnonzero(mine))
    return first


def planted_mask(first: np.ndarray, n_tokens: int, n_events: int,
                 leads: int = LEADS) -> np.ndarray:
    """``(n, N)`` bool: the tokens of the event whose first token is ``first`` (n,), none
    where ``first`` is -1."""
    event = token_event_map(n_tokens, n_events, leads)
    first = np.asarray(first, dtype=np.int64)
    planted = event[np.clip(first, 0, n_tokens - 1)]
    return (event[None, :] == planted[:, None]) & (first >= 0)[:, None] & (planted >= 0)[:, None]


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
class TokenModel:
    """How the planted events sit on the tokens: ``cohort.ecg_events``,
    ``ecg_event_leads``, ``ecg_event_energy`` and ``ecg_event_gain``."""

    events: int = 16
    leads: int = LEADS
    energy: str = "split"
    gain: float = 1.0


@dataclass(frozen=True)
class PlantedTokens:
    """Per event: its code, projections and tokens; per subject: the planted event and each
    event's content."""

    codes: np.ndarray         # (E, r) float32 unit codes c_e
    echo_code: np.ndarray     # (E, echo_dim) float32: CODE_SCALE_ECHO * P_echo c_e
    ecg_event: np.ndarray     # (E, ecg_dim) float32: CODE_SCALE_ECG * P_ecg c_e (gain 1)
    ecg_code: np.ndarray      # (N, ecg_dim) float32: each token's code term (0: no event)
    scale: np.ndarray         # (N,) float32: each token's amplitude factor (0: no event)
    event: np.ndarray         # (N,) int64: each token's event, -1 none
    direction: np.ndarray     # (ecg_dim,) float32: g, the direction of the content latent
    planted_event: np.ndarray  # (n,) int64: e*
    planted: np.ndarray       # (n,) int64: t*, the first token of the planted event
    content: np.ndarray       # (n, E) float32: w_e, standard normal
    leads: int                # L: the leads an event is seen in (HuBERT layout)

    @classmethod
    def draw(cls, seed: int, n: int, n_tokens: int, echo_dim: int, ecg_dim: int,
             echo_latents: int, ecg_latents: int, model: TokenModel | None = None,
             ) -> PlantedTokens:
        """Draw the token model of ``n`` subjects; ``*_latents`` scale the projections."""
        model = model or TokenModel()
        n_events = event_count(n_tokens, model.events)
        event = token_event_map(n_tokens, n_events, model.leads)
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
        size = np.bincount(event[event >= 0], minlength=n_events)        # K per event
        factor = (1.0 / np.sqrt(size) if model.energy == "split" else np.ones(n_events))
        scale = np.where(event >= 0, model.gain * factor[np.maximum(event, 0)], 0.0)
        scale = scale.astype(np.float32)
        ecg_event = lincomb(np.float32(CODE_SCALE_ECG) * codes, p_ecg)
        ecg_code = ecg_event[np.maximum(event, 0)]
        if not (scale == 1.0).all():     # gain 1, one token per event: kept bit for bit
            ecg_code = ecg_code * scale[:, None]
        return cls(codes=codes, echo_code=lincomb(np.float32(CODE_SCALE_ECHO) * codes, p_echo),
                   ecg_event=ecg_event, ecg_code=ecg_code, scale=scale, event=event,
                   direction=direction, planted_event=planted,
                   planted=event_starts(event, n_events)[planted], content=content,
                   leads=model.leads)

    @property
    def n_tokens(self) -> int:
        """``N``."""
        return int(self.event.shape[0])

    @property
    def n_events(self) -> int:
        """``E``."""
        return int(self.codes.shape[0])

    def events(self) -> np.ndarray:
        """(N,) int64: each token's event (-1: none)."""
        return self.event

    def first_tokens(self) -> np.ndarray:
        """(E,) int64: each event's first token."""
        return event_starts(self.event, self.n_events)

    @property
    def span(self) -> np.ndarray:
        """(n,) int64: tokens in each subject's planted event."""
        size = np.bincount(self.event[self.event >= 0], minlength=self.n_events)
        return size[self.planted_event]

    def mask(self) -> np.ndarray:
        """(n, N) bool: each subject's planted event's tokens."""
        return self.event[None, :] == self.planted_event[:, None]

    @property
    def signal(self) -> np.ndarray:
        """(n,) float32: ``w[i, e*_i]``, the planted event's content (what enters LVEF)."""
        return self.content[np.arange(len(self.planted_event)), self.planted_event]

    def token_content(self, rows: slice) -> np.ndarray:
        """(r, N) float32: each token's content amplitude ``scale_t w_e(t)`` (0: no event)."""
        out = self.content[rows][:, np.maximum(self.event, 0)]
        if not (self.scale == 1.0).all():
            out = out * self.scale
        return out

    def echo_term(self, rows: slice) -> np.ndarray:
        """(r, echo_dim): the planted event code's echo counterpart of subjects ``rows``."""
        return self.echo_code[self.planted_event[rows]]

    def tokens(self, rows: slice, subject: np.ndarray) -> np.ndarray:
        """(r, N, ecg_dim) noise-free tokens: ``subject`` (r, ecg_dim) + code + content."""
        out = np.multiply(self.token_content(rows)[:, :, None], self.direction)
        out += self.ecg_code
        out += subject[:, None, :]
        return out
