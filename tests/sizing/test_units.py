"""Human byte sizes (params and flags) and their rendering; storage dtype widths."""

from __future__ import annotations

import pytest

from rightsize.errors import ParamsError
from rightsize.fmt import DASH, nbytes
from rightsize.sizing.units import DTYPE_BYTES, parse_size


@pytest.mark.parametrize(("text", "expected"), [
    ("2TB", 2 * 10**12), ("500GiB", 500 * 2**30), ("1.5 T", 1_500_000_000_000),
    ("2e12", 2 * 10**12), ("750gb", 750 * 10**9), ("4096", 4096), ("1PiB", 2**50),
    (2e12, 2 * 10**12), (1024, 1024),
])
def test_parse_size(text: str | float, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["2XB", "TB", "-1TB", "0", "", "1.2.3GB", True])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ParamsError, match="^disk: "):
        parse_size(text, "disk")


def test_bytes_render_with_the_one_formatter() -> None:
    assert nbytes(3_072_000_000_000) == "3.07 TB"
    assert nbytes(512) == "512 B"
    assert nbytes(6_144_000_000) == "6.14 GB"
    assert nbytes(None) == DASH


def test_dtype_widths() -> None:
    assert DTYPE_BYTES == {"float16": 2, "bfloat16": 2, "float32": 4}
