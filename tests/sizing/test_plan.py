"""Sizing from bench files, against hand-computed values; what moves it; bad input."""

from __future__ import annotations

import pytest
from sizing_fixtures import SIZING_BLOCK, bench_dict

from rightsize.errors import ParamsError
from rightsize.params import parse
from rightsize.sizing.config import SizingConfig, check_retired
from rightsize.sizing.plan import size_all, size_row

HOUR = 3600.0
# HuBERT-ECG base on 2 x 6,000-sample crops: 93 tokens per crop (6000 -> 1498 -> 748 -> 373
# -> 186 -> 93), 13 hidden states of 768.
TOKENS, HIDDEN, STATES = 186, 768, 13


def _cfg(**over: object) -> SizingConfig:
    return parse(SizingConfig, {**SIZING_BLOCK, **over}, "sizing")


def _size(cfg: SizingConfig | None = None, ecg: dict | None = None, echo: dict | None = None,
          gpu_files: dict | None = None, free: int | None = 10**12) -> dict:
    benches = {"ecg": ecg or bench_dict(), "echo": echo or bench_dict("echojepa", "vitl")}
    return size_all(cfg or _cfg(), benches, gpu_files or {}, {"ecg": 1000, "echo": 5000}, free)


def test_ecg_row_by_hand() -> None:
    b = bench_dict(preprocess_rate=200.0)
    assert (b["tokens_per_record"], b["hidden_size"], b["hidden_states"]) == (TOKENS, HIDDEN,
                                                                              STATES)
    r = _size(ecg=b)["scenarios"]["paired_cohort"]["models"]["ecg"]
    assert r["records"] == 1000 and r["tokens"] == 186_000
    assert r["bytes_per_record"] == 186 * 768 * 4 * 2 == 1_142_784
    assert r["storage_bytes"] == 1_142_784_000
    assert r["storage_bytes_one_layer"] == 1_142_784_000 // 4
    assert r["storage_bytes_all_layers"] == 186 * 768 * 13 * 2 * 1000
    flops = 1000 * b["flops_per_record"]
    assert r["gpu_hours"] is None and r["gpu_measured"] is False
    assert r["gpu_hours_low"] == pytest.approx(flops / (100e12 * 0.5) / HOUR)
    assert r["gpu_hours_high"] == pytest.approx(flops / (100e12 * 0.25) / HOUR)
    assert r["gpu_source"].startswith("estimated, no GPU measurement: measured FLOPs at 25%-50%")
    assert r["cpu_hours"] == pytest.approx(1000 / 200 / HOUR)
    assert r["bound"] == "GPU"          # 5 CPU-s over 8 cores < 0.77 GPU-s at 50 %


@pytest.mark.parametrize(("rate", "bound"), [
    (20.0, "preprocessing (CPU)"),
    (120.0, "preprocessing (CPU) unless GPU utilisation is below 37%, then GPU"),
    (None, "not determined: preprocessing not measured (GPU side only)"),
])
def test_bound(rate: float | None, bound: str) -> None:
    r = _size(ecg=bench_dict(preprocess_rate=rate))["scenarios"]["paired_cohort"]["models"]
    assert r["ecg"]["bound"] == bound


def test_echo_pooled_and_scenarios() -> None:
    out = _size()
    echo = out["scenarios"]["full_corpus"]["models"]["echo"]
    assert echo["tokens_per_record"] == 8 * 16 * 16           # 16 frames / 2 x (256 / 16)^2
    assert echo["bytes_per_record"] == 1024 * 1 * 2           # pooled: hidden x 1 layer x fp16
    assert echo["storage_bytes"] == 8_000_000 * 2048
    assert set(out["scenarios"]) == {"paired_cohort", "expansion", "full_corpus"}
    assert out["scenarios"]["paired_cohort"]["models"]["echo"]["records"] == 5000
    total = out["scenarios"]["expansion"]
    assert total["storage_bytes"] == sum(r["storage_bytes"] for r in total["models"].values())


def test_layer_choice_dtype_and_size_move_the_sizing() -> None:
    base = _size()["ask"]
    one = _size(_cfg(models={**SIZING_BLOCK["models"], "ecg": {"layers_kept": 1}}))["ask"]
    f32 = _size(_cfg(dtype="float32"))["ask"]
    large = _size(ecg=bench_dict(size="large"))["ask"]
    assert one["storage_bytes"] * 4 == base["storage_bytes"]
    assert f32["storage_bytes"] == 2 * base["storage_bytes"]
    assert large["storage_bytes"] == base["storage_bytes"] * 960 // 768
    assert large["gpu_hours_low"] > 1.5 * base["gpu_hours_low"]
    small = _size(ecg=bench_dict(size="small"))["ask"]
    assert small["gpu_hours_low"] < base["gpu_hours_low"]


