"""The ask's model gains the workers' start-up and extract's own rate (issue 41): both come
from the bench's ``workers`` timing, start-up adds once to the wall on the CPU and on GPUs."""

from __future__ import annotations

import pytest
from sizing_fixtures import SIZING_BLOCK, bench_dict, disk_dict

from rightsize.params import parse
from rightsize.sizing.config import ScenarioCount, SizingConfig
from rightsize.sizing.plan import size_row


def _workers(startup: tuple[float, float], per_worker: float) -> dict:
    return {"workers": 2, "threads_per_worker": 1, "startup_s": sum(startup) / 2,
            "startup_s_min": startup[0], "startup_s_max": startup[1],
            "throughput": {"batch_4": {"batch": 4, "records_per_s_per_worker": per_worker,
                                       "records_per_s_per_worker_min": per_worker,
                                       "records_per_s_per_worker_max": per_worker,
                                       "records_per_s": 2 * per_worker}}}


def test_startup_adds_once_and_the_workers_rate_is_the_cpu_rate() -> None:
    cfg = parse(SizingConfig, SIZING_BLOCK, "sizing")
    bench = {**bench_dict(records_per_s=1.0, preprocess_rate=None),
             "workers": _workers((8.0, 10.0), 3.0)}
    row, by_k = size_row(ScenarioCount(600, "test"), bench, cfg, "ecg", (None, None),
                         disk_dict(write_bps=1e12, read_bps=None))
    cpu = row["cpu"]
    assert cpu["parts"]["compute"]["low_s"] == pytest.approx(600 / 6.0)   # 2 workers x 3/s
    assert "2 extract workers x 1 thread(s) at batch 4" in cpu["parts"]["compute"]["note"]
    assert cpu["parts"]["startup"]["low_s"] == 8.0
    assert cpu["wall_s_low"] == pytest.approx(8.0 + 100.0)
    assert cpu["wall_s_high"] == pytest.approx(10.0 + 100.0)
    one = by_k[1]
    assert one["parts"]["startup"]["how"] == "estimated"
    assert one["wall_s_high"] == pytest.approx(10.0 + max(
        p["high_s"] for n, p in one["parts"].items() if n != "startup" and p["high_s"]))


def test_a_bench_without_worker_timing_keeps_the_one_process_rate() -> None:
    cfg = parse(SizingConfig, SIZING_BLOCK, "sizing")
    row, _ = size_row(ScenarioCount(600, "test"), bench_dict(records_per_s=2.0,
                                                             preprocess_rate=None), cfg,
                      "ecg", (None, None), disk_dict(write_bps=1e12, read_bps=None))
    assert "startup" not in row["cpu"]["parts"]
    assert row["cpu"]["wall_s_low"] == pytest.approx(300.0)


def test_a_crop_count_other_than_the_bench_scales_the_workers_rate() -> None:
    """2 crops per record halve the workers' records/s, as they halve the one-process rate."""
    cfg = parse(SizingConfig, SIZING_BLOCK, "sizing")
    bench = {**bench_dict(records_per_s=1.0, preprocess_rate=None),
             "workers": _workers((8.0, 10.0), 3.0)}
    row, _ = size_row(ScenarioCount(600, "test", crops_per_record=2), bench, cfg, "ecg",
                      (None, None), disk_dict(write_bps=1e12, read_bps=None))
    assert row["cpu"]["parts"]["compute"]["low_s"] == pytest.approx(600 / 3.0)
