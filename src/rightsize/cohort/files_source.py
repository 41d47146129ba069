"""Cohort from cached embedding files (``source: files``): join echo, ECG and labels.

Expected inputs (paths from ``cohort.files``, relative to the working directory):

``files.echo`` -- parquet, one row per clip:
    ``subject_id`` (string or integer), ``clip`` (integer; any order, gaps allowed),
    ``embedding`` (``fixed_size_list`` or ``list`` of float32/float64, ``echo_dim`` values).
    ``(subject_id, clip)`` must be unique. Up to ``max_clips`` clips per subject are kept,
    lowest clip index first; the rest are dropped (logged).
``files.ecg`` -- parquet, one row per subject (one ECG record):
    ``subject_id``, ``embedding``: either one vector of ``ecg_dim`` floats (pooled), or a
    token sequence, a list of ``N`` vectors of ``ecg_dim`` floats (e.g. the ``N x 768``
    hidden states of one HuBERT-ECG layer: 93 tokens for a 5-s crop, 186 for a 10-s
    record), as ``list<list<float>>`` or ``fixed_size_list``s of them. Every record must
    hold the same ``N``: a record with another count is an error naming it. ``N`` is read
    from the file's first record and becomes the manifest's ``ecg_tokens``;
    ``cohort.ecg_tokens`` must equal it (or be ``null``: take it from the file).
    ``subject_id`` must be unique. A ``rightsize extract`` output folder (or its ``shards``
    folder) is read only when complete and verified (:mod:`~rightsize.cohort.
    extraction_input`: SHA256SUMS present and matching, one fingerprint), else exit 4.
``files.labels`` -- CSV with a header:
    ``subject_id``, the target (``cohort.target.column``: ``lvef``, percent, by default;
    :mod:`rightsize.cohort.target`), optional ``split`` (``train``/``val``/``test``);
    other columns are ignored. Without ``split``, subjects are shuffled with ``seed`` and
    cut into ``cohort.splits`` sizes; with it, its counts must equal ``cohort.splits``.

The labels file defines the cohort: one manifest row per labelled subject, sorted by
``subject_id``; embedding rows of unlabelled subjects are ignored (a warning counts them),
but an embedding file with no rows, or no row of a labelled subject, is an error naming it. A
labelled subject without echo clips (ECG row) gets ``has_echo`` (``has_ecg``) false and
zeros. Subject ids are compared as strings (integer ids are cast: ``7`` matches ``"7"``
but not ``"007"``). ``ef_le_40`` is ``target <= cohort.target.threshold``. The files carry
no planted truth: the truth file gets -1 for every subject.

Both embedding files are read one parquet row group at a time (only their key columns
whole), so memory stays near one manifest row group plus one input row group.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rightsize import console
from rightsize.cohort import embeddings
from rightsize.cohort.config import CohortConfig
from rightsize.cohort.extraction_input import verify_extraction
from rightsize.cohort.input_files import RowFetcher, open_parquet
from rightsize.cohort.labels import first_duplicate, read_labels_csv, string_ids
from rightsize.cohort.manifest import Chunk
from rightsize.errors import DataError

log = logging.getLogger(__name__)


class FilesCohort:
    """A cohort joined from echo/ECG embedding parquets and a labels CSV."""

    def __init__(self, cfg: CohortConfig) -> None:
        self.cfg = cfg
        self.echo_path = Path(str(cfg.files.echo))
        self.ecg_path = Path(str(cfg.files.ecg))
        self.extraction = verify_extraction(self.ecg_path)     # None: not an extraction
        if self.extraction is not None:
            x = self.extraction
            console.info(f"{x.folder}: a complete extraction, {x.shard_count} shards, "
                         f"{x.files} files verified against SHA256SUMS")
            self.ecg_path = x.shards
        self.labels_path = Path(str(cfg.files.labels))
        labels = read_labels_csv(self.labels_path, cfg)
        self.subject_id, self._ids_np = labels.subject_id, labels.ids
        self.split, self.lvef, self.ef_le_40 = labels.split, labels.lvef, labels.ef_le_40
        self._index_ecg()
        self._index_echo()

    def _rows_of(self, ids: pa.Array) -> np.ndarray:
        """Manifest row of each id (-1 when unlabelled)."""
        idx = pc.index_in(ids, value_set=self.subject_id)
        return idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)

    def _check_labelled(self, path: Path, rows: np.ndarray, what: str) -> None:
        """Refuse a file that gives no labelled subject a row; warn about unlabelled rows."""
        if not rows.size:
            raise DataError(f"{path}: no rows (every subject would lack this modality)")
        n_out = int((rows < 0).sum())
        if n_out == rows.size:
            raise DataError(f"{path}: none of its {n_out} {what} belongs to a subject in "
                            f"{self.labels_path} (subject ids compared as strings)")
        if n_out:
            console.warn(f"{path}: {n_out} {what} of subjects without labels ignored")

    # -- ECG -----------------------------------------------------------------------------
    def _index_ecg(self) -> None:
        """Map ECG records to manifest rows and settle the token count."""
        path, n = self.ecg_path, len(self._ids_np)
        pf = open_parquet(path, ("subject_id", "embedding"))
        ids = string_ids(pf.read(columns=["subject_id"]).column("subject_id"), path)
        dup = first_duplicate(ids.to_numpy(zero_copy_only=False))
        if dup is not None:
            raise DataError(f"{path}: column subject_id: duplicate subject {ids[dup]}")
        rows = self._rows_of(ids)
        self._check_labelled(path, rows, "ECG rows")
        self._ecg = RowFetcher(pf, "embedding")
        depth = embeddings.list_depth(pf.schema_arrow.field("embedding").type, str(path),
                                      "embedding")
        found, first = 1, "one vector per record"
        if depth == 2 and len(ids):       # a token sequence per record: count the first
            found, i = embeddings.token_count(self._ecg.group(0), str(path), "embedding",
                                              lambda i: f"subject {ids[i]}")
            first = f"subject {ids[i]}"
        self.ecg_tokens = embeddings.check_token_count(found, first, self.cfg.ecg_tokens,
                                                       str(path), "embedding")
        self._ecg_file_row = np.full(n, -1, dtype=np.int64)
        keep = rows >= 0
        self._ecg_file_row[rows[keep]] = np.flatnonzero(keep)
        self.has_ecg = self._ecg_file_row >= 0

    def _ecg_rows(self, start: int, stop: int) -> np.ndarray:
        cfg, t = self.cfg, self.ecg_tokens
        ecg = np.zeros((stop - start, t, cfg.ecg_dim), dtype=np.float32)
        local = np.flatnonzero(self.has_ecg[start:stop])
        for pos, values in self._ecg.take(self._ecg_file_row[start + local]):
            sid = self._ids_np[start + local[pos]]
            ecg[local[pos]] = embeddings.tokens(
                values, cfg.ecg_dim, t, str(self.ecg_path), "embedding",
                lambda i: f"subject {sid[i]}")  # noqa: B023
        return ecg[:, 0] if t == 1 else ecg

    # -- echo ----------------------------------------------------------------------------
    def _index_echo(self) -> None:
        """Choose the kept clips: (manifest row, slot, file row)."""
        path, cfg = self.echo_path, self.cfg
        pf = open_parquet(path, ("subject_id", "clip", "embedding"))
        tp = pf.schema_arrow.field("embedding").type
        if pa.types.is_fixed_size_list(tp) and tp.list_size != cfg.echo_dim:
            raise DataError(f"{path}: column embedding: wrong dimension {tp.list_size}, "
                            f"expected echo_dim = {cfg.echo_dim}")
        keys = pf.read(columns=["subject_id", "clip"])
        ids = string_ids(keys.column("subject_id"), path)
        clip_col = keys.column("clip")
        if not pa.types.is_integer(clip_col.type):
            raise DataError(f"{path}: column clip: expected integers, got {clip_col.type}")
        if clip_col.null_count:
            raise DataError(f"{path}: column clip: null clip index")
        clip = clip_col.to_numpy().astype(np.int64)
        rows = self._rows_of(ids)
        self._check_labelled(path, rows, "clip rows")
        file_row = np.flatnonzero(rows >= 0)
        row, clip = rows[file_row], clip[file_row]
        order = np.lexsort((clip, row))
        row, clip, file_row = row[order], clip[order], file_row[order]
        same = (row[1:] == row[:-1]) & (clip[1:] == clip[:-1])
        if same.any():
            i = int(np.flatnonzero(same)[0])
            raise DataError(f"{path}: duplicate clip {clip[i]} for subject {self._ids_np[row[i]]}")
        group_start = np.r_[0, np.flatnonzero(row[1:] != row[:-1]) + 1]
        first = np.repeat(group_start, np.diff(np.r_[group_start, len(row)]))
        slot = np.arange(len(row)) - first
        keep = slot < cfg.max_clips
        if (~keep).any():
            log.info("%s: %d clips beyond max_clips=%d dropped", path, int((~keep).sum()),
                     cfg.max_clips)
        self.clips_dropped = int((~keep).sum())
        self._sel_row, self._sel_slot = row[keep], slot[keep]
        self._sel_clip, self._sel_file_row = clip[keep], file_row[keep]
        self._echo = RowFetcher(pf, "embedding")
        self.n_clips = np.bincount(self._sel_row, minlength=len(self._ids_np)).astype(np.int16)
        self.has_echo = self.n_clips > 0

    def _echo_rows(self, start: int, stop: int) -> np.ndarray:
        cfg = self.cfg
        echo = np.zeros((stop - start, cfg.max_clips, cfg.echo_dim), dtype=np.float32)
        lo, hi = np.searchsorted(self._sel_row, [start, stop])
        for pos, taken in self._echo.take(self._sel_file_row[lo:hi]):
            r, clips = self._sel_row[lo + pos], self._sel_clip[lo + pos]
            values = embeddings.vectors(
                taken, cfg.echo_dim, str(self.echo_path), "embedding",
                lambda i: f"subject {self._ids_np[r[i]]}, clip {clips[i]}")  # noqa: B023
            echo[r - start, self._sel_slot[lo + pos]] = values
        return echo

    # -- source interface ----------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        """Source-specific manifest metadata (no planted truth: perfect MAE unknown)."""
        return {"perfect_model_mae": None, "perfect_model_mae_test": None,
                "inputs": {"echo": str(self.cfg.files.echo), "ecg": str(self.cfg.files.ecg),
                           "labels": str(self.cfg.files.labels)},
                "clips_dropped": self.clips_dropped,
                "ecg_extraction": None if self.extraction is None else {
                    "folder": str(self.extraction.folder), "shards": self.extraction.shard_count,
                    "files_verified": self.extraction.files}}

    planted_events = None       # no planted truth

    def truth(self) -> tuple[np.ndarray, np.ndarray]:
        """No planted truth: matched clip and planted ECG token are -1 for every subject."""
        none = np.full(len(self._ids_np), -1, dtype=np.int16)
        return none, none.copy()

    def chunks(self) -> Iterator[Chunk]:
        """Yield manifest rows in row groups (sorted by subject_id; ``rows_per_group``)."""
        n, step = len(self._ids_np), self.cfg.rows_per_group(self.ecg_tokens)
        for start in range(0, n, step):
            stop = min(start + step, n)
            rows = slice(start, stop)
            yield Chunk(subject_id=self.subject_id.slice(start, stop - start),
                        split=self.split[rows], lvef=self.lvef[rows],
                        ef_le_40=self.ef_le_40[rows], echo=self._echo_rows(start, stop),
                        n_clips=self.n_clips[rows], ecg=self._ecg_rows(start, stop),
                        has_echo=self.has_echo[rows], has_ecg=self.has_ecg[rows])
