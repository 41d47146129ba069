"""Synthetic data said aloud: the generated cohort and the demo run are labelled in every
heading, figure and table built from them, and the probes' targets are named (issue 44)."""

from __future__ import annotations

import html as htmllib
import os
import re
import subprocess

import matplotlib.colors as mcolors
import matplotlib.image as mpimg
import numpy as np
import pytest
import yaml
from report_fixtures import chromium, run_report, write_metrics, write_params

from rightsize.reporting.figures import STAMP_COLOR


def _build(tmp_path, cohort_source: str, demo: bool):
    write_metrics(tmp_path / "metrics")
    params = write_params(tmp_path / "params.yaml")
    data = yaml.safe_load(params.read_text())
    data["cohort"] = {"source": cohort_source}
    if demo:
        data["demo"] = {"seed": 0}
    params.write_text(yaml.safe_dump(data))
    built = run_report(tmp_path)
    assert built.code == 0, built.stderr
    return built


def _section(html: str, anchor: str) -> str:
    """The HTML from the level-2 heading ``anchor`` to the next level-2 heading."""
    start = html.index(f'<h2 id="{anchor}">')
    end = html.find("<h2 ", start + 1)
    return html[start:end if end > 0 else len(html)]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("synthetic"), "synthetic", demo=True)


def test_probes_and_demo_run_are_labelled_synthetic_in_html(synthetic):
    page = synthetic.html
    assert '<h2 id="probes">Probes (synthetic cohort, planted signal)</h2>' in page
    assert "Synthetic cohort: rightsize generated these subjects" in page
    assert '<h3 id="run-demo">Run demo (synthetic demo run)</h3>' in page
    for anchor, label in (("probes", "Synthetic cohort."), ("runs", "Synthetic demo run.")):
        part = _section(page, anchor)
        captions = re.findall(r"<figcaption>(.*?)</figcaption>", part, flags=re.S)
        assert captions, anchor
        assert all(c.startswith(label) for c in captions), (anchor, captions)
        # every figure's alt text says it too (what a screen reader or a broken image shows)
        alts = re.findall(r'<img [^>]*alt="([^"]*)"', part)
        assert alts and all("synthetic" in htmllib.unescape(a) for a in alts), alts
        tables = re.findall(r"<caption>(.*?)</caption>", part, flags=re.S)
        assert tables and all(t.startswith(label) for t in tables if "stamp" not in t)


def test_verdicts_say_synthetic_and_the_targets_are_named(synthetic):
    verdicts = synthetic.md.split("## Verdicts", 1)[1].split("\n## ", 1)[0]
    assert "**Does fusion beat concatenation on the synthetic cohort (test MAE of LVEF)?** " \
           "Synthetic cohort (a planted signal, not patients):" in verdicts
    assert "**What did run demo (synthetic) cost?** Synthetic demo run" in verdicts
    gpu = next(line for line in verdicts.splitlines() if "need a GPU" in line)
    assert gpu.endswith("Timed on the synthetic cohort (shaped as configured).")
    probes = synthetic.md.split("## Probes", 1)[1]
    for target in ("LVEF", "test MAE in EF points", "EF ≤ 40 %", "AUROC"):
        assert target in probes, target


def _stamp_pixels(png) -> int:
    """Pixels of the stamp's colour in the lower right corner of a figure PNG."""
    img = mpimg.imread(png)[..., :3]
    corner = img[-30:, -220:]
    want = np.array(mcolors.to_rgb(STAMP_COLOR))
    return int((np.abs(corner - want) < 0.12).all(axis=-1).sum())


def test_a_cohort_from_files_and_a_real_run_carry_no_synthetic_label(synthetic, tmp_path):
    built = _build(tmp_path, "files", demo=False)
    assert '<h2 id="probes">Probes</h2>' in built.html
    assert '<h3 id="run-demo">Run demo</h3>' in built.html
    assert "Synthetic cohort" not in built.md and "Synthetic demo run" not in built.md
    assert "Timed on the synthetic cohort" not in built.md
    assert "LVEF" in built.md.split("## Probes", 1)[1]       # the targets are named anyway
    # the PNGs themselves (what `dvc plots diff` shows on their own) carry the stamp
    for name in ("probe_metrics", "probe_wall_clock", "demo_timeline", "demo_val_curve"):
        assert _stamp_pixels(synthetic.out / f"figures/{name}.png") > 40, name
        assert _stamp_pixels(built.out / f"figures/{name}.png") == 0, name


def test_headless_chromium_shows_the_synthetic_labels(synthetic, tmp_path):
    """The page as a real browser parses it (its DOM) carries the labels."""
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
           (synthetic.out / "report.html").as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "HOME": str(tmp_path)})
    dom = proc.stdout
    assert "<nav>" in dom, f"no DOM (rc {proc.returncode}): {proc.stderr[-1500:]}"
    assert "Probes (synthetic cohort, planted signal)" in dom
    assert "Run demo (synthetic demo run)" in dom
    assert dom.count("Synthetic cohort.") >= 5 and dom.count("Synthetic demo run.") >= 4
    nav = re.search(r"<nav>(.*?)</nav>", dom, flags=re.S).group(1)
    assert re.findall(r">([^<]+)</a>", nav) == ["Verdicts", "Telemetry", "Probes", "Sizing",
                                                 "Extraction"]
