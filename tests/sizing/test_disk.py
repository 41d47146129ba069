"""The disk measurement: real npy and parquet shards written and fsync'd, inputs read back,
nothing left behind; a path that is not a writable directory is an error naming the key."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import no_dac
from rightsize.errors import ParamsError
from rightsize.sizing.disk import measure_disk, measure_reads, measure_writes

SHAPE = (4, 93, 768)                    # 4 layers x 93 tokens x 768, float16: 571,392 B


def test_npy_shards_are_float16_token_arrays(tmp_path: Path) -> None:
    out = measure_writes(tmp_path, SHAPE, write_mb=3, shard_mb=1, fmt="npy")
    assert out["records_per_shard"] == 1                 # 1 MB // 571 kB
    assert out["shards"] == 5 and out["array_bytes"] == 5 * 571_392      # round(3 MB / 571 kB)
    files = sorted(tmp_path.glob("shard*.npy"))
    assert len(files) == 5
    shard = np.load(files[0])
    assert shard.dtype == np.float16 and shard.shape == (1, *SHAPE)
    assert 0.9 < float(shard.astype(np.float32).std()) < 1.1       # not zeros
    assert out["file_bytes"] == sum(f.stat().st_size for f in files) > out["array_bytes"]
    assert out["bytes_per_s"] == pytest.approx(out["array_bytes"] / out["seconds"])
    assert out["bytes_per_s_shard_min"] <= out["bytes_per_s_shard_median"] \
        <= out["bytes_per_s_shard_max"]


def test_parquet_shards_hold_one_float16_row_per_record(tmp_path: Path) -> None:
    out = measure_writes(tmp_path, (2, 8, 16), write_mb=1, shard_mb=1, fmt="parquet")
    per_shard = 1_000_000 // (2 * 8 * 16 * 2)
    assert out["records_per_shard"] == per_shard and out["shards"] == 1
    table = pq.read_table(tmp_path / "shard0000.parquet")
    assert table.num_rows == per_shard
    assert table.schema.field("tokens").type == pa.list_(pa.float16(), 2 * 8 * 16)


def test_reads_come_back_whole(tmp_path: Path) -> None:
    out = measure_reads(tmp_path, 120_000, 7)
    assert out["bytes"] == 7 * 120_000 and out["files"] == 7
    assert out["bytes_per_s"] > 0 and out["files_per_s"] == pytest.approx(7 / out["seconds"])
    if hasattr(os, "posix_fadvise"):
        assert out["page_cache"].startswith("dropped before reading")


def test_measure_disk_cleans_up_and_says_where(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("x")
    out = measure_disk(str(tmp_path), SHAPE, 2, 1, "npy", 120_000, 5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    assert out["path"] == str(tmp_path) and out["free_bytes"] > 0
    assert out["write"]["shards"] == 4 and out["read"]["files"] == 5
    assert "measure the target machine's disk there" in out["where"]
    no_input = measure_disk(str(tmp_path), SHAPE, 1, 1, "npy", None, 5)
    assert no_input["read"] is None


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ParamsError, match=r"^sizing\.disk\.path: .*nope is not a directory$"):
        measure_disk(str(tmp_path / "nope"), SHAPE, 1, 1, "npy", None, 1)


def test_test_files_must_fit_the_free_space(tmp_path: Path) -> None:
    with pytest.raises(ParamsError, match=r"^sizing\.disk\.write_mb: the .* MB of test files "
                                          r"do not fit"):
        measure_disk(str(tmp_path), SHAPE, 10**12, 1, "npy", None, 1)


def test_read_only_directory_is_not_writable(tmp_path: Path) -> None:
    # checked in a subprocess with permissions enforced, root included (tests/no_dac.py)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        proc = no_dac.run_python(
            "import sys\n"
            "from rightsize.errors import ParamsError\n"
            "from rightsize.sizing.disk import measure_disk\n"
            "try:\n"
            f"    measure_disk(sys.argv[1], {SHAPE!r}, 1, 1, 'npy', None, 1)\n"
            "except ParamsError as exc:\n"
            "    print(exc)\n", ro)
        assert proc.returncode == 0, proc.stderr
        assert re.fullmatch(r"sizing\.disk\.path: .*ro is not writable.*\n", proc.stdout)
    finally:
        ro.chmod(0o755)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux /proc")
def test_a_directory_nobody_can_write_is_not_writable() -> None:
    # /proc refuses new files even for root: the check is the real mkdtemp, not os.access
    with pytest.raises(ParamsError, match=r"^sizing\.disk\.path: /proc/self is not writable"):
        measure_disk("/proc/self", SHAPE, 1, 1, "npy", None, 1)
