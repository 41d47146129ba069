"""The ceiling of the planted-event attention: what an oracle reads from the synthetic data.

The fused probe's echo->ECG attention is scored by its mean weight on each subject's planted
event's ECG tokens (:mod:`rightsize.probes.evaluation.planted`). How much of that weight
could any model put there? This module answers for a synthetic cohort
(:mod:`rightsize.cohort.synthetic`) with an oracle that knows the generator: its
projections, the offset, the event codes and their echo counterparts ``m_e``. Each present
echo clip ``x`` is, apart from its planted code, gaussian with the clip background's mean
``mu`` and covariance ``S`` (:meth:`SyntheticCohort.clip_background`; the view key's one-hot
taken as gaussian with its own mean and covariance), so event ``e``'s log-likelihood is, up
to a constant shared by every event,

    score_e(x) = m_e^T S^-1 (x - mu) - m_e^T S^-1 m_e / 2

and the oracle's posterior over the ``E`` events (uniform prior, as the generator draws
``e*``) is their softmax; its weight on the planted event is what a model could put on that
event's tokens together. With one event per token (``cohort.ecg_events: 0``) events are
tokens and "t*" is the planted token. Reported per count, on the test subjects with an ECG
and a clip (the rows the probe is scored on):

* ``clip.top1`` / ``clip.posterior``: per present clip, the rate at which the largest score is
  ``e*`` and the mean posterior weight on ``e*``: the per-clip quantity the probe's
  attention is scored with (its ceiling);
  ``clip.margin_median``: the median log-likelihood lead of ``e*`` over the best other
  event (how far from a coin toss the choice is);
* ``subject.top1`` / ``subject.posterior``: the same from all of a subject's clips (their
  scores summed, the clips taken as independent given ``e*``; they share the subject's
  latents, so this slightly overstates the evidence);
* ``test_mae``: LVEF MAE over those rows of the generator's own noise-free LVEF (``perfect``),
  of the same with the planted event's content ``w[e*]`` replaced by the subject posterior's
  mean ``sum_e p_e w_e`` (``oracle``: a perfect model that reads the tokens' content through
  the oracle's choice) and by the mean over the events (``no_token``: a perfect model that
  cannot tell the planted event, which is what the ECG alone allows).

Two views of the clip: ``embedding`` (the 1024-d clip as written) and ``probe_input`` (the
clip standardized and projected on the top-``pca_rank`` principal directions of the train
clips, as :meth:`~rightsize.probes.data.Moments.fit` does for the probes; the background and
codes projected the same way).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rightsize.cohort.config import CohortConfig
from rightsize.cohort.planted_tokens import WEIGHT_TOKEN, token_layout_name
from rightsize.cohort.synthetic import LVEF_RANGE, SyntheticCohort
from rightsize.probes.engine.data import feature_moments

GROUP = 128          # subjects per block of generated clips


def _echo_clips(cohort: SyntheticCohort) -> np.ndarray:
    """(n, C, echo_dim) float32: every subject's echo clips, as the manifest holds them."""
    n = cohort.cfg.n_subjects
    return np.concatenate([cohort.chunk(s, min(s + GROUP, n)).echo for s in range(0, n, GROUP)])


def _posterior(scores: np.ndarray) -> np.ndarray:
    z = scores - scores.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=-1, keepdims=True)


def _view(x: np.ndarray, mu: np.ndarray, cov: np.ndarray, codes: np.ndarray,
          ) -> np.ndarray:
    """(..., N) log-likelihood scores of clips ``x`` (..., D) for each code of ``codes``
    (N, D) against the gaussian background ``mu``, ``cov``."""
    a = np.linalg.solve(cov, codes.T)                                   # (D, N)
    return (x - mu) @ a - 0.5 * np.einsum("nd,dn->n", codes, a)


