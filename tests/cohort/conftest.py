"""Shared fixtures for the cohort tests: small configs, manifests and corrupted copies."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from rightsize.cohort.build import build_manifest
from rightsize.cohort.config import CohortConfig
from rightsize.params import parse

SMALL: dict[str, Any] = {
    "source": "synthetic", "seed": 0, "n_subjects": 120,
    "splits": {"train": 80, "val": 16, "test": 24},
    "echo_dim": 16, "ecg_dim": 12, "max_clips": 4, "row_group_size": 32, "noise_sd": 5.0,
    "missing_echo_frac": 0.1, "missing_ecg_frac": 0.1,
}


def _small_config(**overrides: Any) -> CohortConfig:
    return parse(CohortConfig, {**SMALL, **overrides}, "cohort")


@pytest.fixture
def small_config() -> Callable[..., CohortConfig]:
    """Factory: a small synthetic config (120 subjects, 4 clips x 16 dims) with overrides."""
    return _small_config


@pytest.fixture
def small_block() -> dict[str, Any]:
    """The small config as a params.yaml block (a fresh copy)."""
    return {**SMALL, "splits": dict(SMALL["splits"])}


@pytest.fixture
def small_manifest(tmp_path: Path) -> Path:
    """A valid small manifest written by the real builder."""
    out = tmp_path / "manifest.parquet"
    build_manifest(_small_config(), out)
    return out


@pytest.fixture
def rewrite(tmp_path: Path) -> Callable[[Path, Callable[[pa.Table], pa.Table]], Path]:
    """Copy a manifest through ``mutate(table)``, keeping its metadata (one row group)."""
    def _rewrite(src: Path, mutate: Callable[[pa.Table], pa.Table]) -> Path:
        table = pq.read_table(src)
        meta = table.schema.metadata
        out = tmp_path / "corrupt.parquet"
        pq.write_table(mutate(table).replace_schema_metadata(meta), out)
        return out
    return _rewrite


@pytest.fixture
def params_file(tmp_path: Path) -> Callable[[dict[str, Any]], Path]:
    """Write a params.yaml holding ``{"cohort": block}``; returns its path."""
    def _write(block: dict[str, Any]) -> Path:
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump({"cohort": block}), encoding="utf-8")
        return path
    return _write
