"""The spread of a metric across seed replicas, as metrics-file keys.

Metrics files carry, beside each seed-0 value, its spread across replicas as scalar keys
(what ``dvc metrics show`` / ``dvc exp show`` list): ``<metric>_mean``, ``_sd`` (sample
standard deviation, ddof = 1; 0 for one replica), ``_min``, ``_max``
(:func:`add_spread`), and the per-replica values under ``seeds.r<k>`` (:func:`per_seed`).
The ECG probe is closed-form and does not draw random numbers: its K replicas are one fit
(spread exactly 0).
"""

from __future__ import annotations

from typing import Any

import numpy as np


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


def train_spread(fits: list[Any], seeds: list[int]) -> dict[str, Any]:
    """Keys for the train metrics file: ``val.mae_*``, ``train.mae_*``, ``best_epoch_*``,
    ``n_seeds`` and ``seeds.r<k>``."""
    rows = {"val_mae": [f.val_mae for f in fits], "train_mae": [f.train_mae for f in fits],
            "best_epoch": [float(f.best_epoch) for f in fits]}
    keys = spread_keys({"val": {"mae": rows["val_mae"]}, "train": {"mae": rows["train_mae"]},
                        "": {"best_epoch": rows["best_epoch"]}})
    return {**keys, "n_seeds": len(fits), "seeds": per_seed(seeds, rows)}


def merge(into: dict[str, Any], keys: dict[str, Any]) -> dict[str, Any]:
    """``into`` with ``keys`` merged in, one level deep for dict values (``test``, ``val``)."""
    for k, v in keys.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            into[k].update(v)
        else:
            into[k] = v
    return into
