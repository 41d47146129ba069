"""Small pieces: number formatting, gaps, time parsing, loading, seeds shapes, rendering."""

from __future__ import annotations

import json
import math

from rightsize import fmt
from rightsize.fmt import get, num
from rightsize.reporting.doc import Figure, Heading, Note, Para, Table, VerdictItem
from rightsize.reporting.figures import _gaps, to_epoch_seconds
from rightsize.reporting.render_html import render_html
from rightsize.reporting.render_md import render_markdown
from rightsize.reporting.sections_seeds import seed_rows
from rightsize.reporting.sources import read_csv, read_json


def test_number_formats():
    assert fmt.number(11999) == "11,999"
    assert fmt.number(8.0) == "8.00"
    assert fmt.number(6.944444) == "6.94"
    assert fmt.number(0.0041) == "0.00410"
    assert fmt.number(3.2e13) == "3.20e+13"
    assert fmt.number(None) == fmt.DASH and fmt.number(math.nan) == fmt.DASH
    assert fmt.seconds(110.2) == "110 s" and fmt.seconds(3600) == "60.0 min (3,600 s)"
    assert fmt.nbytes(3_072_000_000_000) == "3.07 TB" and fmt.nbytes(512) == "512 B"
    assert fmt.ci(0.8, 0.75, 0.85) == "0.800 [0.750, 0.850]" and fmt.ci(0.8, None, 1) == "0.800"
    assert fmt.yes_no(False) == "NO" and fmt.yes_no(None) == fmt.DASH


def test_gaps_merge_overlapping_segments():
    spans = [(0.0, 10.0), (5.0, 12.0), (20.0, 30.0), (25.0, 26.0), (40.0, 41.0)]
    assert _gaps(spans) == [(12.0, 20.0), (30.0, 40.0)]
    assert _gaps([(0.0, 1.0)]) == []


def test_time_parsing():
    assert to_epoch_seconds(1714550400.5) == 1714550400.5
    assert to_epoch_seconds("2024-05-01T08:00:00Z") == 1714550400.0
    assert to_epoch_seconds("yesterday") is None and to_epoch_seconds(True) is None


def test_loading_is_tolerant(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"test": {"mae": 1.5, "n": 3, "ok": True}}))
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "c.csv").write_text("epoch,loss\n1,0.5\n2,oops\n")
    a = read_json(tmp_path / "a.json")
    assert a.ok and num(a.data, "test.mae") == 1.5 and num(a.data, "test.n") == 3
    assert num(a.data, "test.ok") is None and get(a.data, "test.x.y", "d") == "d"
    assert read_json(tmp_path / "none.json").status == "missing"
    assert read_json(tmp_path / "bad.json").status.startswith("unreadable")
    c = read_csv(tmp_path / "c.csv")
    assert list(c.data["epoch"]) == [1.0, 2.0]
    assert c.data["loss"][0] == 0.5 and math.isnan(c.data["loss"][1])


def test_seed_rows_accept_several_shapes():
    flat = {"test.mae": {"mean": 1.0, "sd": 0.1, "n": 3}}
    nested = {"fused": {"test": {"mae": {"mean": 1.0, "sd": 0.1, "n": 3}}}}
    listed = [{"metric": "fused mae", "mean": 1.0, "sd": 0.1, "n": 3}]
    assert [r[0] for r in seed_rows(flat)] == ["test.mae"]
    assert [r[0] for r in seed_rows(nested)] == ["fused.test.mae"]
    assert [r[0] for r in seed_rows(listed)] == ["fused mae"]
    assert seed_rows({"metrics": {}}) == [] and seed_rows({"x": {"mean": "a"}}) == []


def test_renderers_escape_and_defuse_urls():
    png = b"\x89PNG\r\n\x1a\nfake"
    blocks = [Heading("T <1>", 1, "top"), Heading("Sec", 2, "sec"),
              VerdictItem("Q?", "a | b https://example.org"),
              Para("see http://x"), Note("n"),
              Table(("h|1", "h2"), (("a|b", "c"),), "cap"), Figure("f", "F", png, "c")]
    html = render_html(blocks, "T")
    assert "http://" not in html and "https://" not in html
    assert "T &lt;1&gt;" in html and 'href="#sec"' in html
    assert 'src="data:image/png;base64,iVBORw0KGgpmYWtl"' in html
    md = render_markdown(blocks)
    assert "| h\\|1 | h2 |" in md and "| a\\|b | c |" in md
    assert "![F](figures/f.png)" in md and "- **Q?** a | b" in md


def test_durations_never_print_an_exponent_and_read_back():
    """Durations in the unit that fits (ms, s, min, h), no 8.46e-05 h (issue 44)."""
    scale = {"ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}
    for k in range(-60, 61):
        s = 1.7 ** (k / 3) * 1.0
        # fmt.seconds keeps one decimal of minutes/hours beside the exact seconds
        for text, tol in ((fmt.duration(s), 0.01), (fmt.seconds(s).split(" (")[0], 0.05),
                          (fmt.hours(s / 3600), 0.01)):
            assert "e-" not in text and "e+" not in text, (s, text)
            value, unit = text.split(" ")
            back = float(value.replace(",", "")) * scale[unit]
            assert math.isclose(back, s, rel_tol=tol), (s, text)
    assert fmt.duration(5.86e-4) == "0.586 ms" and fmt.hours(7.27e-05) == "0.262 s"
    assert fmt.duration(738) == "12.3 min" and fmt.duration(None) == fmt.DASH
