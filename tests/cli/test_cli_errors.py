"""Errors are one line ``rightsize: error: ...`` with a non-zero exit; --debug shows why."""

from __future__ import annotations

import pytest
import yaml
from cli_helpers import SMALL_COHORT


def _one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rightsize: error: ") and "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("quiet", [[], ["-q"]], ids=["plain", "quiet"])
def test_missing_directory_for_scalars(cli, tmp_path, quiet):
    res = cli(["scalars", str(tmp_path / "absent"), "-o", str(tmp_path / "s.parquet"), *quiet],
              tty=False)
    assert res.rc == 2 and res.out == ""
    line = _one_error_line(res.err)
    assert str(tmp_path / "absent") in line and "no such file or directory" in line
    assert not (tmp_path / "s.parquet").exists()


def test_bad_params_for_cohort_then_debug_shows_the_traceback(cli, tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"cohort": {**SMALL_COHORT, "n_subjcts": 10}}))
    args = ["cohort", "--params", str(params), "--out", str(tmp_path / "m.parquet")]
    res = cli(args, tty=False)
    assert res.rc == 2 and res.out == ""
    assert "cohort.n_subjcts" in _one_error_line(res.err)

    debug = cli([*args, "--debug"], tty=False)
    assert debug.rc != 0 and "Traceback (most recent call last)" in debug.err
    assert "cohort.n_subjcts" in debug.err.splitlines()[-1]
    assert not (tmp_path / "m.parquet").exists()


def test_an_error_during_progress_on_a_tty_is_one_clean_line(cli, demo_dir, tmp_path):
    src = max(demo_dir.glob("events.out.tfevents.*"), key=lambda f: f.stat().st_size)
    data = bytearray(src.read_bytes())
    data[len(data) // 2] ^= 0xFF                                  # one bad CRC mid-file
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / src.name).write_bytes(bytes(data))
    res = cli(["scalars", str(tmp_path / "run"), "-o", str(tmp_path / "s.parquet"), "--strict"],
              tty=True)
    assert res.rc == 3 and "Traceback" not in res.err
    assert res.err.startswith("\r\x1b[Kfiles read ...")          # progress was showing ...
    erased = res.err.split("\r\x1b[K")
    assert len(erased) == 3 and erased[-1].endswith("\r\n")       # ... then erased, and
    assert _one_error_line(erased[-1]).startswith(f"rightsize: error: {src.name}: ")
