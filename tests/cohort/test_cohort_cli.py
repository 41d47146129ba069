"""``rightsize cohort``: build + metrics, bad params (exit 2, one line naming the key)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from rightsize.cli import main

METRIC_KEYS = {"n_subjects", "n_train", "n_val", "n_test", "max_clips", "echo_dim", "ecg_dim",
               "manifest_bytes", "payload_bytes", "perfect_model_mae", "ef_le_40_prevalence",
               "build_wall_clock_s", "peak_rss_mb"}


def test_build_writes_manifest_and_flat_metrics(tmp_path: Path, params_file, small_block,
                                                capsys) -> None:
    params = params_file(small_block)
    out, metrics = tmp_path / "data" / "manifest.parquet", tmp_path / "metrics" / "cohort.json"
    rc = main(["cohort", "--params", str(params), "--out", str(out), "--metrics", str(metrics)])
    assert rc == 0
    m = json.loads(metrics.read_text())
    assert METRIC_KEYS <= set(m)
    stamp = m.pop("machine")              # where the timings were measured (rightsize machine)
    assert set(stamp) >= {"id", "words"}
    assert m.pop("target") == {"column": "lvef", "name": "LVEF", "unit": "%",   # the report's
                               "range": [0.0, 100.0], "threshold": 40.0}       # words for it
    assert all(isinstance(v, int | float) for v in m.values())
    assert (m["n_subjects"], m["n_train"], m["n_val"], m["n_test"]) == (120, 80, 16, 24)
    assert (m["max_clips"], m["echo_dim"], m["ecg_dim"]) == (4, 16, 12)
    assert m["manifest_bytes"] == out.stat().st_size
    assert m["payload_bytes"] == 120 * (4 * 16 + 12) * 4
    assert m["perfect_model_mae"] == pytest.approx(5.0 * math.sqrt(2 / math.pi), abs=1e-5)
    assert m["peak_rss_mb"] > 0 and m["build_wall_clock_s"] >= 0
    assert main(["cohort", "--check", str(out)]) == 0
    assert not list(out.parent.glob(".*.tmp"))


@pytest.mark.parametrize(("change", "key"), [
    ({"bogus": 3}, "cohort.bogus"),
    ({"n_subjects": -120}, "cohort.n_subjects"),
    ({"max_clips": 0}, "cohort.max_clips"),
    ({"splits": {"train": 80, "val": 16, "test": 25}}, "cohort.splits"),
    ({"source": "files"}, "cohort.files.echo"),
])
def test_bad_params_exit_2_with_one_line(tmp_path: Path, params_file, small_block, capsys,
                                         change: dict, key: str) -> None:
    params = params_file({**small_block, **change})
    out = tmp_path / "m.parquet"
    assert main(["cohort", "--params", str(params), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"rightsize: error: {key}:"), err
    assert not out.exists()


def test_check_refuses_build_flags(tmp_path: Path, capsys) -> None:
    assert main(["cohort", "--check", "m.parquet", "--metrics", "x.json"]) == 2
    assert "--check" in capsys.readouterr().err


def test_missing_params_file(tmp_path: Path, capsys) -> None:
    assert main(["cohort", "--params", str(tmp_path / "none.yaml"),
                 "--out", str(tmp_path / "m.parquet")]) == 2
    assert "params file not found" in capsys.readouterr().err


def test_verb_module_imports_no_heavy_libraries() -> None:
    code = ("import sys, rightsize.verbs.cohort; "
            "print(sorted(m for m in ('numpy', 'pyarrow', 'pandas', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
