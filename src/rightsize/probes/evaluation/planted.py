"""Does the fused probe's echo->ECG attention find the planted ECG event?

The synthetic cohort at ``cohort.ecg_tokens = N > 1`` puts part of the LVEF signal into one
event per subject, a run of ECG tokens ``T*`` (one token when events are tokens), and that
event's code into the subject's echo clips; the truth file records it
(:mod:`rightsize.cohort.truth`). A probe whose model attends from the echo clips to the ECG
tokens (``model.attention(data)``: weights ``(m, H, c, 1+N)`` over ``[null, ECG tokens]``,
the fused probe) is scored per head ``h`` by

    weight on t* = mean over test subjects with an ECG and a planted event, and over each
                   such subject's present clips, of ``sum_{t in T*_i} w[i, h, clip, 1 + t]``

(every present clip of those subjects counts once). Uniform attention over the ``1 + N``
keys would put ``|T*| / (1 + N)`` there (``uniform``: its mean over the rows scored).

:func:`planted_attention` gives the ``attention.echo_to_ecg`` node of the fused probe's
evaluation metrics, from its seed replicas (every value a flat scalar, as DVC wants):

* ``h<j>``: head ``j`` of replica 0 (seed ``train.seed``), as every top-level metric is;
* ``best_head``, ``best_head_index``: replica 0's largest head value and its head;
* ``best_head_mean``, ``_sd``, ``_min``, ``_max``: across replicas, **the best head chosen
  per replica** (heads are interchangeable: head ``j`` of one seed has nothing to do with
  head ``j`` of another, so a per-index mean would mix unrelated heads);
* ``r<k>.h<j>``, ``r<k>.best_head``: every replica's heads;
* ``uniform`` (mean ``|T*| / (1 + N)``), ``null`` (replica 0's mean weight on the null key over the
  same clips), ``ecg_tokens``, ``n_subjects`` and ``n_clips`` (the rows and queries scored).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rightsize.probes.engine.data import SplitData
from rightsize.probes.engine.predict import Probe
from rightsize.probes.evaluation.spread import add_spread


@dataclass(frozen=True)
class PlantedScore:
    """One replica's echo->ECG attention on the planted event."""

    heads: np.ndarray     # (H,) mean weight on T* per head
    null: float           # mean weight on the null key, over the same clips and heads
    tokens: int           # N, ECG tokens per subject
    n_subjects: int       # rows scored: an ECG, a planted event and at least one clip
    n_clips: int          # present clips of those rows (the queries averaged over)
    uniform: float        # what uniform attention would put on T*, mean over those rows


def planted_weights(probe: Probe, data: SplitData, planted: np.ndarray) -> PlantedScore | None:
    """``probe``'s echo->ECG weight on each row's planted event, or None when the probe
    does not attend from the echo to ECG tokens, or no row has an ECG, a planted event and
    a clip.

    ``planted`` (m, N) bool: each row's planted event's tokens, none where no truth.
    """
    rows = np.flatnonzero(data.has_ecg & planted.any(axis=1) & data.clip_mask.any(axis=1))
    attention = getattr(probe.model, "attention", None)
    if attention is None or rows.size == 0:
        return None
    weights = attention(data.subset(rows))
    if weights is None:
        return None
    import torch

    w = weights[0].to("cpu", torch.float64).numpy()         # (r, H, c, 1+N)
    tokens = w.shape[-1] - 1
    if planted.shape[1] != tokens:
        raise ValueError(f"planted events over {planted.shape[1]} ECG tokens, the probe "
                         f"attends over {tokens}")
    mask = planted[rows]                                     # (r, N)
    on_planted = (w[..., 1:] * mask[:, None, None, :]).sum(axis=-1)     # (r, H, c)
    clips = data.clip_mask[rows]                             # (r, c)
    heads = on_planted.transpose(0, 2, 1)[clips].mean(axis=0)            # (H,)
    null = float(w[..., 0].transpose(0, 2, 1)[clips].mean())
    uniform = float(mask.sum(axis=1).mean()) / (1 + tokens)
    return PlantedScore(heads, null, tokens, int(rows.size), int(clips.sum()), uniform)


def planted_attention(probes: Sequence[Probe], data: SplitData,
                      planted: np.ndarray) -> dict[str, Any] | None:
    """The ``attention.echo_to_ecg`` node (module docstring) for the seed replicas
    ``probes`` (replica 0 first) on ``data``, or None when they do not attend to ECG tokens.
    """
    scored = [planted_weights(p, data, planted) for p in probes]
    if not scored or any(s is None for s in scored):
        return None
    first = scored[0]
    node: dict[str, Any] = {f"h{j}": float(v) for j, v in enumerate(first.heads)}
    node["best_head"] = float(first.heads.max())
    node["best_head_index"] = int(first.heads.argmax())
    add_spread(node, "best_head", [float(s.heads.max()) for s in scored])
    node.update(uniform=first.uniform, null=first.null, ecg_tokens=first.tokens,
                n_subjects=first.n_subjects, n_clips=first.n_clips)
    for k, s in enumerate(scored):
        node[f"r{k}"] = {**{f"h{j}": float(v) for j, v in enumerate(s.heads)},
                         "best_head": float(s.heads.max())}
    return node
