"""The token_cost stage: the fused probe's cost at ECG token counts, measured or extrapolated.

The library's arithmetic (:mod:`rightsize.probes.measurements.token_cost`), the measured child
process (:func:`rightsize.measure.run_measured`), the verb end to end at a tiny geometry (one
process per count, then the join), and dvc.yaml's token_cost_case params.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from rightsize.cli import main
from rightsize.errors import ParamsError
from rightsize.params import parse
from rightsize.probes.measurements.token_cost import (
    TokenCostConfig,
    case_param_keys,
    case_params,
    epoch_seconds,
    extrapolate,
)

from .probe_fixtures import EVALUATE, TRAIN

COHORT = {"source": "synthetic", "seed": 0, "n_subjects": 120,
          "splits": {"train": 80, "val": 16, "test": 24}, "echo_dim": 16, "ecg_dim": 12,
          "max_clips": 3, "ecg_tokens": 1, "row_group_size": 32, "noise_sd": 5.0,
          "missing_echo_frac": 0.05, "missing_ecg_frac": 0.05,
          "files": {"echo": None, "ecg": None, "labels": None, "joined": None}}


def test_extrapolation_adds_the_median_timed_epoch_for_every_epoch_not_run():
    walls = np.array([100.0, 101.5, 102.5, 103.7])     # val points of epochs 1-4
    np.testing.assert_allclose(epoch_seconds(walls), [1.5, 1.0, 1.2])
    est = extrapolate(20.0, 50, 4, epoch_seconds(walls)[1:], steps_per_epoch=13)
    assert est.seconds == pytest.approx(20.0 + 46 * 1.1) and not est.measured
    assert est.epoch_s == pytest.approx(1.1)
    assert est.basis == ("extrapolated: 4 of 50 epochs run (52 steps), the other 46 at the "
                         "median of epochs 2-3 (2 epochs, 26 steps)")
    whole = extrapolate(20.0, 4, 4, np.array([]), steps_per_epoch=13)
    assert whole.seconds == 20.0 and whole.measured and whole.epoch_s is None
    assert whole.basis == "measured whole (4 of 4 epochs, 52 steps)"
    with pytest.raises(ValueError, match="no epoch after the first"):
        extrapolate(20.0, 50, 1, np.array([]), steps_per_epoch=13)


def test_a_case_is_a_synthetic_cohort_at_n_tokens_one_seed_and_the_timed_epochs():
    params = {"cohort": {**COHORT, "source": "files",
                         "files": {"echo": "e.parquet", "ecg": None, "labels": "l.csv",
                                   "joined": None}},
              "train": {**TRAIN, "seeds": 5}, "evaluate": EVALUATE}
    case = case_params(params, 93, 3)
    assert case["cohort"]["ecg_tokens"] == 93 and case["cohort"]["source"] == "synthetic"
    assert set(case["cohort"]["files"].values()) == {None}
    assert case["train"]["seeds"] == 1 and case["train"]["fused"]["epochs"] == 3
    assert case["train"]["fused"]["fusion_dim"] == TRAIN["fused"]["fusion_dim"]
    assert params["train"]["seeds"] == 5 and params["cohort"]["source"] == "files"  # a copy


@pytest.mark.parametrize(("block", "key"), [
    ({"tokens": []}, "token_cost.tokens"),
    ({"tokens": [1, 0]}, r"token_cost.tokens\[1\]"),
    ({"tokens": [16, 16]}, "token_cost.tokens"),
    ({"epochs_timed": 1}, "token_cost.epochs_timed"),
])
def test_bad_token_cost_params_name_the_key(block, key):
    with pytest.raises(ParamsError, match=key):
        parse(TokenCostConfig, block, "token_cost")
    assert TokenCostConfig(epochs_timed=0).epochs_run(50) == 50
    assert TokenCostConfig(epochs_timed=3).epochs_run(2) == 2


def test_run_measured_reads_a_childs_wall_clock_peak_rss_and_exit_code():
    # A Linux child's ru_maxrss starts at its parent's peak RSS (the address space execve
    # replaced), so the measuring process must be small, as token-cost's driver is: measure
    # from a fresh interpreter, not from this test process (pytest may have grown past 600 MB).
    code = ("import sys, time; b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
            "time.sleep(0.2); print('done'); sys.exit(3)")
    driver = ("import json, sys; from rightsize.measure import run_measured; "
              f"c = run_measured([sys.executable, '-c', {code!r}]); "
              "print(json.dumps([c.rc, c.output_tail, c.wall_s, c.peak_rss_mb]))")
    out = subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True,
                         check=True).stdout
    rc, tail, wall_s, peak_rss_mb = json.loads(out)
    assert rc == 3 and tail.strip() == "done"
    assert wall_s >= 0.2 and 300 <= peak_rss_mb < 600


def _token_cost(*args: str) -> subprocess.CompletedProcess:
    """``rightsize token-cost ARGS`` in a fresh interpreter (a peak RSS of its own)."""
    return subprocess.run([sys.executable, "-m", "rightsize.cli", "-q", "token-cost", *args],
                          capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    root = tmp_path_factory.mktemp("token_cost")
    fused = {**TRAIN["fused"], "epochs": 4, "tokens": {"epochs": 5}}   # N > 1: 5 epochs
    params = {"cohort": COHORT, "train": {**TRAIN, "fused": fused},
              "evaluate": EVALUATE, "token_cost": {"tokens": [1, 3], "epochs_timed": 2}}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    (root / "cases").mkdir()
    for n in (1, 3):          # one process per count, as the token_cost_case@N stages run
        proc = _token_cost("--params", str(root / "params.yaml"), "--tokens", str(n),
                           "--json", str(root / "cases" / f"tokens_{n}.json"),
                           "--workdir", str(root))
        assert proc.returncode == 0, proc.stderr
    proc = _token_cost("--params", str(root / "params.yaml"), "--cases", str(root / "cases"),
                       "--json", str(root / "token_cost.json"))
    return proc.returncode, root


def test_token_cost_measures_every_count_and_says_what_is_extrapolated(measured):
    rc, root = measured
    assert rc == 0
    out = json.loads((root / "token_cost.json").read_text())
    assert sorted(p.name for p in root.iterdir()) == ["cases", "params.yaml", "token_cost.json"]
    assert out["probe"] == "fused" and out["seeds"] == 1 and out["epochs"] == 5
    one, three = out["cases"]["tokens_1"], out["cases"]["tokens_3"]
    assert (one["epochs"], three["epochs"]) == (4, 5)       # each count's recipe
    assert one["accelerator"] == "fused_pooled" and three["accelerator"] == "fused_tokens"
    for case, n in ((one, 1), (three, 3)):
        assert case["ecg_tokens"] == n and case["epochs_run"] == 2
        assert case["payload_bytes"] == 120 * (3 * 16 + n * 12) * 4
        assert case["manifest_bytes"] > 0 and case["build_s"] > 0
        assert case["peak_rss_mb"] > case["build_peak_rss_mb"] > 0
        assert not case["measured_whole"]
        assert case["basis"].startswith(f"extrapolated: 2 of {case['epochs']}")
        assert case["train_eval_s"] == pytest.approx(case["process_s"]
                                                     + (case["epochs"] - 2) * case["epoch_s"])
        assert case["process_s"] > case["fit_s"] > 0
    assert three["manifest_bytes"] > one["manifest_bytes"]
    assert out["max_tokens"]["ecg_tokens"] == 3
    assert 0 < out["rss_floor_mb"] < one["peak_rss_mb"]
    assert out["hardware"]["threads"] == TRAIN["threads"]


def test_token_cost_refuses_bad_params_before_building(tmp_path, capsys):
    params = {"cohort": {**COHORT, "echo_dim": -1}, "train": TRAIN, "evaluate": EVALUATE,
              "token_cost": {"tokens": [2], "epochs_timed": 0}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    rc = main(["token-cost", "--params", str(tmp_path / "params.yaml"), "--tokens", "2",
               "--json", str(tmp_path / "out.json"), "--workdir", str(tmp_path), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "cohort.echo_dim" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


def test_the_join_names_a_count_not_measured(tmp_path, capsys):
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"token_cost": {"tokens": [1, 7]}}))
    rc = main(["token-cost", "--params", str(tmp_path / "params.yaml"), "--cases",
               str(tmp_path), "--json", str(tmp_path / "out.json"), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "tokens_1.json: missing (dvc repro token_cost_case@1)" in err
    assert not (tmp_path / "out.json").exists()


def test_each_count_stage_depends_on_the_params_a_case_reads():
    repo = Path(__file__).resolve().parents[2]
    spec = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    params = yaml.safe_load((repo / "params.yaml").read_text())
    assert spec["token_cost_case"]["foreach"] == "${token_cost.tokens}"
    assert spec["token_cost_case"]["do"]["params"] == case_param_keys(params)
    assert spec["token_cost"]["params"] == ["token_cost"]
