"""The load average around each CPU timing: a timing taken on a busy machine says so.

Other processes on the same cores slow a CPU timing down (at load 2.2 on 2 cores the
encoder bench measured 1.67 records/s against 9.96 on a quiet box). Every CPU timing of
the encoder bench is wrapped by :meth:`LoadLog.around`, which reads the 1-minute load
average before and after it. Above half the cores the bench is *loaded*: it still writes
its result (exit 0) and the sizing ask says "measured under load L: may be slow".
With ``--require-quiet`` the bench first waits for the load to fall to half the cores
(:func:`wait_for_quiet`) and fails with exit 5 when it does not, or when the machine got
busy during a timing. The reader is injectable, so tests are deterministic.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rightsize.errors import MachineBusy

T = TypeVar("T")
LoadReader = Callable[[], float]


def read_load() -> float:
    """The 1-minute load average of this machine."""
    return os.getloadavg()[0]


def quiet_limit(cores: int) -> float:
    """The highest load a timing counts as quiet at: half the cores."""
    return cores / 2


def wait_for_quiet(cores: int, timeout_s: float, reader: LoadReader = read_load,
                   poll_s: float = 5.0, sleep: Callable[[float], None] = time.sleep) -> float:
    """Wait until the load is at most half the cores and return it; ``MachineBusy`` (exit
    5) naming the load and the limit when ``timeout_s`` passes first."""
    waited = 0.0
    while True:
        load = reader()
        if load <= quiet_limit(cores):
            return load
        if waited >= timeout_s:
            raise MachineBusy(f"--require-quiet: load average {load:.2f} stayed above "
                              f"{quiet_limit(cores):g} (half of {cores} cores) for "
                              f"{timeout_s:g} s; run the bench on a quiet machine")
        sleep(poll_s)
        waited += poll_s


@dataclass
class LoadLog:
    """Load readings before and after each CPU timing of one bench."""

    cores: int
    reader: LoadReader = read_load
    timings: list[dict[str, Any]] = field(default_factory=list)

    def around(self, what: str, fn: Callable[[], T]) -> T:
        """Run ``fn`` (one CPU timing) and record the load before and after it."""
        before = self.reader()
        out = fn()
        self.timings.append({"what": what, "before": before, "after": self.reader()})
        return out

    @property
    def readings(self) -> list[float]:
        """Every reading, in order."""
        return [x for t in self.timings for x in (t["before"], t["after"])]

    @property
    def loaded(self) -> bool:
        """Whether any reading was above half the cores."""
        return any(x > quiet_limit(self.cores) for x in self.readings)

    def as_dict(self) -> dict[str, Any]:
        """JSON form, as the bench file records it (the sizing reads ``readings``)."""
        return {"cores": self.cores, "limit": quiet_limit(self.cores),
                "timings": self.timings, "readings": self.readings, "loaded": self.loaded,
                "max": max(self.readings, default=0.0)}

    def require_quiet(self) -> None:
        """``MachineBusy`` (exit 5) when a timing ran above half the cores."""
        if self.loaded:
            worst = max(self.timings, key=lambda t: max(t["before"], t["after"]))
            raise MachineBusy(f"--require-quiet: load average rose to "
                              f"{max(worst['before'], worst['after']):.2f} (above "
                              f"{quiet_limit(self.cores):g}, half of {self.cores} cores) "
                              f"during {worst['what']}; its timing is not kept")
