"""Does the fused probe's echo->ECG attention find the planted ECG event?

The synthetic cohort at ``cohort.ecg_tokens = N > 1`` puts part of the LVEF signal into one
event per subject, a run of ECG tokens ``T*`` (one token when events are tokens), and that
event's code into the subject's echo clips; the truth file records it
(:mod:`rightsize.cohort.truth`). A probe whose model attends from the echo clips to the ECG
tokens (``model.attention(data)``: weights ``(m, H, c, 1+N)`` over ``[null, ECG tokens]``,
the fused probe) is scored per head ``h`` by

    weight on t* = mean over a split's subjects with an ECG and a planted event, and over
                   each such subject's present clips, of ``sum_{t in T*_i} w[i, h, clip, 1 + t]``

(every present clip of those subjects counts once). Uniform attention over the ``1 + N``
keys would put ``|T*| / (1 + N)`` there (``uniform``: its mean over the rows scored).

The head is chosen on the **validation** split and read on the test split once
(:func:`choose_head`): heads are interchangeable, so "the best head" is a selection, and a
selection made on the test split would report the test split's luckiest head.
:func:`planted_attention` gives the ``attention.echo_to_ecg`` node of the fused probe's
evaluation metrics, from its seed replicas (every value a flat scalar, as DVC wants):

* ``h<j>``: head ``j``'s test weight, replica 0 (seed ``train.seed``), as every top-level
  metric is;
* ``best_head_val``, ``best_head_val_index``: replica 0's head with the largest weight on
  the validation split, and that head's test weight;
* ``best_head_val_mean``, ``_sd``, ``_min``, ``_max``: across replicas, the test weight of the
  head validation chose per replica (head ``j`` of one seed has nothing to do with head ``j``
  of another, so a per-index mean would mix unrelated heads);
* ``found_share``: the share of replicas whose validation-chosen head puts at least
  :data:`FOUND` on the planted event;
* ``r<k>.h<j>``, ``r<k>.best_head_val``, ``r<k>.best_head_val_index``: every replica's;
* ``uniform`` (mean ``|T*| / (1 + N)``), ``null`` (replica 0's mean weight on the null key over
  the same clips), ``ecg_tokens``, ``n_subjects`` and ``n_clips`` (the test rows and queries
  scored), ``n_val_subjects`` (the validation rows the heads were chosen on).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rightsize.probes.engine.data import SplitData
from rightsize.probes.engine.predict import Probe
from rightsize.probes.evaluation.spread import add_spread

FOUND = 0.5    # a validation-chosen head at or above this weight on the event: found


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


@dataclass(frozen=True)
class HeadChoice:
    """The head validation chose, and its weight on the planted event in each split."""

    index: int            # the head with the largest validation weight
    val_weight: float     # its weight on the validation split (how it was chosen)
    test_weight: float    # its weight on the test split: the number reported


def choose_head(val: PlantedScore, test: PlantedScore) -> HeadChoice:
    """The head with the largest weight on the validation split (the first on a tie) and
    its test weight: the test split is read for the chosen head, never used to choose."""
    if val.heads.shape != test.heads.shape:
        raise ValueError(f"{val.heads.size} heads on validation, {test.heads.size} on test")
    j = int(np.argmax(val.heads))
    return HeadChoice(j, float(val.heads[j]), float(test.heads[j]))


def val_chosen_head(probe: Probe, val: SplitData, val_planted: np.ndarray, test: SplitData,
                    test_planted: np.ndarray) -> HeadChoice | None:
    """:func:`choose_head` of ``probe`` from its weights on ``val`` and ``test`` (each with
    its rows' planted events, (m, N) bool), or None when either split cannot be scored
    (:func:`planted_weights`). The event is *found* when ``test_weight >= FOUND``."""
    on_val = planted_weights(probe, val, val_planted)
    on_test = planted_weights(probe, test, test_planted) if on_val is not None else None
    return None if on_test is None else choose_head(on_val, on_test)


def planted_attention(probes: Sequence[Probe], val: SplitData, val_planted: np.ndarray,
                      test: SplitData, test_planted: np.ndarray) -> dict[str, Any] | None:
    """The ``attention.echo_to_ecg`` node (module docstring) for the seed replicas
    ``probes`` (replica 0 first): heads chosen on ``val``, weights read on ``test`` (each
    with its rows' planted events). None when they do not attend to ECG tokens, or a split
    has no row to score."""
    scored = []
    for p in probes:
        on_val = planted_weights(p, val, val_planted)
        on_test = planted_weights(p, test, test_planted) if on_val is not None else None
        if on_test is None:
            return None
        scored.append((on_val, on_test, choose_head(on_val, on_test)))
    if not scored:
        return None
    val0, first, choice = scored[0]
    node: dict[str, Any] = {f"h{j}": float(v) for j, v in enumerate(first.heads)}
    node["best_head_val"] = choice.test_weight
    node["best_head_val_index"] = choice.index
    chosen = [c.test_weight for _, _, c in scored]
    add_spread(node, "best_head_val", chosen)
    node["found_share"] = float(np.mean([w >= FOUND for w in chosen]))
    node.update(uniform=first.uniform, null=first.null, ecg_tokens=first.tokens,
                n_subjects=first.n_subjects, n_clips=first.n_clips,
                n_val_subjects=val0.n_subjects)
    for k, (_, s, c) in enumerate(scored):
        node[f"r{k}"] = {**{f"h{j}": float(v) for j, v in enumerate(s.heads)},
                         "best_head_val": c.test_weight, "best_head_val_index": c.index}
    return node
