"""Ground file helpers any room may use (they import no other rightsize package): the event
writer and its TFRecord CRC, a file's SHA-256, and :func:`~.regular_file.open_regular`."""
