"""extract's faults of model, weights and records: each exits 2 or 4 naming the key, file,
tensor, layer or record, never 1; ``layers: [0]`` (the embeddings output) works."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import wfdb
from extract_fixtures import extract, make_corpus, write_params

from rightsize.encoders.ecg_files import LEADS, write_ecg
from rightsize.encoders.synthetic_ecg import synthetic_ecg


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    make_corpus(tmp_path, 4)
    write_params(tmp_path, records=4)
    return tmp_path


@pytest.fixture(scope="module")
def small() -> tuple[dict, dict]:
    """HuBERT-ECG small's state dict (random weights) and its config as config.json holds it."""
    from rightsize.encoders.models import EcgGeometry
    from rightsize.encoders.weights import build_extractor

    model, _ = build_extractor("small", None, 0, 8, EcgGeometry())
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    return state, json.loads(model.config.to_json_string())


def _weights(folder: Path, state: dict, config: object | None = None) -> None:
    from safetensors.torch import save_file

    folder.mkdir()
    save_file(state, str(folder / "model.safetensors"))
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))


def _fails(corpus: Path, capsys: pytest.CaptureFixture[str], code: int, *needles: str,
           **extract_params: object) -> None:
    write_params(corpus, records=4, **extract_params)
    assert extract(corpus) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err


def test_a_config_that_gives_another_token_count_exits_4_naming_the_key(
        corpus: Path, capsys: pytest.CaptureFixture[str], small: tuple[dict, dict]) -> None:
    state, config = small
    _weights(corpus / "w", state, {**config, "conv_stride": [5, 2, 2, 2, 2]})
    _fails(corpus, capsys, 4, "w/config.json: conv_stride [5, 2, 2, 2, 2] gives 74 tokens",
           "gives 93", weights="w")


def test_a_nan_tensor_exits_4_naming_it(corpus: Path, capsys: pytest.CaptureFixture[str],
                                        small: tuple[dict, dict]) -> None:
    state, config = small
    key = "encoder.layers.2.attention.k_proj.weight"
    bad = {**state, key: state[key].clone()}
    bad[key][0, :3] = float("nan")
    _weights(corpus / "w", bad, config)
    _fails(corpus, capsys, 4, f"tensor {key} holds 3 non-finite values", weights="w")


def test_a_layer_norm_times_1e6_exits_4_naming_the_hidden_state(
        corpus: Path, capsys: pytest.CaptureFixture[str], small: tuple[dict, dict]) -> None:
    state, config = small
    key = "encoder.layers.7.final_layer_norm.weight"            # hidden state 8: stored
    _weights(corpus / "w", {**state, key: state[key] * 1e6}, config)
    _fails(corpus, capsys, 4, "shard 0 (list rows 1-2): hidden state 8 (after transformer "
           "layer 8)", "beyond float16's range", weights="w")
    assert not (corpus / "out/shards/shard-00000.parquet").exists()


@pytest.mark.parametrize("variant,needle", [
    ("int", "holds a int, not a tensor"),
    ("list", "config.json: expected a JSON object of HuBERT settings, got a list"),
    ("heads", "config.json: num_attention_heads 7 does not divide hidden_size 512"),
    ("folder", "x.safetensors: not a regular file"),
])
def test_weights_variants_exit_4_naming_the_file(
        corpus: Path, capsys: pytest.CaptureFixture[str], small: tuple[dict, dict],
        variant: str, needle: str) -> None:
    import torch

    state, config = small
    w = corpus / "w"
    if variant == "int":
        w.mkdir()
        torch.save({**state, "encoder.layer_norm.bias": 3}, w / "model.pt")
    elif variant == "list":
        _weights(w, state, [config])
    elif variant == "heads":
        _weights(w, state, {**config, "num_attention_heads": 7})
    else:
        w.mkdir()
        (w / "x.safetensors").mkdir()
    _fails(corpus, capsys, 4, needle, weights="w")


