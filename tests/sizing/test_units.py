"""Human byte sizes (params and flags), their rendering (rightsize.fmt); storage dtype widths."""

from __future__ import annotations

import pytest

from rightsize import fmt
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


def test_running_text_uses_the_same_formatter_dash_and_units() -> None:
    # what the sizing's answers print (sizing/units.py had its own copy with "-" for absent)
    assert fmt.compact_bytes(66e9) == "66 GB" and fmt.compact_bytes(457.3e9) == "457 GB"
    assert fmt.compact_bytes(17.6) == "18 B" and fmt.compact_bytes(2.5e15) == "2.5 PB"
    assert fmt.compact_bytes(999_862) == "1,000 kB"        # was "1e+03 kB"
    assert fmt.duration_range(30.0) == "30 s" and fmt.duration_range(1002.5) == "16.7 min"
    assert fmt.duration_range(5714) == "95.2 min" and fmt.duration_range(0.022, 2.0) == \
        "0.022-2 s"
    assert fmt.duration_range(100, 7300) == "0.028-2.03 h"      # the larger end picks the unit
    assert fmt.compact_range(0.00017) == "0.00017" and fmt.compact_range(1.2, 3.4) == "1.2-3.4"
    assert fmt.compact_range(2.41, 2.409) == "2.41"             # equal as printed: one number
    for f in (fmt.compact_bytes, fmt.duration_range, fmt.compact_range):
        assert f(None) == fmt.DASH
    assert fmt.nbytes(2e15) == "2.00 PB"                        # tables share the units
