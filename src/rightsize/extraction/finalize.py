"""Close an output folder once every shard is done: index, errors, description, checksums.

Whichever run or task finds every shard done writes these (each atomically; two tasks
finishing together write the same bytes):

* ``index.parquet``: one row per good record: ``study_id``, ``subject_id``, ``path``,
  ``shard``, ``row`` (its row in the shard), ``stored_hz`` (its sampling rate on disk) and
  ``resampled`` (true when it was resampled to 500 Hz);
* ``errors.csv``: one row per bad record: ``study_id``, ``subject_id``, ``path``, ``reason``
  (``unreadable``, ``missing lead``, ``too short``, ``NaN``), ``detail``;
* ``extract.json``: what the folder holds and how it was made (model, weights or seed and what
  the features may be used for, layers, dtype, tokens, preprocessing, counts);
* ``SHA256SUMS``: every file of the folder (``sha256sum -c`` and ``rightsize verify`` check it).

Nothing here depends on the workers, tasks or timing, so the folder is byte-identical whether
one worker or N tasks wrote it. Shards beyond the corpus (a longer earlier list) are removed.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from rightsize import atomic
from rightsize.extraction.config import ExtractConfig
from rightsize.extraction.record_list import RecordList
from rightsize.extraction.shards import SHARDS, ShardFile, shard_stem
from rightsize.ground.sha256 import MANIFEST, sha256_file

ERROR_COLUMNS = ("study_id", "subject_id", "path", "reason", "detail")


def errors_csv(errors: list[dict[str, str]]) -> str:
    """The errors table as CSV text (header always)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=ERROR_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(errors)
    return buf.getvalue()


def _remove_beyond(out: Path, shards: int) -> None:
    folder = out / SHARDS
    for p in folder.glob("shard-*.*"):
        stem = p.name.split(".")[0]
        if stem[len("shard-"):].isdigit() and int(stem[len("shard-"):]) >= shards:
            p.unlink(missing_ok=True)


def finalize(out: Path, cfg: ExtractConfig, records: RecordList, done: dict[int, ShardFile],
             shards: int, description: dict[str, Any]) -> dict[str, Any]:
    """Write the index, errors table, description and SHA256SUMS; return the counts."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _remove_beyond(out, shards)
    cols: dict[str, list[Any]] = {k: [] for k in ("study_id", "subject_id", "path", "shard",
                                                  "row", "stored_hz", "resampled")}
    errors: list[dict[str, str]] = []
    resampled: dict[str, int] = {}
    for s in range(shards):
        f = done[s]
        errors.extend(f.errors)
        for j, (r, hz) in enumerate(zip(f.rows, f.stored_fs, strict=True)):
            cols["study_id"].append(records.study_id[r])
            cols["subject_id"].append(records.subject_id[r])
            cols["path"].append(records.path[r])
            cols["shard"].append(s)
            cols["row"].append(j)
            cols["stored_hz"].append(float(hz))
            cols["resampled"].append(hz != 500)
            if hz != 500:
                resampled[f"{hz:g} Hz"] = resampled.get(f"{hz:g} Hz", 0) + 1
    table = pa.table({k: pa.array(v, type=t) for (k, v), t in zip(cols.items(), (
        pa.string(), pa.string(), pa.string(), pa.int32(), pa.int32(), pa.float64(),
        pa.bool_()), strict=True)})
    with atomic.atomic_path(out / "index.parquet") as tmp:
        pq.write_table(table, tmp, write_statistics=False)
    atomic.write_text(out / "errors.csv", errors_csv(errors))
    counts = {"records": len(records), "good": len(cols["study_id"]), "bad": len(errors),
              "shards": shards, "resampled_to_500_hz": resampled}
    atomic.write_json(out / "extract.json", {**description, **counts})
    files = sorted([f"{SHARDS}/{shard_stem(s)}.{ext}" for s in range(shards)
                    for ext in ("parquet", "json")]
                   + ["index.parquet", "errors.csv", "extract.json"])
    lines = [f"{sha256_file(out / rel)[0]}  {rel}" for rel in files]
    atomic.write_text(out / MANIFEST, "\n".join(lines) + "\n")
    return counts
