"""``source: files`` with token-level ECG: one row per record holding an N x ecg_dim array."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rightsize.cli import main
from rightsize.cohort.build import build_manifest
from rightsize.cohort.load_manifest import load_arrays
from rightsize.cohort.truth import load_truth
from rightsize.errors import DataError

from .test_cohort_files import ECG_DIM, ECG_IDS, IDS, ecg_vec, files_config, write_inputs

TOKENS = 3


def token_vecs(sid: str, n: int = TOKENS) -> np.ndarray:
    """(n, ECG_DIM): record ``sid``'s hidden states, distinct per token."""
    return (int(sid[1:]) * 10 + np.arange(n)[:, None] + np.arange(ECG_DIM) / 10).astype(np.float32)


def write_token_ecg(path: str, records: dict[str, np.ndarray | list], fixed: bool = False,
                    row_group_size: int = 3) -> None:
    """An ECG parquet with ``embedding`` as list<list<float32>> (or nested fixed-size lists)."""
    values = [v.tolist() if isinstance(v, np.ndarray) else v for v in records.values()]
    tp = (pa.list_(pa.list_(pa.float32(), ECG_DIM), TOKENS) if fixed
          else pa.list_(pa.list_(pa.float32())))
    pq.write_table(pa.table({"subject_id": list(records), "embedding": pa.array(values, tp)}),
                   path, row_group_size=row_group_size)


@pytest.mark.parametrize("fixed", [False, True], ids=["list", "fixed_size_list"])
@pytest.mark.parametrize("params_tokens", [TOKENS, None], ids=["given", "inferred"])
def test_token_ecg_joins_per_subject(tmp_path: Path, fixed: bool,
                                     params_tokens: int | None) -> None:
    files = write_inputs(tmp_path)
    records = {s: token_vecs(s) for s in ECG_IDS[::-1]}           # not sorted by subject
    write_token_ecg(files["ecg"], records, fixed=fixed)
    out, truth = tmp_path / "m.parquet", tmp_path / "truth.parquet"
    report = build_manifest(files_config(files, ecg_tokens=params_tokens), out, truth=truth)
    assert report.metadata["geometry"]["ecg_tokens"] == TOKENS
    x = load_arrays(out)
    assert x.ecg.shape == (10, TOKENS, ECG_DIM) and x.ecg_tokens == TOKENS
    for i, sid in enumerate(IDS):
        if sid == "P04":                                         # no ECG record
            assert not x.has_ecg[i] and not x.ecg[i].any()
        else:
            np.testing.assert_array_equal(x.ecg[i], token_vecs(sid))
    assert load_truth(truth) is None                             # files carry no planted truth
    rows = pq.read_table(truth)
    assert rows.column("subject_id").to_pylist() == IDS
    assert set(rows.column("planted_ecg_token").to_pylist()) == {-1}
    assert set(rows.column("matched_clip").to_pylist()) == {-1}


def test_one_token_per_record_is_the_pooled_manifest(tmp_path: Path) -> None:
    pooled = tmp_path / "pooled"
    pooled.mkdir()
    build_manifest(files_config(write_inputs(pooled)), tmp_path / "a.parquet")
    files = write_inputs(tmp_path)
    write_token_ecg(files["ecg"], {s: ecg_vec(s)[None, :] for s in ECG_IDS})
    build_manifest(files_config(files), tmp_path / "b.parquet")
    a, b = load_arrays(tmp_path / "a.parquet"), load_arrays(tmp_path / "b.parquet")
    assert b.ecg.shape == a.ecg.shape == (10, ECG_DIM)
    assert np.array_equal(a.ecg, b.ecg) and np.array_equal(a.has_ecg, b.has_ecg)


def _records() -> dict[str, np.ndarray | list]:
    return {s: token_vecs(s) for s in ECG_IDS}


@pytest.mark.parametrize(("kind", "needle"), [
    ("ragged", "ecg.parquet: column embedding: 2 tokens for subject P06, expected 3 "
               "(token counts must agree"),
    ("inner_dim", "ecg.parquet: column embedding: wrong dimension 4 for subject P07, token 1, "
                  "expected 5"),
    ("nan_token", "ecg.parquet: column embedding: non-finite value for subject P08, token 2"),
    ("null_record", "ecg.parquet: column embedding: null for subject P09"),
    ("mismatch", "ecg.parquet: column embedding: 3 tokens per record (subject P01) but "
                 "cohort.ecg_tokens = 4"),
    ("pooled_vs_params", "ecg.parquet: column embedding: 1 token per record (one vector per "
                         "record) but cohort.ecg_tokens = 4"),
])
def test_token_input_errors_name_record_and_column(tmp_path: Path, kind: str,
                                                   needle: str) -> None:
    files = write_inputs(tmp_path)
    records = _records()
    params_tokens: int | None = TOKENS
    if kind == "ragged":
        records["P06"] = token_vecs("P06", 2)
    elif kind == "inner_dim":
        records["P07"] = token_vecs("P07").tolist()
        records["P07"][1] = records["P07"][1][:4]
    elif kind == "nan_token":
        records["P08"] = token_vecs("P08")
        records["P08"][2, 0] = np.nan
    elif kind in ("mismatch", "pooled_vs_params"):
        params_tokens = 4
    if kind == "null_record":
        values = [None if s == "P09" else v.tolist() for s, v in records.items()]
        pq.write_table(pa.table({"subject_id": list(records), "embedding": pa.array(
            values, pa.list_(pa.list_(pa.float32())))}), files["ecg"])
    elif kind != "pooled_vs_params":
        write_token_ecg(files["ecg"], records)
    out = tmp_path / "manifest.parquet"
    with pytest.raises(DataError) as err:
        build_manifest(files_config(files, ecg_tokens=params_tokens), out)
    msg = str(err.value)
    assert needle in msg and "\n" not in msg, msg
    assert not out.exists() and not list(tmp_path.glob(".manifest.parquet.*"))


def test_cli_mismatch_is_exit_4_naming_both(tmp_path: Path, params_file, capsys) -> None:
    files = write_inputs(tmp_path)
    write_token_ecg(files["ecg"], _records())
    params = params_file({"source": "files", "n_subjects": 10,
                          "splits": {"train": 6, "val": 2, "test": 2}, "echo_dim": 6,
                          "ecg_dim": ECG_DIM, "max_clips": 3, "row_group_size": 4,
                          "ecg_tokens": 186, "files": files})
    out = tmp_path / "m.parquet"
    assert main(["cohort", "--params", str(params), "--out", str(out)]) == 4
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if line.startswith("rightsize: error: ")]              # (X98's warning aside)
    assert len(err) == 1 and "3 tokens per record" in err[0] and \
        "cohort.ecg_tokens = 186" in err[0] and "column embedding" in err[0], err
    assert not out.exists()
