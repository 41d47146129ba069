"""Under ``CI=true``, a skipped test fails the run unless CI cannot fix its reason.

Every skip reason is printed at the end of the run. A skip whose reason is in
:data:`CANNOT_FIX` (it depends on the runner's hardware or on a pinned library build, which
no install step changes) is allowed; any other skip (a missing tool, service, shared folder
or privilege that ``.ci/run`` provides) turns a passing run into exit 1, so a test that CI
should run cannot silently stop running. Loaded by tests/conftest.py as a plugin.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

#: Reason fragments of skips that CI cannot fix (hardware of the runner, library builds).
CANNOT_FIX = (
    "CUDA present",
    "a GPU is present",
    "this CPU lacks",
    "this CPU's torch kernels are",
    "this torch build has no oneDNN",
    "file bytes pinned for",
)

_SKIPS: list[tuple[str, str]] = []


def _on_ci() -> bool:
    return os.environ.get("CI") == "true"


def _reason(report: Any) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


def _record(report: Any) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _SKIPS.append((report.nodeid, _reason(report)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Note each skipped test (xfails are not skips)."""
    _record(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """Note each module skipped at collection."""
    _record(report)


def fixable(skips: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The skips whose reason is not one CI cannot fix."""
    return [(node, why) for node, why in skips if not any(c in why for c in CANNOT_FIX)]


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under CI=true, a run that passed but skipped a test CI could run exits 1."""
    if _on_ci() and fixable(_SKIPS) and exitstatus == 0:
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print every skip reason; under CI=true, say which ones fail the run."""
    if not _SKIPS:
        return
    tr = terminalreporter
    bad = set(fixable(_SKIPS)) if _on_ci() else set()
    tr.section(f"{len(_SKIPS)} skipped (reasons)")
    for node, why in _SKIPS:
        mark = "CI CAN FIX: " if (node, why) in bad else ""
        tr.write_line(f"{mark}{node}: {why}")
    if bad:
        tr.write_line(f"CI=true: {len(bad)} test(s) skipped for a reason CI can fix (install "
                      "the tool or service, or add the reason to tests/ci_skips.CANNOT_FIX "
                      "if no runner can): the run fails", red=True)
