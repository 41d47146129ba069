"""Token-level ECG in the manifest (``cohort.ecg_tokens``): layout, validation, pooled bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rightsize.cli import main
from rightsize.cohort.build import build_manifest
from rightsize.cohort.columns import bools, numbers
from rightsize.cohort.config import CohortConfig
from rightsize.cohort.load_manifest import load_arrays
from rightsize.cohort.manifest import METADATA_KEY, flat_values
from rightsize.cohort.validate import validate_manifest
from rightsize.errors import DataError
from rightsize.params import parse

# What 4ceb899 (before token-level ECG) built from the default params: the file's sha256
# with the parquet writer it was built with, and a digest of its decoded content (metadata,
# row groups, every column's values) that does not depend on the writer.
POOLED_SHA256 = "87d0bc1837b066d76502f47f68880e2d2c3ecfe89f551ba7dc443b262cd77ace"
POOLED_WRITER = "parquet-cpp-arrow version 26.0.1"
POOLED_CONTENT = "7984de0381aba2e7efe201d44dde08cdb138feab6be843da47a577a3c9d52868"


def content_digest(path: Path) -> str:
    """sha256 of a manifest's metadata, row-group sizes and decoded column values."""
    pf = pq.ParquetFile(path)
    h = hashlib.sha256()
    h.update(pf.schema_arrow.metadata[METADATA_KEY])
    h.update(str([pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)]).encode())
    table = pf.read()
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        h.update(name.encode() + str(col.type).encode())
        if pa.types.is_fixed_size_list(col.type):
            h.update(flat_values(col).tobytes())
        elif pa.types.is_boolean(col.type):
            h.update(bools(col).tobytes())
        elif pa.types.is_string(col.type):
            h.update("\0".join(col.to_pylist()).encode())
        else:
            h.update(numbers(col).tobytes())
    return h.hexdigest()


def test_default_pooled_manifest_is_what_4ceb899_built(tmp_path: Path) -> None:
    """``ecg_tokens: 1`` (the default) builds the pre-token manifest byte for byte."""
    out = tmp_path / "manifest.parquet"
    build_manifest(parse(CohortConfig, {}, "cohort"), out, truth=tmp_path / "truth.parquet")
    meta = json.loads(pq.read_schema(out).metadata[METADATA_KEY])
    assert "ecg_tokens" not in meta["geometry"]
    assert content_digest(out) == POOLED_CONTENT
    writer = pq.ParquetFile(out).metadata.created_by
    if writer != POOLED_WRITER:
        pytest.skip(f"file bytes pinned for {POOLED_WRITER!r}, this pyarrow writes as "
                    f"{writer!r} (decoded content checked above)")
    assert hashlib.sha256(out.read_bytes()).hexdigest() == POOLED_SHA256


def test_token_manifest_layout_and_arrays(tmp_path: Path, small_config) -> None:
    out = tmp_path / "m.parquet"
    report = build_manifest(small_config(ecg_tokens=5), out)
    schema = pq.read_schema(out)
    assert schema.field("ecg").type == pa.list_(pa.float32(), 5 * 12)
    assert json.loads(schema.metadata[METADATA_KEY])["geometry"]["ecg_tokens"] == 5
    assert report.metadata["payload_bytes"] == 120 * (4 * 16 + 5 * 12) * 4
    assert report.summary.geometry.ecg_tokens == 5
    x = load_arrays(out)
    assert x.ecg.shape == (120, 5, 12) and x.ecg.dtype == np.float32 and x.ecg_tokens == 5
    assert not x.ecg[~x.has_ecg].any()
    assert (np.abs(x.ecg[x.has_ecg]).sum(axis=2) > 0).all()       # every token of a present ECG
    rows = pq.read_table(out).to_pylist()                          # slow path, as an oracle
    for i in (0, 33, 119):
        assert np.array_equal(x.ecg[i].reshape(-1), np.asarray(rows[i]["ecg"], np.float32))
    pooled = load_arrays(build_manifest(small_config(), tmp_path / "p.parquet").path)
    assert pooled.ecg.shape == (120, 12) and pooled.ecg_tokens == 1


def test_token_values_do_not_depend_on_row_groups(tmp_path: Path, small_config) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    build_manifest(small_config(ecg_tokens=3, row_group_size=32), a)
    build_manifest(small_config(ecg_tokens=3, row_group_size=7), b)
    xa, xb = load_arrays(a), load_arrays(b)
    for name in ("lvef", "echo", "ecg", "has_ecg"):
        assert np.array_equal(getattr(xa, name), getattr(xb, name)), name


def _with_ecg(table: pa.Table, ecg: np.ndarray) -> pa.Table:
    arr = pa.FixedSizeListArray.from_arrays(pa.array(ecg.reshape(-1)), ecg.shape[1])
    i = table.schema.get_field_index("ecg")
    return table.set_column(i, table.schema.field("ecg").with_type(arr.type), arr)


