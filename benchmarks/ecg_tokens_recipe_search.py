"""The search for a fused-probe recipe that finds the planted ECG token at 93 and 186 tokens.

One configuration per call, in process: the fused (or concat) probe trained by the engine
(:class:`rightsize.probes.engine.estimator.Estimator`, the one loop, K seeds) on a cohort
built beforehand by ``rightsize cohort`` (``--cohort DIR`` holding ``manifest.parquet`` and
``truth.parquet``), with the shipped ``train`` block except what the flags change. Each
replica appends one JSON line to ``--log``: the configuration, the accelerator, its best
epoch, **validation MAE (the selection criterion)**, test MAE, the best head's weight on the
planted token (the check, never the target), the wall time and every tenth epoch's train
and validation MSE. ``--table`` renders the log as ``benchmarks/results/ecg_tokens_recipe.md``.

``--qknorm S`` is a prototype that is not an engine option: it patches the textbook
``CrossAttention`` (queries and keys normalized per head, scores times a learnable scale
initialised at S) and trains with ``train.accelerate: false``.

    rightsize cohort --params p93.yaml --out c93/manifest.parquet --truth c93/truth.parquet
    OMP_NUM_THREADS=1 python benchmarks/ecg_tokens_recipe_search.py --cohort c93 \\
        --attn-scale 4 --tag as4 --log benchmarks/results/ecg_tokens_recipe.jsonl
    python benchmarks/ecg_tokens_recipe_search.py \\
        --table benchmarks/results/ecg_tokens_recipe.jsonl \\
        --out benchmarks/results/ecg_tokens_recipe.md --notes notes.md
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def _patch_qknorm(init: float) -> None:
    import torch

    from rightsize.probes.models import fused as fz

    orig = fz.CrossAttention.__init__

    def init_(self, dim, heads, scale=1.0):
        orig(self, dim, heads, scale)
        self.log_scale = torch.nn.Parameter(torch.full((heads,), math.log(init)))

    def forward(self, query, keys, valid):
        b, n_q, d = query.shape
        dh = d // self.heads
        q = self.q(query).view(b, n_q, self.heads, dh).transpose(1, 2)
        k = self.k(keys).view(b, -1, self.heads, dh).transpose(1, 2)
        v = self.v(keys).view(b, -1, self.heads, dh).transpose(1, 2)
        q, k = torch.nn.functional.normalize(q, dim=-1), torch.nn.functional.normalize(k, dim=-1)
        scores = q @ k.transpose(-2, -1) * self.log_scale.exp().view(1, -1, 1, 1)
        w = scores.masked_fill(~valid[:, None, None, :], float("-inf")).softmax(-1)
        return self.out((w @ v).transpose(1, 2).reshape(b, n_q, d)), w

    fz.CrossAttention.__init__, fz.CrossAttention.forward = init_, forward


def run(a: argparse.Namespace) -> None:
    """Train one configuration and append its replicas to ``a.log``."""
    from rightsize.cohort.load_manifest import load_arrays
    from rightsize.cohort.truth import load_truth
    from rightsize.probes.engine.config import TrainConfig
    from rightsize.probes.engine.data import split_data
    from rightsize.probes.engine.estimator import Estimator
    from rightsize.probes.evaluation.planted import planted_attention
    from rightsize.probes.models.concat import ConcatConfig
    from rightsize.probes.models.fused import FusedConfig
    from rightsize.probes.registry import spec as probe_spec

    if a.qknorm:
        _patch_qknorm(a.qknorm)
    folder = Path(a.cohort)
    arrays = load_arrays(folder / "manifest.parquet")
    truth = load_truth(folder / "truth.parquet").aligned(arrays.subject_id)
    planted = truth.planted_mask()
    tr, va, te = (split_data(arrays, s) for s in ("train", "val", "test"))
    extra = {k: (float(v) if "." in v else int(v)) for k, v in (x.split("=") for x in a.set)}
    sub = (FusedConfig(epochs=a.epochs, attn_scale=a.attn_scale, **extra) if a.probe == "fused"
           else ConcatConfig(**extra))
    cfg = TrainConfig(pca_rank=a.pca, seed=a.seed0, seeds=a.seeds, lr=a.lr, weight_decay=a.wd,
                      batch_size=a.bs, accelerate=not a.qknorm, **{a.probe: sub})
    t0 = time.time()
    fits = Estimator(probe_spec(a.probe), cfg).fit(tr, va, list(range(a.seed0, a.seed0 + a.seeds)))
    wall = time.time() - t0
    att = (planted_attention([f.probe for f in fits], va, planted[arrays.index("val")], te,
                             planted[arrays.index("test")]) if a.probe == "fused" else None)
    every = max(1, len(fits[0].val_loss) // 10)
    with open(a.log, "a", encoding="utf-8") as out:
        for k, f in enumerate(fits):
            out.write(json.dumps(dict(
                tag=a.tag, cohort=folder.name, n=arrays.ecg_tokens, n_train=len(tr),
                probe=a.probe, pca=a.pca, seed=a.seed0 + k, epochs=len(f.val_loss), lr=a.lr,
                wd=a.wd,
                bs=a.bs, attn_scale=a.attn_scale, qknorm=a.qknorm, set=a.set,
                acc=f.extra["accelerator"], best_epoch=f.best_epoch,
                val_mae=round(f.val_mae, 4), test_mae=round(f.probe.mae(te), 4),
                best_head=None if att is None else round(att[f"r{k}"]["best_head_val"], 4),
                uniform=None if att is None else round(att["uniform"], 4),
                wall_s=round(wall / len(fits), 1),
                val_curve=[round(v, 3) for v in f.val_loss[::every]],
                train_curve=[round(v, 3) for v in f.train_loss[::every]])) + "\n")


def table(log: Path) -> str:
    """The log as a markdown table, one row per replica, in the order tried."""
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    out = ["| # | tag | cohort | N | train subjects | probe | changed | seed | epochs | "
           "accelerator | best epoch | val MAE | test MAE | best head on t* | uniform | "
           "s/replica |",
           "|---:|---|---|---:|---:|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for i, r in enumerate(rows, 1):
        defaults = (("lr", 0.001), ("wd", 0.0001), ("bs", 64), ("pca", 32),
                    ("attn_scale", 1.0), ("qknorm", 0.0))
        changed = [f"{k}={r[k]}" for k, d in defaults
                   if r.get(k, d) != d] + list(r.get("set") or [])
        head = "—" if r.get("best_head") is None else f"{r['best_head']:.4f}"
        uni = "—" if r.get("uniform") is None else f"{r['uniform']:.4f}"
        out.append(f"| {i} | {r['tag']} | {r.get('cohort', '')} | {r['n']} | "
                   f"{r.get('n_train', 829)} | {r['probe']} | "
                   f"{', '.join(changed) or 'shipped'} | {r['seed']} | {r['epochs']} | "
                   f"{r['acc']} | {r['best_epoch']} | {r['val_mae']:.3f} | {r['test_mae']:.3f} "
                   f"| {head} | {uni} | {r['wall_s']:.0f} |")
    return "\n".join(out)


def main() -> None:
    """Parse the flags: one configuration, or ``--table LOG``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--table", type=Path, help="render this log as markdown and stop")
    ap.add_argument("--out", type=Path, help="with --table: write the stamped result file here")
    ap.add_argument("--notes", type=Path, help="with --out: markdown put above the table")
    ap.add_argument("--cohort", help="folder with manifest.parquet and truth.parquet")
    ap.add_argument("--log", default=str(RESULTS / "ecg_tokens_recipe.jsonl"))
    ap.add_argument("--tag", default="")
    ap.add_argument("--probe", default="fused", choices=("fused", "concat"))
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--seed0", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--wd", type=float, default=1e-4)
    ap.add_argument("--bs", type=int, default=64)
    ap.add_argument("--pca", type=int, default=32, help="train.pca_rank")
    ap.add_argument("--attn-scale", type=float, default=1.0)
    ap.add_argument("--qknorm", type=float, default=0.0, help="prototype, see the docstring")
    ap.add_argument("--set", nargs="*", default=[], help="other train.<probe> keys, k=v")
    a = ap.parse_args()
    if a.table and a.out:
        import sys

        sys.path.insert(0, str(Path(__file__).parent))
        from _measure import write_result

        notes = a.notes.read_text() if a.notes else ""
        write_result(a.out, f"{notes.rstrip()}\n\n{table(a.table)}", Path(__file__).name)
    elif a.table:
        print(table(a.table))
    else:
        run(a)


if __name__ == "__main__":
    main()
