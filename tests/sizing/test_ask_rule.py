"""Issue 33: the ask never claims what it did not check (disk fit, margin, unmeasured parts),
GPU files refused loudly, GPU types side by side, the geometry and what is kept said."""

from __future__ import annotations

import pytest
from sizing_fixtures import SIZING_BLOCK, bench_dict, disk_dict

from rightsize.errors import DataError, ParamsError
from rightsize.params import parse
from rightsize.sizing.config import ScenarioCount, SizingConfig, check_retired
from rightsize.sizing.plan import size_all

PAIRED = {"ecg": ScenarioCount(1000, "test manifest: has_ecg"),
          "echo": ScenarioCount(5000, "test manifest: n_clips")}
ECG_STORAGE = 1000 * 93 * 768 * 2 * 4                     # 571,392,000 bytes


def _cfg(**over: object) -> SizingConfig:
    return parse(SizingConfig, {**SIZING_BLOCK, **over}, "sizing")


def _size(cfg: SizingConfig | None = None, gpu_files: dict | None = None,
          disk: dict | None = None, ecg: dict | None = None, echo: dict | None = None) -> dict:
    benches = {"ecg": ecg or bench_dict(),
               "echo": echo or bench_dict("echojepa", "vitl", preprocess_rate=None)}
    return size_all(cfg or _cfg(), benches, gpu_files or {}, PAIRED, disk or disk_dict())


def _gpu_file(gpu: str, rate: float | None = 500.0, **kw: object) -> dict:
    return bench_dict(device="cuda", gpu=gpu, records_per_s=rate, **kw)


# 1. the rule ------------------------------------------------------------------------------

def test_shards_that_do_not_fit_the_free_space_are_never_no_gpu_needed() -> None:
    out = _size(disk=disk_dict(free=ECG_STORAGE - 1))
    assert out["ask"]["choice"] == "no_fit" and out["ask"]["fits_free_space"] is False
    assert out["text"]["answer"] == "Request scratch: needs 571 MB of shards"
    assert "No GPU needed" not in out["text"]["ask"]
    assert out["text"]["ask"].startswith(
        "The shards do not fit here: needs 571 MB of shards; . has 571 MB free: request "
        "scratch of 571 MB")
    assert out["requests"]["paired_cohort"]["scratch"].endswith("request scratch of 592 MB")
    assert out["scenarios"]["paired_cohort"]["models"]["ecg"]["cheapest"]["choice"] == "no_fit"
    assert {t["choice"] for t in out["gpu_types"]} == {"no_fit"}     # no GPU type either


def test_shards_over_the_quota_do_not_fit_either() -> None:
    out = _size(_cfg(disk={**SIZING_BLOCK["disk"], "quota": "500MB"}))
    assert (out["ask"]["choice"], out["ask"]["fits_quota"]) == ("no_fit", False)


@pytest.mark.parametrize(("margin", "choice"), [(1.0, "cpu"), (1.5, "gpu")])
def test_the_deadline_is_met_with_the_margin(margin: float, choice: str) -> None:
    # the CPU takes 1,002.5 s: within a 1,200 s deadline, not within 1,200 / 1.5 = 800 s
    out = _size(_cfg(deadline_h=1200 / 3600, margin=margin))
    assert out["ask"]["choice"] == choice
    assert (out["text"]["answer"] == "No GPU needed") == (choice == "cpu")
    assert f"with a {margin:g}× margin" in out["text"]["ask"]


def test_margin_below_one_is_refused() -> None:
    with pytest.raises(ParamsError, match=r"^sizing\.margin: must be a number >= 1"):
        _cfg(margin=0.5)


def test_an_unmeasured_part_blocks_no_gpu_needed_and_is_named() -> None:
    # ECG + echo: the CPU is within the deadline only because echo decoding has no time
    out = _size(_cfg(ask={"scenario": "paired_cohort", "models": ["ecg", "echo"]},
                     deadline_h=10_000),
                echo=bench_dict("echojepa", "vitl", preprocess_rate=None, records_per_s=5.0))
    a, text = out["ask"], out["text"]
    assert a["choice"] == "unknown" and a["gpus_chosen"] is None
    assert text["answer"] == "Unknown: echo decoding, echo input reading"
    assert "No GPU needed" not in text["ask"]
    assert text["ask"].startswith("Unknown: echo decoding, echo input reading (not measured).")


