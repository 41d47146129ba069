"""DVC experiments on the tiny project: exp run, a queued seed sweep, exp push/pull."""

from __future__ import annotations

import json
import statistics

import pytest
import yaml
from pipeline_helpers import (
    GRADIENT_TRAINED,
    PROBES,
    REPO,
    copy_project,
    dvc,
    dvc_status,
    file_digests,
    git,
    repro_stages,
    run,
    tracked_outs,
)

from rightsize.probes.engine.checkpoint import read_sidecar

pytestmark = pytest.mark.slow


def _exp_groups(project, env) -> list[dict]:
    """Raw experiments of the HEAD baseline from ``dvc exp show --json``."""
    raw = json.loads(dvc(project, env, "exp", "show", "--json").stdout)
    base = [r for r in raw if r["rev"] != "workspace"][0]
    return base.get("experiments") or []


@pytest.fixture(scope="module")
def seed7(tmp_path_factory, built_project, pipeline_env):
    """Clone A of a shared git origin, after ``dvc exp run -S train.seed=7 -n seed7``."""
    root = tmp_path_factory.mktemp("exp")
    origin = root / "origin.git"
    git(root, pipeline_env, "init", "-q", "--bare", str(origin))
    clone_a = copy_project(built_project, root / "a")
    git(clone_a, pipeline_env, "remote", "add", "origin", str(origin))
    git(clone_a, pipeline_env, "push", "-q", "origin", "main")
    out = dvc(clone_a, pipeline_env, "exp", "run", "-S", "train.seed=7", "-n", "seed7").stdout
    return clone_a, origin, out


def test_exp_run_with_new_seed_retrains_every_probe(seed7, built_project, pipeline_env):
    clone_a, _origin, out = seed7
    ran = set(repro_stages(out))
    assert {f"train@{p}" for p in PROBES} <= ran
    assert not any(s.startswith("evaluate@") for s in ran)   # evaluated inside train@<probe>
    for probe in PROBES:        # ... and the evaluation saw the new seed's model
        ev = json.loads((clone_a / "metrics" / "eval" / f"{probe}.json").read_text())
        tr = json.loads((clone_a / "metrics" / "train" / f"{probe}.json").read_text())
        assert ev["val"]["mae"] == pytest.approx(tr["val"]["mae"], rel=1e-12), probe
    assert not ran & {"cohort", "demo_run", "telemetry@demo", "sizing"}
    lock = yaml.safe_load((clone_a / "dvc.lock").read_text())["stages"]
    for probe in PROBES:
        assert lock[f"train@{probe}"]["params"]["params.yaml"]["train.seed"] == 7
    for probe in GRADIENT_TRAINED:  # seeded probes: new init, new weights
        weights = f"models/{probe}/{read_sidecar(clone_a / 'models' / probe)['weights']}"
        new, old = file_digests(clone_a, [weights]), file_digests(built_project, [weights])
        assert new and old and new != old, weights
    groups = _exp_groups(clone_a, pipeline_env)
    assert [g["name"] for g in groups] == ["seed7"]
    params = groups[0]["revs"][0]["data"]["params"]["params.yaml"]["data"]
    assert params["train"]["seed"] == 7


def test_exp_push_then_pull_in_another_clone_restores_the_same_results(
        seed7, tmp_path, pipeline_env):
    clone_a, origin, _ = seed7
    dvc(clone_a, pipeline_env, "exp", "push", "origin", "seed7")
    clone_b = tmp_path / "b"
    git(tmp_path, pipeline_env, "clone", "-q", str(origin), str(clone_b))
    assert not (clone_b / "models").exists() or not any((clone_b / "models").iterdir())
    dvc(clone_b, pipeline_env, "exp", "pull", "origin", "seed7")
    assert [g["name"] for g in _exp_groups(clone_b, pipeline_env)] == ["seed7"]
    dvc(clone_b, pipeline_env, "exp", "apply", "seed7")
    dvc(clone_b, pipeline_env, "checkout")
    outs = tracked_outs(clone_a)
    assert "models/fused" in outs and "data/manifest.parquet" in outs
    assert file_digests(clone_b, outs) == file_digests(clone_a, outs)
    assert file_digests(clone_b, ["metrics"]) == file_digests(clone_a, ["metrics"])
    assert dvc_status(clone_b, pipeline_env) == {}


