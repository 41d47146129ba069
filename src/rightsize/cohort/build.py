"""Build the manifest: pick the source, validate each row group, stream it to parquet.

Peak memory is the subject-level columns plus one row group of embeddings (plus the
parquet writer's page buffers), never the whole echo or ECG array; the file appears
atomically, and so does the truth file beside it (:mod:`rightsize.cohort.truth`).

A source (``SyntheticCohort``, ``FilesCohort``, ``JoinedCohort``) has the subject-level
columns ``subject_id``, ``split``, ``ef_le_40`` as attributes, ``ecg_tokens`` (its ECG
vectors per subject), ``metadata()``, ``truth()`` (matched clip and planted ECG token per
subject, -1 for none) and ``chunks()`` (the rows as :class:`~rightsize.cohort.manifest.Chunk`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rightsize.cohort.arrays import SPLITS
from rightsize.cohort.config import CohortConfig, payload_bytes
from rightsize.cohort.manifest import (
    FORMAT_VERSION,
    ManifestWriter,
    chunk_to_batch,
    manifest_schema,
)
from rightsize.cohort.validate import ManifestSummary, checker_for
from rightsize.output_set import OutputSet

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BuildReport:
    """What :func:`build_manifest` wrote."""

    path: str
    summary: ManifestSummary
    metadata: dict[str, Any]
    manifest_bytes: int


def open_source(cfg: CohortConfig) -> Any:
    """The row source for ``cfg``: ``SyntheticCohort``, ``FilesCohort`` or ``JoinedCohort``."""
    if cfg.source == "synthetic":
        from rightsize.cohort.synthetic import SyntheticCohort

        return SyntheticCohort(cfg)
    if cfg.files.joined:
        from rightsize.cohort.joined_source import JoinedCohort

        return JoinedCohort(cfg)
    from rightsize.cohort.files_source import FilesCohort

    return FilesCohort(cfg)


def cohort_metadata(cfg: CohortConfig, source: Any) -> dict[str, Any]:
    """Metadata common to all sources, merged with the source's own."""
    split = np.asarray(source.split)
    ef = np.asarray(source.ef_le_40)
    tokens = int(source.ecg_tokens)
    geometry: dict[str, Any] = {
        "n_subjects": cfg.n_subjects, "max_clips": cfg.max_clips, "echo_dim": cfg.echo_dim,
        "ecg_dim": cfg.ecg_dim, "row_group_size": cfg.rows_per_group(tokens),
        "splits": cfg.splits.as_dict()}
    if tokens > 1:          # absent at 1, so a pooled manifest keeps its bytes
        geometry["ecg_tokens"] = tokens
    meta: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "source": cfg.source,
        "seed": cfg.seed,
        "geometry": geometry,
        "ef_threshold": cfg.target.threshold,
        "ef_le_40_prevalence": float(ef.mean()) if ef.size else 0.0,
        "ef_le_40_prevalence_by_split": {
            name: float(ef[split == i].mean()) if (split == i).any() else 0.0
            for i, name in enumerate(SPLITS)},
        "payload_bytes": payload_bytes(cfg.n_subjects, cfg.max_clips, cfg.echo_dim,
                                       cfg.ecg_dim, tokens),
        "echo_payload_bytes": cfg.n_subjects * cfg.echo_values * 4,
    }
    if not cfg.target.is_default:     # absent for LVEF, so a default manifest keeps its bytes
        meta["target"] = cfg.target.as_dict()
    meta.update(source.metadata())
    return meta


def build_manifest(cfg: CohortConfig, out: str | os.PathLike[str],
                   on_chunk: Callable[[int], None] | None = None,
                   truth: str | os.PathLike[str] | None = None,
                   outputs: OutputSet | None = None) -> BuildReport:
    """Build the manifest described by ``cfg`` at ``out`` (validated while written).

    Raises DataError/InputError for bad inputs; nothing is left at ``out`` (or ``truth``)
    on failure. ``on_chunk``, if given, is called with the rows written so far after each
    row group. ``truth``, if given, receives the planted truth (:mod:`rightsize.cohort.truth`).
    Both are staged in ``outputs`` (the caller commits them with its other outputs); without
    it they are put in place together, the manifest last, before this returns.
    """
    if outputs is None:
        with OutputSet(anchor=out) as own:
            return build_manifest(cfg, out, on_chunk, truth, own)
    from rightsize.cohort.truth import write_truth

    source = open_source(cfg)
    meta = cohort_metadata(cfg, source)
    schema = manifest_schema(cfg.max_clips, cfg.echo_dim, cfg.ecg_dim, meta,
                             ecg_tokens=int(source.ecg_tokens))
    checker = checker_for(meta, str(out))
    with outputs.file(out) as staged, ManifestWriter(staged, schema) as writer:
        for chunk in source.chunks():
            batch = chunk_to_batch(chunk, schema)
            checker.check(batch, writer.rows)
            writer.write(batch)
            if on_chunk is not None:
                on_chunk(writer.rows)
        summary = checker.finish(meta)
    if truth is not None:
        matched, planted = source.truth()
        about = {"source": cfg.source, "seed": cfg.seed, "ecg_tokens": int(source.ecg_tokens)}
        if source.planted_events is not None:       # only with planted tokens
            about["ecg_events"] = int(source.planted_events)
            about["ecg_event_leads"] = int(cfg.ecg_event_leads)
        with outputs.file(truth) as staged:
            write_truth(staged, source.subject_id, source.split, matched, planted, about)
    size = outputs.staged(out).stat().st_size
    log.debug("wrote %s: %d rows, %d bytes", out, summary.n_rows, size)
    return BuildReport(path=str(out), summary=summary, metadata=meta, manifest_bytes=size)
