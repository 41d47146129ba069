"""Cohort from one joined parquet (``source: files`` with ``files.joined``): a team's manifest.

The layout such a team already keeps, read without conversion. One row per subject:

=====================  ======================  ===========================================
column                 type                    meaning
=====================  ======================  ===========================================
subject_id             string or integer       unique subject key
lvef                   float or integer        the target (``cohort.target.column``;
                                               LVEF percent by default), in its ``range``
split                  string, optional        ``train`` / ``val`` / ``test``; without
                                               it, subjects are shuffled with ``seed``
echo_embedding         list of floats, or      one pooled vector per study (``echo_dim``
                       list of lists of floats floats: one clip), or the study's clip
                                               vectors (each ``echo_dim`` floats; the
                                               first ``max_clips`` kept, the rest dropped
                                               and counted; all-zero clips are padding
                                               and skipped)
ecg_embedding          list of floats, or      one pooled vector (``ecg_dim`` floats), or
                       list of lists of floats ``N`` token vectors (``N x ecg_dim``, the
                                               same ``N`` for every record: it becomes
                                               the manifest's ``ecg_tokens``)
has_echo_embedding     bool, optional          false: no echo (the embedding is ignored)
has_ecg_embedding      bool, optional          false: no ECG (the embedding is ignored)
=====================  ======================  ===========================================

``list`` may be ``large_list`` or ``fixed_size_list``, values float32 or float64; other
columns are ignored. Without a ``has_*`` column, a modality is absent where its embedding
is null, an empty list or all zeros. Anything else is an error naming the row and the
column, e.g. ``t.parquet: column ecg_embedding: 93 tokens for row 7 (subject P08),
expected 186`` or a flat list of ``k x echo_dim`` floats (put a study's clips in a list of
clip vectors). ``cohort.ecg_tokens`` must equal the file's token count (or be ``null``).

Manifest rows keep the file's row order. The file is read twice, one batch at a time:
a first pass counts clips and tokens (so the manifest metadata and every count error come
before anything is written), the second builds the row groups.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from rightsize.cohort import embeddings
from rightsize.cohort.columns import bools, valid
from rightsize.cohort.config import CohortConfig
from rightsize.cohort.input_files import open_parquet
from rightsize.cohort.labels import check_labels, string_ids
from rightsize.cohort.manifest import Chunk
from rightsize.errors import DataError

log = logging.getLogger(__name__)

ECHO, ECG = "echo_embedding", "ecg_embedding"


class JoinedCohort:
    """A cohort read from one joined parquet file (see the module docstring)."""

    def __init__(self, cfg: CohortConfig) -> None:
        self.cfg = cfg
        self.path = Path(str(cfg.files.joined))
        self.where = str(self.path)
        target = cfg.target.column
        self._pf = open_parquet(self.path, ("subject_id", target, ECHO, ECG))
        names = self._pf.schema_arrow.names
        keys = self._pf.read(columns=[c for c in ("subject_id", target, "split",
                                                  "has_echo_embedding", "has_ecg_embedding")
                                      if c in names])
        ids = string_ids(keys.column("subject_id"), self.path)
        lvef_col = keys.column(target)
        if not (pa.types.is_floating(lvef_col.type) or pa.types.is_integer(lvef_col.type)):
            raise DataError(f"{self.where}: column {target}: expected numbers, got "
                            f"{lvef_col.type}")
        labels = check_labels(ids, lvef_col.to_numpy().astype(np.float64),
                              keys.column("split") if "split" in names else None, cfg,
                              self.path)
        self.subject_id, self._ids = labels.subject_id, labels.ids
        self.split, self.lvef, self.ef_le_40 = labels.split, labels.lvef, labels.ef_le_40
        self._flags = {col: self._flag(keys, f"has_{col}") for col in (ECHO, ECG)}
        self._echo_depth = embeddings.list_depth(self._pf.schema_arrow.field(ECHO).type,
                                                 self.where, ECHO)
        self._ecg_depth = embeddings.list_depth(self._pf.schema_arrow.field(ECG).type,
                                                self.where, ECG)
        self._scan()

    def _flag(self, keys: pa.Table, name: str) -> np.ndarray | None:
        if name not in keys.column_names:
            return None
        col = keys.column(name).combine_chunks()
        if not pa.types.is_boolean(col.type):
            raise DataError(f"{self.where}: column {name}: expected bool, got {col.type}")
        if col.null_count:
            raise DataError(f"{self.where}: column {name}: null for "
                            f"{self._row(int(np.flatnonzero(~valid(col))[0]))}")
        return bools(col)

    def _row(self, i: int) -> str:
        return f"row {i} (subject {self._ids[i]})"

    def _batches(self, step: int) -> Iterator[tuple[int, pa.RecordBatch]]:
        """``(first_row, batch)`` of the embedding columns, ``step`` rows each (the last fewer)."""
        start, pending, columns = 0, [], [ECHO, ECG]
        for batch in self._pf.iter_batches(batch_size=step, columns=columns):
            pending.append(batch)
            table = pa.Table.from_batches(pending)
            while table.num_rows >= step:
                yield start, table.slice(0, step).combine_chunks().to_batches()[0]
                start += step
                table = table.slice(step)
            pending = table.combine_chunks().to_batches() if table.num_rows else []
        if pending:
            yield start, pa.Table.from_batches(pending).combine_chunks().to_batches()[0]

    # -- parsing one batch -----------------------------------------------------------------
    def _candidates(self, column: pa.Array, name: str, start: int) -> np.ndarray:
        """(rows,) bool: rows whose ``name`` is read (flag true, or non-null and non-empty)."""
        has = valid(column) & (embeddings.lengths(column) > 0)
        flags = self._flags[name]
        if flags is None:
            return has
        wanted = flags[start:start + len(column)]
        bad = np.flatnonzero(wanted & ~has)
        if bad.size:
            raise DataError(f"{self.where}: column {name}: null or empty for "
                            f"{self._row(start + int(bad[0]))} but has_{name} is true")
        return wanted.copy()

    def _vectors(self, batch: pa.RecordBatch, name: str, dim: int, depth: int, start: int,
                 item: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(values (k, dim), counts (rows,), nonzero (k,))`` of the read rows' vectors."""
        column = batch.column(name)
        read = self._candidates(column, name, start)
        idx = np.flatnonzero(read)
        sub = column.filter(pa.array(read))

        def describe(j: int) -> str:
            return self._row(start + int(idx[j]))

        counts = np.zeros(len(column), dtype=np.int64)
        if depth == 1:
            width = embeddings.lengths(sub)
            bad = np.flatnonzero((width != dim) & (width % dim == 0))
            if bad.size:        # k vectors flattened into one list: say how to store them
                j = int(bad[0])
                raise DataError(f"{self.where}: column {name}: {width[j]} floats for "
                                f"{describe(j)} = {width[j] // dim} x {dim}: store several "
                                f"{item} vectors as a list of lists, one list per {item}")
            values = embeddings.vectors(sub, dim, self.where, name, describe)
            counts[idx] = 1
        else:
            values, counts[idx] = embeddings.sequences(sub, dim, self.where, name, describe,
                                                       item)
        return values, counts, (values != 0).any(axis=1)

    def _echo(self, batch: pa.RecordBatch, start: int) -> tuple[np.ndarray, np.ndarray, int]:
        """``(echo (rows, max_clips, echo_dim), n_clips (rows,), clips dropped)``."""
        cfg = self.cfg
        values, counts, nonzero = self._vectors(batch, ECHO, cfg.echo_dim, self._echo_depth,
                                                start, "clip")
        row = np.repeat(np.arange(len(counts)), counts)[nonzero]    # all-zero clips: padding
        values = values[nonzero]
        kept = np.bincount(row, minlength=len(counts))
        slot = np.arange(len(row)) - np.r_[0, np.cumsum(kept)][row]
        keep = slot < cfg.max_clips
        echo = np.zeros((len(counts), cfg.max_clips, cfg.echo_dim), dtype=np.float32)
        echo[row[keep], slot[keep]] = values[keep]
        flags = self._flags[ECHO]
        if flags is not None:
            bad = np.flatnonzero(flags[start:start + len(counts)] & (kept == 0))
            if bad.size:
                raise DataError(f"{self.where}: column {ECHO}: every clip is zeros for "
                                f"{self._row(start + int(bad[0]))} but has_{ECHO} is true")
        return echo, np.minimum(kept, cfg.max_clips).astype(np.int16), int((~keep).sum())

    def _ecg(self, batch: pa.RecordBatch, start: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(values (k, ecg_dim), tokens per row (rows,), present (rows,))``.

        A present ECG is read and not all zeros (with a flag column: flagged true).
        """
        values, counts, nonzero = self._vectors(batch, ECG, self.cfg.ecg_dim,
                                                self._ecg_depth, start, "token")
        row = np.repeat(np.arange(len(counts)), counts)
        present = np.bincount(row[nonzero], minlength=len(counts)) > 0
        if self._flags[ECG] is not None:
            flagged = self._flags[ECG][start:start + len(counts)]
            bad = np.flatnonzero(flagged & ~present)
            if bad.size:
                raise DataError(f"{self.where}: column {ECG}: every value is zero for "
                                f"{self._row(start + int(bad[0]))} but has_{ECG} is true")
        return values, counts, present

    # -- first pass: clip and token counts -------------------------------------------------
    def _scan(self) -> None:
        n = len(self._ids)
        self.n_clips = np.zeros(n, dtype=np.int16)
        self.has_ecg = np.zeros(n, dtype=bool)
        self.clips_dropped = 0
        first: tuple[int, int] | None = None            # (tokens, row) of the first ECG
        for start, batch in self._batches(self.cfg.row_group_size):
            rows = slice(start, start + batch.num_rows)
            _, self.n_clips[rows], dropped = self._echo(batch, start)
            self.clips_dropped += dropped
            _, counts, present = self._ecg(batch, start)
            self.has_ecg[rows] = present
            if not present.any():
                continue
            if first is None:
                i = int(np.flatnonzero(present)[0])
                first = (int(counts[i]), start + i)
            bad = np.flatnonzero(present & (counts != first[0]))
            if bad.size:
                i = int(bad[0])
                raise DataError(f"{self.where}: column {ECG}: {counts[i]} tokens for "
                                f"{self._row(start + i)}, expected {first[0]} (as "
                                f"{self._row(first[1])}: token counts must agree)")
        if self.clips_dropped:
            log.info("%s: %d clips beyond max_clips=%d dropped", self.where, self.clips_dropped,
                     self.cfg.max_clips)
        self.has_echo = self.n_clips > 0
        if first is None:           # no ECG at all: the params say how many tokens
            self.ecg_tokens = int(self.cfg.ecg_tokens or 1)
        else:
            found = first[0] if self._ecg_depth == 2 else 1
            where = self._row(first[1]) if self._ecg_depth == 2 else "one vector per record"
            self.ecg_tokens = embeddings.check_token_count(found, where, self.cfg.ecg_tokens,
                                                           self.where, ECG)

    # -- source interface ------------------------------------------------------------------
    def metadata(self) -> dict[str, Any]:
        """Source-specific manifest metadata (no planted truth: perfect MAE unknown)."""
        return {"perfect_model_mae": None, "perfect_model_mae_test": None,
                "inputs": {"joined": self.where}, "clips_dropped": self.clips_dropped}

    planted_events = None       # no planted truth

    def truth(self) -> tuple[np.ndarray, np.ndarray]:
        """No planted truth: matched clip and planted ECG token are -1 for every subject."""
        none = np.full(len(self._ids), -1, dtype=np.int16)
        return none, none.copy()

    def chunks(self) -> Iterator[Chunk]:
        """Yield manifest rows in row groups (``rows_per_group``), in the file's order."""
        t, d = self.ecg_tokens, self.cfg.ecg_dim
        for start, batch in self._batches(self.cfg.rows_per_group(t)):
            r = batch.num_rows
            rows = slice(start, start + r)
            echo, _, _ = self._echo(batch, start)
            values, counts, present = self._ecg(batch, start)
            ecg = np.zeros((r, t * d), dtype=np.float32)
            owner = np.repeat(np.arange(r), counts)
            ecg[present] = values[present[owner]].reshape(-1, t * d)
            yield Chunk(subject_id=self.subject_id.slice(start, r), split=self.split[rows],
                        lvef=self.lvef[rows], ef_le_40=self.ef_le_40[rows], echo=echo,
                        n_clips=self.n_clips[rows], ecg=ecg.reshape(r, t, d) if t > 1 else ecg,
                        has_echo=self.has_echo[rows], has_ecg=self.has_ecg[rows])
