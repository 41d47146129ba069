"""What an encoding worker process does at start and at exit, shared by ``extract``'s workers
and the worker bench so the bench times the path the run takes.

- :func:`prepare` fixes torch's threads and imports the record readers (wfdb,
  ``scipy.signal``, about 0.8 s), so a worker's start-up holds every import and its first
  shard does not.
- :func:`exit_without_teardown` ends a pool worker at its normal exit without the
  interpreter's teardown of torch (0.8 s per worker on the developers' 2-core Intel Xeon,
  paid after the last shard). Only for worker processes whose results are already returned
  and whose files are written, renamed and flushed: never for the parent.
"""

from __future__ import annotations

import atexit
import os
import sys


def prepare(threads: int) -> None:
    """Torch on ``threads`` threads, and the record readers imported."""
    import torch

    from rightsize.encoders.preprocess import load_readers

    torch.set_num_threads(threads)
    load_readers()


def _exit_now() -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def exit_without_teardown() -> None:
    """Have this worker process leave at once when it exits normally (the last exit handler:
    registered first, run last)."""
    atexit.register(_exit_now)
