"""Fixtures every test folder may use."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# tests/ holds helpers every folder shares (no_dac) and the CI skip check (ci_skips), whose
# hooks run from here (a conftest's pytest_plugins is refused below the rootdir)
sys.path.insert(0, str(Path(__file__).resolve().parent))
from ci_skips import (  # noqa: E402, F401
    pytest_collectreport,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_terminal_summary,
)


@pytest.fixture(autouse=True)
def _no_progress_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see the default progress interval, whatever the caller's shell sets."""
    monkeypatch.delenv("RIGHTSIZE_PROGRESS_S", raising=False)


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
