"""Measure the disk a re-extraction writes to: token shards written, input files read back.

At ``sizing.disk.path``, in a temporary folder removed afterwards:

1. **Writes.** ``write_mb`` MB of float16 token states, in shards of ``shard_mb`` MB shaped
   ``(records, layers kept, tokens, hidden)`` as a re-extraction would write them (one
   ``.npy`` array per shard, or a parquet file of one ``fixed_size_list<halffloat>`` row per
   record), each file flushed and ``fsync``'d before its clock stops, the folder fsync'd at
   the end. The rate is array bytes per second (what the sizing multiplies), with the
   per-shard spread.
2. **Reads.** ``read_files`` files of one input record's size (a 120 kB WFDB ECG) written
   and fsync'd, dropped from the page cache with ``posix_fadvise(POSIX_FADV_DONTNEED)``
   (clean pages after fsync), then read back one after another. Where the call is missing
   the read is a warm-cache read, an upper bound, and says so.

This measures *this* machine's path; the machine that will run the job must be measured
there (``rightsize sizing`` run on it does it).
"""

from __future__ import annotations

import logging
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.errors import ParamsError

log = logging.getLogger(__name__)

MB = 1_000_000
_CHUNK = 1 << 22                     # random values generated per call (4 M)


def _fill_float16(n: int, seed: int = 0) -> np.ndarray:
    """``n`` random float16 values (standard normal, like hidden states), made chunkwise."""
    rng = np.random.default_rng(seed)
    out = np.empty(n, dtype=np.float16)
    for i in range(0, n, _CHUNK):
        j = min(n, i + _CHUNK)
        out[i:j] = rng.standard_normal(j - i, dtype=np.float32)
    return out


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_npy(path: Path, shard: np.ndarray) -> int:
    with open(path, "wb") as f:
        np.save(f, shard)
        f.flush()
        os.fsync(f.fileno())
    return path.stat().st_size


def _write_parquet(path: Path, shard: np.ndarray) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    per_record = int(np.prod(shard.shape[1:]))
    values = pa.array(shard.reshape(-1), type=pa.float16())
    table = pa.table({"tokens": pa.FixedSizeListArray.from_arrays(values, per_record)})
    with open(path, "wb") as f:
        pq.write_table(table, f)
        f.flush()
        os.fsync(f.fileno())
    return path.stat().st_size


WRITERS = {"npy": _write_npy, "parquet": _write_parquet}


def measure_writes(folder: Path, record_shape: tuple[int, ...], write_mb: int, shard_mb: int,
                   fmt: str) -> dict[str, Any]:
    """Write float16 shards of ``record_shape`` records into ``folder``; the fsync'd rate."""
    record_bytes = int(np.prod(record_shape)) * 2
    per_shard = max(1, shard_mb * MB // record_bytes)
    shards = max(1, round(write_mb * MB / (per_shard * record_bytes)))
    shard = _fill_float16(per_shard * int(np.prod(record_shape))).reshape(per_shard,
                                                                          *record_shape)
    write = WRITERS[fmt]
    seconds, file_bytes = [], 0
    start = time.perf_counter()
    for i in range(shards):
        t0 = time.perf_counter()
        file_bytes += write(folder / f"shard{i:04d}.{fmt}", shard)
        seconds.append(time.perf_counter() - t0)
    _fsync_dir(folder)
    total_s = time.perf_counter() - start
    array_bytes = shards * shard.nbytes
    rates = sorted(shard.nbytes / s for s in seconds)
    return {
        "format": fmt, "dtype": "float16", "record_shape": list(record_shape),
        "records_per_shard": per_shard, "shards": shards, "shard_bytes": shard.nbytes,
        "array_bytes": array_bytes, "file_bytes": file_bytes, "seconds": total_s,
        "bytes_per_s": array_bytes / total_s,
        "bytes_per_s_shard_median": statistics.median(rates),
        "bytes_per_s_shard_min": rates[0], "bytes_per_s_shard_max": rates[-1],
    }


def measure_reads(folder: Path, file_bytes: int, files: int) -> dict[str, Any]:
    """Write ``files`` files of ``file_bytes``, drop them from the page cache, read them."""
    rng = np.random.default_rng(1)
    payload = rng.integers(0, 256, size=file_bytes, dtype=np.uint8).tobytes()
    paths = []
    for i in range(files):
        p = folder / f"input{i:05d}.dat"
        with open(p, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        paths.append(p)
    dropped = hasattr(os, "posix_fadvise")
    if dropped:
        for p in paths:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    start = time.perf_counter()
    got = 0
    for p in paths:
        with open(p, "rb") as f:
            got += len(f.read())
    seconds = time.perf_counter() - start
    return {
        "files": files, "file_bytes": file_bytes, "bytes": got, "seconds": seconds,
        "bytes_per_s": got / seconds, "files_per_s": files / seconds,
        "page_cache": ("dropped before reading (posix_fadvise DONTNEED)" if dropped else
                       "NOT dropped (no posix_fadvise here): a warm read, an upper bound"),
    }


def measure_disk(path: str, record_shape: tuple[int, ...], write_mb: int, shard_mb: int,
                 fmt: str, input_file_bytes: int | None, read_files: int,
                 key: str = "sizing.disk") -> dict[str, Any]:
    """Free space, write rate and read rate measured at ``path`` (see the module doc).

    ``ParamsError`` naming ``<key>.path`` when it is not a writable directory, and naming
    ``<key>.write_mb`` when the test shards would not fit its free space.
    """
    base = Path(path)
    if not base.is_dir():
        raise ParamsError(f"{key}.path: {path} is not a directory")
    try:
        folder = Path(tempfile.mkdtemp(prefix=".rightsize-disk-", dir=base))
    except OSError as exc:
        raise ParamsError(f"{key}.path: {path} is not writable "
                          f"({exc.strerror or type(exc).__name__})") from None
    try:
        free = shutil.disk_usage(base).free
        need = write_mb * MB + read_files * (input_file_bytes or 0) + shard_mb * MB
        if need > free:
            raise ParamsError(f"{key}.write_mb: the {need / MB:,.0f} MB of test files do not "
                              f"fit the {free / MB:,.0f} MB free at {path}; lower it")
        write = measure_writes(folder, record_shape, write_mb, shard_mb, fmt)
        read = (measure_reads(folder, input_file_bytes, read_files)
                if input_file_bytes else None)
    except OSError as exc:
        raise ParamsError(f"{key}.path: writing test files under {path} failed "
                          f"({exc.strerror or type(exc).__name__})") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    log.info("disk at %s: write %.0f MB/s, read %s", path, write["bytes_per_s"] / MB,
             "-" if read is None else f"{read['bytes_per_s'] / MB:.0f} MB/s")
    return {"path": path, "free_bytes": free, "write": write, "read": read,
            "where": "this machine's path; measure the target machine's disk there "
                     "(run `rightsize sizing` on it)"}
