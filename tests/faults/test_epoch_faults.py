"""Steps per epoch come from the user's loader arithmetic (item 1): the val tag's spacing only
confirms it, from 3 val points or more; a disagreement beyond drop_last rounding is exit 4
naming both figures, unless ``--epoch-from val`` (params: ``telemetry.runs.<run>.epoch_from``).
On the rescued RampNet run (skips without ../shared)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fault_helpers import rightsize

RAMPNET = Path(__file__).resolve().parents[2].parent / "shared" / "telemetry" / "rampnet1_stage2"
LAST = "events.out.tfevents.1750432003.g3082.25106.0"      # one val point, at step 103,158
FLAGS = ["--train-records", "150063", "--global-batch", "16", "--gpus", "16"]


@pytest.fixture(scope="module")
def rampnet() -> Path:
    if not (RAMPNET / LAST).is_file():
        pytest.skip(f"{RAMPNET} not present (the shared RampNet telemetry)")
    return RAMPNET


def report(res) -> dict:
    assert res.rc == 0, res.err
    return json.loads(res.out)


def test_one_val_point_does_not_override_the_records(rampnet):
    r = report(rightsize(["telemetry", rampnet / LAST, *FLAGS, "--json", "-"]))
    assert r["steps_per_epoch_from_val"] == 103158                # what main used
    assert r["steps_per_epoch"] == r["steps_per_epoch_from_records"] == 9379
    assert r["epochs_run"] == pytest.approx(112434 / 9379)        # main: 1.09
    assert r["epoch_hours"] == pytest.approx(9379 * r["step_time_s"]["median"] / 3600)
    assert r["epoch_hours"] < 2.0                                  # main: 19.25
    assert not any("spacing" in w for w in r["warnings"])


def test_drop_last_rounding_is_no_warning(rampnet):
    """The whole run: val points every 9,378 steps (drop_last); keep_last gives 9,379."""
    r = report(rightsize(["telemetry", rampnet, *FLAGS, "--json", "-"]))
    assert r["steps_per_epoch_from_val"] == 9378 and r["steps_per_epoch"] == 9379
    assert not any("spacing" in w for w in r["warnings"])
    r = report(rightsize(["telemetry", rampnet, *FLAGS, "--drop-last", "--json", "-"]))
    assert r["steps_per_epoch"] == 9378 and r["epochs_run"] == pytest.approx(112434 / 9378)


def test_a_disagreement_beyond_rounding_exits_4_unless_epoch_from_val(rampnet, sandbox):
    wrong = ["--train-records", "150063", "--global-batch", "8", "--drop-last"]
    res = rightsize(["telemetry", rampnet, *wrong, "--json", sandbox / "r.json"])
    assert res.rc == 4, res.err
    line = res.error_line()
    assert "Loss/val_epoch spacing over 11 points gives 9378 steps/epoch" in line
    assert "150063 records / batch 8 (drop_last) give 18757" in line
    assert "--epoch-from val" in line and not (sandbox / "r.json").exists()

    r = report(rightsize(["telemetry", rampnet, *wrong, "--epoch-from", "val", "--json", "-"]))
    assert r["steps_per_epoch"] == 9378 and r["steps_per_epoch_from_records"] == 18757

    (sandbox / "params.yaml").write_text(
        "telemetry:\n  runs:\n    rampnet:\n      train_records: 150063\n"
        "      global_batch: 8\n      drop_last: true\n      epoch_from: val\n")
    r = report(rightsize(["telemetry", rampnet, "--params", sandbox / "params.yaml",
                          "--run", "rampnet", "--json", "-"]))
    assert r["steps_per_epoch"] == 9378
    assert rightsize(["telemetry", rampnet, "--params", sandbox / "params.yaml", "--run",
                      "rampnet", "--epoch-from", "records"]).rc == 4     # the flag wins


def test_epoch_from_is_checked_at_params_parse(rampnet, sandbox):
    (sandbox / "params.yaml").write_text(
        "telemetry:\n  runs:\n    r:\n      train_records: 10\n      global_batch: 2\n"
        "      epoch_from: spacing\n")
    res = rightsize(["telemetry", rampnet / LAST, "--params", sandbox / "params.yaml",
                     "--run", "r"])
    assert res.rc == 2 and "telemetry.runs.r.epoch_from" in res.error_line()
