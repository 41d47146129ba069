"""Seed replicas: trained together, each its own model; spread keys in the metrics files."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import yaml

from rightsize.cli import main
from rightsize.probes.engine.replicas import seed_list
from rightsize.probes.engine.train import train_seeds
from rightsize.probes.evaluation.spread import spread
from rightsize.probes.registry import spec as probe_spec

from .probe_fixtures import EVALUATE, TRAIN, small_manifest, small_train_config


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A directory with a small synthetic manifest."""
    root = tmp_path_factory.mktemp("seeds")
    small_manifest(root)
    return root


@pytest.mark.parametrize("accelerate", [True, False])
def test_fused_replicas_repeat_single_runs_bit_for_bit(cohort, accelerate):
    """ReplicaByReplica (the accelerator's and the textbook's): replica k is the single run with
    seed k, to the last bit."""
    from rightsize.probes.engine.train import train_probe

    cfg = dataclasses.replace(small_train_config(epochs=6), accelerate=accelerate)
    reps = train_seeds(probe_spec("fused"), cohort, dataclasses.replace(cfg, seed=0, seeds=3))
    assert reps[0].extra["accelerator"] == ("fused_pooled" if accelerate else "none")
    for k in (1, 2):
        single = train_probe(probe_spec("fused"), cohort, dataclasses.replace(cfg, seed=k))
        assert reps[k].val_loss == single.val_loss and reps[k].train_loss == single.train_loss
        assert reps[k].val_mae == single.val_mae and reps[k].best_epoch == single.best_epoch
    assert reps[0].val_loss != reps[1].val_loss


@pytest.mark.parametrize("name", ["concat"])
def test_stacked_replicas_are_independent_of_their_companions(cohort, name):
    """Seed 1 trained beside seeds 0 and 2 ends where seed 1 trained beside seed 2 does."""
    cfg = small_train_config(epochs=6)
    group = train_seeds(probe_spec(name), cohort, dataclasses.replace(cfg, seed=0, seeds=3))
    pair = train_seeds(probe_spec(name), cohort, dataclasses.replace(cfg, seed=1, seeds=2))
    np.testing.assert_allclose(group[1].val_loss, pair[0].val_loss, rtol=1e-5)
    np.testing.assert_allclose(group[2].val_loss, pair[1].val_loss, rtol=1e-5)
    assert group[0].val_loss != group[1].val_loss
    again = train_seeds(probe_spec(name), cohort, dataclasses.replace(cfg, seed=0, seeds=3))
    assert [f.val_loss for f in again] == [f.val_loss for f in group]   # bit-reproducible


def test_stacked_replica_training_learns_like_the_textbook_trainer(cohort):
    cfg = small_train_config(epochs=12)
    single = train_seeds(probe_spec("concat"), cohort, dataclasses.replace(cfg, seeds=1,
                                                               accelerate=False))[0]
    reps = train_seeds(probe_spec("concat"), cohort, dataclasses.replace(cfg, seeds=4))
    assert single.extra["accelerator"] == "none"
    assert reps[0].extra["accelerator"] == "concat_stacked"
    maes = [f.val_mae for f in reps]
    assert len(reps) == 4 and len(set(maes)) == 4
    assert abs(np.mean(maes) - single.val_mae) < 0.15 * single.val_mae
    for f in reps:
        assert f.best_epoch == int(np.argmin(f.val_loss)) + 1


def test_ecg_replicas_are_one_fit_and_spread_statistics(cohort):
    fits = train_seeds(probe_spec("ecg"), cohort,
                       dataclasses.replace(small_train_config(), seeds=3))
    assert len(fits) == 3 and len({f.val_mae for f in fits}) == 1
    assert seed_list(dataclasses.replace(small_train_config(seed=7), seeds=3)) == [7, 8, 9]
    s = spread([1.0, 2.0, 4.0])
    assert s == {"mean": pytest.approx(7 / 3), "sd": pytest.approx(np.std([1, 2, 4], ddof=1)),
                 "min": 1.0, "max": 4.0}
    assert spread([3.0]) == {"mean": 3.0, "sd": 0.0, "min": 3.0, "max": 3.0}


def _run(root, verb, probe, params, out_flag, out):
    args = [verb, probe, "--params", str(params), "--manifest", str(root / "manifest.parquet"),
            "-q"]
    if verb == "train":
        return main(args + ["--out", str(root / f"m_{probe}"), "--curve",
                            str(root / f"{probe}.csv"), "--metrics", str(out)])
    return main(args + ["--model", str(root / f"m_{probe}"), "--json", str(out)])


