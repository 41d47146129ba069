"""Sizing from bench files and a disk measurement, against hand-computed values; bad input."""

from __future__ import annotations

import pytest
from sizing_fixtures import SIZING_BLOCK, SOURCES, bench_dict, disk_dict

from rightsize.errors import ParamsError
from rightsize.machine import stamp
from rightsize.params import parse
from rightsize.sizing.config import ScenarioCount, SizingConfig, check_retired
from rightsize.sizing.plan import size_all, size_row

HOUR = 3600.0
# HuBERT-ECG base on one 6,000-sample crop: 93 tokens (6000 -> 1498 -> 748 -> 373 -> 186
# -> 93), 13 hidden states of 768.
TOKENS, HIDDEN, STATES = 93, 768, 13
PAIRED = {"ecg": ScenarioCount(1000, "test manifest: has_ecg"),
          "echo": ScenarioCount(5000, "test manifest: n_clips")}


def _cfg(**over: object) -> SizingConfig:
    return parse(SizingConfig, {**SIZING_BLOCK, **over}, "sizing")


def _size(cfg: SizingConfig | None = None, ecg: dict | None = None, echo: dict | None = None,
          gpu_files: dict | None = None, disk: dict | None = None) -> dict:
    benches = {"ecg": ecg or bench_dict(),
               "echo": echo or bench_dict("echojepa", "vitl", preprocess_rate=None)}
    return size_all(cfg or _cfg(), benches, gpu_files or {}, PAIRED, disk or disk_dict())


def _row(out: dict, scenario: str = "paired_cohort", model: str = "ecg") -> dict:
    return out["scenarios"][scenario]["models"][model]


def test_ecg_row_by_hand() -> None:
    b = bench_dict(preprocess_rate=200.0, records_per_s=1.0)
    assert (b["tokens_per_record"], b["hidden_size"], b["hidden_states"]) == (TOKENS, HIDDEN,
                                                                              STATES)
    out = _size(ecg=b)
    r = _row(out)
    assert r["records"] == 1000 and r["tokens"] == 93_000
    assert r["source"] == "test manifest: has_ecg"
    assert r["layers"] == [9, 10, 11, 12]
    assert r["bytes_per_record_per_layer"] == 93 * 768 * 2 == 142_848
    assert r["bytes_per_record"] == 4 * 142_848
    assert r["storage_bytes"] == 571_392_000 and r["storage_bytes_per_layer"] == 142_848_000
    assert r["storage_bytes_all_layers"] == 142_848_000 * 13
    assert r["manifest_bytes"] == 2 * r["storage_bytes"]                  # float32
    assert r["input_bytes"] == 1000 * 120_000
    cpu = r["cpu"]["parts"]
    assert cpu["compute"]["low_s"] == cpu["compute"]["high_s"] == 1000.0   # 1 record/s
    assert cpu["preprocessing"]["low_s"] == pytest.approx(1000 / (200 * 2))
    assert cpu["reading"]["low_s"] == pytest.approx(1000 * 120_000 / 5e8)
    assert cpu["writing"]["low_s"] == pytest.approx(571_392_000 / 1e9)
    assert {p["how"] for p in cpu.values()} == {"measured"}
    assert r["cpu"]["wall_s_high"] == pytest.approx(1000 + 2.5)            # shared cores add
    assert r["cpu"]["bound"] == "compute"
    gpu = r["gpu"]
    flops = 1000 * b["flops_per_record"]
    assert gpu["gpus"] == 8 and gpu["cpu_cores_per_gpu"] == 8
    assert gpu["parts"]["compute"]["low_s"] == pytest.approx(flops / (312e12 * 0.5) / 8)
    assert gpu["parts"]["compute"]["high_s"] == pytest.approx(flops / (312e12 * 0.25) / 8)
    assert gpu["parts"]["compute"]["how"] == "estimated"
    assert gpu["parts"]["preprocessing"]["low_s"] == pytest.approx(1000 / (200 * 64))
    assert gpu["wall_s_high"] == pytest.approx(0.571392)                   # writing, overlapped
    assert gpu["bound"] == "writing"
    assert gpu["gpu_hours_high"] == pytest.approx(8 * 0.571392 / HOUR)
    assert r["cheapest"]["choice"] == "cpu"


