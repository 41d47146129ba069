"""Evaluate every seed replica of a saved probe: test and validation metrics with their spread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rightsize.cohort.arrays import CohortArrays
from rightsize.probes.engine.replicas import replica_dirs
from rightsize.probes.evaluation.spread import per_seed, spread_keys


def evaluate_replicas(model_dir: str | Path, probe: Any, sidecar: dict[str, Any],
                      arrays: CohortArrays, device: str, accelerate: bool = True,
                      planted: np.ndarray | None = None) -> dict[str, Any]:
    """Test MAE/AUROC and val MAE of every replica (replica 0 = ``probe``, already loaded;
    the others from their checkpoints), as spread keys beside the seed-0 ones:
    ``test.{mae,auroc}_{mean,sd,min,max}``, ``val.mae_*``, ``best_epoch_*``, ``n_seeds``,
    ``seeds.r<k>.{seed,test_mae,test_auroc,val_mae,best_epoch}``.

    With ``planted`` (each manifest row's planted event, (n, N) bool over its ECG tokens in
    ``arrays``' row order, none where no truth: the truth file's) and replicas that attend
    from the echo to the ECG tokens, also ``attention.echo_to_ecg``
    (:func:`rightsize.probes.evaluation.planted.planted_attention`: heads chosen on the
    validation split, read on the test split)."""
    from rightsize.probes.engine.checkpoint import load_checkpoint
    from rightsize.probes.engine.data import split_data
    from rightsize.probes.evaluation.bootstrap import auroc

    test, val = split_data(arrays, "test"), split_data(arrays, "val")
    members = [(probe, sidecar)]
    for k, d in enumerate(replica_dirs(model_dir), start=1):
        member = load_checkpoint(d, probe.name, device, accelerate)
        _check_replica(d, k, member[1], sidecar)
        members.append(member)
    rows: dict[str, list[float]] = {"test_mae": [], "test_auroc": [], "val_mae": [],
                                    "best_epoch": []}
    seeds = []
    for k, (member, side) in enumerate(members):
        lvef, score = member.predict(test)
        rows["test_mae"].append(float(np.mean(np.abs(lvef - test.lvef))))
        rows["test_auroc"].append(auroc(test.ef_le_40, score))
        rows["val_mae"].append(member.mae(val))
        rows["best_epoch"].append(float(side.get("best_epoch", 0)))
        seeds.append(int(side.get("seed", (side.get("config") or {}).get("seed", 0) + k)))
    keys = spread_keys({"test": {"mae": rows["test_mae"], "auroc": rows["test_auroc"]},
                        "val": {"mae": rows["val_mae"]}, "": {"best_epoch": rows["best_epoch"]}})
    out = {**keys, "n_seeds": len(members), "seeds": per_seed(seeds, rows)}
    if planted is not None:
        from rightsize.probes.evaluation.planted import planted_attention

        node = planted_attention([m for m, _ in members], val, planted[arrays.index("val")],
                                 test, planted[arrays.index("test")])
        if node is not None:
            out["attention"] = {"echo_to_ecg": node}
    return out


def _check_replica(path: Path, k: int, side: dict[str, Any], seed0: dict[str, Any]) -> None:
    """Replica ``k`` belongs with seed 0's checkpoint: same training config, seed
    ``config.seed + k``. A mismatch (replicas left by another run, e.g. one interrupted
    between saving seed 0 and its replicas outside DVC) is a ``DataError`` naming the folder."""
    from rightsize.errors import DataError

    config = seed0.get("config") or {}
    want = int(config.get("seed", 0)) + k
    if side.get("config") != config or side.get("seed", want) != want:
        raise DataError(f"{path}: replica {k} was not trained with {path.parent.parent}'s "
                        f"config (expected seed {want}, got {side.get('seed')!r}); retrain "
                        "the probe (rightsize train or dvc repro)")