@pytest.mark.parametrize("device,needle", [
    ("cudax", "extract.device: must be cpu, cuda or cuda:N, got 'cudax'"),
    ("cuda:0", "extract.device: cuda:0, but"),
])
def test_a_device_this_machine_lacks_exits_2_naming_the_key(
        corpus: Path, capsys: pytest.CaptureFixture[str], device: str, needle: str) -> None:
    import torch

    if device == "cuda:0" and torch.cuda.is_available():
        pytest.skip("a CUDA device is visible here")
    _fails(corpus, capsys, 2, needle, device=device)


def _record_list(corpus: Path) -> list[str]:
    import csv

    return [r["path"] for r in csv.DictReader(open(corpus / "corpus/record_list.csv"))]


def test_leads_differing_only_in_case_exit_4_naming_record_and_leads(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = corpus / "corpus" / _record_list(corpus)[1]
    sig = synthetic_ecg(np.random.default_rng(3), 500, 10)
    names = [lead if lead != "V1" else "ii" for lead in LEADS]
    wfdb.wrsamp(rec.name, fs=500, units=["mV"] * 12, sig_name=names, p_signal=sig.T,
                fmt=["16"] * 12, adc_gain=[1000.0] * 12, baseline=[0] * 12,
                write_dir=str(rec.parent))
    _fails(corpus, capsys, 4, "s40000001/40000001: duplicate lead: signals II and ii")


def test_a_record_under_94_hz_exits_4_naming_it(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = corpus / "corpus" / _record_list(corpus)[2]
    write_ecg(rec, synthetic_ecg(np.random.default_rng(4), 80, 60), 80)
    _fails(corpus, capsys, 4, "s40000002/40000002: sampling rate: 80 Hz")


def test_layer_0_is_the_embeddings_output(corpus: Path) -> None:
    write_params(corpus, records=4, layers=[0, 8])
    assert extract(corpus, out="both") == 0
    write_params(corpus, records=4, layers=[0])
    assert extract(corpus, out="zero") == 0
    zero = pq.read_table(corpus / "zero/shards/shard-00001.parquet")
    both = pq.read_table(corpus / "both/shards/shard-00001.parquet")
    assert zero.column_names == ["subject_id", "study_id", "embedding"]
    assert zero.column("embedding").equals(both.column("layer_0"))
    assert not zero.column("embedding").equals(both.column("embedding"))
    desc = json.loads((corpus / "zero/extract.json").read_text())
    assert desc["embedding_column"] == "hidden state 0"


@pytest.mark.parametrize("block,key,value", [
    ("extract", "crops_per_record", 10**12), ("ecg_demo", "records", 10**12),
    ("ecg_demo", "sample_hz", 10**12), ("ecg_demo", "seconds", 1e12)])
def test_huge_sizes_are_refused_naming_the_key(block: str, key: str, value: object) -> None:
    from rightsize.errors import ParamsError
    from rightsize.extraction.config import EcgDemoConfig, ExtractConfig
    from rightsize.params import parse

    cls = ExtractConfig if block == "extract" else EcgDemoConfig
    base = {"records": "l.csv", "root": "r"} if block == "extract" else {}
    with pytest.raises(ParamsError, match=f"^{block}.{key}: must be"):
        parse(cls, {**base, key: value}, block).validate(block)


def test_a_huge_thread_count_exits_2_naming_the_key() -> None:
    """10**12 threads per worker reached torch as an overflow (exit 1), found by the fuzzer."""
    from rightsize.errors import ParamsError
    from rightsize.extraction.config import ExtractConfig
    from rightsize.params import load_params, parse

    block = {**load_params(Path(__file__).resolve().parents[2] / "params.yaml")["extract"],
             "threads_per_worker": 10**12}
    with pytest.raises(ParamsError, match=r"extract\.threads_per_worker: must be at most"):
        parse(ExtractConfig, block, "extract")