def test_the_ask_says_no_gpu_needed_with_cpu_minutes() -> None:
    out = _size()
    ask = out["ask"]
    assert ask["choice"] == "cpu" and ask["cpu"]["wall_s_high"] == pytest.approx(1002.5)
    assert out["text"]["answer"] == "No GPU needed"
    sentence = out["text"]["ask"]
    assert sentence.startswith(f"No GPU needed: 16.7 min on this machine's 2 cores "
                               f"({stamp()['words']}, measured), 571 MB of float16 shards, "
                               f"bound by compute")
    assert "ecg 1,000 ECG records, source: test manifest: has_ecg" in sentence
    assert "deadline 24 h" in sentence and "at your prices" not in sentence


def test_a_bench_from_another_machine_is_not_called_this_machines() -> None:
    other = {"id": "0" * 12, "words": "AMD EPYC (AVX-512), 2 cores, 23.5 GiB, no GPU"}
    out = _size(ecg={**bench_dict(), "machine": other})
    sentence = out["text"]["ask"]
    assert sentence.startswith(f"No GPU needed: 16.7 min on 2 cores of {other['words']} "
                               f"(measured there, not this machine)")
    assert "this machine's" not in sentence
    assert out["benches"]["ecg"]["this_machine"] is False
    assert out["text"]["notes"][0].startswith("The CPU figures of ecg come from benches "
                                              f"measured elsewhere (ecg on {other['words']} "
                                              "(not this machine)")
    unstamped = _size(ecg={k: v for k, v in bench_dict().items() if k != "machine"})
    assert "no machine stamp: maybe not this machine" in unstamped["text"]["ask"]


@pytest.mark.parametrize(("deadline_h", "choice", "k"), [
    (24, "cpu", None),            # 1,002.5 s on the CPU
    (0.2, "gpu", 1),              # 720 s: one GPU takes 0.77 s at 25 % utilisation
    (1e-5, "none", 8),            # 0.036 s: even 8 GPUs are bound by 0.57 s of writing
])
def test_cheapest_option_within_the_deadline(deadline_h: float, choice: str, k: int) -> None:
    out = _size(_cfg(deadline_h=deadline_h))
    assert (out["ask"]["choice"], out["ask"]["gpus_chosen"]) == (choice, k)
    answer = out["text"]["answer"]
    assert answer == {"cpu": "No GPU needed", "gpu": "1 GPU, 0.00017 GPU-hours",
                      "none": "Over the deadline"}[choice]
    if choice == "gpu":
        assert "1 GPU (A100 SXM, estimated; 8 CPU cores per GPU)" in out["text"]["ask"]
        assert "would take 16.7 min, over the deadline" in out["text"]["ask"]


def test_bound_names_reading_and_writing_where_they_are_slowest() -> None:
    slow_write = _row(_size(disk=disk_dict(write_bps=1e5)))          # 5,714 s of writing
    assert slow_write["gpu"]["bound"] == "writing" and slow_write["cpu"]["bound"] == "writing"
    assert slow_write["cpu"]["wall_s_high"] == pytest.approx(571_392_000 / 1e5)
    slow_read = _row(_size(disk=disk_dict(read_bps=1e5)))
    assert slow_read["gpu"]["bound"] == "reading"
    assert slow_read["gpu"]["wall_s_high"] == pytest.approx(1000 * 120_000 / 1e5)


def test_estimate_range_can_change_the_bound() -> None:
    # writing 0.571 s; compute on 8 L4s (121 TFLOP/s) at 1-90 %: 0.022-2.0 s
    out = _size(_cfg(estimate={"gpu": "L4", "utilisation": [0.01, 0.9]}))
    r = _row(out)
    assert r["gpu"]["bound_low"] == "writing" and r["gpu"]["bound_high"] == "compute"
    assert "bound by compute at the slow end, writing at the fast end" in \
        out["text"]["tables"][0]["rows"][0][3]


