"""Ground helpers every room may use: no domain knowledge, no other rightsize package.

* :mod:`~rightsize.ground.crc`: TFRecord framing and its masked CRC32C;
* :mod:`~rightsize.ground.event_writer`: a scalar-only TensorBoard event-file writer
  (the probes' run logs, extraction workers, the telemetry demo);
* :mod:`~rightsize.ground.regular_file`: :func:`open_regular`, the one safe way to open a
  file for reading (a FIFO, device or socket is refused, never opened);
* :mod:`~rightsize.ground.sha256`: SHA-256 of a file and the ``SHA256SUMS`` manifest name.
"""
