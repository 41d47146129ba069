"""Fixtures for the end-to-end DVC tests: one tiny project, built once per session.

``built_project`` copies the repository's git-visible files into a temporary directory,
shrinks params.yaml to a tiny geometry, makes it a git repo with a local DVC remote,
runs ``dvc repro`` once and commits the result. Tests take ``project`` (a fresh copy of
it, so they can change params, run experiments or kill things) or read ``built_project``
directly when they only look. Every subprocess runs with ``pipeline_env``: the venv's
bin first on PATH (so DVC stages find ``rightsize``), a throwaway HOME, no analytics.
"""

from __future__ import annotations

import os
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


@pytest.fixture(scope="session")
def pipeline_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment for git/dvc subprocesses: venv bin on PATH, throwaway HOME and configs."""
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = rightsize tests\n\temail = tests@rightsize.invalid\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
        "[advice]\n\tdetachedHead = false\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "DVC_"))}
    bin_dir = str(Path(sys.executable).parent)
    env.update({
        "PATH": bin_dir + os.pathsep + env.get("PATH", ""),
        "HOME": str(home),
        "DVC_NO_ANALYTICS": "1",
        "DVC_STUDIO_OFFLINE": "1",
        "DVC_SITE_CACHE_DIR": str(tmp_path_factory.mktemp("dvc-site-cache")),
        "DVC_GLOBAL_CONFIG_DIR": str(home / ".config" / "dvc"),
        "DVC_SYSTEM_CONFIG_DIR": str(home / ".config" / "dvc-system"),
        "GIT_TERMINAL_PROMPT": "0",
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": "1",
    })
    return env


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