def test_the_bound_of_two_models_is_said_in_plain_words() -> None:
    out = _size(_cfg(ask={"scenario": "paired_cohort", "models": ["ecg", "echo"]}))
    bound = out["ask"]["cpu"]["bound"]
    assert bound == "compute"                            # both models bound by compute
    assert "(not measured:" not in out["text"]["ask"] and "compute; compute" not in bound
    slow = _size(_cfg(ask={"scenario": "paired_cohort", "models": ["ecg", "echo"]}),
                 disk=disk_dict(write_bps=1e5))          # ECG writing 5,714 s > 1,000 s compute
    assert slow["ask"]["cpu"]["bound"] == "ecg: writing; echo: compute"


# 2. GPU files refused loudly, the estimate tied to a preset ---------------------------------

def test_sizing_gpu_naming_no_committed_file_exits_2_naming_the_files_seen() -> None:
    files = {"ecg-a100.json": _gpu_file("NVIDIA A100-SXM4-80GB")}
    with pytest.raises(ParamsError, match=r"^sizing\.gpu: 'H100' names no committed GPU file "
                                          r"\(files seen: ecg-a100\.json \(NVIDIA A100-SXM4-80GB"
                                          r"\)\)") as err:
        _size(_cfg(gpu="H100"), gpu_files=files)
    assert err.value.exit_code == 2
    with pytest.raises(ParamsError, match=r"files seen: none"):
        _size(_cfg(gpu="H100"))


@pytest.mark.parametrize("rate", [0.0, -3.0, None])
def test_a_gpu_file_without_a_positive_rate_exits_4_naming_it(rate: float | None) -> None:
    files = {"ecg-h100.json": _gpu_file("NVIDIA H100 80GB HBM3", rate=rate)}
    with pytest.raises(DataError, match=r"^ecg-h100\.json: records_per_s must be a positive "
                                        r"rate") as err:
        _size(gpu_files=files)
    assert err.value.exit_code == 4


def test_a_file_left_out_by_sizing_gpu_says_so() -> None:
    files = {"ecg-a100.json": _gpu_file("NVIDIA A100-SXM4-80GB"),
             "ecg-h100.json": _gpu_file("NVIDIA H100 80GB HBM3", rate=900.0)}
    out = _size(_cfg(gpu="H100"), gpu_files=files)
    status = {f["file"]: f["status"] for f in out["gpu_files"]}
    assert status["ecg-h100.json"] == "used for ecg"
    assert "its GPU is not the one sizing.gpu names ('H100')" in status["ecg-a100.json"]
    assert "another file picked" not in status["ecg-a100.json"]


def test_the_estimate_names_a_preset_never_a_free_peak() -> None:
    with pytest.raises(ParamsError, match=r"^sizing\.estimate\.gpu: unknown GPU type "
                                          r"'Imaginary X9000' \(known: A100 SXM, H100 SXM"):
        _cfg(estimate={"gpu": "Imaginary X9000", "utilisation": [0.2, 0.5]})
    with pytest.raises(ParamsError, match=r"^sizing\.estimate\.peak_tflops: retired"):
        check_retired({"estimate": {"gpu": "A100 SXM", "peak_tflops": 312.0}})
    assert _cfg(estimate={"gpu": "H100 SXM", "utilisation": [0.2, 0.5]}).estimate.peak_tflops \
        == 989.0


# 3. GPU types side by side ---------------------------------------------------------------

