"""rightsize.measure: peak RSS, Timer, hardware stamp."""

from __future__ import annotations

import time

import numpy as np
import psutil
import sklearn
import torch

from rightsize.measure import Timer, hardware_stamp, peak_rss_mb


def test_timer_measures_the_block_and_reads_live():
    with Timer() as t:
        time.sleep(0.02)
        live = t.seconds
    done = t.seconds
    assert 0.0 < live <= done
    assert 0.02 <= done < 1.0
    time.sleep(0.01)
    assert t.seconds == done            # frozen once the block ends
    assert Timer().seconds == 0.0


def test_peak_rss_is_at_least_current_rss_after_touching_memory():
    block = np.ones(64 * 2**20 // 8)    # 64 MiB, touched
    current = psutil.Process().memory_info().rss / 2**20
    peak = peak_rss_mb()
    assert peak >= current - 1.0
    assert peak >= 64
    del block


def test_hardware_stamp_keys_and_versions():
    stamp = hardware_stamp(threads=3, device="cpu")
    assert {"cpu", "cores", "threads", "torch", "sklearn", "device"} <= set(stamp)
    assert stamp["threads"] == 3
    assert stamp["device"] == "cpu"
    assert stamp["cores"] >= 1
    assert stamp["torch"] == torch.__version__
    assert stamp["sklearn"] == sklearn.__version__
    assert isinstance(stamp["cpu"], str) and stamp["cpu"]