def test_queued_seed_sweep_and_seeds_summary(project, pipeline_env, tmp_path):
    # `rightsize sweep` = dvc exp run --queue -S train.seed=1,2 + dvc queue start -j 1 + wait.
    sweep = run(["rightsize", "sweep", "--seeds", "1,2", "-j", "1", "--poll", "1",
                 "--timeout", "480", "train@fused"], project, pipeline_env)
    assert "2 experiments succeeded" in sweep.stderr
    groups = _exp_groups(project, pipeline_env)
    assert len(groups) == 2
    assert all(g["executor"]["state"] == "success" for g in groups)
    data = [g["revs"][0]["data"] for g in groups]
    assert sorted(d["params"]["params.yaml"]["data"]["train"]["seed"] for d in data) == [1, 2]

    key = "metrics/headline/probes/fused.json"          # what rightsize spread reads: metrics
    base_mae = json.loads((project / key).read_text())["fused"]["test_mae"]
    assert base_mae == json.loads((project / "metrics/eval/fused.json").read_text())["test"]["mae"]
    maes = [base_mae] + [d["metrics"][key]["data"]["fused"]["test_mae"] for d in data]
    out = tmp_path / "seeds.json"
    run(["rightsize", "spread", "--json", str(out), "--metrics-prefix", key], project,
        pipeline_env)
    summary = json.loads(out.read_text())
    mae = summary["metrics"][f"{key}:fused.test_mae"]
    assert mae["n"] == 3
    assert mae["mean"] == pytest.approx(statistics.fmean(maes))
    assert mae["sd"] == pytest.approx(statistics.stdev(maes))
    assert mae["sd"] > 0  # the seed changes the fused probe
    assert all(k.startswith(key) for k in summary["metrics"])


def test_exp_run_seeds_changes_the_spread_and_exp_show_lists_it(project, pipeline_env):
    base = {p: json.loads((project / f"metrics/eval/{p}.json").read_text()) for p in PROBES}
    for p in PROBES:   # the default pipeline already writes the spread of every probe
        assert base[p]["n_seeds"] == 5
        for key in ("mae", "auroc"):
            assert {f"{key}_{s}" for s in ("mean", "sd", "min", "max")} <= set(base[p]["test"])
        assert set(base[p]["seeds"]) == {f"r{k}" for k in range(5)}
    dvc(project, pipeline_env, "exp", "run", "-S", "train.seeds=3", "-n", "three")
    groups = _exp_groups(project, pipeline_env)
    assert [g["name"] for g in groups] == ["three"]
    metrics = groups[0]["revs"][0]["data"]["metrics"]
    fused = metrics["metrics/headline/probes/fused.json"]["data"]["fused"]
    assert fused["test_mae_mean"] != base["fused"]["test"]["mae_mean"]
    assert fused["test_mae"] == base["fused"]["test"]["mae"]          # seed 0 is unchanged
    detail = json.loads((project / "metrics/eval/fused.json").read_text())   # applied
    assert detail["n_seeds"] == 3 and set(detail["seeds"]) == {"r0", "r1", "r2"}
    assert detail["test"]["mae_mean"] == fused["test_mae_mean"]
    table = dvc(project, pipeline_env, "exp", "show", "--csv").stdout
    header = table.splitlines()[0].split(",")
    for stat in ("mean", "sd"):
        assert f"fused.test_mae_{stat}" in header, stat

    # dvc metrics diff: one row per headline number that moved, named as in exp show
    diff = json.loads(dvc(project, pipeline_env, "metrics", "diff", "--json").stdout)
    moved = {k for entries in diff.values() for k in entries}
    assert {"fused.test_mae_mean", "fused.test_mae_sd", "echo.test_auroc_mean"} <= moved
    assert "fused.test_mae" not in moved and "ecg.test_mae" not in moved
    assert all(path.startswith("metrics/headline/") for path in diff)
    text = dvc(project, pipeline_env, "metrics", "diff").stdout
    assert max(len(line) for line in text.splitlines()) <= 120

    # --only-changed lists every timing too (they move every run); the README's --drop
    # keeps the model numbers, and that table fits a wide terminal
    env = {**pipeline_env, "COLUMNS": "4000"}
    every = dvc(project, env, "exp", "show", "--only-changed", "--no-pager").stdout
    model = dvc(project, env, "exp", "show", "--only-changed", "--no-pager",
                "--drop", MEASURED_COLUMNS).stdout
    assert "fused.train_eval_s" in every and "fused.train_eval_s" not in model
    assert "fused.test_mae_sd" in model and "train.seeds" in model
    # 250 until the paired fused - concat gain added its three model columns (~340 now);
    # a narrower default table is open work
    assert max(len(line.rstrip()) for line in model.splitlines()) <= 360
    assert f"--drop '{MEASURED_COLUMNS}'" in (REPO / "README.md").read_text()


MEASURED_COLUMNS = ".*/|.*_(s|mb|hours|bytes)$|models|metrics"   # as README.md shows it
