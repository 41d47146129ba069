"""Fixtures for the cost-report tests.

``tb_table`` builds a :class:`ScalarTable` with TensorBoard's own reader (the oracle), so the
cost engine is tested independently of rightsize's reader; end-to-end tests go through the CLI
and ``read_scalars``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from rightsize.telemetry.table import SCHEMA, FileInfo, ScalarTable

REPO = Path(__file__).resolve().parents[2]
RAMPNET = REPO.parent / "shared" / "telemetry" / "rampnet1_stage2"
_NAME = re.compile(r"^events\.out\.tfevents\.(\d+)\.(.+)\.(\d+)\.(\d+)")


def _to_table(cols: dict[str, list], files: list, problems: tuple) -> ScalarTable:
    arrays = {k: pa.array(v, type=SCHEMA.field(k).type.value_type
                          if k in ("run", "tag") else SCHEMA.field(k).type)
              for k, v in cols.items()}
    table = pa.table({k: (a.dictionary_encode() if k in ("run", "tag") else a)
                      for k, a in arrays.items()}).cast(SCHEMA)
    return ScalarTable(table, tuple(files), problems)


def _oracle_table(root: Path) -> ScalarTable:
    """Read every event file under ``root`` with TensorBoard's loader into the table contract."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    paths = sorted((p for p in root.rglob("*") if "tfevents" in p.name and p.is_file()),
                   key=lambda p: (p.parent.relative_to(root).as_posix(), p.name))
    cols: dict[str, list] = {k: [] for k in SCHEMA.names}
    files = []
    for i, p in enumerate(paths):
        run = p.parent.relative_to(root).as_posix()
        m = _NAME.match(p.name)
        walls, n_events, points = [], 0, 0
        for ev in EventFileLoader(str(p)).Load():
            n_events += 1
            walls.append(ev.wall_time)
            for v in ev.summary.value:
                kind = v.WhichOneof("value")
                if kind == "simple_value":
                    x = float(v.simple_value)
                elif kind == "tensor":
                    x = float(tensor_util.make_ndarray(v.tensor).item())
                else:
                    continue
                for k, val in zip(SCHEMA.names, (run, v.tag, ev.step, ev.wall_time, x, i),
                                  strict=True):
                    cols[k].append(val)
                points += 1
        files.append(FileInfo(
            path=p.relative_to(root).as_posix(), run=run,
            timestamp=int(m.group(1)) if m else 0, host=m.group(2) if m else None,
            pid=int(m.group(3)) if m else None, size=p.stat().st_size, records=n_events,
            events=n_events, first_wall_time=min(walls) if walls else None,
            last_wall_time=max(walls) if walls else None, scalar_points=points))
    return _to_table(cols, files, ())


@pytest.fixture(scope="session")
def tb_table():
    """Function building a ScalarTable from event files with TensorBoard's reader."""
    return _oracle_table


@pytest.fixture(scope="session")
def rampnet() -> Path:
    """The rescued RampNet run (skips when ../shared is absent)."""
    if not RAMPNET.is_dir():
        pytest.skip("../shared/telemetry/rampnet1_stage2 not present")
    return RAMPNET


@pytest.fixture(scope="session")
def rampnet_table(rampnet, tb_table) -> ScalarTable:
    """RampNet read once per session: rightsize's reader when present, else the oracle."""
    try:
        from rightsize.telemetry.scalars import read_scalars
    except ImportError:
        return tb_table(rampnet)
    return read_scalars(rampnet)


@pytest.fixture(scope="session")
def demo_factory(tmp_path_factory):
    """Function (seed, log_every) -> (run dir, truth dict), cached per session."""
    from rightsize.telemetry.demo import DemoConfig, demo_run

    cache: dict[tuple[int, int], tuple[Path, dict]] = {}

    def make(seed: int, log_every: int = 1) -> tuple[Path, dict]:
        key = (seed, log_every)
        if key not in cache:
            base = tmp_path_factory.mktemp(f"demo{seed}_{log_every}")
            truth = demo_run(base / "run", base / "truth.json",
                             DemoConfig(seed=seed, log_every=log_every))
            cache[key] = (base / "run", truth)
        return cache[key]

    return make


@pytest.fixture(scope="session")
def read_scalars():
    """rightsize's reader; skips until it has landed."""
    try:
        from rightsize.telemetry.scalars import read_scalars
    except ImportError:
        pytest.skip("rightsize.telemetry.scalars.read_scalars not available yet")
    return read_scalars


@pytest.fixture(scope="session")
def make_table():
    """Function building a ScalarTable from launches given as dicts (for rule tests).

    Each launch: ``{"points": [(tag, step, wall, value), ...]}`` plus optional ``run``,
    ``host``, ``pid``, ``start`` (header wall time) and ``end``.
    """

    def make(launches: list[dict], problems: tuple = ()) -> ScalarTable:
        cols: dict[str, list] = {k: [] for k in SCHEMA.names}
        files = []
        for i, launch in enumerate(launches):
            run = launch.get("run", ".")
            pts = launch.get("points", [])
            walls = [p[2] for p in pts]
            start = launch.get("start", min(walls) if walls else 0.0)
            end = launch.get("end", max(walls) if walls else start)
            host, pid = launch.get("host", "h"), launch.get("pid", 100 + i)
            name = f"events.out.tfevents.{int(start)}.{host}.{pid}.0"
            files.append(FileInfo(
                path=name if run == "." else f"{run}/{name}", run=run, timestamp=int(start),
                host=host, pid=pid, size=0, records=len(pts) + 1, events=len(pts) + 1,
                first_wall_time=start, last_wall_time=end, scalar_points=len(pts)))
            for tag, step, wall, value in pts:
                for k, v in zip(SCHEMA.names, (run, tag, step, wall, value, i), strict=True):
                    cols[k].append(v)
        return _to_table(cols, files, tuple(problems))

    return make
