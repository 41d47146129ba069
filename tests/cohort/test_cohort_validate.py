"""Manifest validation on load and ``--check``: every failure names column and row/subject."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from rightsize.cli import main
from rightsize.cohort.load_manifest import load_arrays
from rightsize.cohort.validate import validate_manifest
from rightsize.errors import DataError, InputError


def _set(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, table.schema.field(name).with_type(values.type), values)


def _poke(table: pa.Table, name: str, row: int, value: object) -> pa.Table:
    """Replace one scalar of column ``name`` (string/float columns)."""
    values = table.column(name).to_pylist()
    values[row] = value
    return _set(table, name, pa.array(values, table.schema.field(name).type))


def _poke_vector(table: pa.Table, name: str, row: int, index: int, value: float) -> pa.Table:
    col = table.column(name).combine_chunks()
    width = col.type.list_size
    flat = col.flatten().to_numpy().copy()
    flat[row * width + index] = value
    return _set(table, name, pa.FixedSizeListArray.from_arrays(pa.array(flat), width))


def _first(table: pa.Table, mask_expr: Callable[[pa.Table], np.ndarray]) -> int:
    return int(np.flatnonzero(mask_expr(table))[0])


def _has_echo(t: pa.Table) -> np.ndarray:
    return t.column("has_echo").to_numpy()


def _split(t: pa.Table) -> np.ndarray:
    return np.asarray(t.column("split").to_pylist())


def _nan_echo(t: pa.Table) -> tuple[pa.Table, str]:
    r = _first(t, _has_echo)
    return _poke_vector(t, "echo", r, 3, np.nan), f"column echo: non-finite value at row {r} "


def _inf_ecg(t: pa.Table) -> tuple[pa.Table, str]:
    r = _first(t, lambda t: t.column("has_ecg").to_numpy())
    return _poke_vector(t, "ecg", r, 0, np.inf), f"column ecg: non-finite value at row {r} "


def _padded(t: pa.Table) -> tuple[pa.Table, str]:
    r = _first(t, lambda t: t.column("n_clips").to_numpy() < 4)
    n = t.column("n_clips")[r].as_py()
    return _poke_vector(t, "echo", r, 16 * n, 1.0), f"column echo: padded clip {n}"


def _nan_lvef(t: pa.Table) -> tuple[pa.Table, str]:
    return _poke(t, "lvef", 7, float("nan")), "column lvef: non-finite value nan at row 7 "


def _duplicate(t: pa.Table) -> tuple[pa.Table, str]:
    s = _split(t)
    a, b = np.flatnonzero(s == s[0])[:2]
    sid = t.column("subject_id")[int(a)].as_py()
    return (_poke(t, "subject_id", int(b), sid),
            f"column subject_id: duplicate subject {sid} at rows {a} and {b}")


def _two_splits(t: pa.Table) -> tuple[pa.Table, str]:
    s = _split(t)
    a, b = 0, int(np.flatnonzero(s != s[0])[0])
    sid = t.column("subject_id")[a].as_py()
    return _poke(t, "subject_id", b, sid), f"column split: subject {sid} in two splits"


def _empty_split(t: pa.Table) -> tuple[pa.Table, str]:
    return (_set(t, "split", pc.replace_substring(t.column("split").combine_chunks(),
                                                  "val", "train")),
            "column split: split val is empty")


def _bad_split(t: pa.Table) -> tuple[pa.Table, str]:
    sid = t.column("subject_id")[4].as_py()
    return (_poke(t, "split", 4, "holdout"),
            f"column split: 'holdout' is not one of train, val, test at row 4 (subject {sid})")


def _missing_column(t: pa.Table) -> tuple[pa.Table, str]:
    return t.drop_columns(["has_ecg"]), "missing column has_ecg"


def _wrong_dim(t: pa.Table) -> tuple[pa.Table, str]:
    flat = t.column("ecg").combine_chunks().flatten().to_numpy().reshape(t.num_rows, 12)
    arr = pa.FixedSizeListArray.from_arrays(pa.array(flat[:, :10].reshape(-1)), 10)
    return _set(t, "ecg", arr), "column ecg: wrong dimension 10, expected ecg_dim = 12"


def _wrong_echo_dim(t: pa.Table) -> tuple[pa.Table, str]:
    flat = t.column("echo").combine_chunks().flatten().to_numpy().reshape(t.num_rows, 64)
    arr = pa.FixedSizeListArray.from_arrays(pa.array(flat[:, :48].reshape(-1)), 48)
    return (_set(t, "echo", arr),
            "column echo: wrong dimension 48, expected max_clips*echo_dim = 4*16 = 64")


def _flag_mismatch(t: pa.Table) -> tuple[pa.Table, str]:
    r = _first(t, _has_echo)
    return _poke(t, "n_clips", r, 0), f"column has_echo: True disagrees with n_clips 0 at row {r}"


CORRUPTIONS = {f.__name__[1:]: f for f in (
    _nan_echo, _inf_ecg, _padded, _nan_lvef, _duplicate, _two_splits, _empty_split,
    _bad_split, _missing_column, _wrong_dim, _wrong_echo_dim, _flag_mismatch)}


@pytest.mark.parametrize("reader", [validate_manifest, load_arrays],
                         ids=["validate", "load"])
@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_corruption_is_a_one_line_data_error(small_manifest: Path, rewrite, reader,
                                             kind: str) -> None:
    holder: dict[str, str] = {}

    def mutate(t: pa.Table) -> pa.Table:
        table, holder["needle"] = CORRUPTIONS[kind](t)
        return table

    bad = rewrite(small_manifest, mutate)
    with pytest.raises(DataError) as err:
        reader(bad)
    msg = str(err.value)
    assert msg.startswith(f"{bad}: ") and holder["needle"] in msg, msg
    assert "\n" not in msg


def test_valid_manifest_summary(small_manifest: Path) -> None:
    s = validate_manifest(small_manifest)
    assert s.n_rows == 120 and s.split_counts == {"train": 80, "val": 16, "test": 24}
    assert s.geometry.max_clips == 4 and s.geometry.echo_dim == 16
    assert 0 < s.n_has_echo < 120


def test_not_a_manifest(tmp_path: Path, small_manifest: Path) -> None:
    plain = tmp_path / "plain.parquet"
    pq.write_table(pq.read_table(small_manifest).replace_schema_metadata(None), plain)
    with pytest.raises(DataError, match="not a rightsize manifest"):
        validate_manifest(plain)
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match="not a parquet file"):
        load_arrays(junk)
    with pytest.raises(InputError, match="manifest not found"):
        load_arrays(tmp_path / "absent.parquet")


def test_cli_check_exit_codes(small_manifest: Path, rewrite, capsys) -> None:
    assert main(["cohort", "--check", str(small_manifest)]) == 0
    assert "ok: 120 subjects (train 80, val 16, test 24)" in capsys.readouterr().out
    bad = rewrite(small_manifest, lambda t: _nan_lvef(t)[0])
    assert main(["cohort", "--check", str(bad)]) == 4
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rightsize: error: ") and "column lvef" in err[0]
