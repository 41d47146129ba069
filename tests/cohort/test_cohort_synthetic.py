"""Synthetic source: determinism, geometry, prevalence and the planted cross-modal signal."""

from __future__ import annotations

import filecmp
import math
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from rightsize.cohort.build import build_manifest
from rightsize.cohort.config import CohortConfig
from rightsize.cohort.load_manifest import load_arrays
from rightsize.cohort.synthetic import LVEF_RANGE, SyntheticCohort
from rightsize.params import parse


def test_same_seed_same_bytes_other_seed_differs(tmp_path: Path, small_config) -> None:
    a, b, c = (tmp_path / f"{x}.parquet" for x in "abc")
    build_manifest(small_config(), a)
    build_manifest(small_config(), b)
    build_manifest(small_config(seed=1), c)
    assert filecmp.cmp(a, b, shallow=False)
    xa, xc = load_arrays(a), load_arrays(c)
    assert not np.array_equal(xa.lvef, xc.lvef)
    assert not np.array_equal(xa.echo, xc.echo)
    assert not np.array_equal(xa.split, xc.split)


def test_row_group_size_changes_layout_not_values(tmp_path: Path, small_config) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    build_manifest(small_config(row_group_size=32), a)
    build_manifest(small_config(row_group_size=7), b)
    assert pq.ParquetFile(a).num_row_groups == 4
    assert pq.ParquetFile(b).num_row_groups == 18
    xa, xb = load_arrays(a), load_arrays(b)
    for name in ("lvef", "echo", "ecg", "n_clips", "split", "has_echo", "has_ecg"):
        assert np.array_equal(getattr(xa, name), getattr(xb, name)), name


def test_geometry_splits_padding_and_missing(tmp_path: Path, small_config) -> None:
    out = tmp_path / "m.parquet"
    build_manifest(small_config(missing_echo_frac=0.2, missing_ecg_frac=0.2), out)
    x = load_arrays(out)
    assert [len(x.index(s)) for s in ("train", "val", "test")] == [80, 16, 24]
    assert len(set(x.subject_id)) == 120
    assert x.n_clips.min() >= 0 and x.n_clips.max() <= 4
    assert np.array_equal(x.has_echo, x.n_clips > 0)
    assert 0 < (~x.has_echo).sum() < 60 and 0 < (~x.has_ecg).sum() < 60
    assert not x.echo[~x.clip_mask].any()          # padded clips and missing echo: zeros
    assert not x.ecg[~x.has_ecg].any()
    assert (np.abs(x.echo[x.clip_mask]).sum(axis=1) > 0).all()
    assert (x.lvef >= LVEF_RANGE[0]).all() and (x.lvef <= LVEF_RANGE[1]).all()
    assert np.array_equal(x.ef_le_40, x.lvef <= 40.0)


def test_default_cohort_prevalence_and_perfect_mae(tmp_path: Path) -> None:
    cfg = parse(CohortConfig, {}, "cohort")
    out = tmp_path / "m.parquet"
    t0 = time.perf_counter()
    report = build_manifest(cfg, out)
    elapsed = time.perf_counter() - t0
    meta = report.metadata
    assert report.summary.n_rows == 1208
    assert 0.11 <= meta["ef_le_40_prevalence"] <= 0.19, meta["ef_le_40_prevalence"]
    assert meta["perfect_model_mae"] == pytest.approx(5.0 * math.sqrt(2 / math.pi))
    assert meta["perfect_model_mae_test"] == pytest.approx(meta["perfect_model_mae"], rel=0.2)
    assert pq.read_schema(out).field("echo").type.list_size == 8 * 1024
    print(f"default cohort built in {elapsed:.2f}s")   # speed is benchmarked, not asserted


def test_zero_noise_means_lvef_is_the_signal(small_config) -> None:
    cohort = SyntheticCohort(small_config(noise_sd=0.0))
    expected = np.clip(cohort.latents.signal, *LVEF_RANGE).astype(np.float32)
    assert np.array_equal(cohort.lvef, expected)
    assert cohort.metadata()["perfect_model_mae"] == 0.0


def test_matched_clip_key_equals_ecg_query(small_config) -> None:
    lat = SyntheticCohort(small_config(max_clips=6)).latents
    rows = np.arange(len(lat.query))
    assert np.array_equal(lat.keys[rows, lat.matched], lat.query)
    others = lat.keys != lat.query[:, None]
    assert (others.sum(axis=1) == 5).all()          # exactly one clip per study matches


