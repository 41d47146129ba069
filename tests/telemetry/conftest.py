"""Fixtures for the telemetry reader tests: real event files made on the spot.

``ev`` builds serialized ``Event`` payloads (the project's own writer for scalars, TensorBoard's
generated protobuf classes for everything else) and frames them into files; the shared
corpus and RampNet run are located relative to this file and skipped when absent.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from rightsize.ground.crc import frame
from rightsize.ground.event_writer import encode_event

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "telemetry"


class Ev:
    """Helpers that make event payloads and files."""

    header = staticmethod(lambda wall=1000.0: encode_event(wall, file_version="brain.Event:2"))

    @staticmethod
    def scalar(wall: float, step: int, tag: str, value: float, plugin: str | None = None) -> bytes:
        """One simple_value event, as SummaryWriter.add_scalar writes it."""
        return encode_event(wall, step, scalars={tag: value}, plugin=plugin)

    @staticmethod
    def scalars(wall: float, step: int, values: dict[str, float]) -> bytes:
        """One event with several simple_values."""
        return encode_event(wall, step, scalars=values)

    @staticmethod
    def event(wall: float, step: int = 0, **fields) -> bytes:
        """An arbitrary Event built with TensorBoard's protobuf classes."""
        from tensorboard.compat.proto import event_pb2

        e = event_pb2.Event(wall_time=wall, step=step, **fields)
        return e.SerializeToString()

    @staticmethod
    def values(wall: float, step: int, *values) -> bytes:
        """An Event whose summary holds the given ``Summary.Value`` protos."""
        from tensorboard.compat.proto import event_pb2, summary_pb2

        e = event_pb2.Event(wall_time=wall, step=step,
                            summary=summary_pb2.Summary(value=list(values)))
        return e.SerializeToString()

    @staticmethod
    def tensor_value(tag: str, data, dtype: str = "float32", plugin: str | None = "scalars",
                     content: bool = False, shape: tuple[int, ...] = ()):
        """A ``Summary.Value`` holding a tensor (``content``: raw ``tensor_content`` bytes)."""
        from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2
        from tensorboard.util import tensor_util

        arr = np.asarray(data, dtype=dtype).reshape(shape)
        if content:
            codes = {"float32": 1, "float64": 2, "int32": 3, "int64": 9, "float16": 19}
            t = tensor_pb2.TensorProto(
                dtype=codes[dtype], tensor_content=arr.astype(arr.dtype.newbyteorder("<"))
                .tobytes(),
                tensor_shape=tensor_shape_pb2.TensorShapeProto(
                    dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=s) for s in shape]))
        else:
            t = tensor_util.make_tensor_proto(arr)
        v = summary_pb2.Summary.Value(tag=tag, tensor=t)
        if plugin is not None:
            v.metadata.plugin_data.plugin_name = plugin
        return v

    @staticmethod
    def frame_all(payloads: list[bytes]) -> tuple[bytes, list[int]]:
        """Frame payloads into file bytes; also return each record's offset."""
        offsets, out, o = [], [], 0
        for p in payloads:
            offsets.append(o)
            f = frame(p)
            out.append(f)
            o += len(f)
        return b"".join(out), offsets

    @staticmethod
    def write(path: Path, payloads: list[bytes] | bytes) -> Path:
        """Write framed payloads (or raw bytes) to ``path``, creating its directory."""
        path.parent.mkdir(parents=True, exist_ok=True)
        data = payloads if isinstance(payloads, bytes) else Ev.frame_all(payloads)[0]
        path.write_bytes(data)
        return path

    @staticmethod
    def scalar_file(n: int = 5, wall: float = 1000.0) -> tuple[bytes, list[int]]:
        """A header plus ``n`` add_scalar events (step ``i``, value ``i / 2``), with offsets."""
        payloads = [Ev.header(wall)]
        payloads += [Ev.scalar(wall + i, i, "loss", i / 2) for i in range(1, n + 1)]
        return Ev.frame_all(payloads)

    @staticmethod
    def f32(x: float) -> float:
        """``x`` rounded to float32 and widened back, as a simple_value stores it."""
        return struct.unpack("<f", struct.pack("<f", x))[0]


@pytest.fixture
def ev() -> type[Ev]:
    """The :class:`Ev` helpers."""
    return Ev


@pytest.fixture
def shared_telemetry() -> Path:
    """``../shared/telemetry`` (skips the test when it is not there)."""
    if not (SHARED / "corpus").is_dir() or not (SHARED / "rampnet1_stage2").is_dir():
        pytest.skip("../shared/telemetry is not available")
    return SHARED


@pytest.fixture
def small_file(ev) -> tuple[bytes, list[int]]:
    """Bytes of a 6-record file (header + steps 1..5) and its record offsets."""
    return ev.scalar_file()