def _ecg(table: pa.Table) -> np.ndarray:
    return table.column("ecg").combine_chunks().flatten().to_numpy().reshape(table.num_rows, -1)


def _row_with(table: pa.Table, has_ecg: bool) -> int:
    return int(np.flatnonzero(table.column("has_ecg").to_numpy() == has_ecg)[0])


def _nan_token(t: pa.Table) -> tuple[pa.Table, str]:
    r, ecg = _row_with(t, True), _ecg(t).copy()
    ecg[r, 2 * 12 + 4] = np.nan
    sid = t.column("subject_id")[r].as_py()
    return _with_ecg(t, ecg), f"column ecg: non-finite value at row {r} (subject {sid}, token 2)"


def _absent_not_zero(t: pa.Table) -> tuple[pa.Table, str]:
    r, ecg = _row_with(t, False), _ecg(t).copy()
    ecg[r, 3 * 12] = 1.0
    return _with_ecg(t, ecg), f"column ecg: has_ecg is false but values not zeros at row {r}"


def _present_all_zero(t: pa.Table) -> tuple[pa.Table, str]:
    r, ecg = _row_with(t, True), _ecg(t).copy()
    ecg[r] = 0.0
    return _with_ecg(t, ecg), f"column ecg: has_ecg is true but every value is zero at row {r}"


def _token_width(t: pa.Table) -> tuple[pa.Table, str]:
    return (_with_ecg(t, _ecg(t)[:, :48]),
            "column ecg: wrong dimension 48, expected ecg_tokens*ecg_dim = 5*12 = 60")


@pytest.mark.parametrize("corrupt", [_nan_token, _absent_not_zero, _present_all_zero,
                                     _token_width], ids=lambda f: f.__name__[1:])
def test_token_corruption_names_column_row_and_token(tmp_path: Path, small_config, rewrite,
                                                     corrupt) -> None:
    good = tmp_path / "good.parquet"
    build_manifest(small_config(ecg_tokens=5), good)
    holder: dict[str, str] = {}

    def mutate(t: pa.Table) -> pa.Table:
        table, holder["needle"] = corrupt(t)
        return table

    bad = rewrite(good, mutate)
    for reader in (validate_manifest, load_arrays):
        with pytest.raises(DataError) as err:
            reader(bad)
        msg = str(err.value)
        assert holder["needle"] in msg and "\n" not in msg, msg


def test_metadata_token_count_must_be_positive(tmp_path: Path, small_config) -> None:
    good = tmp_path / "good.parquet"
    build_manifest(small_config(ecg_tokens=2), good)
    table = pq.read_table(good)
    meta = json.loads(table.schema.metadata[METADATA_KEY])
    meta["geometry"]["ecg_tokens"] = 0
    bad = tmp_path / "bad.parquet"
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: json.dumps(meta)}), bad)
    with pytest.raises(DataError, match="ecg_tokens = 0 is not a positive integer"):
        validate_manifest(bad)


@pytest.mark.parametrize(("value", "needle"), [
    (0, "must be an integer in [1, 4096], got 0"),
    (-3, "must be an integer in [1, 4096], got -3"),
    (2.5, "expected an integer, got 2.5"),
    ("16", "expected an integer, got '16'"),
    (True, "expected an integer, got True"),
    (None, "null, inferring it from the ECG input, needs source: files"),
])
def test_bad_ecg_tokens_exit_2_naming_the_key(tmp_path: Path, params_file, small_block, capsys,
                                              value: object, needle: str) -> None:
    params = params_file({**small_block, "ecg_tokens": value})
    out = tmp_path / "m.parquet"
    assert main(["cohort", "--params", str(params), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rightsize: error: cohort.ecg_tokens: "), err
    assert needle in err[0], err
    assert not out.exists()


def test_cli_builds_tokens_with_truth_and_metrics(tmp_path: Path, params_file, small_block,
                                                  capsys) -> None:
    params = params_file({**small_block, "ecg_tokens": 4})
    out, truth = tmp_path / "m.parquet", tmp_path / "truth.parquet"
    metrics = tmp_path / "cohort.json"
    assert main(["cohort", "--params", str(params), "--out", str(out), "--truth", str(truth),
                 "--metrics", str(metrics)]) == 0
    m = json.loads(metrics.read_text())
    assert m["ecg_tokens"] == 4 and m["payload_bytes"] == 120 * (4 * 16 + 4 * 12) * 4
    assert truth.is_file() and not list(tmp_path.glob(".*.tmp"))
    assert main(["cohort", "--check", str(out)]) == 0
    assert "ecg 4 x 12 (has_ecg" in capsys.readouterr().out
