"""Run ``rightsize ARGS`` with a fault at its N-th file-system write under ROOT (test helper).

    python killer.py ROOT MODE N LOG -- ARGS...

MODE ``count`` runs to the end and writes one line per counted write to LOG. MODE ``kill``
sends this process SIGKILL at counted write N (before it happens); MODE ``int`` and
``term`` send SIGINT or SIGTERM there (rightsize unwinds right after the write). A write is an audit
event (``sys.addaudithook``): ``open`` with a writing mode or flags, ``os.rename`` (also
``os.replace``), ``os.remove``, ``os.rmdir``, ``os.mkdir``, ``os.link``, ``os.chmod``,
``shutil.rmtree``, ``tempfile.mkdtemp``/``mkstemp``, on a path under ROOT (or relative: the
steps of an ``rmtree``). Bytecode caches are off so imports write nothing.
"""

from __future__ import annotations

import os
import signal
import sys

sys.dont_write_bytecode = True
ROOT, MODE, N, LOG = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ARGS = sys.argv[sys.argv.index("--") + 1:]
WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
PATH_EVENTS = {"os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.link", "os.chmod",
               "shutil.rmtree", "tempfile.mkdtemp", "tempfile.mkstemp", "os.truncate"}
SIGNALS = {"kill": signal.SIGKILL, "int": signal.SIGINT, "term": signal.SIGTERM}
seen: list[str] = []
done = False


def _under(path: object) -> bool:
    if isinstance(path, int):
        return False
    text = os.fsdecode(path)  # type: ignore[arg-type]
    return not os.path.isabs(text) or text.startswith(ROOT)


def _counted(event: str, args: tuple) -> bool:
    if event == "open":
        path, mode, flags = args
        writing = any(c in mode for c in "wax+") if isinstance(mode, str) else \
            bool(flags & WRITING)
        return writing and _under(path)
    return event in PATH_EVENTS and _under(args[0])


def _hook(event: str, args: tuple) -> None:
    if done or not _counted(event, args):
        return
    dst = f" -> {os.fsdecode(args[1])}" if event == "os.rename" else ""
    seen.append(f"{event} {os.fsdecode(args[0])}{dst}")
    if MODE != "count" and len(seen) == N:
        os.kill(os.getpid(), SIGNALS[MODE])


sys.addaudithook(_hook)

from rightsize.cli import main  # noqa: E402 - after the hook, so imports are watched too

rc = main(ARGS)
done = True
if MODE == "count":
    with open(LOG, "w") as fh:
        fh.write("\n".join(seen) + "\n")
sys.stdout.flush()
sys.stderr.flush()
os._exit(rc)