def test_echo_published_geometry_pooled_per_clip_and_unmeasured_parts() -> None:
    out = _size()
    echo = _row(out, "echo_corpus", "echo")
    assert echo["tokens_per_input"] == 8 * 14 * 14 == 1568              # 224 px, tubelet 2
    assert echo["inputs_per_record"] == 2 and echo["tokens_per_record"] == 3136
    assert echo["bytes_per_record"] == 2 * 1024 * 2                      # 2 clip vectors, fp16
    assert echo["storage_bytes"] == 525_000 * 4096
    assert echo["source"] == SOURCES["echo"]
    assert echo["cpu"]["not_measured"] == ["preprocessing", "reading"]
    assert "unknown: echo decoding, echo input reading" in out["text"]["tables"][0]["rows"][-1][2]
    wide = bench_dict("echojepa", "vitl", resolution=256)
    assert wide["tokens_per_input"] == 2048                              # 256 px selectable


def test_every_scenario_line_shows_its_source() -> None:
    out = _size()
    table = out["text"]["tables"][0]
    assert [r[0] for r in table["rows"]] == ["paired_cohort / ecg", "paired_cohort / echo",
                                             "recovered_cohort / ecg", "ecg_corpus / ecg",
                                             "echo_corpus / echo"]
    for row, source in zip(table["rows"], ["test manifest: has_ecg", "test manifest: n_clips",
                                           SOURCES["recovered"], SOURCES["ecg"],
                                           SOURCES["echo"]], strict=True):
        assert f"({source})" in row[1]
    assert "8 GPUs (8 CPU cores per GPU)" in table["header"]


def test_layers_table_and_notes_carry_the_caveats() -> None:
    text = _size()["text"]
    layers = text["tables"][1]["rows"]
    assert layers[0][:2] == ["ecg", "tokens of hidden states 9-12 (the last 4 of 13, "
                                    "embeddings output = 0)"]
    assert layers[0][2] == "143 kB (93 x 768 x float16)"
    assert layers[1][1].startswith("a mean-pooled vector per clip of hidden state 24")
    joined = " ".join(text["notes"])
    assert "assumes bf16 tensor cores" in joined and "float32" in joined
    assert "the target machine's disk must be measured there" in joined
    assert "1,568 tokens per clip" in joined and "echojepa_lvef.yaml" in joined
    assert "first 5 s" in joined and "Edoar-do/HuBERT-ECG code/dataset.py@affe1f9" in joined
    assert "none committed, so GPU compute is estimated" in joined


def test_the_cpu_note_names_the_dtype_the_benches_ran_in() -> None:
    """The CPU column's rates are the bench's: a bf16 bench is not called float32."""
    bf16 = {**bench_dict(), "compute_dtype": "bfloat16"}
    echo = {**bench_dict("echojepa", "vitl", preprocess_rate=None), "compute_dtype": "bfloat16"}
    joined = " ".join(_size(ecg=bf16, echo=echo)["text"]["notes"])
    assert "threads (in bfloat16, as the benches ran)" in joined and "float32)" not in joined
    mixed = " ".join(_size(ecg=bf16)["text"]["notes"])
    assert "(ecg in bfloat16; echo in float32)" in mixed


def test_prices_only_when_set_and_labelled() -> None:
    assert _size()["prices"] is None and _size()["ask"]["cost"] is None
    out = _size(_cfg(prices={"gpu_hour": 2.0, "cpu_core_hour": 0.05}))
    cost = out["ask"]["cost"]
    assert cost["high"] == pytest.approx(2 * 1002.5 / HOUR * 0.05)       # 2 cores x h x price
    assert "at your prices (sizing.prices, not measured)" in out["text"]["ask"]
    gpu = _size(_cfg(deadline_h=0.2, prices={"gpu_hour": 2.0, "cpu_core_hour": None}))
    opt = gpu["ask"]["option"]
    assert gpu["ask"]["cost"]["high"] == pytest.approx(opt["wall_s_high"] / HOUR * 2.0)
    assert "user's prices" in " ".join(gpu["text"]["notes"])