def _judge(scores: np.ndarray, clips: np.ndarray, rows: np.ndarray, planted: np.ndarray,
           content: np.ndarray, base: np.ndarray, lvef: np.ndarray) -> dict[str, Any]:
    """Top-1 rate and posterior weight on ``planted`` per clip and per subject, and the
    oracle's LVEF MAE, over ``rows`` (bool, n) and their present ``clips`` (bool, n x C)."""
    post = _posterior(scores)                                           # (n, C, N)
    t = planted.astype(np.int64)
    on = np.take_along_axis(post, np.broadcast_to(t[:, None, None], (*post.shape[:2], 1)),
                            axis=-1)[..., 0]
    hit = post.argmax(axis=-1) == t[:, None]
    mine = np.take_along_axis(scores, np.broadcast_to(t[:, None, None], on.shape + (1,)),
                              axis=-1)[..., 0]
    rival = np.where(np.arange(scores.shape[-1]) == t[:, None, None], -np.inf, scores).max(-1)
    use = clips & rows[:, None]
    subject = _posterior((scores * clips[..., None]).sum(axis=1))       # (n, N)
    pred = np.clip(base + WEIGHT_TOKEN * (subject * content).sum(axis=1), *LVEF_RANGE)
    return {"clip": {"top1": float(hit[use].mean()), "posterior": float(on[use].mean()),
                     "margin_median": float(np.median((mine - rival)[use]))},
            "subject": {"top1": float((subject.argmax(axis=1) == t)[rows].mean()),
                        "posterior": float(subject[np.arange(len(t)), t][rows].mean())},
            "oracle_test_mae": float(np.abs(pred - lvef)[rows].mean())}


def planted_ceiling(cfg: CohortConfig, pca_rank: int) -> dict[str, Any]:
    """The oracle's numbers (module docstring) for the synthetic cohort ``cfg`` (its
    ``ecg_tokens`` > 1), the probe's view at ``pca_rank`` (0: the standardized clip)."""
    cohort = SyntheticCohort(cfg)
    tokens = cohort.latents.tokens
    if tokens is None:
        raise ValueError(f"cohort.ecg_tokens = {cfg.ecg_tokens}: no planted token")
    echo = _echo_clips(cohort)
    clips = np.arange(cfg.max_clips)[None, :] < cohort.n_clips[:, None]
    rows = (cohort.split == 2) & cohort.has_ecg & (cohort.n_clips > 0)
    mu, cov = cohort.clip_background()
    codes = tokens.echo_code.astype(np.float64)                         # (E, D)
    planted = tokens.planted_event                                      # e*
    content = tokens.content.astype(np.float64)                         # (n, E)
    signal = cohort.latents.signal
    base = signal - WEIGHT_TOKEN * content[np.arange(len(planted)), planted]
    lvef = cohort.lvef.astype(np.float64)
    train = cohort.split == 0
    mean, sd, basis = feature_moments(echo[train][clips[train]], pca_rank)
    proj = (basis if basis is not None else np.eye(len(sd))) / sd[:, None]   # (D, r)
    views = {"embedding": _judge(_view(echo, mu, cov, codes), clips, rows, planted, content,
                                 base, lvef),
             "probe_input": _judge(_view((echo - mean) @ proj, (mu - mean) @ proj,
                                         proj.T @ cov @ proj, codes @ proj),
                                   clips, rows, planted, content, base, lvef)}
    unique = tokens.codes.astype(np.float64)
    gram = unique @ unique.T
    np.fill_diagonal(gram, -np.inf)
    clean = np.clip(signal, *LVEF_RANGE)
    no_token = np.clip(base + WEIGHT_TOKEN * content.mean(axis=1), *LVEF_RANGE)
    return {
        "ecg_tokens": tokens.n_tokens, "ecg_events": tokens.n_events,
        "layout": token_layout_name(tokens.n_tokens, tokens.n_events),
        "ecg_event_leads": int(cfg.ecg_event_leads),
        "ecg_event_energy": cfg.ecg_event_energy, "ecg_event_gain": float(cfg.ecg_event_gain),
        "code_dim": int(tokens.codes.shape[1]),
        "nearest_code_cosine": float(gram.max(axis=1).mean()),
        "uniform": float(tokens.span[rows].mean()) / (1 + tokens.n_tokens),
        "pca_rank": int(pca_rank),
        "n_subjects": int(rows.sum()), "n_clips": int(clips[rows].sum()),
        **views,
        "test_mae": {"perfect": float(np.abs(clean - lvef)[rows].mean()),
                     "oracle": views["probe_input"]["oracle_test_mae"],
                     "no_token": float(np.abs(no_token - lvef)[rows].mean())},
    }
