"""Fixtures for the end-to-end DVC tests: one tiny project, built once per session.

``built_project`` copies the repository's git-visible files into a temporary directory,
shrinks params.yaml to a tiny geometry, makes it a git repo with a local DVC remote,
runs ``dvc repro`` once and commits the result. Tests take ``project`` (a fresh copy of
it, so they can change params, run experiments or kill things) or read ``built_project``
directly when they only look. Every subprocess runs with ``pipeline_env`` (tests/conftest.py):
the venv's bin first on PATH (so DVC stages find ``rightsize``), a throwaway HOME, no analytics.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# pytest runs with --import-mode=importlib (no sys.path changes): make this folder's helper
# modules (pipeline_helpers, sshd) importable by the test modules beside them.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipeline_helpers import (  # noqa: E402
    commit_all,
    copy_project,
    dvc,
    tiny_clone,
)


@pytest.fixture(scope="session")
def built_project(tmp_path_factory: pytest.TempPathFactory,
                  pipeline_env: dict[str, str]) -> Path:
    """The tiny project after one ``dvc repro``, committed; treat as read-only."""
    proj = tiny_clone(tmp_path_factory.mktemp("built"), pipeline_env)
    dvc(proj, pipeline_env, "repro")
    commit_all(proj, pipeline_env, "dvc repro")
    return proj


@pytest.fixture(scope="session")
def shared_dvc_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DVC cache folder projects of one session may share (run-cache hits across them)."""
    return tmp_path_factory.mktemp("dvc-cache")


@pytest.fixture
def project(tmp_path: Path, built_project: Path) -> Path:
    """A private copy of the built project (same local remote store)."""
    return copy_project(built_project, tmp_path / "proj")
