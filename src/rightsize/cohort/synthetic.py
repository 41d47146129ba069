"""Synthetic cohort (``source: synthetic``): deterministic from ``seed``, with planted truth.

Generative model (``n`` subjects, ``C = max_clips``, ``K = n_views`` view/phase keys)
---------------------------------------------------------------------------------------
Per subject ``i`` (all latents independent standard normal unless stated):

* ``u_i`` in R^6: subject-level echo latents; ``u_i[0]`` drives LVEF, the rest is nuisance.
* ``v_i`` in R^6: ECG latents; ``v_i[0]`` drives LVEF, the rest is nuisance.
* ``q_i`` uniform in {0..K-1}: the ECG-derived *query* (which view/phase carries the signal).
* ``n_clips_i`` uniform in {1..C} (0 when echo is missing); ``has_echo``/``has_ecg`` are
  Bernoulli(1 - missing_*_frac).
* Per clip ``j``: ``s_ij`` (clip-specific detail), 3 nuisance latents, and a *key*
  ``k_ij`` in {0..K-1}. One clip ``j*_i`` (uniform among the present clips) has
  ``k_ij* = q_i``; every other clip gets a key different from ``q_i``.

Target::

    lvef_i = clip(mu + 6 * u_i[0] + 5 * v_i[0] + 7 * s_ij*_i + noise_sd * eps_i, 10, 80)
    ef_le_40_i = lvef_i <= threshold          # cohort.target.threshold, 40 by default

``mu`` is set so that ``P(lvef <= threshold) = 0.15`` under the gaussian model
(``mu = threshold + z_0.85 * sqrt(6^2 + 5^2 + 7^2 + noise_sd^2)``, about 52 at the
defaults). A perfect model's MAE is ``E|noise| = noise_sd * sqrt(2/pi)``.

Embeddings: fixed random projections (drawn from ``seed``) of the low-dimensional latents
plus a fixed offset and isotropic N(0, 1) noise per dimension::

    echo_ij = W_echo @ [u_i, s_ij, 2 * onehot(k_ij), nuisance_ij] + b_echo + noise
    ecg_i   = W_ecg  @ [v_i, 2 * onehot(q_i)] + b_ecg + noise

Padded clips (``j >= n_clips``) and missing modalities are all zeros.

What this plants: the mean echo vector carries ``u[0]`` but only ``mean_j s_ij`` (about
``1/n_clips`` of the variance of ``s_ij*``), so pooled/concatenated probes cannot use the
clip term fully; attention over clips whose query comes from the ECG (``q_i`` is linearly
readable from ``ecg_i``, ``k_ij`` from ``echo_ij``) can select ``j*`` and recover it. With
``max_clips = 1`` the only clip is the matched one: the signal reduces to echo + ECG terms.

Token-level ECG (``ecg_tokens = N > 1``; :mod:`rightsize.cohort.planted_tokens`)
------------------------------------------------------------------------------
Everything above is drawn as before (new RNG streams only), and three things are added:

* The record is ``E`` *events* (``cohort.ecg_events``, default 16; ``E = N`` when that is
  0 or not below ``N``). At ``N = 93 k`` (``k`` HuBERT-ECG crops) tokens are laid out as the
  encoder lays them (:mod:`rightsize.cohort.token_layout`: lead after lead, 0.64 s of one
  lead a token) and an event is a time window seen in ``cohort.ecg_event_leads`` leads: the
  token of that window in each of those leads (``E`` at most 6 per crop, so that no two
  share a token); at other ``N`` an event is a run of ``N/E`` consecutive tokens.
* Event ``e`` has a *code* ``c_e``, a unit vector in R^r with ``r = min(E-1, 15)``: a regular
  simplex for ``E <= 16`` (every pair at cosine ``-1/(E-1)``), else the rows of a centred
  random tight frame scaled to unit length.
* Per subject: the *planted event* ``e*_i`` uniform in {0..E-1}, and a content latent
  ``w_ie`` per event.
* The ECG is ``N`` tokens; every token carries the subject's ECG latents, its event's code
  and content at amplitude ``a_t`` (0 for a token in no event) and its own noise::

      ecg_it  = W_ecg @ [v_i, 2 * onehot(q_i)] + b_ecg + a_t (4 P_ecg c_e(t) + w_ie(t) g) + noise
      echo_ij = (as above) + 4 * P_echo c_{e*_i}
      lvef_i  = clip(mu + 6 u_i[0] + 5 v_i[0] + 7 s_ij*_i + 10 w_{i e*_i} + noise_sd eps_i,
                     10, 80)

  ``a_t = gain / sqrt(K)`` for an event of ``K`` tokens (``cohort.ecg_event_energy:
  split``: the event's energy does not grow with the tokens it takes) or ``gain`` (``copy``);
  ``gain`` is ``cohort.ecg_event_gain`` (default 1). ``P_ecg``, ``P_echo`` and ``g`` are fixed
  random projections scaled like ``W_ecg`` and
  ``W_echo`` (entries ``N(0, 1/L)``, ``L`` the modality's latent count), and ``mu`` takes
  the token term into its standard deviation (``sqrt(6^2+5^2+7^2+10^2+noise_sd^2)``).

What this plants: no token's content reveals ``e*`` (every ``w_ie`` is standard normal,
planted or not; ``e*`` is independent of the ECG), so the ECG alone cannot tell which
event matters; the mean over tokens keeps ``w_{e*}`` with weight ``1/E`` (``1/E`` of its
variance); echo->ECG attention, queried by an echo clip (which carries ``e*``'s code) and
keyed by the ECG tokens (each carrying its event's code), can select ``e*``'s tokens and
read ``w_{e*}``. The ECG->echo query of the clip mechanism is read from the mean of the
tokens (the codes nearly cancel there). The codes, ``g`` and the other latents all fit
inside the rank-32 input PCA of each modality that the probes fit on the train split (codes
keep >= 99% of their energy at N = 16 and 186: ``tests/cohort/test_cohort_planted_tokens.py``).
Why events: :mod:`rightsize.cohort.planted_tokens` and docs/cohort.md.

Generation is streaming: subject-level latents (a few floats per clip) are drawn up front;
the 1024-d vectors (and the N x 768 ECG tokens) are built one row group at a time.
Embedding noise is drawn in fixed blocks of 16 subjects keyed by block index, so the output
does not depend on ``row_group_size``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rightsize.cohort.config import CohortConfig
from rightsize.cohort.labels import assign_splits
from rightsize.cohort.latent import lincomb, rng
from rightsize.cohort.manifest import Chunk
from rightsize.cohort.planted_tokens import (
    CODE_SCALE_ECG,
    CODE_SCALE_ECHO,
    WEIGHT_TOKEN,
    PlantedTokens,
    TokenModel,
)

R_ECHO = 6            # subject-level echo latents (index 0 drives LVEF)
R_ECG = 6             # ECG latents (index 0 drives LVEF)
R_CLIP = 3            # per-clip nuisance latents
WEIGHT_ECHO = 6.0     # LVEF points per SD of u[0]
WEIGHT_ECG = 5.0      # LVEF points per SD of v[0]
WEIGHT_CLIP = 7.0     # LVEF points per SD of the matched clip's s
KEY_SCALE = 2.0       # amplitude of the one-hot view/phase key in latent space
EMB_NOISE = 1.0       # SD of the isotropic per-dimension embedding noise
BIAS_SD = 0.5         # SD of the fixed per-dimension embedding offset
PREVALENCE = 0.15     # target P(lvef <= cohort.target.threshold)
LVEF_RANGE = (10.0, 80.0)
GEN_BLOCK = 16        # subjects per embedding-noise block

_STREAM_PROJ, _STREAM_LATENT, _STREAM_AVAIL = 0, 1, 3   # 2: the split (labels.SPLIT_STREAM)
_STREAM_ECHO_NOISE, _STREAM_ECG_NOISE = 10, 11


def intercept(cfg: CohortConfig) -> float:
    """``mu`` giving ``P(lvef <= target.threshold) = PREVALENCE`` under the gaussian model."""
    token = WEIGHT_TOKEN if (cfg.ecg_tokens or 1) > 1 else 0.0
    sd = math.sqrt(WEIGHT_ECHO**2 + WEIGHT_ECG**2 + WEIGHT_CLIP**2 + token**2
                   + cfg.noise_sd**2)
    return cfg.target.threshold + NormalDist().inv_cdf(1.0 - PREVALENCE) * sd


def subject_ids(n: int) -> pa.Array:
    """``S00000``, ``S00001``, ... (zero-padded to at least 5 digits)."""
    width = max(5, len(str(max(n - 1, 0))))
    digits = pc.utf8_lpad(pa.array(np.arange(n, dtype=np.int64)).cast(pa.string()), width, "0")
    return pc.binary_join_element_wise("S", digits, "")


@dataclass(frozen=True)
class Latents:
    """The planted truth, one entry per subject (``(n,)`` or ``(n, C)`` arrays)."""

    echo_score: np.ndarray   # u[:, 0]
    ecg_score: np.ndarray    # v[:, 0]
    clip_score: np.ndarray   # s, (n, C)
    query: np.ndarray        # q, ECG-derived view key
    keys: np.ndarray         # k, (n, C) clip view keys
    matched: np.ndarray      # j*, index of the clip whose key equals q
    signal: np.ndarray       # noise-free lvef before clipping (float64)
    noise: np.ndarray        # noise_sd * eps (float64)
    tokens: PlantedTokens | None = None   # ecg_tokens > 1: codes, planted event, w


class SyntheticCohort:
    """A synthetic cohort: subject-level latents up front, embeddings row group by row group."""

    def __init__(self, cfg: CohortConfig) -> None:
        self.cfg = cfg
        n, c, k = cfg.n_subjects, cfg.max_clips, cfg.n_views
        self.ecg_tokens = int(cfg.ecg_tokens or 1)
        self.mu = intercept(cfg)

        proj = rng(cfg.seed, _STREAM_PROJ)
        self._echo_latent_dim = R_ECHO + 1 + k + R_CLIP
        self._ecg_latent_dim = R_ECG + k
        self._w_echo = (proj.standard_normal((self._echo_latent_dim, cfg.echo_dim))
                        / math.sqrt(self._echo_latent_dim)).astype(np.float32)
        self._w_ecg = (proj.standard_normal((self._ecg_latent_dim, cfg.ecg_dim))
                       / math.sqrt(self._ecg_latent_dim)).astype(np.float32)
        self._b_echo = (BIAS_SD * proj.standard_normal(cfg.echo_dim)).astype(np.float32)
        self._b_ecg = (BIAS_SD * proj.standard_normal(cfg.ecg_dim)).astype(np.float32)

        avail = rng(cfg.seed, _STREAM_AVAIL)
        self.has_echo = avail.random(n) >= cfg.missing_echo_frac
        self.has_ecg = avail.random(n) >= cfg.missing_ecg_frac
        self.n_clips = (avail.integers(1, c + 1, n) * self.has_echo).astype(np.int16)

        lat = rng(cfg.seed, _STREAM_LATENT)
        self._u = lat.standard_normal((n, R_ECHO)).astype(np.float32)
        self._v = lat.standard_normal((n, R_ECG)).astype(np.float32)
        s = lat.standard_normal((n, c)).astype(np.float32)
        self._nuisance = lat.standard_normal((n, c, R_CLIP)).astype(np.float32)
        query = lat.integers(0, k, n)
        keys = (query[:, None] + 1 + lat.integers(0, k - 1, (n, c))) % k
        matched = np.floor(lat.random(n) * np.maximum(self.n_clips, 1)).astype(np.int64)
        keys[np.arange(n), matched] = query
        eps = lat.standard_normal(n)

        signal = (self.mu + WEIGHT_ECHO * self._u[:, 0].astype(np.float64)
                  + WEIGHT_ECG * self._v[:, 0] + WEIGHT_CLIP * s[np.arange(n), matched])
        tokens = None
        if self.ecg_tokens > 1:
            tokens = PlantedTokens.draw(cfg.seed, n, self.ecg_tokens, cfg.echo_dim, cfg.ecg_dim,
                                        self._echo_latent_dim, self._ecg_latent_dim,
                                        TokenModel(cfg.ecg_events, cfg.ecg_event_leads,
                                                   cfg.ecg_event_energy, cfg.ecg_event_gain))
            signal += WEIGHT_TOKEN * tokens.signal.astype(np.float64)
        noise = cfg.noise_sd * eps
        self.lvef = np.clip(signal + noise, *LVEF_RANGE).astype(np.float32)
        self.ef_le_40 = self.lvef <= np.float32(cfg.target.threshold)
        self.latents = Latents(echo_score=self._u[:, 0], ecg_score=self._v[:, 0], clip_score=s,
                               query=query.astype(np.int8), keys=keys.astype(np.int8),
                               matched=matched, signal=signal, noise=noise, tokens=tokens)

        self.split = assign_splits(n, cfg)
        self.subject_id = subject_ids(n)

    def metadata(self) -> dict[str, Any]:
        """Manifest metadata: provenance, geometry, planted-truth constants and baselines."""
        cfg = self.cfg
        test = self.split == 2
        clean = np.clip(self.latents.signal, *LVEF_RANGE)
        meta: dict[str, Any] = {
            "perfect_model_mae": cfg.noise_sd * math.sqrt(2.0 / math.pi),
            "perfect_model_mae_test": float(np.mean(np.abs(self.lvef[test] - clean[test]))),
            "noise_sd": cfg.noise_sd,
            "generator": {
                "model": "lvef = clip(mu + a*u0 + b*v0 + c*s[matched] + noise, 10, 80)",
                "mu": self.mu, "a": WEIGHT_ECHO, "b": WEIGHT_ECG, "c": WEIGHT_CLIP,
                "n_views": cfg.n_views, "key_scale": KEY_SCALE, "emb_noise": EMB_NOISE,
                "target_prevalence": PREVALENCE, "lvef_range": list(LVEF_RANGE),
                "missing_echo_frac": cfg.missing_echo_frac,
                "missing_ecg_frac": cfg.missing_ecg_frac,
            },
        }
        tokens = self.latents.tokens
        if tokens is not None:      # only at ecg_tokens > 1: a pooled manifest is unchanged
            meta["generator"].update({
                "model": "lvef = clip(mu + a*u0 + b*v0 + c*s[matched] + d*w[planted] + noise, "
                         "10, 80)",
                "d": WEIGHT_TOKEN, "ecg_tokens": tokens.n_tokens, "ecg_events": tokens.n_events,
                "code_dim": int(tokens.codes.shape[1]),
                "code_scale_echo": CODE_SCALE_ECHO, "code_scale_ecg": CODE_SCALE_ECG,
                "ecg_event_leads": tokens.leads, "ecg_event_energy": cfg.ecg_event_energy,
                "ecg_event_gain": cfg.ecg_event_gain,
                "ecg_event_tokens": int(tokens.span.max()) if len(tokens.span) else 0})
        return meta

    @property
    def planted_events(self) -> int | None:
        """``E``, the events of the token model (None at ``ecg_tokens = 1``)."""
        return None if self.latents.tokens is None else self.latents.tokens.n_events

    def truth(self) -> tuple[np.ndarray, np.ndarray]:
        """Per subject: the matched clip ``j*`` and the planted event's first ECG token
        ``t*`` (int16).

        -1 where there is none: no echo clip; ``ecg_tokens = 1``; or no ECG.
        """
        matched = np.where(self.n_clips > 0, self.latents.matched, -1).astype(np.int16)
        planted = np.full(self.cfg.n_subjects, -1, dtype=np.int16)
        if self.latents.tokens is not None:
            planted = np.where(self.has_ecg, self.latents.tokens.planted, -1).astype(np.int16)
        return matched, planted

    def clip_background(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean ``(echo_dim,)`` and covariance ``(echo_dim, echo_dim)`` (float64) of one
        present echo clip's embedding apart from its planted token code: the projection of
        the clip's latents (``u``, ``s``, the view key, the nuisance; the key's one-hot as
        uniform over ``n_views``) plus the offset and the isotropic noise. What an oracle
        that knows the generator's projections holds the clip against
        (:mod:`rightsize.probes.evaluation.ceiling`)."""
        k = self.cfg.n_views
        w = self._w_echo.astype(np.float64)
        keys = slice(R_ECHO + 1, R_ECHO + 1 + k)
        mean, cov = np.zeros(w.shape[0]), np.eye(w.shape[0])
        mean[keys] = KEY_SCALE / k
        cov[keys, keys] = KEY_SCALE**2 * (np.eye(k) / k - 1.0 / k**2)
        return (self._b_echo + mean @ w,
                w.T @ cov @ w + EMB_NOISE**2 * np.eye(w.shape[1]))

    def chunks(self) -> Iterator[Chunk]:
        """Yield the cohort in row groups (``CohortConfig.rows_per_group`` subjects)."""
        step = self.cfg.rows_per_group(self.ecg_tokens)
        for start in range(0, self.cfg.n_subjects, step):
            yield self.chunk(start, min(start + step, self.cfg.n_subjects))

    def chunk(self, start: int, stop: int) -> Chunk:
        """Rows ``start .. stop`` with their embeddings (identical however the rows are cut)."""
        rows = slice(start, stop)
        echo, ecg = self._embeddings(start, stop)
        return Chunk(subject_id=self.subject_id.slice(start, stop - start),
                     split=self.split[rows], lvef=self.lvef[rows], ef_le_40=self.ef_le_40[rows],
                     echo=echo, n_clips=self.n_clips[rows], ecg=ecg,
                     has_echo=self.has_echo[rows], has_ecg=self.has_ecg[rows])

    def _embeddings(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        # Projections are explicit elementwise sums in a fixed order (no BLAS), so every
        # subject's vectors are bit-identical however the rows are cut into row groups.
        cfg, lat = self.cfg, self.latents
        c, k = cfg.max_clips, cfg.n_views
        rows = slice(start, stop)
        w = self._w_echo
        subject = lincomb(self._u[rows], w[:R_ECHO])
        echo = np.multiply(lat.clip_score[rows, :, None], w[R_ECHO])
        echo += subject[:, None, :]
        echo += KEY_SCALE * w[R_ECHO + 1:R_ECHO + 1 + k][lat.keys[rows]]
        echo += lincomb(self._nuisance[rows], w[R_ECHO + 1 + k:])
        echo += self._b_echo
        onehot = KEY_SCALE * (lat.query[rows, None] == np.arange(k)[None, :])
        ecg = lincomb(np.concatenate([self._v[rows], onehot.astype(np.float32)], axis=1),
                       self._w_ecg)
        ecg += self._b_ecg
        ecg_shape: tuple[int, ...] = (cfg.ecg_dim,)
        if lat.tokens is not None:          # every token: the subject's ECG + code + content
            echo += lat.tokens.echo_term(rows)[:, None, :]
            ecg = lat.tokens.tokens(rows, ecg)
            ecg_shape = (self.ecg_tokens, cfg.ecg_dim)
        for block in range(start // GEN_BLOCK, (stop - 1) // GEN_BLOCK + 1):
            b0 = block * GEN_BLOCK
            lo, hi = max(start, b0), min(stop, b0 + GEN_BLOCK)
            e_noise = rng(cfg.seed, _STREAM_ECHO_NOISE, block).standard_normal(
                (GEN_BLOCK, c, cfg.echo_dim), dtype=np.float32)
            g_noise = rng(cfg.seed, _STREAM_ECG_NOISE, block).standard_normal(
                (GEN_BLOCK, *ecg_shape), dtype=np.float32)
            echo[lo - start:hi - start] += EMB_NOISE * e_noise[lo - b0:hi - b0]
            ecg[lo - start:hi - start] += EMB_NOISE * g_noise[lo - b0:hi - b0]
        echo[np.arange(c)[None, :] >= self.n_clips[rows, None]] = 0.0
        ecg[~self.has_ecg[rows]] = 0.0
        return echo, ecg
