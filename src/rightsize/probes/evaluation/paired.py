"""Two probes compared seed by seed: the paired difference of their test MAE, with a 95%
t-interval.

Both probes are trained with the same seeds (``train.seed`` ... ``+ train.seeds - 1``) on
the same cohort and scored on the same test subjects, so seed ``s`` of one and seed ``s`` of
the other form a pair. With ``d_s = a_s - b_s`` over ``n`` pairs::

    mean = sum(d_s) / n,   sd = sqrt(sum((d_s - mean)^2) / (n - 1))
    interval = mean -+ t_{(1 + ci) / 2, n - 1} * sd / sqrt(n)

(Student's t with ``n - 1`` degrees of freedom; ``lo = hi = mean`` for one pair or a zero
spread). The interval is over training seeds on this one cohort and test split: it says
how much the comparison moves when only the training draw changes, not how it would move
on other test subjects or another cohort (docs/numerics.md).

:func:`compare_probes` gives the detail node from two evaluation files' ``seeds.r<k>``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rightsize.errors import DataError

CI = 0.95


@dataclass(frozen=True)
class PairedDifference:
    """``a - b`` per pair: its mean, sample sd and the t-interval at ``ci``."""

    mean: float
    sd: float
    lo: float
    hi: float
    n: int
    ci: float


def paired_difference(a: Sequence[float], b: Sequence[float], ci: float = CI
                      ) -> PairedDifference:
    """The paired difference ``a[i] - b[i]`` (module docstring); ``a`` and ``b`` the same
    length, at least one pair, finite values."""
    from scipy.stats import t

    x = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if len(a) != len(b) or x.size == 0:
        raise ValueError(f"paired difference needs pairs: {len(a)} and {len(b)} values")
    if not np.isfinite(x).all():
        raise ValueError("paired difference of non-finite values")
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if x.size > 1 and np.ptp(x) > 0 else 0.0
    half = float(t.ppf((1 + ci) / 2, x.size - 1)) * sd / math.sqrt(x.size) if sd else 0.0
    return PairedDifference(mean, sd, mean - half, mean + half, int(x.size), ci)


def _per_seed(doc: Mapping[str, Any], name: str) -> dict[int, float]:
    """``{seed: test MAE}`` of an evaluation file's ``seeds.r<k>`` (``name`` in errors)."""
    seeds = doc.get("seeds")
    if not isinstance(seeds, Mapping) or not seeds:
        raise DataError(f"{name}: no per-seed results (seeds.r<k>); retrain the probe")
    out: dict[int, float] = {}
    for key, row in seeds.items():
        try:
            out[int(row["seed"])] = float(row["test_mae"])
        except (KeyError, TypeError, ValueError):
            raise DataError(f"{name}: seeds.{key} has no seed and test_mae") from None
    return out


def compare_probes(better: Mapping[str, Any], base: Mapping[str, Any], better_name: str,
                   base_name: str) -> dict[str, Any]:
    """How much lower ``better``'s test MAE is than ``base``'s, seed by seed: the node
    ``{probe, against, seeds, mae_gain_{mean,sd,lo,hi}, n_pairs, ci, per_seed.r<k>}`` where the
    gain is ``base MAE - better MAE`` (positive: ``better`` has the lower error).

    The two evaluation files must hold the same seeds on the same number of test rows: a
    mismatch is a ``DataError`` naming both."""
    a, b = _per_seed(base, base_name), _per_seed(better, better_name)
    if sorted(a) != sorted(b):
        raise DataError(f"{better_name} has seeds {sorted(b)}, {base_name} {sorted(a)}: "
                        "train both with the same train.seed and train.seeds")
    rows = [(doc.get("test") or {}).get("n") for doc in (better, base)]
    if rows[0] != rows[1]:
        raise DataError(f"{better_name} was scored on {rows[0]} test rows, {base_name} on "
                        f"{rows[1]}: not the same test split")
    seeds = sorted(a)
    diff = paired_difference([a[s] for s in seeds], [b[s] for s in seeds])
    d = asdict(diff)
    return {"probe": better_name, "against": base_name, "seeds": seeds,
            **{f"mae_gain_{k}": d[k] for k in ("mean", "sd", "lo", "hi")},
            "n_pairs": diff.n, "ci": diff.ci,
            "per_seed": {f"r{k}": {"seed": s, "mae": b[s], "against_mae": a[s],
                                   "mae_gain": a[s] - b[s]} for k, s in enumerate(seeds)}}