@pytest.mark.parametrize("probe", ["ecg", "concat"])
def test_cli_writes_spread_keys_and_keeps_every_checkpoint(work, tmp_path, probe):
    from rightsize.probes.measurements.footprint import checkpoint_footprint

    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"train": {**TRAIN, "seeds": 3}, "evaluate": EVALUATE}))
    root = work
    assert _run(root, "train", probe, params, "--metrics", tmp_path / "train.json") == 0
    assert sorted(p.name for p in (root / f"m_{probe}" / "replicas").iterdir()) == ["r1", "r2"]
    assert checkpoint_footprint(root / f"m_{probe}")["replicas"] == 3
    train = json.loads((tmp_path / "train.json").read_text())
    assert train["n_seeds"] == 3 and set(train["seeds"]) == {"r0", "r1", "r2"}
    assert train["seeds"]["r0"]["val_mae"] == train["val"]["mae"]
    assert _run(root, "evaluate", probe, params, "--json", tmp_path / "eval.json") == 0
    m = json.loads((tmp_path / "eval.json").read_text())
    per = [m["seeds"][f"r{k}"] for k in range(3)]
    assert [r["seed"] for r in per] == [0, 1, 2]
    assert per[0]["test_mae"] == pytest.approx(m["test"]["mae"], rel=1e-12)
    assert per[0]["val_mae"] == pytest.approx(train["val"]["mae"], rel=1e-12)
    for key in ("mae", "auroc"):
        vals = [r[f"test_{key}"] for r in per]
        assert m["test"][f"{key}_mean"] == pytest.approx(np.mean(vals))
        assert m["test"][f"{key}_sd"] == pytest.approx(np.std(vals, ddof=1))
        assert m["test"][f"{key}_min"] == min(vals) and m["test"][f"{key}_max"] == max(vals)
    assert (m["test"]["mae_sd"] == 0.0) == (probe == "ecg")
    assert len(m["bootstrap"]["test_mae"]) == EVALUATE["n_bootstrap"]

    params.write_text(yaml.safe_dump({"train": {**TRAIN, "seeds": 1}, "evaluate": EVALUATE}))
    assert _run(root, "train", probe, params, "--metrics", tmp_path / "train1.json") == 0
    assert not (root / f"m_{probe}" / "replicas").exists()      # stale replicas removed
    assert _run(root, "evaluate", probe, params, "--json", tmp_path / "eval1.json") == 0
    one = json.loads((tmp_path / "eval1.json").read_text())
    assert one["n_seeds"] == 1 and one["test"]["mae_sd"] == 0.0
    assert one["test"]["mae_mean"] == one["test"]["mae"]


def test_evaluate_rejects_a_replica_trained_with_another_config(work, tmp_path, capsys):
    """Replicas left beside a seed 0 of another run (e.g. a hand-run `rightsize train`
    interrupted between saving seed 0 and its replicas) are an error, not mixed in."""
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"train": {**TRAIN, "seeds": 2}, "evaluate": EVALUATE}))
    assert _run(work, "train", "echo", params, "--metrics", tmp_path / "train.json") == 0
    side = work / "m_echo" / "replicas" / "r1" / "checkpoint.json"
    doc = json.loads(side.read_text())
    doc["config"]["lr"] = doc["config"]["lr"] * 2            # as if trained by another run
    side.write_text(json.dumps(doc))
    from rightsize.probes.engine.integrity import record_contents

    record_contents(work / "m_echo")          # sealed: the folder's hashes agree, its configs not
    capsys.readouterr()
    assert _run(work, "evaluate", "echo", params, "--json", tmp_path / "eval.json") == 4
    err = capsys.readouterr().err
    assert "replicas/r1" in err and "retrain" in err
    assert not (tmp_path / "eval.json").exists()


@pytest.mark.parametrize("probe", ["ecg", "echo"])
def test_train_with_eval_json_scores_every_replica_as_evaluate_does(work, tmp_path, probe):
    """One process (train --eval-json, as dvc repro runs it) gives the eval file a separate
    `rightsize evaluate` writes, replicas included."""
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"train": {**TRAIN, "seeds": 2}, "evaluate": EVALUATE}))
    one = tmp_path / "one.json"
    assert _run(work, "train", probe, params, "--metrics", tmp_path / "train.json") == 0
    assert main(["train", probe, "--params", str(params), "--manifest",
                 str(work / "manifest.parquet"), "-q", "--out", str(work / f"m_{probe}"),
                 "--curve", str(tmp_path / "c.csv"), "--eval-json", str(one)]) == 0
    assert _run(work, "evaluate", probe, params, "--json", tmp_path / "two.json") == 0
    a, b = (json.loads(p.read_text()) for p in (one, tmp_path / "two.json"))
    assert a["n_seeds"] == b["n_seeds"] == 2
    assert a["seeds"] == b["seeds"] and a["test"] == b["test"]