def _fit_mse(x: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray) -> float:
    design = np.hstack([x, np.ones((len(x), 1), dtype=x.dtype)]).astype(np.float64)
    coef, *_ = np.linalg.lstsq(design[train], y[train], rcond=None)
    return float(np.mean((design[test] @ coef - y[test]) ** 2))


def _pooled_vs_oracle(tmp_path: Path, small_config, max_clips: int) -> tuple[float, float]:
    # Dimensions large enough that one clip vector pins down its latents (SNR ~ dim/latents).
    cfg = small_config(n_subjects=1500, splits={"train": 1200, "val": 100, "test": 200},
                       echo_dim=128, ecg_dim=64, max_clips=max_clips, noise_sd=2.0,
                       missing_echo_frac=0.0, missing_ecg_frac=0.0, row_group_size=128)
    out = tmp_path / f"m{max_clips}.parquet"
    build_manifest(cfg, out)
    x = load_arrays(out)
    matched = SyntheticCohort(cfg).latents.matched
    pooled = x.echo.sum(axis=1) / x.n_clips[:, None]
    tr, te = x.index("train"), x.index("test")
    base = np.hstack([pooled, x.ecg])
    oracle = np.hstack([base, x.echo[np.arange(len(x.lvef)), matched]])
    y = x.lvef.astype(np.float64)
    return _fit_mse(base, y, tr, te), _fit_mse(oracle, y, tr, te)


def test_matched_clip_carries_signal_pooling_cannot_use(tmp_path: Path, small_config) -> None:
    pooled, oracle = _pooled_vs_oracle(tmp_path, small_config, max_clips=6)
    assert oracle < 0.6 * pooled, (pooled, oracle)


def test_single_clip_has_no_cross_clip_gain(tmp_path: Path, small_config) -> None:
    pooled, oracle = _pooled_vs_oracle(tmp_path, small_config, max_clips=1)
    assert oracle == pytest.approx(pooled, rel=1e-6), (pooled, oracle)   # the one clip is j*


@pytest.mark.parametrize("ecg_tokens", [1, 8])
def test_ecg_query_selects_matched_clip_from_embeddings(tmp_path: Path, small_config,
                                                        ecg_tokens: int) -> None:
    """Linear read-outs of the ECG query and the clip keys find j* (what attention needs);
    with ECG tokens, the query is read from their mean (what ECG->echo attention uses)."""
    cfg = small_config(n_subjects=600, splits={"train": 400, "val": 50, "test": 150},
                       echo_dim=128, ecg_dim=64, max_clips=6, missing_echo_frac=0.0,
                       missing_ecg_frac=0.0, row_group_size=64, ecg_tokens=ecg_tokens)
    out = tmp_path / "m.parquet"
    build_manifest(cfg, out)
    x = load_arrays(out)
    ecg = x.ecg if ecg_tokens == 1 else x.ecg.mean(axis=1)
    lat = SyntheticCohort(cfg).latents
    k = cfg.n_views
    tr, te = x.index("train"), x.index("test")
    mask = x.clip_mask
    onehot = np.eye(k)

    def with_1(a: np.ndarray) -> np.ndarray:
        return np.concatenate([a, np.ones((*a.shape[:-1], 1), dtype=a.dtype)], axis=-1)

    q_dec, *_ = np.linalg.lstsq(with_1(ecg[tr]), onehot[lat.query[tr]], rcond=None)
    tokens = with_1(x.echo[tr][mask[tr]])
    k_dec, *_ = np.linalg.lstsq(tokens, onehot[lat.keys[tr][mask[tr]]], rcond=None)
    query = with_1(ecg[te]) @ q_dec                            # (t, k)
    keys = with_1(x.echo[te]) @ k_dec                          # (t, c, k)
    score = np.where(mask[te], np.einsum("tk,tck->tc", query, keys), -np.inf)
    multi = x.n_clips[te] >= 2
    hit = (score.argmax(axis=1) == lat.matched[te])[multi]
    chance = np.mean(1.0 / x.n_clips[te][multi])
    assert hit.mean() > 0.9 > chance + 0.4, (hit.mean(), chance)
