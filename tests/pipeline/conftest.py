"""Fixtures for the end-to-end DVC tests: one tiny project, built once per session.

``built_project`` copies the repository's git-visible files into a temporary directory,
shrinks params.yaml to a tiny geometry, makes it a git repo with a local DVC remote,
runs ``dvc repro`` once and commits the result. Tests take ``project`` (a fresh copy of
it, so they can change params, run experiments or kill things) or read ``built_project``
directly when they only look. Every subprocess runs with ``pipeline_env`` (tests/conftest.py):
the venv's bin first on PATH (so DVC stages find ``rightsize``), a throwaway HOME, no analytics.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# pytest runs with --import-mode=importlib (no sys.path changes): make this folder's helper
# modules (pipeline_helpers, sshd) importable by the test modules beside them.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipeline_helpers import (  # noqa: E402
    REPO,
    TINY_PARAMS,
    commit_all,
    copy_project,
    dvc,
    git,
    set_params,
)


def _source_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode()
    return sorted({f for f in out.split("\0") if f})


@pytest.fixture(scope="session")
def built_project(tmp_path_factory: pytest.TempPathFactory,
                  pipeline_env: dict[str, str]) -> Path:
    """The tiny project after one ``dvc repro``, committed; treat as read-only."""
    root = tmp_path_factory.mktemp("built")
    proj = root / "proj"
    for rel in _source_files():
        src = REPO / rel
        if not src.is_file():
            continue  # deleted in the working tree
        dst = proj / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    set_params(proj, TINY_PARAMS)
    env = pipeline_env
    git(proj, env, "init", "-q")
    store = root / "dvc-store"
    store.mkdir()
    dvc(proj, env, "remote", "add", "-d", "-f", "local", str(store))
    commit_all(proj, env, "tiny project")
    dvc(proj, env, "repro")
    commit_all(proj, env, "dvc repro")
    return proj


@pytest.fixture
def project(tmp_path: Path, built_project: Path) -> Path:
    """A private copy of the built project (same local remote store)."""
    return copy_project(built_project, tmp_path / "proj")
