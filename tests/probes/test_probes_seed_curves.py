"""Every replica's loss curve (`rightsize train --seed-curves`), for DVC plots of all seeds
(issue 44): replica 0's rows are the --curve CSV, the others their own replica's losses."""

from __future__ import annotations

import csv
import dataclasses

import pytest
import yaml

from rightsize.cli import main
from rightsize.probes.engine.train import train_seeds
from rightsize.probes.registry import spec as probe_spec

from .probe_fixtures import EVALUATE, TRAIN, small_manifest, small_train_config


def _rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("probe", ["ecg", "concat"])
def test_seed_curves_hold_every_replica(tmp_path, probe, cohort):
    small_manifest(tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"train": {**TRAIN, "seed": 3, "seeds": 3},
                                      "evaluate": EVALUATE}))
    curve, seeds = tmp_path / "c.csv", tmp_path / "seeds.csv"
    assert main(["train", probe, "--params", str(params), "--manifest",
                 str(tmp_path / "manifest.parquet"), "--out", str(tmp_path / "m"), "-q",
                 "--curve", str(curve), "--seed-curves", str(seeds)]) == 0
    rows = _rows(seeds)
    assert list(rows[0]) == ["seed", "epoch", "train_loss", "val_loss"]
    assert sorted({r["seed"] for r in rows}) == ["3", "4", "5"]
    first = [(r["epoch"], r["train_loss"], r["val_loss"]) for r in rows if r["seed"] == "3"]
    assert first == [(r["epoch"], r["train_loss"], r["val_loss"]) for r in _rows(curve)]
    for seed in ("4", "5"):
        mine = [r for r in rows if r["seed"] == seed]
        assert [int(r["epoch"]) for r in mine] == list(range(1, len(mine) + 1))
        assert all(float(r["train_loss"]) > 0 and float(r["val_loss"]) > 0 for r in mine)


def test_replica_curves_csv_is_each_fit_in_order(cohort):
    from rightsize.probes.engine.runlog import replica_curves_csv

    fits = train_seeds(probe_spec("concat"), cohort,
                       dataclasses.replace(small_train_config(), seed=1, seeds=2))
    lines = replica_curves_csv(fits, [1, 2]).splitlines()
    assert lines[0] == "seed,epoch,train_loss,val_loss"
    want = [f"{s},{e},{t!r},{v!r}" for s, f in zip((1, 2), fits, strict=True)
            for e, (t, v) in enumerate(zip(f.train_loss, f.val_loss, strict=True), 1)]
    assert lines[1:] == want and len(want) == sum(len(f.val_loss) for f in fits) > 2
    assert fits[0].val_loss != fits[1].val_loss          # two replicas, two curves
