"""Event decoding: tensor scalars, plugin inheritance, counted kinds, tag filter, bad protobufs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rightsize.errors import IntegrityError
from rightsize.telemetry.scalars import read_scalars

F1 = "events.out.tfevents.1000.host.1.0.v2"
F2 = "events.out.tfevents.2000.host.2.0.v2"


def rows(table) -> list[tuple]:
    t = table.columns
    return list(zip(t.column("run").to_pylist(), t.column("tag").to_pylist(),
                    t.column("step").to_pylist(), t.column("wall_time").to_pylist(),
                    t.column("value").to_pylist(), strict=True))


@pytest.mark.parametrize("content", [False, True])
@pytest.mark.parametrize(("dtype", "x"), [("float32", 0.1), ("float64", 0.1), ("float16", 0.1),
                                          ("int32", -7), ("int64", -(2**40) - 3)])
def test_tensor_scalars_of_each_dtype(tmp_path, ev, dtype, x, content):
    v1 = ev.tensor_value("m", x, dtype, content=content)
    v2 = ev.tensor_value("m", x, dtype, plugin=None, content=content, shape=(1,))
    ev.write(tmp_path / F1, [ev.header(), ev.values(1.5, 3, v1), ev.values(2.5, 4, v2)])
    want = float(np.asarray(x, dtype))
    assert rows(read_scalars(tmp_path)) == [(".", "m", 3, 1.5, want), (".", "m", 4, 2.5, want)]


def test_bfloat16_half_val(tmp_path, ev):
    from tensorboard.compat.proto import summary_pb2, tensor_pb2

    t = tensor_pb2.TensorProto(dtype=14, half_val=[0x3FC0])          # bfloat16 1.5
    v = summary_pb2.Summary.Value(tag="b", tensor=t)
    v.metadata.plugin_data.plugin_name = "scalars"
    ev.write(tmp_path / F1, [ev.values(1.0, 1, v)])
    assert rows(read_scalars(tmp_path)) == [(".", "b", 1, 1.0, 1.5)]


def test_plugin_of_first_value_is_inherited_across_files_of_a_run(tmp_path, ev):
    run = tmp_path / "run"
    ev.write(run / F1, [
        ev.header(),
        ev.values(10.0, 1, ev.tensor_value("acc", 0.5)),                  # carries plugin
        ev.values(11.0, 2, ev.tensor_value("acc", 0.6, plugin=None)),      # inherits it
        ev.values(12.0, 2, ev.tensor_value("late", 1.0, plugin=None)),     # plugin comes later
        ev.values(13.0, 3, ev.tensor_value("late", 2.0)),
        ev.values(14.0, 3, ev.tensor_value("w", 0.25, plugin="histograms")),
        ev.values(15.0, 4, ev.tensor_value("w", 0.75, plugin=None)),
        ev.values(16.0, 4, ev.tensor_value("bare", 9.0, plugin=None)),     # never a plugin
    ])
    ev.write(run / F2, [ev.header(20.0), ev.values(21.0, 5, ev.tensor_value("acc", 0.7,
                                                                             plugin=None))])
    table = read_scalars(tmp_path)
    f32 = ev.f32
    assert rows(table) == [
        ("run", "acc", 1, 10.0, f32(0.5)), ("run", "acc", 2, 11.0, f32(0.6)),
        ("run", "late", 2, 12.0, 1.0), ("run", "late", 3, 13.0, 2.0),
        ("run", "acc", 5, 21.0, f32(0.7)),
    ]
    first, second = table.files
    assert first.kinds == {"histograms": 2, "tensor": 1}
    assert (first.scalar_points, second.scalar_points) == (4, 1)
    assert (first.records, first.events, first.summary_values) == (8, 8, 7)
    assert (first.first_wall_time, first.last_wall_time) == (10.0, 1000.0)   # min, max


def test_simple_value_makes_a_tag_scalar_but_not_after_another_plugin(tmp_path, ev):
    from tensorboard.compat.proto import summary_pb2

    histo = summary_pb2.Summary.Value(tag="x", histo=summary_pb2.HistogramProto(num=1))
    ev.write(tmp_path / F1, [ev.values(1.0, 1, histo), ev.scalar(2.0, 2, "x", 3.0),
                             ev.scalar(3.0, 3, "y", 4.0, plugin="scalars")])
    table = read_scalars(tmp_path)
    assert rows(table) == [(".", "y", 3, 3.0, 4.0)]
    assert table.files[0].kinds == {"histograms": 2}


def test_non_scalar_kinds_are_counted(tmp_path, ev):
    from tensorboard.compat.proto import event_pb2, summary_pb2

    img = summary_pb2.Summary.Value(tag="i", image=summary_pb2.Summary.Image(height=1))
    aud = summary_pb2.Summary.Value(tag="a", audio=summary_pb2.Summary.Audio(sample_rate=8))
    hp = summary_pb2.Summary.Value(tag="_hparams_/experiment")
    hp.metadata.plugin_data.plugin_name = "hparams"
    text = ev.tensor_value("t", "hello", dtype=object, plugin="text")
    ev.write(tmp_path / F1, [
        ev.header(), ev.event(1.0, graph_def=b"\x0a\x00"),
        ev.event(2.0, session_log=event_pb2.SessionLog(status=1)),
        ev.event(3.0, tagged_run_metadata=event_pb2.TaggedRunMetadata(tag="r")),
        ev.values(4.0, 1, img, aud, hp, text), ev.scalar(5.0, 1, "loss", 1.0),
    ])
    info = read_scalars(tmp_path).files[0]
    assert info.kinds == {"audio": 1, "graph": 1, "hparams": 1, "images": 1,
                          "run_metadata": 1, "session_log": 1, "text": 1}
    assert (info.scalar_points, info.header_only) == (1, False)


def test_multi_value_events_and_unusual_steps_and_tags(tmp_path, ev):
    long_tag = "L" * 200                                         # beyond the fast path
    ev.write(tmp_path / F1, [
        ev.scalars(1.0, 7, {"b": 1.0, "a": 2.0}),
        ev.scalar(2.0, 0, "b", float("inf")),
        ev.scalar(3.0, -5, "a", float("-inf")),
        ev.scalar(4.0, 2**40 + 1, "ünï/cödé", 0.25),
        ev.scalar(5.0, 8, long_tag, -1.0),
        ev.scalar(6.0, 9, "", 5.0),
    ])
    got = rows(read_scalars(tmp_path))
    assert got == [(".", "b", 7, 1.0, 1.0), (".", "a", 7, 1.0, 2.0),
                   (".", "b", 0, 2.0, math.inf), (".", "a", -5, 3.0, -math.inf),
                   (".", "ünï/cödé", 2**40 + 1, 4.0, 0.25), (".", long_tag, 8, 5.0, -1.0),
                   (".", "", 9, 6.0, 5.0)]


def test_nan_values_survive(tmp_path, ev):
    ev.write(tmp_path / F1, [ev.scalar(1.0, 1, "loss", float("nan"))])
    assert math.isnan(read_scalars(tmp_path).columns.column("value")[0].as_py())


def test_tag_glob_skips_other_tags(tmp_path, ev):
    ev.write(tmp_path / F1, [
        ev.header(), ev.scalars(1.0, 1, {"Loss/train": 1.0, "lr": 0.1}),
        ev.scalar(2.0, 2, "Loss/val", 2.0),
        ev.values(3.0, 3, ev.tensor_value("Loss/tf2", 3.0), ev.tensor_value("acc", 0.5)),
        ev.values(4.0, 4, ev.tensor_value("hist", [1.0, 2.0], plugin="histograms",
                                          shape=(2,))),
    ])
    table = read_scalars(tmp_path, tags="Loss/*")
    assert [(r[1], r[2]) for r in rows(table)] == [("Loss/train", 1), ("Loss/val", 2),
                                                   ("Loss/tf2", 3)]
    info = table.files[0]
    assert info.kinds == {} and info.summary_values == 6 and not info.header_only
    assert read_scalars(tmp_path).files[0].kinds == {"histograms": 1}


def test_undecodable_payloads_are_reported_not_raised(tmp_path, ev):
    data, offs = ev.frame_all([ev.header(), b"\x0a\xff\x01abc", ev.scalar(2.0, 2, "x", 1.0),
                               b"\x0f", b"\x2a\x05\x0a\x03\x0a\x01"])
    ev.write(tmp_path / F1, data)
    table = read_scalars(tmp_path)
    assert rows(table) == [(".", "x", 2, 2.0, 1.0)]
    assert [(p.kind, p.offset, p.bytes_skipped) for p in table.problems] == [
        ("undecodable", offs[1], 22), ("undecodable", offs[3], 17),
        ("undecodable", offs[4], 22)]
    assert (table.files[0].records, table.files[0].events) == (5, 2)
    with pytest.raises(IntegrityError, match="undecodable at byte 40"):
        read_scalars(tmp_path, strict=True)


def test_unknown_fields_are_skipped(tmp_path, ev):
    # field 10 (source_metadata) and an unknown varint field 20 around a normal scalar
    extra = b"\x52\x03abc" + b"\xa0\x01\x05"
    ev.write(tmp_path / F1, [ev.scalar(1.0, 1, "x", 2.0) + extra])
    assert rows(read_scalars(tmp_path)) == [(".", "x", 1, 1.0, 2.0)]


def test_tensors_that_are_not_single_numbers_are_not_points(tmp_path, ev):
    from tensorboard.compat.proto import summary_pb2, tensor_pb2

    odd = tensor_pb2.TensorProto(dtype=1, float_val=[1.0, 2.0])        # 2 values, rank 0
    v = summary_pb2.Summary.Value(tag="s", tensor=odd)
    v.metadata.plugin_data.plugin_name = "scalars"
    ev.write(tmp_path / F1, [
        ev.values(1.0, 1, ev.tensor_value("s", [1.0, 2.0], shape=(2,))),   # multi-element
        ev.values(2.0, 2, v),
        ev.values(3.0, 3, ev.tensor_value("s", "text", dtype=object)),      # a string
        ev.values(4.0, 4, ev.tensor_value("s", 4.0, shape=(1, 1))),         # one element
    ])
    table = read_scalars(tmp_path)
    assert rows(table) == [(".", "s", 4, 4.0, 4.0)]
    assert table.files[0].kinds == {"scalars": 3} and table.problems == ()


def test_table_tags_lists_tags_with_points_even_in_slices(tmp_path, ev):
    from rightsize.telemetry.table import ScalarTable

    ev.write(tmp_path / F1, [ev.scalar(float(i), i, t, 1.0)
                             for i, t in enumerate(["b", "a", "b", "c", "b"])])
    table = read_scalars(tmp_path)
    assert table.tags == ["a", "b", "c"]
    tail = ScalarTable(table.columns.slice(3), table.files, table.problems)
    assert tail.tags == ["b", "c"]


def test_strict_reports_the_lowest_offset_of_framing_and_decoding_problems(tmp_path, ev):
    data, offs = ev.frame_all([ev.header(), b"\x0f", ev.scalar(2.0, 2, "x", 1.0)])
    ev.write(tmp_path / F1, data[:-2])                 # undecodable record 1, torn record 2
    assert [p.kind for p in read_scalars(tmp_path).problems] == ["undecodable",
                                                                  "truncated_payload"]
    with pytest.raises(IntegrityError, match=f"undecodable at byte {offs[1]} "):
        read_scalars(tmp_path, strict=True)
