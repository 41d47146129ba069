"""A real headless browser (Debian's chromium) renders report.html offline to a screenshot."""

from __future__ import annotations

import os
import subprocess

import matplotlib.image as mpimg
import numpy as np
from report_fixtures import chromium

WIDTH, HEIGHT = 1200, 2000
STAR_GREEN = np.array([0x2C, 0xA0, 0x2C]) / 255   # best-epoch star of the first figure



def test_headless_chromium_renders_the_report(full_build, tmp_path):
    shot = tmp_path / "shot.png"
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
           f"--window-size={WIDTH},{HEIGHT}", (full_build.out / "report.html").as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert shot.is_file(), f"no screenshot (rc {proc.returncode}): {proc.stderr[-1500:]}"
    img = mpimg.imread(shot)
    assert img.shape[:2] == (HEIGHT, WIDTH)
    rgb = img[..., :3]
    assert rgb.std() > 0.05
    non_white = (rgb < 0.9).any(axis=-1).mean()
    assert non_white > 0.03, f"only {non_white:.1%} non-white pixels"
    # The embedded PNG decoded: the validation-curve figure's green star is on screen.
    green = (np.abs(rgb - STAR_GREEN) < 0.08).all(axis=-1).sum()
    assert green > 30, f"{green} star-green pixels: the data-URI figure did not render"
