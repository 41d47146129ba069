"""A tiny TensorBoard event-file writer (scalars only), with no TensorFlow dependency.

Writes the same bytes as ``torch.utils.tensorboard.SummaryWriter`` for ``add_scalar``:
a ``file_version: "brain.Event:2"`` header event, then one ``Event`` per scalar with a
``Summary.Value{tag, simple_value}``. Used for the demo run, the probes' training logs and
test fixtures. File names follow ``events.out.tfevents.<ts>.<host>.<pid>.<n>``.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from rightsize.ground.crc import frame


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64 are encoded as 10-byte two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def _len_field(field: int, data: bytes) -> bytes:
    return _key(field, 2) + _varint(len(data)) + data


def encode_event(wall_time: float, step: int = 0, *, file_version: str | None = None,
                 scalars: dict[str, float] | None = None, plugin: str | None = None) -> bytes:
    """Serialize one ``Event`` protobuf: header (``file_version``) or scalar summary values.

    ``plugin`` (e.g. ``"scalars"``) adds ``SummaryMetadata.plugin_data.plugin_name`` to each
    value, as TF2 writers do for a tag's first value.
    """
    out = _key(1, 1) + struct.pack("<d", wall_time)
    if step:
        out += _key(2, 0) + _varint(step)
    if file_version is not None:
        out += _len_field(3, file_version.encode())
    if scalars:
        values = b""
        for tag, value in scalars.items():
            v = _len_field(1, tag.encode()) + _key(2, 5) + struct.pack("<f", value)
            if plugin:
                v += _len_field(9, _len_field(1, _len_field(1, plugin.encode())))
            values += _len_field(1, v)
        out += _len_field(5, values)
    return out


class EventWriter:
    """Append scalar events to a new event file in ``logdir`` (records framed and CRC'd)."""

    def __init__(self, logdir: str | os.PathLike[str], *, wall_time: float, host: str = "localhost",
                 pid: int | None = None, index: int = 0, suffix: str = "") -> None:
        self.logdir = Path(logdir)
        self.logdir.mkdir(parents=True, exist_ok=True)
        pid = os.getpid() if pid is None else pid
        name = f"events.out.tfevents.{int(wall_time)}.{host}.{pid}.{index}{suffix}"
        self.path = self.logdir / name
        self._fh = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self._fh.write(frame(encode_event(wall_time, file_version="brain.Event:2")))

    def add_scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        """Write one scalar point."""
        self._fh.write(frame(encode_event(wall_time, step, scalars={tag: value})))

    def add_event(self, wall_time: float, step: int = 0) -> None:
        """Write a bare event (wall time and step, no summary), as a writer's close flush does."""
        self._fh.write(frame(encode_event(wall_time, step)))

    def flush(self) -> None:
        """Flush buffered records to disk."""
        self._fh.flush()

    def close(self) -> None:
        """Flush and close the file."""
        self._fh.close()

    def __enter__(self) -> EventWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
