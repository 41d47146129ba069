"""``load_arrays``: the CohortArrays contract (shapes, dtypes, values) the probes code against."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

import rightsize.cohort as cohort_pkg
from rightsize.cohort.arrays import SPLITS, CohortArrays
from rightsize.cohort.load_manifest import load_arrays


def test_shapes_and_dtypes(small_manifest: Path) -> None:
    x = load_arrays(small_manifest)
    assert isinstance(x, CohortArrays)
    n = 120
    assert x.subject_id.shape == (n,) and isinstance(x.subject_id[0], str)
    assert x.split.dtype == np.int8 and set(np.unique(x.split)) == {0, 1, 2}
    assert x.lvef.dtype == np.float32 and x.lvef.shape == (n,)
    assert x.ef_le_40.dtype == bool and x.has_echo.dtype == bool and x.has_ecg.dtype == bool
    assert x.echo.dtype == np.float32 and x.echo.shape == (n, 4, 16)
    assert x.echo.flags.c_contiguous and x.echo.flags.writeable
    assert x.ecg.dtype == np.float32 and x.ecg.shape == (n, 12)
    assert x.n_clips.dtype == np.int16
    assert x.clip_mask.shape == (n, 4)
    assert np.array_equal(x.clip_mask.sum(axis=1), x.n_clips)
    assert sum(len(x.index(s)) for s in SPLITS) == n
    assert x.metadata["source"] == "synthetic" and x.metadata["seed"] == 0
    assert x.metadata["perfect_model_mae"] > 0


def test_values_match_an_independent_parquet_read(small_manifest: Path) -> None:
    x = load_arrays(small_manifest)
    rows = pq.read_table(small_manifest).to_pylist()            # slow path, as an oracle
    for i in (0, 31, 32, 77, 119):                             # across row-group borders
        row = rows[i]
        assert x.subject_id[i] == row["subject_id"]
        assert SPLITS[x.split[i]] == row["split"]
        assert x.lvef[i] == np.float32(row["lvef"])
        assert x.n_clips[i] == row["n_clips"]
        assert np.array_equal(x.echo[i].reshape(-1), np.asarray(row["echo"], np.float32))
        assert np.array_equal(x.ecg[i], np.asarray(row["ecg"], np.float32))


def test_package_exports_are_lazy_and_work(small_manifest: Path) -> None:
    assert cohort_pkg.load_arrays is load_arrays
    assert cohort_pkg.validate_manifest(small_manifest).n_rows == 120


def test_string_codes_match_pyarrow_index_in() -> None:
    """The buffer-level split codes equal ``pyarrow.compute.index_in`` (the oracle) on
    sliced, chunked, null-bearing string and large-string columns, near misses included."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from rightsize.cohort.columns import string_codes

    pool = ["train", "val", "test", "tes", "testx", "", "Train", "val ", None, "trainval", "té"]
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(100):
        items = [pool[i] for i in rng.integers(0, len(pool), int(rng.integers(3, 40)))]
        for typ in (pa.string(), pa.large_string()):
            arr = pa.array(items, typ).slice(1, len(items) - 2)
            want = pc.index_in(arr, value_set=pa.array(list(SPLITS), pa.string())).to_pylist()
            want = np.array([-1 if v is None else v for v in want], dtype=np.int8)
            half = len(arr) // 2
            got = string_codes(pa.chunked_array([arr[:half], arr[half:]], typ), SPLITS)
            assert got.dtype == np.int8
            assert np.array_equal(got, want), items
            checked += int((want >= 0).sum())
    assert checked > 100                      # the columns did hold real split names
