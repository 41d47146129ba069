"""How many train subjects the planted ECG token needs: the told learner per cohort size.

For the shipped ``cohort`` block at ``ecg_tokens`` N and ``n_subjects`` S (the splits scaled
with S, as the default's 829/131/248 of 1,208), regenerate the synthetic cohort in memory
and fit the told learner of :mod:`rightsize.probes.evaluation.learnable` (the smallest
attention that could learn the echo->ECG match, told the codes' subspaces; the
``planted_ceiling`` stage runs it at the configured cohort) for ``--seeds`` seeds; with
``--generic`` also the same small model not told (one seed). Each row: the train subjects,
the weight on t* (mean ± sd, min-max), test MAE, and the seconds per fit.

    OMP_NUM_THREADS=1 python benchmarks/ecg_tokens_learnable.py --tokens 16 93 186 \\
        --subjects 1208 2400 4104 --seeds 3 --generic --events 0 \\
        --out benchmarks/results/ecg_tokens_learnable.md
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def scaled(cohort, subjects: int):
    """``cohort`` at ``subjects`` subjects, its splits in the default's proportions."""
    from rightsize.cohort.config import SplitsConfig

    s = cohort.splits
    total = s.train + s.val + s.test
    val = round(s.val * subjects / total)
    test = round(s.test * subjects / total)
    return dataclasses.replace(cohort, n_subjects=subjects,
                               splits=SplitsConfig(train=subjects - val - test, val=val,
                                                   test=test))


def main() -> None:
    """Measure every (tokens, subjects) pair and write the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--tokens", type=int, nargs="+", default=[16, 93, 186])
    ap.add_argument("--subjects", type=int, nargs="+", default=[1208, 2400, 4104])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--generic", action="store_true", help="also the small model, not told")
    ap.add_argument("--events", type=int, default=None,
                    help="cohort.ecg_events (default: the params file's; 0 = one per token)")
    ap.add_argument("--out", type=Path, default=RESULTS / "ecg_tokens_learnable.md")
    a = ap.parse_args()

    import torch

    from rightsize.cohort.config import CohortConfig
    from rightsize.cohort.synthetic import SyntheticCohort
    from rightsize.params import load_block
    from rightsize.probes.evaluation.learnable import learn_match, probe_view
    from rightsize.probes.evaluation.spread import spread

    torch.set_num_threads(1)
    base = load_block(a.params, "cohort", CohortConfig)
    rows = ["| ECG tokens | subjects | train subjects | learner | seeds | weight on t* "
            "(mean ± sd) | min-max | uniform | test MAE | best step | s per fit |",
            "|---:|---:|---:|---|---:|---|---|---:|---:|---:|---:|"]
    for n in a.tokens:
        for subjects in a.subjects:
            cfg = dataclasses.replace(scaled(base, subjects), source="synthetic", ecg_tokens=n,
                                      ecg_events=base.ecg_events if a.events is None
                                      else a.events)
            view = probe_view(SyntheticCohort(cfg), 32)
            uniform = float(view.planted[view.has_ecg].sum(axis=1).mean()) / n
            for told, seeds in ((True, a.seeds), (False, 1 if a.generic else 0)):
                if not seeds:
                    continue
                t0 = time.perf_counter()
                runs = [learn_match(view, s, a.steps, told) for s in range(seeds)]
                per_fit = (time.perf_counter() - t0) / seeds
                w = spread([r["planted_weight"] for r in runs])
                mae = spread([r["test_mae"] for r in runs])
                rows.append(
                    f"| {n} | {subjects:,} | {runs[0]['train_subjects']:,} | "
                    f"{'told' if told else 'not told'} | {seeds} | {w['mean']:.3f} ± "
                    f"{w['sd']:.3f} | {w['min']:.3f}-{w['max']:.3f} | {uniform:.4f} | "
                    f"{mae['mean']:.2f} | "
                    f"{', '.join(str(r['step']) for r in runs)} | {per_fit:.1f} |")
                print(rows[-1], flush=True)
    notes = (
        "# What the train split allows: the planted ECG token's match learnt from LVEF\n\n"
        "The told learner (`rightsize.probes.evaluation.learnable`: one bilinear echo->ECG\n"
        "attention on the probes' PCA-32 coordinates restricted to the generator's code\n"
        "subspaces, linear reads, full-batch AdamW lr 1e-3, at most "
        f"{a.steps} steps, kept at its\nbest validation MSE) on the shipped synthetic cohort "
        "at each token count and size (splits\nin the default's proportions; cohort seed 0; "
        f"`ecg_events` {'params' if a.events is None else a.events}). "
        "`not told`: the same model whose attention\nsees all 32 coordinates. Seeds draw the "
        "learner's initial weights; the cohort is fixed.\nOMP_NUM_THREADS=1; the seconds are "
        "wall time on a shared box.\n")
    sys.path.insert(0, str(Path(__file__).parent))
    from _measure import write_result

    write_result(a.out, notes + "\n" + "\n".join(rows), Path(__file__).name)


if __name__ == "__main__":
    main()
