"""Where the calendar went (rescued runs) and epochs that mattered (probes), in the report.

The RampNet case goes end to end: the real telemetry CLI on the shared run, the real report
verb on its metrics, and headless chromium's screenshot of the HTML showing the waterfall.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest
from report_fixtures import chromium, run_report, write_params

from rightsize.cli import main
from rightsize.reporting.sections_patience import curve_facts

RAMPNET = Path(__file__).resolve().parents[2].parent / "shared" / "telemetry" / "rampnet1_stage2"
USEFUL_GREEN = np.array([0x2C, 0xA0, 0x2C]) / 255
WAITING_GREY = np.array([0x7F, 0x7F, 0x7F]) / 255


@pytest.fixture(scope="module")
def rampnet_report(tmp_path_factory) -> Path:
    if not RAMPNET.is_dir():
        pytest.skip("../shared/telemetry/rampnet1_stage2 not present")
    root = tmp_path_factory.mktemp("rampnet_report")
    tel = root / "metrics" / "telemetry"
    tel.mkdir(parents=True)
    assert main(["telemetry", str(RAMPNET), "--train-records", "150063", "--global-batch", "16",
                 "--gpus", "16", "--drop-last", "--target-epochs", "20",
                 "--json", str(tel / "rampnet.json"),
                 "--val-csv", str(tel / "rampnet_val.csv")]) == 0
    write_params(root / "params.yaml", runs=("rampnet",))
    built = run_report(root)
    assert built.code == 0, built.stderr
    return built.out


def test_report_accounts_for_the_rampnet_calendar(rampnet_report):
    md = (rampnet_report / "report.md").read_text()
    assert "![rampnet: where the calendar went](figures/rampnet_calendar_account.png)" in md
    assert (rampnet_report / "figures" / "rampnet_calendar_account.png").stat().st_size > 5000
    assert "| useful steps | 39.3 h | 52.6 % |" in md
    assert "| waiting between launches | 27.3 h | 36.6 % |" in md
    assert "| total | 74.6 h |" in md
    assert "44.7 h / 74.6 h (calendar/active = 1.67x)" in md
    assert "1,000 steps (1,000 / 1,000)" in md            # checkpoint interval, both ways
    assert "Advice: checkpoint every ~" in md and "Assumptions:" in md
    assert "ETA to 20 epochs" in md
    assert "the best val epoch was 5" in md



def _shoot(report: Path, shot: Path, profile: Path) -> np.ndarray:
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", f"--screenshot={shot}",
           "--run-all-compositor-stages-before-draw",  # draw every decoded image first
           "--virtual-time-budget=10000",     # shoot once the page and its images have loaded
           "--window-size=1200,1600", (report / "report.html").as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "HOME": str(profile)})
    assert shot.is_file(), f"no screenshot (rc {proc.returncode}): {proc.stderr[-1500:]}"
    return mpimg.imread(shot)[..., :3]


def _bars(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    green = (np.abs(rgb - USEFUL_GREEN) < 0.06).all(axis=-1)
    grey = (np.abs(rgb - WAITING_GREY) < 0.03).all(axis=-1)
    return green, grey


def _widest_rows(green: np.ndarray, grey: np.ndarray
                 ) -> tuple[int, int, np.ndarray, np.ndarray]:
    """The rows where each bar is widest, and the bar's columns in that row."""
    g_row, w_row = int(green.sum(axis=1).argmax()), int(grey.sum(axis=1).argmax())
    return g_row, w_row, np.flatnonzero(green[g_row]), np.flatnonzero(grey[w_row])


def test_browser_shows_the_waterfall(rampnet_report, tmp_path):
    # Headless chromium on a loaded 2-core box has once shot a page whose bars were not yet
    # drawn as laid out (ratio 3.51 in CI at a22c4f0, passing 4/4 alone): a second shot is
    # taken only when the first does not show the waterfall, and every assertion applies to it.
    expected = 39.3 / 27.3
    for attempt in range(2):
        rgb = _shoot(rampnet_report, tmp_path / f"shot{attempt}.png",
                     tmp_path / f"profile{attempt}")
        green, grey = _bars(rgb)
        _, _, g_cols, w_cols = _widest_rows(green, grey)
        drawn = green.sum() > 2000 and grey.sum() > 1500
        if drawn and abs(g_cols.size / max(w_cols.size, 1) / expected - 1) < 0.1:
            break
    # the useful bar is about 53 % of the calendar wide, the waiting bar about 37 %:
    # both are on the first screen, side by side in that proportion
    assert green.sum() > 2000 and grey.sum() > 1500, (green.sum(), grey.sum())
    g_row, w_row, g_cols, w_cols = _widest_rows(green, grey)
    assert g_cols.size / w_cols.size == pytest.approx(expected, rel=0.1)
    assert 0 < w_row - g_row < 300                      # waiting a few bars below useful
    assert g_cols.max() < w_cols.min() + 5              # ... and starting right of it


def test_patience_what_ifs_from_a_curve():
    val = [1.0, 0.8, 0.7, 0.75, 0.72, 0.71, 0.74, 0.9, 0.95, 0.99, 1.0, 1.1]  # best: epoch 3
    facts = curve_facts({"epoch": np.arange(1, 13, dtype=float), "val_loss": np.array(val)})
    assert (facts.epochs, facts.best_epoch, facts.after_best) == (12, 3, 9)
    stops = {s.patience: s for s in facts.stops}
    assert stops[3].stop_epoch == 6 and stops[3].saved_epochs == 6
    assert stops[5].stop_epoch == 8 and stops[5].saved_epochs == 4
    assert stops[10].stop_epoch == 12 and stops[10].saved_epochs == 0
    assert all(s.kept_best_epoch == 3 for s in facts.stops)


def test_patience_keeps_a_worse_epoch_when_stopped_on_a_plateau():
    val = [0.9, 0.95, 0.96, 0.97, 0.5]
    facts = curve_facts({"epoch": np.arange(1, 6, dtype=float), "val_loss": np.array(val)})
    s3 = facts.stops[0]
    assert (s3.stop_epoch, s3.kept_best_epoch, s3.kept_best_val) == (4, 1, 0.9)
    assert facts.best_epoch == 5


def test_patience_uses_the_first_seed():
    data = {"epoch": np.array([1, 2, 3, 1, 2, 3], float), "seed": np.array([0, 0, 0, 1, 1, 1.]),
            "val_loss": np.array([0.5, 0.4, 0.6, 0.1, 0.9, 0.9])}
    assert curve_facts(data).best_epoch == 2
    assert curve_facts({"epoch": np.array([1.0]), "val_loss": np.array([np.nan])}) is None


def test_probe_section_has_epochs_that_mattered(full_build):
    md = full_build.md
    assert "### Epochs that mattered" in md
    assert "| probe | best epoch | epochs after best | patience 3: saved |" in md
