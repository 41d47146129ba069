"""Sizing arithmetic against hand-computed values; config validation; human sizes."""

from __future__ import annotations

import dataclasses

import pytest

from rightsize.errors import ParamsError
from rightsize.probes.sizing import size_extraction, table_rows
from rightsize.probes.sizing_config import SizingConfig, format_bytes, parse_size

# The repo's default job: 1M ten-second ECGs, 50 tokens/s, 768-d, 4 layers, fp16, 40 rec/s/GPU.
BASE = SizingConfig(records=1_000_000, seconds_per_record=10.0, tokens_per_second=50.0,
                    hidden_dim=768, layers_kept=4, dtype="float16",
                    records_per_s_per_gpu=40.0, gpus=8, disk_bytes=2e12)


def test_default_job_by_hand() -> None:
    r = size_extraction(BASE)
    # 10 s x 50 tok/s = 500 tokens; 500 x 768 x 4 layers x 2 B = 3,072,000 B per record
    assert r["tokens_per_record"] == 500
    assert r["total_tokens"] == 500_000_000
    assert r["bytes_per_record"] == 3_072_000
    assert r["storage_bytes"] == 3_072_000_000_000
    assert r["storage_tb"] == pytest.approx(3.072)
    assert r["storage_tib"] == pytest.approx(3.072e12 / 1024**4)
    # pooled: 768 x 4 x 2 = 6,144 B per record, 500x smaller
    assert r["pooled_bytes_per_record"] == 6_144
    assert r["pooled_storage_bytes"] == 6_144_000_000
    assert r["token_to_pooled_ratio"] == pytest.approx(500.0)
    # 1e6 / 40 / 3600 = 6.944 GPU-hours; on 8 GPUs 0.868 h
    assert r["gpu_hours"] == pytest.approx(6.944444444, rel=1e-9)
    assert r["wall_clock_hours"] == pytest.approx(0.868055555, rel=1e-8)
    assert r["wall_clock_days"] == pytest.approx(0.868055555 / 24, rel=1e-8)
    # 3.072 TB does not fit 2 TB: 2e12 / 3.072e6 = 651,041.67 records; 2e12 / 7.68e11 = 2.6 layers
    assert r["fits_disk"] is False
    assert r["disk_headroom_bytes"] == -1_072_000_000_000
    assert r["max_records_on_disk"] == 651_041
    assert r["max_layers_on_disk"] == 2
    # inputs echoed
    assert r["dtype"] == "float16" and r["dtype_bytes"] == 2 and r["gpus"] == 8
    assert r["disk_bytes"] == 2_000_000_000_000


def test_second_job_fits_by_hand() -> None:
    cfg = SizingConfig(records=2000, seconds_per_record=2.5, tokens_per_second=100.0,
                       hidden_dim=1024, layers_kept=13, dtype="float32",
                       records_per_s_per_gpu=5.0, gpus=3, disk_bytes=500 * 1024**3)
    r = size_extraction(cfg)
    # 250 tokens x 1024 x 13 x 4 B = 13,312,000 B; x 2000 = 26,624,000,000 B
    assert r["bytes_per_record"] == 13_312_000
    assert r["storage_bytes"] == 26_624_000_000
    assert r["fits_disk"] is True
    assert r["disk_headroom_bytes"] == 536_870_912_000 - 26_624_000_000
    # 536,870,912,000 / 13,312,000 = 40,329.8 ; / (2000 x 250 x 1024 x 4 = 2,048,000,000) = 262.1
    assert r["max_records_on_disk"] == 40_329
    assert r["max_layers_on_disk"] == 262
    # 2000 / 5 / 3600 = 0.1111 GPU-h; / 3 GPUs = 0.037037 h
    assert r["gpu_hours"] == pytest.approx(2000 / 5 / 3600)
    assert r["wall_clock_hours"] == pytest.approx(2000 / 5 / 3600 / 3)


def test_exact_fit_is_a_fit() -> None:
    cfg = dataclasses.replace(BASE, disk_bytes=3.072e12)
    r = size_extraction(cfg)
    assert r["fits_disk"] is True
    assert r["disk_headroom_bytes"] == 0
    assert r["max_records_on_disk"] == BASE.records
    assert r["max_layers_on_disk"] == BASE.layers_kept
    one_byte_short = size_extraction(dataclasses.replace(BASE, disk_bytes=3.072e12 - 1))
    assert one_byte_short["fits_disk"] is False
    assert one_byte_short["max_records_on_disk"] == BASE.records - 1
    assert one_byte_short["max_layers_on_disk"] == BASE.layers_kept - 1


def test_dtype_width_and_no_disk() -> None:
    bf16 = size_extraction(dataclasses.replace(BASE, dtype="bfloat16"))
    f32 = size_extraction(dataclasses.replace(BASE, dtype="float32", disk_bytes=None))
    assert bf16["storage_bytes"] == size_extraction(BASE)["storage_bytes"]
    assert f32["storage_bytes"] == 2 * bf16["storage_bytes"]
    assert f32["fits_disk"] is None and f32["max_records_on_disk"] is None
    labels = [label for label, _ in table_rows(f32)]
    assert "fits disk" not in labels and "GPU-hours" in labels


@pytest.mark.parametrize(("field", "value"), [
    ("records", 0), ("seconds_per_record", -1.0), ("tokens_per_second", float("nan")),
    ("hidden_dim", 0), ("layers_kept", -2), ("dtype", "int8"),
    ("records_per_s_per_gpu", 0.0), ("gpus", 0), ("disk_bytes", 0.0), ("records", 2.5),
])
def test_validate_names_the_key(field: str, value: object) -> None:
    cfg = dataclasses.replace(BASE, **{field: value})
    with pytest.raises(ParamsError, match=rf"^sizing\.{field}: ") as info:
        cfg.validate("sizing")
    assert "\n" not in str(info.value)
    with pytest.raises(ParamsError, match=rf"^sizing\.{field}: "):
        size_extraction(cfg)


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


def test_format_bytes() -> None:
    assert format_bytes(3_072_000_000_000) == "3.07 TB"
    assert format_bytes(512) == "512 B"
    assert format_bytes(6_144_000_000) == "6.14 GB"
    assert format_bytes(None) == "-"
