"""TFRecord framing constants and the masked CRC32C.

The record format (TFRecord, used by every TensorBoard event file)::

    uint64  length            little-endian, payload byte count
    uint32  masked_crc(length bytes)
    byte    payload[length]   one serialized ``Event`` protobuf
    uint32  masked_crc(payload)

``masked_crc(x) = ((crc32c(x) >> 15) | (crc32c(x) << 17)) + 0xA282EAD8  (mod 2**32)``.
A record therefore occupies ``length + 16`` bytes; the 12-byte header is self-checking,
which is what lets a reader resynchronise after damage.
"""

from __future__ import annotations

import struct

import google_crc32c

HEADER_BYTES = 12
FOOTER_BYTES = 4
MASK_DELTA = 0xA282EAD8
LENGTH = struct.Struct("<Q")
CRC = struct.Struct("<I")


def crc32c(data: bytes | memoryview) -> int:
    """Unmasked CRC32C (Castagnoli) of ``data``, computed in C."""
    return google_crc32c.value(bytes(data) if isinstance(data, memoryview) else data)


def masked_crc32c(data: bytes | memoryview) -> int:
    """The masked CRC32C stored in TFRecord framing."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + MASK_DELTA) & 0xFFFFFFFF


def frame(payload: bytes) -> bytes:
    """Wrap ``payload`` in TFRecord framing (header, payload, footer)."""
    length = LENGTH.pack(len(payload))
    return b"".join(
        (length, CRC.pack(masked_crc32c(length)), payload, CRC.pack(masked_crc32c(payload)))
    )
