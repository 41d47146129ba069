"""Screen the fused probe's token recipe on the development cohort seed: validation MAE decides.

One variant per call: the shipped ``train`` block of ``params.yaml`` with
``train.fused.tokens`` keys overridden by ``--set key=value`` (``train.key=value``: a
shared ``train`` key, e.g. ``train.lr``), trained by the engine (the
one loop, ``--reps`` replicas, 1 thread) on one detection cell's cohort, generated in memory
as :mod:`token_detection` generates it (HuBERT-ECG layout, split energy; cohort seed 0 by
default: the seed kept for development, never in the headline). Each replica appends one
JSON line to ``--log``: the cell, the overrides, **validation MAE (the selection
criterion)**, best epoch, and the validation-chosen head's test weight on the planted event
(shown for reading; it chooses nothing). ``--render`` writes the log as a stamped markdown
table (mean validation MAE per variant and cell, best first).

    python benchmarks/token_recipe_screen.py --tag base
    python benchmarks/token_recipe_screen.py --tag d9 --set dropout=0.9
    python benchmarks/token_recipe_screen.py --tag d9 --set dropout=0.9 --tokens 186 --gain 1
    python benchmarks/token_recipe_screen.py --render
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "src"))


def screen(a: argparse.Namespace) -> list[dict[str, Any]]:
    """Train one variant on one cell; its replicas' rows."""
    import yaml

    from rightsize.blas_kernel import pin_openblas_kernel

    pin_openblas_kernel()                   # as the rightsize command does, before numpy
    from rightsize.cohort.synthetic import SyntheticCohort
    from rightsize.params import parse
    from rightsize.probes.engine.config import TrainConfig
    from rightsize.probes.engine.estimator import Estimator
    from rightsize.probes.evaluation.planted import val_chosen_head
    from rightsize.probes.registry import spec
    from token_detection import cell_config, cell_splits

    params = yaml.safe_load(Path(a.params).read_text())
    train = {**params["train"], "seed": 0, "seeds": a.reps, "threads": 1, "device": "cpu"}
    tokens = dict(train["fused"].get("tokens") or {})
    for kv in a.set:
        key, _, value = kv.partition("=")
        if key.startswith("train."):        # a shared train key (e.g. train.lr)
            train[key.removeprefix("train.")] = yaml.safe_load(value)
        else:
            tokens[key] = yaml.safe_load(value)
    train["fused"] = {**train["fused"], "tokens": tokens}
    cfg = parse(TrainConfig, train, "train")
    cohort = SyntheticCohort(cell_config(a.tokens, a.leads, a.gain, a.train, a.cohort_seed))
    tr, va, te, vm, tm = cell_splits(cohort)
    t0 = time.time()
    fits = Estimator(spec("fused"), cfg).fit(tr, va, list(range(a.reps)))
    seconds = (time.time() - t0) / a.reps
    return [{"tag": a.tag, "tokens": a.tokens, "leads": a.leads, "gain": a.gain,
             "train": a.train, "cohort_seed": a.cohort_seed, "rep": k, "set": a.set,
             "epochs": cfg.epochs("fused", a.tokens),   # as trained: x crops with epochs_per_crop
             "batch": cfg.batch("fused", a.tokens),     # as trained: x crops with batch_per_crop
             "val_mae": f.val_mae, "best_epoch": f.best_epoch,
             "head_test": val_chosen_head(f.probe, va, vm, te, tm).test_weight, "s": seconds}
            for k, f in enumerate(fits)]


def _batch_set(overrides: list[str]) -> int:
    """The batch of a row logged before rows said it: ``train.batch_size`` as set, else the
    64 every such row trained with."""
    for kv in overrides:
        key, _, value = kv.partition("=")
        if key == "train.batch_size":
            return int(value)
    return 64


def table(rows: list[dict[str, Any]]) -> str:
    """Mean validation MAE per cell and variant, best first within a cell."""
    import numpy as np

    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["tokens"], r["leads"], r["gain"], r["train"], r["cohort_seed"],
                r["tag"], " ".join(r["set"]))].append(r)
    lines = ["| tokens | leads | g | train | cohort seed | variant | overrides | val MAE "
             "(mean) | val MAE per replica | epochs trained | batch | best epochs | chosen head's "
             "test weight |",
             "|---:|---:|---:|---:|---:|---|---|---:|---|---:|---:|---|---|"]
    order = sorted(groups, key=lambda k: (k[:5], np.mean([r["val_mae"] for r in groups[k]])))
    for k in order:
        rs = sorted(groups[k], key=lambda r: r["rep"])
        vals = ", ".join(format(r["val_mae"], ".2f") for r in rs)
        epochs = ", ".join(str(r["best_epoch"]) for r in rs)
        heads = ", ".join(format(r["head_test"], ".2f") for r in rs)
        mean = np.mean([r["val_mae"] for r in rs])
        trained = rs[0].get("epochs", "-")        # rows before it was logged: -
        batch = rs[0].get("batch") or _batch_set(rs[0]["set"])
        lines.append(f"| {k[0]} | {k[1]} | {k[2]:g} | {k[3]} | {k[4]} | {k[5]} | "
                     f"{k[6] or '-'} | {mean:.2f} | {vals} | {trained} | {batch} | {epochs} | "
                     f"{heads} |")
    return "\n".join(lines)


def main() -> None:
    """Screen one variant, or render the log."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", default=str(REPO / "params.yaml"))
    ap.add_argument("--tag", default="base")
    ap.add_argument("--set", nargs="*", default=[],
                    help="train.fused.tokens keys, k=v (epochs counts per 5-s crop while "
                         "epochs_per_crop is on: x 2 at 186 tokens); train.k=v sets a shared "
                         "train key (train.lr=0.003)")
    ap.add_argument("--tokens", type=int, default=93)
    ap.add_argument("--leads", type=int, default=12)
    ap.add_argument("--gain", type=float, default=0.5)
    ap.add_argument("--train", type=int, default=829)
    ap.add_argument("--cohort-seed", type=int, default=0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--log", default=str(RESULTS / "token_recipe_screen.jsonl"))
    ap.add_argument("--render", action="store_true")
    ap.add_argument("--out", default=str(RESULTS / "token_recipe_screen.md"))
    a = ap.parse_args()
    if a.render:
        from _measure import write_result

        rows = [json.loads(x) for x in Path(a.log).read_text().splitlines() if x.strip()]
        text = ("# The token recipe screened on the development cohort seed\n\n"
                "Validation MAE decides (lower is better); the chosen head's test weight is "
                "shown for reading only. 1 thread, replicas = seeds 0..K-1 of the engine. Epochs "
                "trained: as the engine ran them (an epochs override counts per 5-s crop, x 2 "
                "at 186 tokens; - in rows logged before the column).\n\n"
                + table(rows))
        print(write_result(a.out, text, "token_recipe_screen.py"))
        return
    rows = screen(a)
    with Path(a.log).open("a", encoding="utf-8") as log:
        for r in rows:
            log.write(json.dumps(r) + "\n")
    mean = sum(r["val_mae"] for r in rows) / len(rows)
    print(f"{a.tag}: val MAE {mean:.3f} "
          f"(heads {[round(r['head_test'], 3) for r in rows]})", flush=True)


if __name__ == "__main__":
    main()