def test_gpu_types_side_by_side_scale_with_their_published_peaks() -> None:
    out = _size(disk=disk_dict(write_bps=1e15, read_bps=1e15),   # compute-bound everywhere
                ecg=bench_dict(preprocess_rate=1e9))
    types = {t["type"]: t for t in out["gpu_types"]}
    assert list(types) == ["A100 SXM", "H100 SXM", "L40S", "L4"]
    assert {t: v["bf16_dense_tflops"] for t, v in types.items()} == \
        {"A100 SXM": 312.0, "H100 SXM": 989.0, "L40S": 362.05, "L4": 121.0}
    assert {v["memory_gb"] for v in types.values()} == {80, 48, 24}
    assert all("NVIDIA datasheet" in v["source"] for v in types.values())
    a100, h100 = types["A100 SXM"]["by_k"]["1"], types["H100 SXM"]["by_k"]["1"]
    assert a100["gpu_hours_high"] / h100["gpu_hours_high"] == pytest.approx(989 / 312)
    assert list(types["L4"]["by_k"]) == ["1", "2", "4", "8"]
    table = next(t for t in out["text"]["tables"] if t["header"][0].startswith("GPU type"))
    assert [r[0].split(" (")[0] for r in table["rows"]] == list(types)


def test_a_measured_gpu_file_outranks_its_types_estimate() -> None:
    files = {"ecg-h100.json": _gpu_file("NVIDIA H100 80GB HBM3", rate=1000.0)}
    out = _size(gpu_files=files, disk=disk_dict(write_bps=1e15, read_bps=1e15))
    types = {t["type"]: t for t in out["gpu_types"]}
    assert types["H100 SXM"]["compute"] == "measured"
    assert types["A100 SXM"]["compute"] == "estimated"
    # 1,000 records at 1,000 records/s on one H100: 1 s of compute (preprocessing on 8 cores
    # at 200 records/s per core: 0.625 s)
    assert types["H100 SXM"]["by_k"]["1"]["wall_s_high"] == pytest.approx(1.0)


def test_money_per_gpu_type_only_where_priced() -> None:
    out = _size(_cfg(prices={"gpu_hour": {"H100 SXM": 4.0}, "cpu_core_hour": None}))
    money = {t["type"]: t["cost"] for t in out["gpu_types"]}
    assert money["A100 SXM"] is None and money["L4"] is None
    h = out["gpu_types"][1]["by_k"]["1"]
    assert money["H100 SXM"]["high"] == pytest.approx(4.0 * h["gpu_hours_high"])
    with pytest.raises(ParamsError, match=r"^sizing\.prices\.gpu_hour: unknown GPU type 'V100'"):
        _cfg(prices={"gpu_hour": {"V100": 1.0}})


# 4. geometries ----------------------------------------------------------------------------

def test_the_ask_says_which_echo_geometry_it_sized() -> None:
    ask = {"scenario": "paired_cohort", "models": ["echo"]}
    at224 = _size(_cfg(ask=ask))["text"]["ask"]
    assert "echo sized at 16 frames × 224 px, 2 clips per video, 1,568 tokens per clip " \
           "(EchoJEPA's ViT-L LVEF evaluation config)" in at224
    out = _size(_cfg(ask=ask), echo=bench_dict("echojepa", "vitl", preprocess_rate=None,
                                                resolution=336))
    assert "16 frames × 336 px, 2 clips per video, 3,528 tokens per clip (EchoJEPA's ViT-L " \
           "LVEF inference config)" in out["text"]["ask"]
    notes = " ".join(out["text"]["notes"])
    assert "bowang-lab/EchoJEPA configs/inference/vitl/echojepa_large_lvef.yaml@70a8a7a" in notes


