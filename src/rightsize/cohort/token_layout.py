"""HuBERT-ECG's token layout: which lead and which time of the record each ECG token sees.

HuBERT-ECG (Edoar-do/HuBERT-ECG, ``code/dataset.py`` and ``code/pretrain.py`` with
``downsampling_factor`` 5) takes one 5-s crop of the 12 leads, flattens it *lead after lead*
and decimates it to 100 Hz: 6,000 samples, lead ``l`` at samples ``[500 l, 500 (l + 1))``.
Its conv feature extractor (kernels 10, 3, 3, 2, 2; strides 4, 2, 2, 2, 2; no padding) makes
93 tokens of it: token ``j`` steps :data:`HOP` = 64 samples (0.64 s of one lead) and sees
samples ``[64 j, 64 j + 82)`` (receptive field :data:`FIELD` = 82 samples, 0.82 s). A lead
holds ~7.8 tokens, and 14 of the 93 see the end of one lead and the start of the next. A
record of ``k`` crops is ``93 k`` tokens, crop after crop.

:func:`token_of` places a moment of the heart (crop, lead, sample within the lead) in the
token whose 64-sample step holds it (the last token for the tail that only its receptive
field reaches). The synthetic cohort uses it to lay out its planted events
(:mod:`rightsize.cohort.planted_tokens`); :func:`same_moment` gives, for each token, the
tokens that see the same moment in the other leads (the fused probe's ``lead_mix``).
"""

from __future__ import annotations

import numpy as np

CONV_KERNELS = (10, 3, 3, 2, 2)
CONV_STRIDES = (4, 2, 2, 2, 2)
LEADS = 12
SAMPLE_HZ = 100                      # after the x5 decimation
CROP_S = 5.0
LEAD_SAMPLES = int(CROP_S * SAMPLE_HZ)          # 500 samples of one lead per crop
CROP_SAMPLES = LEADS * LEAD_SAMPLES             # 6,000: the flattened model input


def conv_geometry(kernels: tuple[int, ...] = CONV_KERNELS,
                  strides: tuple[int, ...] = CONV_STRIDES) -> tuple[int, int]:
    """``(hop, field)``: the samples one output step moves and the samples it sees."""
    hop, field = 1, 1
    for k, s in zip(kernels, strides, strict=True):
        field += (k - 1) * hop
        hop *= s
    return hop, field


HOP, FIELD = conv_geometry()         # 64, 82


def tokens_per_crop(samples: int = CROP_SAMPLES) -> int:
    """Output length of the conv stack on ``samples`` input samples (93 for 6,000)."""
    n = samples
    for k, s in zip(CONV_KERNELS, CONV_STRIDES, strict=True):
        n = (n - k) // s + 1
    return n


TOKENS_PER_CROP = tokens_per_crop()  # 93


def crops(n_tokens: int) -> int:
    """Crops of a record of ``n_tokens`` HuBERT-ECG tokens, 0 when it is not a whole number
    of crops (a token count the abstract layout serves)."""
    return n_tokens // TOKENS_PER_CROP if n_tokens % TOKENS_PER_CROP == 0 else 0


def token_span(token: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """First and last flattened sample (within its crop) that ``token`` sees."""
    j = np.asarray(token) % TOKENS_PER_CROP
    return j * HOP, j * HOP + FIELD - 1


def token_leads(token: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """First and last lead (0-11) ``token`` sees: different for the tokens that straddle two
    leads."""
    first, last = token_span(token)
    return first // LEAD_SAMPLES, last // LEAD_SAMPLES


def token_of(crop: np.ndarray | int, lead: np.ndarray | int,
             sample: np.ndarray | int) -> np.ndarray:
    """The token of the record that holds ``sample`` (0-499, 100 Hz) of ``lead`` in ``crop``:
    the one whose 64-sample step contains it, the crop's last token past its last step."""
    flat = np.asarray(lead) * LEAD_SAMPLES + np.asarray(sample)
    return (np.asarray(crop) * TOKENS_PER_CROP
            + np.minimum(flat // HOP, TOKENS_PER_CROP - 1)).astype(np.int64)


def window_tokens(n_windows: int, n_crops: int, leads: int = LEADS) -> np.ndarray:
    """``(n_windows, leads)`` int64: the token of each of ``n_windows`` equal time windows of
    a record of ``n_crops`` 5-s crops, in each of leads ``0 .. leads-1``: the token that holds
    the window's centre in that lead."""
    centre = (np.arange(n_windows) + 0.5) * (n_crops * CROP_S / n_windows)     # seconds
    crop = np.minimum((centre // CROP_S).astype(np.int64), n_crops - 1)
    sample = np.floor((centre - crop * CROP_S) * SAMPLE_HZ).astype(np.int64)
    return token_of(crop[:, None], np.arange(leads)[None, :], sample[:, None])


def max_windows(n_crops: int, at_most: int) -> int:
    """The most windows, up to ``at_most``, whose tokens in all 12 leads are all distinct
    (every window in every lead its own token): 7 per crop at 0.64 s a token."""
    for n in range(at_most, 1, -1):
        tok = window_tokens(n, n_crops)
        if np.unique(tok).size == tok.size:
            return n
    return 1


def same_moment(n_tokens: int) -> np.ndarray | None:
    """``(n_tokens, 12)`` int64: for each token of a record of ``n_tokens`` tokens, the token
    of each lead that holds the same moment of its crop (the sample at the centre of the
    token's receptive field, placed by :func:`token_of`); a token's own lead gives itself.
    None when ``n_tokens`` is not a whole number of crops (no lead layout to follow)."""
    if not crops(n_tokens):
        return None
    crop, j = np.divmod(np.arange(n_tokens), TOKENS_PER_CROP)
    first, last = token_span(j)
    sample = ((first + last) // 2) % LEAD_SAMPLES
    return token_of(crop[:, None], np.arange(LEADS)[None, :], sample[:, None])
