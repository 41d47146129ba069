"""Run a check as this user with file permissions enforced, even when that user is root.

Root ignores file and directory modes through two capabilities, ``CAP_DAC_OVERRIDE`` and
``CAP_DAC_READ_SEARCH``. Permission tests drop exactly those two for the program under
test (``setpriv`` from util-linux, else ``capsh`` from libcap2-bin) instead of switching to
another user: the virtual environment and the clone stay where they are, readable or not by
others (a clone under a mode-700 ``mktemp -d`` folder keeps every other user out).

:func:`prefix` is the command prefix (``None`` when not root: modes apply already);
:func:`enforced` is the prefix or a skip naming why not; :func:`run_python` runs a snippet of
Python under it, for checks made in-process.
Where neither tool exists the tests skip with :data:`MISSING`, which names the package
``.ci/run`` installs, so CI never skips them (tests/ci_skips.py fails a CI run that does).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CAPS = ("dac_override", "dac_read_search")
MISSING = ("running as root without setpriv (util-linux) or capsh (libcap2-bin) to drop "
           "CAP_DAC_OVERRIDE: root would ignore the permissions under test (.ci/run installs "
           "them)")


def _candidates() -> list[list[str]]:
    drop = ",".join(f"-{c}" for c in CAPS)
    found = []
    if shutil.which("setpriv"):
        found.append(["setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}"])
    if shutil.which("capsh"):
        found.append(["capsh", "--drop=" + ",".join(f"cap_{c}" for c in CAPS), "--", "-c",
                      'exec "$@"', "capsh"])
    return found


def _enforces(cmd: list[str]) -> bool:
    """True when a file of mode 000 is unreadable under ``cmd`` (the capabilities are gone)."""
    with tempfile.NamedTemporaryFile() as f:
        os.chmod(f.name, 0)
        proc = subprocess.run([*cmd, sys.executable, "-c",
                               "import sys; open(sys.argv[1]).close()", f.name],
                              capture_output=True, text=True, timeout=60, check=False)
    return proc.returncode != 0 and "PermissionError" in proc.stderr


@functools.cache
def prefix() -> list[str] | None:
    """The command prefix that enforces file permissions on what it runs; ``None`` when not
    root. Raises ``LookupError`` with the reason when root and no tool can drop the
    capabilities (or dropping them does not take effect here)."""
    if os.geteuid() != 0:
        return None
    tools = _candidates()
    if not tools:
        raise LookupError(MISSING)
    for cmd in tools:
        if _enforces(cmd):
            return cmd
    raise LookupError(f"running as root and {', '.join(c[0] for c in tools)} could not drop "
                      "CAP_DAC_OVERRIDE here (no CAP_SETPCAP in this container?): root "
                      "would ignore the permissions under test")


def enforced() -> list[str] | None:
    """:func:`prefix`, or skip the calling test with the reason it cannot be had here."""
    import pytest

    try:
        return prefix()
    except LookupError as exc:
        pytest.skip(str(exc))


def run_python(code: str, *args: str | Path, cwd: Path | None = None
               ) -> subprocess.CompletedProcess[str]:
    """``python -c code args...`` with permissions enforced (this interpreter, this venv);
    skips the calling test when they cannot be enforced here."""
    return subprocess.run([*(enforced() or []), sys.executable, "-c", code, *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
