"""extract.compute_dtype: auto resolves from the hardware, the shards record the dtype that
ran, a folder switched to another dtype is redone, and bf16 states stay near float32's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from extract_fixtures import extract, make_corpus, metrics, write_params

from rightsize.encoders.compute_dtype import difference_text, resolve


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    make_corpus(tmp_path, 4)
    return tmp_path


@pytest.mark.parametrize("flags, device, dtype", [
    ({"avx2", "amx_bf16", "avx512_bf16"}, "cpu", "bfloat16"),
    ({"avx512f", "avx512_bf16"}, "cpu", "float32"),           # no AMX: bf16 measured slower
    ({"avx2", "avx512f"}, "cpu", "float32"),                  # no native bf16: emulated
    (set(), "cuda:1", "bfloat16"),
])
def test_auto_is_bf16_only_where_the_hardware_has_it(flags: set[str], device: str,
                                                     dtype: str) -> None:
    chosen = resolve("auto", device, frozenset(flags))
    assert chosen.dtype == dtype and chosen.requested == "auto"
    assert resolve("float32", device, frozenset(flags)).dtype == "float32"
    assert resolve("bfloat16", "cpu", frozenset()).dtype == "bfloat16"       # forced: as set


def test_a_bad_compute_dtype_is_a_one_line_params_error(
        corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_params(corpus, compute_dtype="int8")
    assert extract(corpus) == 2
    err = capsys.readouterr().err.strip()
    assert "extract.compute_dtype" in err and "int8" in err and len(err.splitlines()) == 1


def _tokens(out: Path) -> np.ndarray:
    table = pq.read_table(sorted((out / "shards").glob("*.parquet"))[0])
    return np.asarray(table.column("embedding").to_pylist(), dtype=np.float32)


def test_the_folder_follows_the_dtype_and_bf16_stays_near_float32(corpus: Path) -> None:
    """float32 from the params, then --compute-dtype bfloat16 (the flag wins): redone; the
    same dtype from the params again: reused."""
    write_params(corpus, records=4, compute_dtype="float32")
    assert extract(corpus, "--metrics", "m32.json") == 0
    m32 = metrics(corpus / "m32.json")
    assert m32["compute_dtype"]["dtype"] == "float32"
    assert m32["bf16_vs_float32"] == "not measured: the run computed in float32"
    fp32 = _tokens(corpus / "out")
    assert extract(corpus, "--metrics", "m16.json", "--compute-dtype", "bfloat16") == 0
    m16 = metrics(corpus / "m16.json")
    assert m16["shards_run"] == 2 and m16["compute_dtype"]["dtype"] == "bfloat16"  # redone
    check = m16["bf16_vs_float32"]
    assert check["dtype"] == "bfloat16" and check["inputs"] == 2
    assert all(1e-4 < check[f"layer_{k}"]["rel_rms"] < 0.2 for k in range(9))
    assert "hidden state 8 max |diff|" in difference_text(check, (8,))
    bf16 = _tokens(corpus / "out")
    rel = np.sqrt(np.mean((bf16 - fp32) ** 2) / np.mean(fp32 ** 2))
    assert 1e-4 < rel < 0.2                      # not the same bytes, the same states to ~2 %
    write_params(corpus, records=4, compute_dtype="bfloat16")      # the flag's dtype, set
    assert extract(corpus, "--metrics", "again.json") == 0
    assert metrics(corpus / "again.json")["shards_run"] == 0           # same dtype: reused