def test_disk_fit_against_free_space_and_quota() -> None:
    ask = _size(free=10**9)["ask"]          # 1.14 GB of ECG states
    assert ask["fits_free_space"] is False and ask["fits_quota"] is True
    assert _size(free=2 * 10**9)["ask"]["fits_free_space"] is True
    full = _size(_cfg(ask={"scenario": "full_corpus", "models": ["ecg"]}))["ask"]
    assert full["storage_bytes"] == 1_142_784 * 10**6 and full["fits_quota"] is True
    tight = _size(_cfg(disk={"path": ".", "quota": "1TB"},
                       ask={"scenario": "full_corpus", "models": ["ecg"]}))["ask"]
    assert tight["fits_quota"] is False


def test_measured_gpu_file_is_used_and_labelled() -> None:
    gpu = bench_dict(device="cuda", records_per_s=500.0, gpu="NVIDIA H100")
    other = bench_dict(size="large", device="cuda", records_per_s=9.0, gpu="NVIDIA A10")
    out = _size(gpu_files={"ecg-h100.json": gpu, "ecg-large-a10.json": other})
    r = out["scenarios"]["paired_cohort"]["models"]["ecg"]
    assert r["gpu_measured"] is True
    assert r["gpu_hours"] == r["gpu_hours_low"] == r["gpu_hours_high"] == 1000 / 500 / HOUR
    assert "measured on NVIDIA H100 (ecg-h100.json" in r["gpu_source"]
    assert out["gpu_files"] == {"ecg": "ecg-h100.json", "echo": "none"}
    assert out["scenarios"]["paired_cohort"]["models"]["echo"]["gpu_measured"] is False
    assert out["asserted_vs_measured"]["measured"]["gpu_measured"] is True


def test_two_matching_gpu_files_need_a_choice() -> None:
    files = {"a.json": bench_dict(device="cuda", records_per_s=500.0, gpu="NVIDIA H100"),
             "b.json": bench_dict(device="cuda", records_per_s=250.0, gpu="NVIDIA A100")}
    with pytest.raises(ParamsError, match=r"^sizing\.gpu: 2 GPU files match ecg"):
        _size(gpu_files=files)
    picked = _size(_cfg(gpu="a100"), gpu_files=files)
    assert picked["ask"]["gpu_hours_low"] == pytest.approx(1000 / 250 / HOUR)


def test_asserted_vs_measured_by_hand() -> None:
    ba = _size()["asserted_vs_measured"]
    assert ba["asserted"]["tokens_per_record"] == 500
    assert ba["asserted"]["storage_bytes"] == 3_072_000_000_000
    assert ba["asserted"]["gpu_hours"] == pytest.approx(6.9444444, rel=1e-6)
    assert ba["measured"]["tokens_per_record"] == TOKENS
    assert ba["measured"]["storage_bytes"] == 10**6 * 186 * 768 * 4 * 2


@pytest.mark.parametrize(("over", "needle"), [
    ({"dtype": "int8"}, r"^sizing\.dtype: unknown dtype 'int8' \(known: bfloat16, float16, "),
    ({"scenarios": {"expansion": {"ecg": 0}}}, r"^sizing\.scenarios\.expansion\.ecg: records "),
    ({"scenarios": {"expansion": {"ecg": -5}}}, r"^sizing\.scenarios\.expansion\.ecg: "),
    ({"scenarios": {"x": {"ekg": 5}}}, r"^sizing\.scenarios\.x\.ekg: unknown model"),
    ({"models": {"ecg": {"layers_kept": 1, "keep": "mean"}}}, r"^sizing\.models\.ecg\.keep: "),
    ({"ask": {"scenario": "nope", "models": ["ecg"]}}, r"^sizing\.ask\.scenario: unknown"),
    ({"estimate": {"gpu": "g", "peak_tflops": 1.0, "utilisation": [0.6, 0.2]}},
     r"^sizing\.estimate\.utilisation: "),
    ({"scenarios": {"paired_cohort": {"ecg": 5}}}, r"^sizing\.scenarios\.paired_cohort: "),
])
def test_bad_config_names_the_key(over: dict, needle: str) -> None:
    with pytest.raises(ParamsError, match=needle):
        _cfg(**over)


def test_layers_beyond_the_model_and_nonpositive_records() -> None:
    cfg = _cfg(models={**SIZING_BLOCK["models"], "ecg": {"layers_kept": 14}})
    with pytest.raises(ParamsError, match=r"^sizing\.models\.ecg\.layers_kept: 14 > the 13 "):
        _size(cfg)
    with pytest.raises(ParamsError, match="records must be > 0"):
        size_row(0, bench_dict(), _cfg(), "ecg", (None, None))


@pytest.mark.parametrize("key", ["tokens_per_second", "records_per_s_per_gpu", "disk_bytes"])
def test_retired_keys_say_what_replaced_them(key: str) -> None:
    with pytest.raises(ParamsError, match=rf"^sizing\.{key}: retired \(it was an asserted "):
        check_retired({**SIZING_BLOCK, key: 1})
