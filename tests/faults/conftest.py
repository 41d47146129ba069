"""Fixtures for the fault-injection suite (helpers live in ``fault_helpers`` beside this).

Every case runs ``rightsize`` in a subprocess, as a user would, in a fresh sandbox folder.
Permission faults run it with file permissions enforced (as root: without the capabilities
that ignore them, ``tests/no_dac.py``).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

# pytest runs with --import-mode=importlib (no sys.path changes): make fault_helpers importable.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fault_helpers import extract_corpus, rightsize  # noqa: E402

import no_dac  # noqa: E402
from rightsize.probe_names import PROBES

# The tiny geometry the CLI tests use: seconds per probe on one thread.
TINY_COHORT = {
    "source": "synthetic", "seed": 0, "n_subjects": 120,
    "splits": {"train": 80, "val": 16, "test": 24},
    "echo_dim": 16, "ecg_dim": 12, "max_clips": 3, "row_group_size": 32,
}
TINY_TRAIN = {
    "probes": list(PROBES), "seed": 0, "seeds": 3, "threads": 1,
    "device": "cpu", "batch_size": 32, "lr": 0.003, "pca_rank": 8,
    "ecg": {"alphas": [10.0, 1000.0], "Cs": [1.0]},
    "echo": {"epochs": 2}, "concat": {"epochs": 3, "hidden": 8},
    "fused": {"epochs": 2, "fusion_dim": 8, "heads": 2, "hidden": 8},
}
TINY_EVALUATE = {"seed": 0, "n_bootstrap": 50, "n_bootstrap_missing": 20, "ci": 0.9}


@pytest.fixture
def sandbox() -> Iterator[Path]:
    """A fresh folder every user can write (removed afterwards, permissions restored)."""
    root = Path(tempfile.mkdtemp(prefix="rightsize-faults-"))
    os.chmod(root, 0o777)
    try:
        yield root
    finally:
        for dirpath, dirs, _files in os.walk(root):
            for d in dirs:
                p = Path(dirpath, d)
                if not p.is_symlink():
                    os.chmod(p, 0o755)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def as_user() -> list[str] | None:
    """The command prefix that runs a program with file permissions enforced (None when we
    are not root); skips the test, with the reason, when they cannot be enforced here."""
    return no_dac.enforced()


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a tiny params.yaml and its manifest (built once per session)."""
    root = tmp_path_factory.mktemp("faults_project")
    (root / "params.yaml").write_text(yaml.safe_dump(
        {"cohort": TINY_COHORT, "train": TINY_TRAIN, "evaluate": TINY_EVALUATE}))
    res = rightsize(["cohort", "--params", root / "params.yaml",
                     "--out", root / "manifest.parquet", "-q"])
    assert res.rc == 0, res.err
    return root


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with params.yaml, a 4-record synthetic corpus (``corpus/``) and one complete
    extraction of it (``ex/``), built once per session (``fault_helpers.extract_corpus``)."""
    root = extract_corpus(tmp_path_factory.mktemp("extract_project"))
    res = rightsize(["extract", "--params", "params.yaml", "--out", "ex", "-q"], cwd=root)
    assert res.rc == 0, res.err
    return root