def test_measured_gpu_file_is_used_and_labelled() -> None:
    gpu = bench_dict(device="cuda", records_per_s=500.0, gpu="NVIDIA H100")
    other = bench_dict(size="large", device="cuda", records_per_s=9.0, gpu="NVIDIA A10")
    out = _size(gpu_files={"ecg-h100.json": gpu, "ecg-large-a10.json": other})
    r = _row(out)
    assert r["gpu_measured"] is True and r["gpu"]["parts"]["compute"]["how"] == "measured"
    assert r["gpu"]["parts"]["compute"]["low_s"] == pytest.approx(1000 / 500 / 8)
    assert "measured on NVIDIA H100 (ecg-h100.json" in r["gpu"]["parts"]["compute"]["note"]
    status = {f["file"]: f["status"] for f in out["gpu_files"]}
    assert status["ecg-h100.json"] == "used for ecg"
    assert status["ecg-large-a10.json"].startswith("not matching, not used: ecg: size large")
    assert _row(out, model="echo")["gpu_measured"] is False
    assert out["asserted_vs_measured"]["measured"]["gpu_measured"] is True


def test_stale_geometry_gpu_file_is_reported_and_never_used() -> None:
    stale = bench_dict("echojepa", "vitl", device="cuda", records_per_s=50.0, gpu="NVIDIA H100",
                       resolution=256, inputs=1)
    out = _size(gpu_files={"echo-h100.json": stale})
    assert _row(out, "echo_corpus", "echo")["gpu_measured"] is False
    (entry,) = out["gpu_files"]
    assert entry["used_for"] is None
    assert "geometry differs: clips_per_record 1 (file) vs 2 (bench), resolution 256 (file) " \
           "vs 224 (bench)" in entry["status"]
    assert "echo-h100.json: not matching, not used" in " ".join(out["text"]["notes"])


def test_two_matching_gpu_files_need_a_choice() -> None:
    files = {"a.json": bench_dict(device="cuda", records_per_s=500.0, gpu="NVIDIA H100"),
             "b.json": bench_dict(device="cuda", records_per_s=250.0, gpu="NVIDIA A100")}
    with pytest.raises(ParamsError, match=r"^sizing\.gpu: 2 GPU files match ecg"):
        _size(gpu_files=files)
    picked = _row(_size(_cfg(gpu="a100"), gpu_files=files))
    assert picked["gpu"]["parts"]["compute"]["low_s"] == pytest.approx(1000 / 250 / 8)


def test_disk_fit_against_free_space_and_quota() -> None:
    ask = _size(disk=disk_dict(free=5 * 10**8))["ask"]           # 571 MB of ECG states
    assert ask["fits_free_space"] is False and ask["fits_quota"] is True
    corpus = _size(_cfg(ask={"scenario": "ecg_corpus", "models": ["ecg"]}))["ask"]
    assert corpus["storage_bytes"] == 571_392 * 800_000 and corpus["fits_quota"] is True
    tight = _size(_cfg(disk={"path": ".", "quota": "100GB"},
                       ask={"scenario": "ecg_corpus", "models": ["ecg"]}))["ask"]
    assert tight["fits_quota"] is False


def test_asserted_vs_measured_by_hand() -> None:
    ba = _size()["asserted_vs_measured"]
    assert ba["asserted"]["tokens_per_record"] == 500
    assert ba["asserted"]["storage_bytes"] == 3_072_000_000_000
    assert ba["asserted"]["gpu_hours"] == pytest.approx(6.9444444, rel=1e-6)
    assert ba["measured"]["tokens_per_record"] == TOKENS
    assert ba["measured"]["storage_bytes"] == 10**6 * 93 * 768 * 4 * 2


def _scenario(**count: object) -> dict:
    return {"scenarios": {"x": {"ecg": count}}}


