"""``data/cohort.truth.parquet``: the planted clip and ECG token per subject, and ``load_truth``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rightsize.cohort.build import build_manifest
from rightsize.cohort.load_manifest import load_arrays
from rightsize.cohort.synthetic import SyntheticCohort
from rightsize.cohort.truth import TRUTH_KEY, CohortTruth, load_truth
from rightsize.errors import DataError, InputError

from .test_cohort_files import files_config, write_inputs


def test_truth_rows_follow_the_manifest(tmp_path: Path, small_config) -> None:
    cfg = small_config(ecg_tokens=4)
    out, truth = tmp_path / "m.parquet", tmp_path / "truth.parquet"
    build_manifest(cfg, out, truth=truth)
    table = pq.read_table(truth)
    assert table.schema.field("matched_clip").type == pa.int16()
    assert table.schema.field("planted_ecg_token").type == pa.int16()
    assert json.loads(table.schema.metadata[TRUTH_KEY]) == {
        "ecg_tokens": 4, "ecg_events": 4, "ecg_event_leads": 12, "seed": 0,
        "source": "synthetic"}
    x, t = load_arrays(out), load_truth(truth)
    assert isinstance(t, CohortTruth) and t.ecg_tokens == 4
    assert np.array_equal(t.subject_id, x.subject_id) and np.array_equal(t.split, x.split)
    lat = SyntheticCohort(cfg).latents
    assert np.array_equal(t.matched_clip, np.where(x.n_clips > 0, lat.matched, -1))
    assert np.array_equal(t.planted_ecg_token, np.where(x.has_ecg, lat.tokens.planted, -1))
    assert (t.planted_ecg_token[x.has_ecg] >= 0).all() and (t.planted_ecg_token < 4).all()
    order = np.arange(len(x.subject_id))[::-1]
    flipped = t.aligned(x.subject_id[order])
    assert np.array_equal(flipped.planted_ecg_token, t.planted_ecg_token[order])
    assert t.aligned(x.subject_id) is t
    with pytest.raises(DataError, match="truth file has no row for subject S99999"):
        t.aligned(np.array(["S99999"], dtype=object))


def test_pooled_truth_has_clips_but_no_tokens(tmp_path: Path, small_config) -> None:
    truth = tmp_path / "truth.parquet"
    build_manifest(small_config(), tmp_path / "m.parquet", truth=truth)
    table = pq.read_table(truth)
    assert set(table.column("planted_ecg_token").to_pylist()) == {-1}
    assert max(table.column("matched_clip").to_pylist()) >= 1
    assert load_truth(truth) is None


def _rewrite(dst: Path, table: pa.Table) -> Path:
    pq.write_table(table, dst)
    return dst


def test_bad_truth_files(tmp_path: Path, small_config) -> None:
    good = tmp_path / "truth.parquet"
    build_manifest(small_config(ecg_tokens=3), tmp_path / "m.parquet", truth=good)
    table = pq.read_table(good)
    with pytest.raises(InputError, match="truth file not found"):
        load_truth(tmp_path / "absent.parquet")
    bad = _rewrite(tmp_path / "a.parquet", table.replace_schema_metadata(None))
    with pytest.raises(DataError, match="not a rightsize truth file"):
        load_truth(bad)
    bad = _rewrite(tmp_path / "b.parquet", table.drop_columns(["matched_clip"]))
    with pytest.raises(DataError, match="b.parquet: missing column matched_clip"):
        load_truth(bad)
    planted = table.column("planted_ecg_token").to_numpy().copy()
    planted[5] = 3
    bad = _rewrite(tmp_path / "c.parquet", table.set_column(
        3, "planted_ecg_token", pa.array(planted)))
    with pytest.raises(DataError, match="column planted_ecg_token: 3 at row 5 is not below "
                                        "ecg_tokens = 3"):
        load_truth(bad)


def test_failed_build_writes_neither_file(tmp_path: Path) -> None:
    files = write_inputs(tmp_path, ecg={"P01": [float("nan")] * 5})
    out, truth = tmp_path / "m.parquet", tmp_path / "truth.parquet"
    with pytest.raises(DataError, match="non-finite value for subject P01"):
        build_manifest(files_config(files), out, truth=truth)
    assert not out.exists() and not truth.exists()
    assert not list(tmp_path.glob(".*.tmp"))
