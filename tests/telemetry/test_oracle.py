"""Agreement with TensorBoard's own reader on real and synthetic runs.

The oracle is ``plugin_event_accumulator.EventAccumulator`` (what TensorBoard serves from):
it migrates ``simple_value`` to tensors (``data_compat``), decides each tag's plugin from
its first metadata, and keeps every point with ``size_guidance`` 0. The RampNet run (torch
``simple_value`` only) is checked against the legacy ``EventAccumulator.Scalars``, which reads
the same values without the (slow) migration. ``purge_orphaned_data``
is off so re-logged steps after a restart stay, as they do in our table. TensorBoard reads a
run's files in plain name order, we in timestamp-then-natural order; where the two orders
differ only the multiset of points per tag is compared.

Deliberate differences (not exercised by clean files): we resynchronise after damage where
TensorBoard stops reading the file, and we skip values it would fail on (multi-element
tensors under the ``scalars`` plugin).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rightsize.telemetry.runs import discover
from rightsize.telemetry.scalars import read_scalars

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "telemetry"
CORPUS = SHARED / "corpus"


def tb_scalars(run_dir: Path, legacy: bool = False) -> dict[str, list[tuple[int, float, float]]]:
    """TensorBoard's scalar points of one run directory: tag -> [(step, wall_time, value)].

    ``legacy`` uses ``event_accumulator.EventAccumulator`` (``Scalars``: simple_values only,
    no data_compat migration, about 3x faster): equivalent for torch-written runs.
    """
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea
    from tensorboard.util import tensor_util

    kind = ea if legacy else pea
    acc = kind.EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0},
                                purge_orphaned_data=False).Reload()
    if legacy:
        assert acc.Tags()["tensors"] == []
        return {tag: [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]
                for tag in acc.Tags()["scalars"]}
    try:
        tags = acc.PluginTagToContent("scalars")
    except KeyError:
        return {}

    def value(tp) -> float:
        if tp.dtype == 1 and len(tp.float_val) == 1 and not tp.tensor_content:
            return tp.float_val[0]             # what make_ndarray(tp).item() gives, faster
        return float(tensor_util.make_ndarray(tp).item())

    return {tag: [(e.step, e.wall_time, value(e.tensor_proto)) for e in acc.Tensors(tag)]
            for tag in tags}


def ours(table, run: str) -> dict[str, list[tuple[int, float, float]]]:
    import pyarrow.compute as pc

    t = table.columns.filter(pc.equal(table.columns.column("run").cast("string"), run))
    tags = np.array(t.column("tag").to_pylist(), dtype=object)
    cols = [t.column(k).to_numpy() for k in ("step", "wall_time", "value")]
    return {tag: list(zip(*(c[tags == tag].tolist() for c in cols), strict=True))
            for tag in np.unique(tags).tolist()}


def assert_same(root: Path, run: str, table, legacy: bool = False) -> int:
    expected, got = tb_scalars(root / run, legacy), ours(table, run)
    assert sorted(got) == sorted(expected), f"tags differ in run {run}"
    files = [f.path.name for f in discover(root)[run]]
    same_order = files == sorted(files)
    for tag, exp in expected.items():
        a, b = np.array(got[tag], dtype=float), np.array(exp, dtype=float)
        if not same_order:
            a, b = a[np.lexsort(a.T[::-1])], b[np.lexsort(b.T[::-1])]
        assert a.shape == b.shape, f"{run}/{tag}: {len(a)} points, TensorBoard {len(b)}"
        np.testing.assert_array_equal(a, b, err_msg=f"{run}/{tag}")
        assert [s for s, _, _ in got[tag]] == [s for s, _, _ in exp] or not same_order
    return sum(len(v) for v in expected.values())


def _corpus_runs() -> list[str]:
    return list(discover(CORPUS)) if CORPUS.is_dir() else []


@pytest.fixture(scope="module")
def corpus_table():
    if not CORPUS.is_dir():
        pytest.skip("../shared/telemetry is not available")
    return read_scalars(CORPUS)


@pytest.mark.parametrize("run", _corpus_runs() or ["<no corpus>"])
def test_every_corpus_run_matches_tensorboard(corpus_table, run):
    assert_same(CORPUS, run, corpus_table)


def test_corpus_has_the_expected_writers(corpus_table):
    runs = set(corpus_table.runs)
    assert len(runs) == len(_corpus_runs()) > 40
    assert any(r.startswith("pl2_contrastive") for r in runs)
    assert corpus_table.problems == ()
    assert corpus_table.columns.num_rows == sum(f.scalar_points for f in corpus_table.files)


def test_rampnet_matches_tensorboard(shared_telemetry):
    root = shared_telemetry / "rampnet1_stage2"
    table = read_scalars(root)
    assert table.runs == ["."] and len(table.files) == 18
    # torch simple_values only: TensorBoard's legacy accumulator reads them 3x faster
    assert assert_same(root, ".", table, legacy=True) == table.columns.num_rows > 100_000
    assert sum(f.header_only for f in table.files) == 3
    steps = table.columns.column("step").to_numpy()
    tags = table.columns.column("tag").to_pylist()
    train = steps[np.array(tags) == "Loss/train_step"]
    assert np.unique(train).size < train.size          # re-logged steps kept as rows


def test_synthetic_zoo_matches_tensorboard(tmp_path, ev):
    """Tensor scalars, inherited and late plugins, other plugins, multi-value events."""
    from tensorboard.compat.proto import summary_pb2

    run = tmp_path / "zoo"
    histo = summary_pb2.Summary.Value(tag="h", histo=summary_pb2.HistogramProto(num=1))
    ev.write(run / "events.out.tfevents.100.h.1.0.v2", [
        ev.header(100.0),
        ev.values(101.0, 1, ev.tensor_value("acc", 0.5), ev.tensor_value("i", 3, "int64")),
        ev.values(102.0, 2, ev.tensor_value("acc", 0.25, plugin=None),
                  ev.tensor_value("i", 4, "int64", plugin=None)),
        ev.values(103.0, 2, ev.tensor_value("late", 1.0, plugin=None)),
        ev.values(104.0, 3, ev.tensor_value("late", 2.0, "float64", content=True)),
        ev.values(105.0, 3, ev.tensor_value("w", 0.5, plugin="histograms"), histo),
        ev.values(106.0, 4, ev.tensor_value("w", 1.5, plugin=None)),
        ev.values(107.0, 4, ev.tensor_value("half", 0.1, "float16", content=True)),
        ev.scalars(108.0, 5, {"loss": 1.0, "lr": 0.001}),
        ev.scalar(109.0, 5, "h", 7.0),
    ])
    ev.write(run / "events.out.tfevents.200.h.2.0.v2", [
        ev.header(200.0), ev.values(201.0, 6, ev.tensor_value("acc", 0.75, plugin=None)),
        ev.scalar(202.0, 4, "loss", 0.5),
    ])
    table = read_scalars(tmp_path)
    n = assert_same(tmp_path, "zoo", table)
    assert n == table.columns.num_rows == 11
