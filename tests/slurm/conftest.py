"""The one-node Slurm cluster the slurm executor's tests submit to (``.ci/slurm-up``).

Tests that need it take the ``slurm_cluster`` fixture: it skips, naming the reason, when
``sinfo`` reaches no controller or no idle node, except under ``CI=true``, where a broken
cluster must fail the run instead of hiding behind a skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def cluster_problem() -> str | None:
    """Why no job could run here now (None: a controller answers and a node is usable)."""
    if shutil.which("sinfo") is None:
        return "sinfo not on PATH (apt-get install slurm-wlm munge; bash .ci/slurm-up)"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                              timeout=20, check=False)
    except subprocess.TimeoutExpired:
        return "sinfo: no answer from slurmctld within 20 s (start it: bash .ci/slurm-up)"
    if proc.returncode != 0:
        msg = " ".join(proc.stderr.split()) or f"exit {proc.returncode}"
        return f"sinfo cannot reach a controller: {msg} (start it: bash .ci/slurm-up)"
    states = proc.stdout.split()
    if not any(s.rstrip("*~#") in ("idle", "mixed", "allocated") for s in states):
        return f"no usable Slurm node (sinfo states: {states or 'none'}; bash .ci/slurm-up)"
    return None


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """A reachable controller with a usable node, or skip (fail under CI=true)."""
    problem = cluster_problem()
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and the Slurm cluster is not usable: {problem}")
    pytest.skip(problem)