@pytest.mark.parametrize(("over", "needle"), [
    ({"dtype": "int8"}, r"^sizing\.dtype: unknown dtype 'int8' \(known: bfloat16, float16, "),
    (_scenario(records=0, source="s"), r"^sizing\.scenarios\.x\.ecg\.records: must be a "
                                       r"positive integer, got 0$"),
    (_scenario(records=-5, source="s"), r"^sizing\.scenarios\.x\.ecg\.records: "),
    (_scenario(records=5), r"^sizing\.scenarios\.x\.ecg\.source: missing key$"),
    (_scenario(records=5, source=" "), r"^sizing\.scenarios\.x\.ecg\.source: must cite "),
    ({"scenarios": {"x": {"ekg": {"records": 5, "source": "s"}}}},
     r"^sizing\.scenarios\.x\.ekg: unknown model"),
    ({"models": {"ecg": {"layers_kept": 1, "keep": "mean"}}}, r"^sizing\.models\.ecg\.keep: "),
    ({"ask": {"scenario": "nope", "models": ["ecg"]}}, r"^sizing\.ask\.scenario: unknown"),
    ({"estimate": {"gpu": "A100 SXM", "utilisation": [0.6, 0.2]}},
     r"^sizing\.estimate\.utilisation: "),
    ({"scenarios": {"paired_cohort": {"ecg": {"records": 5, "source": "s"}}}},
     r"^sizing\.scenarios\.paired_cohort: "),
    ({"deadline_h": 0}, r"^sizing\.deadline_h: must be a positive number of hours, got 0"),
    ({"deadline_h": -1.5}, r"^sizing\.deadline_h: "),
    ({"prices": {"gpu_hour": -1.0}}, r"^sizing\.prices\.gpu_hour: must be >= 0, null or a "),
    ({"prices": {"cpu_core_hour": -0.01}}, r"^sizing\.prices\.cpu_core_hour: must be >= 0"),
    ({"disk": {"path": ".", "format": "csv"}}, r"^sizing\.disk\.format: unknown shard format"),
    ({"disk": {"path": ".", "write_mb": 2, "shard_mb": 4}}, r"^sizing\.disk\.shard_mb: "),
])
def test_bad_config_names_the_key(over: dict, needle: str) -> None:
    with pytest.raises(ParamsError, match=needle):
        _cfg(**over)


def test_layers_beyond_the_model_and_nonpositive_records() -> None:
    cfg = _cfg(models={**SIZING_BLOCK["models"], "ecg": {"layers_kept": 14}})
    with pytest.raises(ParamsError, match=r"^sizing\.models\.ecg\.layers_kept: 14 > the 13 "):
        _size(cfg)
    with pytest.raises(ParamsError, match="records must be > 0"):
        size_row(ScenarioCount(0, "s"), bench_dict(), _cfg(), "ecg", (None, None), disk_dict())


@pytest.mark.parametrize("key", ["tokens_per_second", "records_per_s_per_gpu", "disk_bytes"])
def test_retired_keys_say_what_replaced_them(key: str) -> None:
    with pytest.raises(ParamsError, match=rf"^sizing\.{key}: retired \(it was an asserted "):
        check_retired({**SIZING_BLOCK, key: 1})


@pytest.mark.parametrize(("name", "replaced_by"), [
    ("expansion", "sizing.scenarios.recovered_cohort"),
    ("full_corpus", "sizing.scenarios.ecg_corpus (MIMIC-IV-ECG) and echo_corpus"),
])
def test_retired_scenarios_name_what_replaced_them(name: str, replaced_by: str) -> None:
    block = {**SIZING_BLOCK, "scenarios": {name: {"ecg": {"records": 5, "source": "s"}}}}
    with pytest.raises(ParamsError, match=rf"^sizing\.scenarios\.{name}: retired; .*"
                                          rf"{replaced_by.replace('(', '.').replace(')', '.')}"):
        check_retired(block)


def test_a_bare_count_is_an_error_naming_its_source_key() -> None:
    with pytest.raises(ParamsError, match=r"^sizing\.scenarios\.grown\.ecg\.source: missing "
                                          r"\(a count needs its source"):
        check_retired({**SIZING_BLOCK, "scenarios": {"grown": {"ecg": 12000}}})


def test_write_bound_is_the_aggregate_over_the_whole_sample() -> None:
    """Issue 33 item 8: one fast 64 MB shard must not set the write bound."""
    disk = disk_dict(write_bps=1e9)
    disk["write"].update(bytes_per_s_shard_min=5e8, bytes_per_s_shard_max=4e9)
    w = _row(_size(disk=disk))["cpu"]["parts"]["writing"]
    assert w["low_s"] == w["high_s"] == pytest.approx(571_392_000 / 1e9)
    assert "aggregate over the whole sample" in w["note"]
