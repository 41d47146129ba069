"""Records per second per CPU core of one function over a set of files: the timing loop the
encoder bench's preprocessing (ECG records) and decoding (echo videos) share."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def per_file_rate(fn: Callable[[Path], Any], paths: Sequence[Path], repeats: int,
                  file_bytes: int) -> dict[str, Any]:
    """Call ``fn`` once on ``paths[0]`` (imports, warm-up), then time ``repeats`` passes over
    every path in this one thread; the median pass gives ``records_per_s_per_core``, the
    slowest and fastest its range."""
    fn(paths[0])
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for p in paths:
            fn(p)
        seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    records = len(paths)
    return {
        "records": records, "repeats": repeats, "record_file_bytes": file_bytes,
        "median_s": median, "min_s": min(seconds), "max_s": max(seconds),
        "records_per_s_per_core": records / median,
        "records_per_s_per_core_min": records / max(seconds),
        "records_per_s_per_core_max": records / min(seconds),
    }
