"""Fixtures for the report tests (helpers live in ``report_fixtures``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# pytest imports test modules without changing sys.path: make report_fixtures importable.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from report_fixtures import Built, run_report, write_metrics, write_params  # noqa: E402


@pytest.fixture(scope="package")
def full_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """A report built once from a complete metrics tree (shared by read-only tests)."""
    root = tmp_path_factory.mktemp("full")
    write_metrics(root / "metrics")
    write_params(root / "params.yaml")
    built = run_report(root)
    assert built.code == 0, built.stderr
    return built
