"""Fixtures for the CLI tests (helpers live in ``cli_helpers`` beside this file)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

# pytest runs with --import-mode=importlib (no sys.path changes): make cli_helpers importable.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cli_helpers import (  # noqa: E402
    SMALL_COHORT,
    SMALL_EVALUATE,
    SMALL_TRAIN,
    Result,
    run_cli,
    tty_stderr_cm,
)


@pytest.fixture(scope="session")
def cli() -> Callable[..., Result]:
    """``cli(args, tty=True|False, cwd=None)`` -> :class:`Result`."""
    return run_cli


@pytest.fixture
def tty_stderr(monkeypatch: pytest.MonkeyPatch) -> Callable[..., contextlib.AbstractContextManager]:
    """``with tty_stderr() as cap: ...`` -- this process's stderr is a real pty meanwhile."""
    return lambda cols=160: tty_stderr_cm(monkeypatch, cols)


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic demo run (8 event files + SHA256SUMS), written once per session."""
    from rightsize.cli import main

    dest = tmp_path_factory.mktemp("demo") / "demo"
    assert main(["demo-run", str(dest), "--seed", "0", "-q"]) == 0
    return dest


@pytest.fixture(scope="session")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a tiny params.yaml, its manifest and a trained ``fused`` model."""
    from rightsize.cli import main

    root = tmp_path_factory.mktemp("work")
    (root / "params.yaml").write_text(yaml.safe_dump(
        {"cohort": SMALL_COHORT, "train": SMALL_TRAIN, "evaluate": SMALL_EVALUATE}))
    assert main(["cohort", "--params", str(root / "params.yaml"),
                 "--out", str(root / "manifest.parquet"), "-q"]) == 0
    assert main(["train", "fused", "--params", str(root / "params.yaml"),
                 "--manifest", str(root / "manifest.parquet"), "--out", str(root / "fused"),
                 "-q"]) == 0
    return root
