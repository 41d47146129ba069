"""Seed replicas of a probe and the spread of their metrics.

``train.seeds: K`` trains K replicas of each probe from seeds ``train.seed ...
train.seed + K - 1`` (:func:`seed_list`), together, in the one loop
(:mod:`rightsize.probes.engine.loop`; K = 1 is the same path). The ECG probe is closed-form and
does not draw random numbers: its K replicas are one fit (spread exactly 0).

Metrics files carry, beside each seed-0 value, its spread across replicas as scalar keys
(what ``dvc metrics show`` / ``dvc exp show`` list): ``<metric>_mean``, ``_sd`` (sample
standard deviation, ddof = 1; 0 for one replica), ``_min``, ``_max``
(:func:`add_spread`), and the per-replica values under ``seeds.r<k>`` (:func:`per_seed`).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

from rightsize.cohort.arrays import CohortArrays
from rightsize.probes.engine.config import TrainConfig
from rightsize.probes.engine.runlog import RunLog


def seed_list(cfg: TrainConfig) -> list[int]:
    """The replicas' seeds: ``train.seed + k`` for ``k < train.seeds``."""
    return [cfg.seed + k for k in range(cfg.seeds)]


def train_seeds(name: str, arrays: CohortArrays, cfg: TrainConfig, device: str = "cpu",
                runlog: RunLog | None = None) -> list[Any]:
    """One :class:`~rightsize.probes.engine.estimator.FitResult` per seed of :func:`seed_list`
    (:func:`rightsize.probes.engine.train.train_seeds`)."""
    from rightsize.probes.engine.train import train_seeds as fit

    return fit(name, arrays, cfg, device, runlog)


def spread(values: list[float]) -> dict[str, float]:
    """``{mean, sd, min, max}`` of ``values`` (sd with ddof = 1; exactly 0.0 for one value
    or identical values, e.g. the closed-form ECG probe's replicas)."""
    x = np.asarray(values, dtype=np.float64)
    sd = float(np.std(x, ddof=1)) if x.size > 1 and np.ptp(x) > 0 else 0.0
    return {"mean": float(np.mean(x)), "sd": sd, "min": float(np.min(x)),
            "max": float(np.max(x))}


def add_spread(node: dict[str, Any], key: str, values: list[float]) -> None:
    """Write ``<key>_mean``, ``_sd``, ``_min``, ``_max`` of ``values`` into ``node``."""
    for stat, v in spread(values).items():
        node[f"{key}_{stat}"] = v


def spread_keys(groups: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """``{node: {<metric>_mean, _sd, _min, _max}}`` for ``{node: {metric: values}}``; the
    node ``""`` puts its keys at the top level."""
    out: dict[str, Any] = {}
    for node, metrics in groups.items():
        target = out.setdefault(node, {}) if node else out
        for metric, values in metrics.items():
            add_spread(target, metric, values)
    return out


def per_seed(seeds: list[int], rows: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """``{"r<k>": {"seed": s, <metric>: value, ...}}``: replica k's values, keyed by its
    index (not its seed, so experiments with other ``train.seed`` share the columns)."""
    return {f"r{k}": {"seed": int(s), **{m: float(v[k]) for m, v in rows.items()}}
            for k, s in enumerate(seeds)}


REPLICAS_DIR = "replicas"


def replica_dirs(model_dir: str | Path) -> list[Path]:
    """``<model_dir>/replicas/r<k>`` of replicas 1 ... K-1, in order (replica 0 is
    ``model_dir`` itself)."""
    root = Path(model_dir) / REPLICAS_DIR
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and p.name[1:].isdigit()]
    return sorted(found, key=lambda p: int(p.name[1:]))


def save_replicas(model_dir: str | Path, fits: list[Any], seeds: list[int],
                  info: dict[str, Any]) -> None:
    """Checkpoints of replicas 1 ... K-1 under ``<model_dir>/replicas/r<k>`` (weights +
    sidecar, as replica 0's); stale replica directories from a larger K are removed."""
    from rightsize.probes.engine.checkpoint import save_checkpoint

    root = Path(model_dir) / REPLICAS_DIR
    for stale in replica_dirs(model_dir):
        if int(stale.name[1:]) >= len(fits):
            shutil.rmtree(stale)
    for k in range(1, len(fits)):
        fit = fits[k]
        save_checkpoint(root / f"r{k}", fit.probe, fit.arch,
                        {**info, "seed": seeds[k], "replica": k, "best_epoch": fit.best_epoch,
                         "epochs": fit.epochs, "val_mae": fit.val_mae,
                         "train_mae": fit.train_mae})
    if len(fits) <= 1 and root.is_dir() and not any(root.iterdir()):
        root.rmdir()


def train_spread(fits: list[Any], seeds: list[int]) -> dict[str, Any]:
    """Keys for the train metrics file: ``val.mae_*``, ``train.mae_*``, ``best_epoch_*``,
    ``n_seeds`` and ``seeds.r<k>``."""
    rows = {"val_mae": [f.val_mae for f in fits], "train_mae": [f.train_mae for f in fits],
            "best_epoch": [float(f.best_epoch) for f in fits]}
    keys = spread_keys({"val": {"mae": rows["val_mae"]}, "train": {"mae": rows["train_mae"]},
                        "": {"best_epoch": rows["best_epoch"]}})
    return {**keys, "n_seeds": len(fits), "seeds": per_seed(seeds, rows)}


def evaluate_replicas(model_dir: str | Path, probe: Any, sidecar: dict[str, Any],
                      arrays: CohortArrays, device: str, accelerate: bool = True,
                      planted: np.ndarray | None = None) -> dict[str, Any]:
    """Test MAE/AUROC and val MAE of every replica (replica 0 = ``probe``, already loaded;
    the others from their checkpoints), as spread keys beside the seed-0 ones:
    ``test.{mae,auroc}_{mean,sd,min,max}``, ``val.mae_*``, ``best_epoch_*``, ``n_seeds``,
    ``seeds.r<k>.{seed,test_mae,test_auroc,val_mae,best_epoch}``.

    With ``planted`` (the test split's planted ECG token per row, -1 where none: the truth
    file's) and replicas that attend from the echo to the ECG tokens, also
    ``attention.echo_to_ecg`` (:func:`rightsize.probes.evaluation.planted.planted_attention`)."""
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

        node = planted_attention([m for m, _ in members], test, planted)
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


def merge(into: dict[str, Any], keys: dict[str, Any]) -> dict[str, Any]:
    """``into`` with ``keys`` merged in, one level deep for dict values (``test``, ``val``)."""
    for k, v in keys.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            into[k].update(v)
        else:
            into[k] = v
    return into