def test_ecg_options_5s_10s_and_all_ecgs_each_say_their_assumption() -> None:
    scen = {**SIZING_BLOCK["scenarios"],
            "one_each": {"ecg": {"records": 100, "source": "s", "assumption": "one ECG each"}},
            "all": {"ecg": {"records": 500, "source": "s", "assumption": "about 5 ECGs each"}},
            "ten_s": {"ecg": {"records": 100, "source": "s", "crops_per_record": 2,
                              "assumption": "the whole 10 s"}}}
    out = _size(_cfg(scenarios=scen))
    rows = {n: out["scenarios"][n]["models"]["ecg"] for n in ("one_each", "all", "ten_s")}
    assert rows["ten_s"]["tokens_per_record"] == 2 * rows["one_each"]["tokens_per_record"] == 186
    assert rows["ten_s"]["storage_bytes"] == 2 * rows["one_each"]["storage_bytes"]
    assert rows["ten_s"]["cpu"]["parts"]["compute"]["high_s"] == pytest.approx(
        2 * rows["one_each"]["cpu"]["parts"]["compute"]["high_s"])
    assert rows["ten_s"]["cpu"]["parts"]["compute"]["how"] == "extrapolated"
    assert rows["all"]["storage_bytes"] == 5 * rows["one_each"]["storage_bytes"]
    cells = {r[0]: r[1] for r in out["text"]["tables"][0]["rows"]}
    assert "assumption: one ECG each" in cells["one_each / ecg"]
    assert "assumption: about 5 ECGs each" in cells["all / ecg"]
    assert "assumption: the whole 10 s" in cells["ten_s / ecg"]


# 9. the sentence ----------------------------------------------------------------------------

def test_the_sentence_states_tokens_layers_width_and_dtype() -> None:
    sentence = _size()["text"]["ask"]
    assert "93 tokens × 4 layers × 768, float16 per ECG record" in sentence
    both = _size(_cfg(ask={"scenario": "paired_cohort", "models": ["ecg", "echo"]}))
    assert "2 pooled clip vectors × 1 layer × 1,024, float16 per video" in both["text"]["ask"]


def test_the_recovered_cohorts_one_ecg_each_is_said_in_the_ask() -> None:
    scen = {**SIZING_BLOCK["scenarios"],
            "recovered_cohort": {"ecg": {"records": 4103, "source": "recovery",
                                         "assumption": "one ECG per subject"}}}
    out = _size(_cfg(scenarios=scen, ask={"scenario": "recovered_cohort", "models": ["ecg"]}))
    assert "source: recovery, assumption: one ECG per subject" in out["text"]["ask"]


def test_asserted_before_measured_now_includes_the_write_bound() -> None:
    out = _size(disk=disk_dict(write_bps=1e8))
    table = next(t for t in out["text"]["tables"] if t["header"][1].startswith("asserted"))
    rows = {r[0]: r for r in table["rows"]}
    # 1,000,000 records x 571,392 bytes at 100 MB/s: 5,714 s = 95.2 min = 1.59 h of writing
    assert rows["writing the shards (one node)"][1] == "not counted"
    assert rows["writing the shards (one node)"][2].startswith("95.2 min at 100 MB/s")
    m = out["asserted_vs_measured"]["measured"]
    assert m["gpu_hours_with_write_high"] == pytest.approx(max(m["gpu_hours_high"],
                                                               571_392e6 / 1e8 / 3600))
    assert rows["GPU-hours on 1 GPU with the write bound"][2].startswith("1.59")


def test_measured_echo_decoding_lifts_the_unknown() -> None:
    """With echo decoding measured (the bench's DICOM decode), nothing is unknown."""
    echo = bench_dict("echojepa", "vitl", preprocess_rate=5.0, records_per_s=5.0)
    out = _size(_cfg(ask={"scenario": "paired_cohort", "models": ["ecg", "echo"]},
                     deadline_h=10_000), echo=echo)
    assert out["ask"]["unknown"] == [] and out["ask"]["choice"] == "cpu"
    assert out["text"]["answer"] == "No GPU needed"


# 5. the preprocessing measured is the one HuBERT-ECG recommends ---------------------------

def test_the_notes_say_the_preprocessing_is_the_recommended_one_and_rates_keep_digits() -> None:
    out = _size(echo=bench_dict("echojepa", "vitl", preprocess_rate=0.87))
    notes = " ".join(out["text"]["notes"])
    assert "Preprocessing as HuBERT-ECG recommends (Edoar-do/HuBERT-ECG README.md@affe1f9): " \
           "band-pass and scaling as in Edoar-do/HuBERT-ECG code/utils.py@affe1f9" in notes
    bench = next(t for t in out["text"]["tables"] if t["header"][0] == "model"
                 and "FLOPs/record" in t["header"])
    assert [r[5] for r in bench["rows"]] == ["200", "0.87"]     # echo decoding: 0.87/s/core
