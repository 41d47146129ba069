"""One configuration at a time in an output folder, and only into an extraction folder.

:func:`check_out_folder` refuses an ``--out`` that holds anything ``extract`` does not write
(as ``rescue`` refuses a folder that is not an earlier rescue): its files would be listed in,
or replaced beside, the extraction's ``SHA256SUMS``.

:class:`RunLock` is an ``flock`` on the output folder plus ``.extract-run.json``, which names
the configuration running there (and who runs it) while any run holds the lock. Runs of one
configuration share it (the tasks of one Slurm array write disjoint shards); a run of another
configuration is refused, exit 2 naming the running one, before it touches a file. The last
run to let go removes ``.extract-run.json``. Where the file system has no locks this warns
and goes on unlocked.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import socket
import time
from pathlib import Path
from typing import Any

from rightsize.errors import InputError

log = logging.getLogger(__name__)

RUN_FILE = ".extract-run.json"
#: What ``extract`` writes into ``--out`` (temporary files of atomic writes aside; ``slurm``:
#: the Slurm executor's job script and task logs).
OWN = frozenset({"shards", "index.parquet", "errors.csv", "extract.json", "SHA256SUMS", RUN_FILE,
                 "slurm"})
_TEMPORARY = re.compile(r"^\..+\.tmp$")


def check_out_folder(out: Path) -> None:
    """InputError when ``out`` exists, is not empty and holds what ``extract`` never writes."""
    if not out.is_dir():
        return
    try:
        names = sorted(os.listdir(out))
    except OSError as exc:
        raise InputError(f"{out}: cannot list ({exc.strerror or exc})") from None
    stray = [n for n in names if n not in OWN and not _TEMPORARY.match(n)]
    if stray:
        raise InputError(f"{out}: not empty and not an extraction folder (it holds {stray[0]}"
                         f"{f' and {len(stray) - 1} more' if len(stray) > 1 else ''}); "
                         "extract into a new folder, or an earlier extraction's")


class RunLock:
    """The folder's lock for one configuration ``key``; let go by :meth:`release` or when
    the object is collected (the end of the run)."""

    def __init__(self, out: Path, key: dict[str, Any]) -> None:
        self.out, self.fd = out, -1
        self.info = out / RUN_FILE
        out.mkdir(parents=True, exist_ok=True)
        try:
            self.fd = os.open(out, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as exc:
            raise InputError(f"{out}: cannot open ({exc.strerror or exc})") from None
        try:
            self._acquire(key)
        except OSError as exc:
            log.warning("%s: cannot lock (%s); going on without the lock", out, exc.strerror)
        except BaseException:
            self.release()
            raise

    def _acquire(self, key: dict[str, Any]) -> None:
        mine = json.dumps(key, sort_keys=True)
        for _ in range(100):
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                from rightsize import atomic

                atomic.write_json(self.info, {"config": mine, "pid": os.getpid(),
                                              "host": socket.gethostname(),
                                              "started": time.strftime("%Y-%m-%dT%H:%M:%S")})
            except BlockingIOError:
                pass
            fcntl.flock(self.fd, fcntl.LOCK_SH)          # shared by runs of one config
            try:
                running = json.loads(self.info.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)      # the last run just left: again
                time.sleep(0.05)
                continue
            if running.get("config") != mine:
                raise InputError(
                    f"{self.out}: another rightsize extract runs into this folder with other "
                    f"settings (pid {running.get('pid')} on {running.get('host')}, started "
                    f"{running.get('started')}); wait for it, or use another --out")
            return
        raise InputError(f"{self.out}: cannot settle the folder's lock (runs keep starting and "
                         "ending); try again")

    def release(self) -> None:
        """Let go; the last run to let go removes ``.extract-run.json``."""
        if self.fd < 0:
            return
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.info.unlink(missing_ok=True)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = -1

    def __del__(self) -> None:
        self.release()
