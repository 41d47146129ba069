"""Shards on disk: a parquet file per shard, written to a temporary file and renamed, and a
JSON record beside it that says what it holds and whether it is still valid.

``<out>/shards/shard-<s>.parquet`` (one row group, one row per good record, list order):
``subject_id``, ``study_id`` (strings) and ``embedding``, the hidden state of the highest of
``extract.layers`` as ``fixed_size_list<fixed_size_list<float16>[hidden]>[tokens]``; every
other chosen layer ``k`` beside it as ``layer_<k>``. The schema metadata key
``rightsize.extract`` says which layers, the dtype and what the features may be used for.
This is the ECG layout ``cohort.source: files`` reads (``cohort.files.ecg: <out>/shards``).

``<out>/shards/shard-<s>.json``, written after the parquet file: the shard's record ids,
what each list row was made from (:mod:`~rightsize.extraction.inputs`: the row, its files'
size, ``mtime_ns`` and SHA-256), the bad records in it, the parquet file's SHA-256 and size,
the fingerprint of what decides its bytes (settings, weights and model config, the root,
the preprocessing version) and ``digest``, the SHA-256 of the rest of the record. A shard is
done when both exist, the record is unedited (its digest), the fingerprint, the record ids
and every list row and input file are the current ones and the parquet file still has its
SHA-256; anything else is redone (:func:`stale_reason` says why).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rightsize import atomic
from rightsize.extraction.config import ExtractConfig
from rightsize.extraction.inputs import inputs_changed
from rightsize.extraction.record_list import RecordList, shard_rows
from rightsize.ground.sha256 import sha256_file

SHARDS = "shards"
META_KEY = b"rightsize.extract"


def shard_stem(shard: int) -> str:
    """``shard-00012``: shard files sort by name in shard order."""
    return f"shard-{shard:05d}"


@dataclass(frozen=True)
class ShardFile:
    """A written shard, as its JSON record describes it."""

    shard: int
    rows: tuple[int, ...]              # list rows of the good records, in file order
    errors: tuple[dict[str, str], ...]
    stored_fs: tuple[float, ...]       # each good record's sampling rate on disk
    sha256: str
    bytes: int

    @property
    def parquet(self) -> str:
        """The parquet file's path relative to the output folder."""
        return f"{SHARDS}/{shard_stem(self.shard)}.parquet"


def _tokens_column(values: np.ndarray) -> Any:
    """``(records, tokens, hidden)`` -> fixed-size lists of fixed-size lists, no copy."""
    import pyarrow as pa

    n, tokens, hidden = values.shape
    flat = pa.array(np.ascontiguousarray(values).reshape(-1))
    return pa.FixedSizeListArray.from_arrays(pa.FixedSizeListArray.from_arrays(flat, hidden),
                                             tokens)


def expected_ids(records: RecordList, shard: int, shard_records: int) -> list[str]:
    """The record ids (``study_id``) in ``shard``'s list rows, good or bad."""
    return [records.study_id[r] for r in shard_rows(shard, len(records), shard_records)]


def _digest(rec: dict[str, Any]) -> str:
    """SHA-256 of a shard record without its ``digest`` (canonical JSON)."""
    import hashlib

    body = {k: v for k, v in rec.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def write_shard(out: Path, shard: int, cfg: ExtractConfig, records: RecordList,
                rows: list[int], layers: list[np.ndarray], errors: list[dict[str, str]],
                stored_fs: list[float], provenance: dict[str, Any],
                inputs: list[dict[str, Any]]) -> ShardFile:
    """Write ``shard``'s parquet file (temporary file + rename) and then its JSON record."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    stored = cfg.stored_layers
    columns: dict[str, Any] = {
        "subject_id": pa.array([records.subject_id[r] for r in rows], pa.string()),
        "study_id": pa.array([records.study_id[r] for r in rows], pa.string()),
    }
    for layer, values in zip(stored[:-1], layers[:-1], strict=True):
        columns[f"layer_{layer}"] = _tokens_column(values)
    columns["embedding"] = _tokens_column(layers[-1])
    meta = {"layers": list(stored), "embedding": f"hidden state {stored[-1]}",
            "dtype": cfg.dtype, "features": provenance["features"]}
    table = pa.table(columns).replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    path = out / SHARDS / f"{shard_stem(shard)}.parquet"
    with atomic.atomic_path(path) as tmp:
        pq.write_table(table, tmp, row_group_size=max(len(rows), 1), write_statistics=False,
                       use_dictionary=["subject_id", "study_id"])
    digest, size = sha256_file(path)
    written = ShardFile(shard, tuple(rows), tuple(errors), tuple(stored_fs), digest, size)
    rec = {"shard": shard, "records": expected_ids(records, shard, cfg.shard_records),
           "rows": list(rows), "errors": list(errors), "stored_fs": list(stored_fs),
           "sha256": digest, "bytes": size, "fingerprint": fingerprint(cfg, provenance),
           "inputs": inputs}
    atomic.write_json(path.with_suffix(".json"), {**rec, "digest": _digest(rec)})
    return written


def fingerprint(cfg: ExtractConfig, provenance: dict[str, Any]) -> dict[str, Any]:
    """The config's fingerprint plus the weights' and the model config's identity, the
    record root and the preprocessing version."""
    from rightsize.encoders.preprocess import PREPROCESSING_VERSION

    return {**cfg.fingerprint(), "weights": provenance.get("files"),
            "weights_seed": provenance.get("seed"),
            "model_config": provenance.get("model_config"), "root": cfg.root,
            "preprocessing": PREPROCESSING_VERSION}


def stale_reason(out: Path, shard: int, records: RecordList, cfg: ExtractConfig,
                 want: dict[str, Any], verify: bool = False
                 ) -> tuple[ShardFile | None, str]:
    """``(shard, "")`` if it is done under fingerprint ``want`` (see the module doc), else
    ``(None, why)``. ``verify``: compare the input files' SHA-256, not only size and time."""
    path = out / SHARDS / f"{shard_stem(shard)}.parquet"
    try:
        rec = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None, "no shard record"
    if not isinstance(rec, dict) or rec.get("digest") != _digest(rec):
        return None, "the shard record was edited or damaged"
    if rec.get("fingerprint") != want:
        return None, "written under other settings, weights or preprocessing"
    if rec.get("records") != expected_ids(records, shard, cfg.shard_records):
        return None, "other records in the list rows"
    why = inputs_changed(rec.get("inputs"), records,
                         shard_rows(shard, len(records), cfg.shard_records), verify)
    if why is not None:
        return None, why
    try:
        if path.stat().st_size != rec.get("bytes") or sha256_file(path)[0] != rec.get("sha256"):
            return None, "the parquet file changed"
    except OSError:
        return None, "no parquet file"
    return ShardFile(shard, tuple(rec["rows"]), tuple(rec["errors"]), tuple(rec["stored_fs"]),
                     rec["sha256"], rec["bytes"]), ""


def read_done(out: Path, shard: int, records: RecordList, cfg: ExtractConfig,
              want: dict[str, Any], verify: bool = False) -> ShardFile | None:
    """The shard if it is done under fingerprint ``want`` (see the module doc), else None."""
    return stale_reason(out, shard, records, cfg, want, verify)[0]
