"""rightsize.measure: peak RSS, Timer, hardware stamp."""

from __future__ import annotations

import time

import numpy as np
import psutil
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
    assert {"cpu", "cores", "threads", "torch", "device"} <= set(stamp)
    assert "sklearn" not in stamp                  # a test oracle, not a runtime dependency
    assert stamp["threads"] == 3
    assert stamp["device"] == "cpu"
    assert stamp["cores"] >= 1
    assert stamp["torch"] == torch.__version__
    assert isinstance(stamp["cpu"], str) and stamp["cpu"]


def test_stamp_records_what_decides_the_floating_point_path(monkeypatch):
    import re
    import subprocess
    import sys

    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.delenv("MKL_CBWR", raising=False)
    num = hardware_stamp(threads=1, device="cpu")["numerics"]
    flags = open("/proc/cpuinfo").read().split("flags", 1)[1].split("\n", 1)[0].split()
    assert num["isa"]["avx2"] == ("avx2" in flags)
    assert num["isa"]["avx512f"] == ("avx512f" in flags)
    assert num["isa"]["amx_bf16"] == ("amx_bf16" in flags)
    assert num["cpu_vendor"] in open("/proc/cpuinfo").read()
    assert num["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert re.fullmatch(r"\d{4}\.\d+(\.\d+)?", num["mkl"])
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", num["onednn"])
    assert num["blas"].startswith("openblas ") and "threads" in num["blas"]
    assert num["env"]["OPENBLAS_CORETYPE"] == "Haswell"
    assert num["env"]["MKL_CBWR"] == "unset"
    # a process that never imports torch is stamped without importing it
    code = ("import json, sys; from rightsize.measure import hardware_stamp; "
            "s = hardware_stamp(1, 'cpu'); "
            "print(json.dumps([s['numerics']['torch_cpu_capability'], 'torch' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == '["torch not loaded", false]'
