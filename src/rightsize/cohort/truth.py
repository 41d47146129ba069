"""The cohort's planted truth beside the manifest: ``data/cohort.truth.parquet``.

Written by every ``rightsize cohort`` build (so DVC can declare it as an output), one row
per manifest subject, in manifest order:

==================  ========  ==============================================================
column              type      meaning
==================  ========  ==============================================================
subject_id          string    as in the manifest
split               string    ``train`` / ``val`` / ``test``
matched_clip        int16     the clip whose view key matches the ECG query (synthetic), -1
                              when the subject has no echo or the source has no truth
planted_ecg_token   int16     the first ECG token of the event that carries the planted LVEF
                              term (synthetic at ``ecg_tokens > 1``), -1 at
                              ``ecg_tokens = 1``, when the ECG is missing, or when the source
                              has no truth
==================  ========  ==============================================================

A ``files`` cohort has no planted truth: its truth file still has one row per subject, with
-1 everywhere, so every build writes the same columns and rows. The parquet key-value
metadata holds ``{"source", "seed", "ecg_tokens"}`` as JSON under ``rightsize.cohort.truth``,
and ``ecg_events`` and ``ecg_event_leads`` when tokens are planted (absent: one event per
token; 12 leads): the planted event is the tokens
:func:`rightsize.cohort.planted_tokens.token_event_map` maps to the same event as
``planted_ecg_token`` (at ``93 k`` tokens HuBERT-ECG's layout: the event's token in each of
its leads; else a run of consecutive tokens). :func:`load_truth` gives the probes what they
need to score attention on the planted event's tokens (:meth:`CohortTruth.planted_mask`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rightsize.cohort.arrays import SPLITS
from rightsize.cohort.columns import numbers, strings, valid
from rightsize.cohort.input_files import open_parquet
from rightsize.cohort.manifest import split_codes
from rightsize.cohort.planted_tokens import event_count, planted_mask
from rightsize.cohort.token_layout import LEADS
from rightsize.errors import DataError

TRUTH_KEY = b"rightsize.cohort.truth"
TRUTH_COLUMNS = ("subject_id", "split", "matched_clip", "planted_ecg_token")


@dataclass(frozen=True)
class CohortTruth:
    """Planted truth per subject (``n`` rows, aligned with the manifest when built with it)."""

    subject_id: np.ndarray         # (n,) str (object)
    split: np.ndarray              # (n,) int8 index into SPLITS
    matched_clip: np.ndarray       # (n,) int16, -1: none
    planted_ecg_token: np.ndarray  # (n,) int16, -1: none
    ecg_tokens: int                # tokens per ECG of the cohort it was built with
    ecg_events: int                # events per ECG (ecg_tokens: one per token)
    ecg_event_leads: int = LEADS   # leads an event is seen in (HuBERT-ECG layout)

    def planted_mask(self) -> np.ndarray:
        """(n, ecg_tokens) bool: each subject's planted event's tokens (none where -1)."""
        return planted_mask(self.planted_ecg_token, self.ecg_tokens, self.ecg_events,
                            self.ecg_event_leads)

    def aligned(self, subject_id: np.ndarray) -> CohortTruth:
        """This truth reordered to ``subject_id`` (e.g. ``CohortArrays.subject_id``).

        DataError when a subject has no truth row.
        """
        ids = np.asarray(subject_id, dtype=object)
        if len(ids) == len(self.subject_id) and bool((ids == self.subject_id).all()):
            return self
        known = np.argsort(self.subject_id)
        pos = np.searchsorted(self.subject_id[known], ids).clip(max=len(known) - 1)
        order = known[pos]
        missing = np.flatnonzero(self.subject_id[order] != ids)
        if missing.size:
            raise DataError(f"truth file has no row for subject {ids[missing[0]]}")
        return CohortTruth(subject_id=self.subject_id[order], split=self.split[order],
                           matched_clip=self.matched_clip[order],
                           planted_ecg_token=self.planted_ecg_token[order],
                           ecg_tokens=self.ecg_tokens, ecg_events=self.ecg_events,
                           ecg_event_leads=self.ecg_event_leads)


def write_truth(path: str | os.PathLike[str], subject_id: pa.Array, split: np.ndarray,
                   matched_clip: np.ndarray, planted_ecg_token: np.ndarray,
                   metadata: dict[str, Any]) -> None:
    """Write the truth table to ``path`` (``split`` int8 codes; -1 in the int16 columns: none).

    Written in place: :func:`rightsize.cohort.build.build_manifest` hands it a temporary
    path renamed with the manifest's.
    """
    table = pa.table({
        "subject_id": subject_id.cast(pa.string()),
        "split": pa.array(np.asarray(SPLITS, dtype=object)[np.asarray(split, dtype=np.int64)],
                          pa.string()),
        "matched_clip": pa.array(np.asarray(matched_clip, dtype=np.int16)),
        "planted_ecg_token": pa.array(np.asarray(planted_ecg_token, dtype=np.int16)),
    })
    table = table.replace_schema_metadata({TRUTH_KEY: json.dumps(metadata, sort_keys=True)})
    pq.write_table(table, path, compression="zstd")


def load_truth(path: str | os.PathLike[str]) -> CohortTruth | None:
    """The truth file at ``path``, or None when it holds no planted ECG token.

    InputError when the file is missing; DataError (naming file and column) when it is not
    a truth file.
    """
    p = Path(path)
    table = open_parquet(p, TRUTH_COLUMNS, "truth file").read()
    raw = (table.schema.metadata or {}).get(TRUTH_KEY)
    if raw is None:
        raise DataError(f"{p}: not a rightsize truth file (no {TRUTH_KEY.decode()} metadata)")
    for col in TRUTH_COLUMNS:
        if table.column(col).null_count:
            first = int(np.flatnonzero(~valid(table.column(col)))[0])
            raise DataError(f"{p}: column {col}: null at row {first}")
    for col in ("matched_clip", "planted_ecg_token"):
        tp = table.schema.field(col).type
        if not pa.types.is_integer(tp):
            raise DataError(f"{p}: column {col}: expected int16, got {tp}")
    split = split_codes(table.column("split"))
    if (split < 0).any():
        raise DataError(f"{p}: column split: not one of {', '.join(SPLITS)} at row "
                        f"{int(np.flatnonzero(split < 0)[0])}")
    planted = numbers(table.column("planted_ecg_token")).astype(np.int16)
    if not (planted >= 0).any():
        return None
    try:
        about = json.loads(raw)
        tokens = int(about.get("ecg_tokens", 1))
        events = int(about.get("ecg_events", tokens))
        leads = int(about.get("ecg_event_leads", LEADS))
    except (ValueError, TypeError, AttributeError):
        raise DataError(f"{p}: {TRUTH_KEY.decode()} metadata is not valid JSON") from None
    if not 1 <= leads <= LEADS:
        raise DataError(f"{p}: {TRUTH_KEY.decode()} metadata: ecg_event_leads {leads} is not "
                        f"in [1, {LEADS}]")
    if planted.max() >= tokens:
        row = int(np.flatnonzero(planted >= tokens)[0])
        raise DataError(f"{p}: column planted_ecg_token: {planted[row]} at row {row} is not "
                        f"below ecg_tokens = {tokens}")
    return CohortTruth(subject_id=strings(table.column("subject_id")), split=split,
                       matched_clip=numbers(table.column("matched_clip")).astype(np.int16),
                       planted_ecg_token=planted, ecg_tokens=tokens,
                       ecg_events=event_count(tokens, events), ecg_event_leads=leads)
