"""The detection table: does the fused probe find a planted ECG event, and at what energy?

For each grid cell (ECG tokens, the leads the event is seen in, its energy, train subjects,
cohort seed) the synthetic cohort is generated in memory at HuBERT-ECG's token layout with
``cohort.ecg_event_energy: split`` (docs/tokens.md), and three things are trained on it with
the shipped ``train`` block of ``params.yaml`` (``--params``; the fused probe trains its
``train.fused.tokens`` recipe at N > 1 tokens), ``train.threads`` 1:

* the fused probe, ``--seeds`` replicas: its **validation-chosen head**'s weight on the planted
  event, read on the test split (:func:`rightsize.probes.evaluation.planted.val_chosen_head`);
  a replica *finds* the event when that weight is at least ``FOUND`` (0.5);
* the concat probe, the same seeds: test MAE, paired with the fused probe's by seed
  (concat − fused, the fused probe's gain; a 95% t-interval over every seed of the cell's
  cohort seeds, :func:`rightsize.probes.evaluation.paired.paired_difference`);
* the told learner (:mod:`rightsize.probes.evaluation.learnable`), ``--learner-seeds``: the
  learnable reference, its weight on the event beside its null ``|event| / N``;
* the same learner *not told* the code subspaces (``told=False``), ``--blind-seeds``: what
  that small model reaches from the data alone, the reference a recipe chosen without the
  generator's subspaces can be held to. ``--blind-only`` adds it to cells already in the log
  (their cohort is generated again, the probes are not retrained).

The energy of a level is ``cohort.ecg_event_gain`` (``g``); the table gives it as the event's
ECG energy (code and content, summed over its tokens) over one token's noise energy:
``g^2 (4^2 + 1^2) / L_ecg``, ``L_ecg`` the ECG latent count (10): 1.7 at ``g = 1``.

Each cell appends its replicas as JSON lines to ``--log`` (a cell already there is skipped,
so a run can be resumed); ``--render`` turns the log into ``token_detection.{md,json,png}``
under ``--out`` with the hardware it ran on. ``--queue`` prints the same grid as
``dvc exp run --queue`` commands instead (each experiment's ``metrics/eval/fused.json``
``attention.echo_to_ecg.found_share``, ``metrics/fused_vs_concat.json`` and
``metrics/eval/fused_ceiling.json`` hold the same three numbers for its cell; run them with
``dvc queue start``).

    python benchmarks/token_detection.py --leads 1 3 12 --gains 0.5 1 2 --cohort-seeds 1 2
    python benchmarks/token_detection.py --render
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results"
TRAIN_SPLIT = (829, 131, 248)          # the default cohort's splits; scaled with --train


def energy_ratio(gain: float, n_views: int = 4) -> float:
    """The event's ECG energy over one token's noise energy at ``cohort.ecg_event_gain``."""
    from rightsize.cohort.planted_tokens import CODE_SCALE_ECG, CONTENT_SCALE
    from rightsize.cohort.synthetic import EMB_NOISE, R_ECG

    return gain**2 * (CODE_SCALE_ECG**2 + CONTENT_SCALE**2) / (R_ECG + n_views) / EMB_NOISE**2


def cell_config(tokens: int, leads: int, gain: float, train: int, seed: int) -> Any:
    """The cohort of one cell: the default cohort at ``train`` train subjects (val and test
    in the default's proportions)."""
    from rightsize.cohort.config import CohortConfig
    from rightsize.params import parse

    k = train / TRAIN_SPLIT[0]
    val, test = round(TRAIN_SPLIT[1] * k), round(TRAIN_SPLIT[2] * k)
    return parse(CohortConfig, {
        "seed": seed, "n_subjects": train + val + test,
        "splits": {"train": train, "val": val, "test": test}, "ecg_tokens": tokens,
        "ecg_event_leads": leads, "ecg_event_energy": "split", "ecg_event_gain": gain},
        "cohort")


def cohort_arrays(cohort: Any) -> tuple[Any, np.ndarray]:
    """The cohort's arrays as the manifest would hold them, and each row's planted mask."""
    from rightsize.cohort.arrays import CohortArrays

    parts = list(cohort.chunks())
    cat = {f: np.concatenate([getattr(p, f) for p in parts])
           for f in ("split", "lvef", "ef_le_40", "echo", "n_clips", "ecg", "has_echo",
                     "has_ecg")}
    arrays = CohortArrays(subject_id=np.asarray(cohort.subject_id.to_pylist(), dtype=object),
                          split=cat["split"].astype(np.int8), lvef=cat["lvef"],
                          ef_le_40=cat["ef_le_40"], echo=cat["echo"], n_clips=cat["n_clips"],
                          ecg=cat["ecg"], has_echo=cat["has_echo"], has_ecg=cat["has_ecg"],
                          metadata={})
    mask = cohort.latents.tokens.mask() & cohort.has_ecg[:, None]
    return arrays, mask


def cell_splits(cohort: Any) -> tuple[Any, Any, Any, np.ndarray, np.ndarray]:
    """The cohort's train, validation and test splits, and the validation and test rows'
    planted masks."""
    from rightsize.probes.engine.data import split_data

    arrays, mask = cohort_arrays(cohort)
    tr, va, te = (split_data(arrays, s) for s in ("train", "val", "test"))
    return tr, va, te, mask[arrays.index("val")], mask[arrays.index("test")]


def learner_rows(cell: dict[str, Any], cohort: Any, pca_rank: int, seeds: int, steps: int,
                 told: bool) -> list[dict[str, Any]]:
    """The told (or not told) learner's replicas of one cell."""
    from rightsize.probes.evaluation.learnable import learn_match, null_weight, probe_view

    view = probe_view(cohort, pca_rank)
    null = null_weight(view)
    rows = []
    for s in range(seeds):
        t0 = time.time()
        r = learn_match(view, s, steps, told=told)
        rows.append({**cell, "kind": "told_learner" if told else "blind_learner", "seed": s,
                     "weight": r["planted_weight"], "step": r["step"],
                     "learner_s": time.time() - t0, "null_weight": null})
    return rows


def run_cell(cell: dict[str, Any], params: dict[str, Any], seeds: int, learner_seeds: int,
             learner_steps: int, blind_seeds: int = 0) -> list[dict[str, Any]]:
    """Every replica of one cell: fused (head, MAE), concat (MAE), the told learner and the
    learner not told."""
    from rightsize.cohort.synthetic import SyntheticCohort
    from rightsize.params import parse
    from rightsize.probes.engine.config import TrainConfig
    from rightsize.probes.engine.estimator import Estimator
    from rightsize.probes.evaluation.planted import val_chosen_head
    from rightsize.probes.registry import spec as probe_spec

    cohort = SyntheticCohort(cell_config(cell["tokens"], cell["leads"], cell["gain"],
                                         cell["train"], cell["cohort_seed"]))
    train = {**params["train"], "seed": 0, "seeds": seeds, "threads": 1, "device": "cpu"}
    cfg = parse(TrainConfig, train, "train")
    tr, va, te, vm, tm = cell_splits(cohort)
    rows: list[dict[str, Any]] = []
    t0 = time.time()
    fused = Estimator(probe_spec("fused"), cfg).fit(tr, va, list(range(seeds)))
    t1 = time.time()
    concat = Estimator(probe_spec("concat"), cfg).fit(tr, va, list(range(seeds)))
    t2 = time.time()
    block = {k: v for k, v in asdict(cfg.block("fused", cell["tokens"])).items()
             if k != "tokens"}                   # the fused block that trained, resolved
    scored = tm[tm.any(axis=1)]                  # test rows with a planted event (an ECG)
    null = float(scored.sum(axis=1).mean()) / cell["tokens"]
    for k, (f, c) in enumerate(zip(fused, concat, strict=True)):
        head = val_chosen_head(f.probe, va, vm, te, tm)
        rows.append({**cell, "kind": "probes", "seed": k, "fused": block,
                     "fused_batch": cfg.batch("fused", cell["tokens"]),
                     "best_head_val": head.test_weight,
                     "best_head_val_on_val": head.val_weight, "fused_mae": f.probe.mae(te),
                     "concat_mae": c.probe.mae(te), "fused_val_mae": f.val_mae,
                     "concat_val_mae": c.val_mae, "fused_best_epoch": f.best_epoch,
                     "fused_s": (t1 - t0) / seeds, "concat_s": (t2 - t1) / seeds,
                     "null_weight": null})
    rows += learner_rows(cell, cohort, cfg.pca_rank, learner_seeds, learner_steps, True)
    rows += learner_rows(cell, cohort, cfg.pca_rank, blind_seeds, learner_steps, False)
    return rows


def add_blind(cell: dict[str, Any], params: dict[str, Any], seeds: int, steps: int
              ) -> list[dict[str, Any]]:
    """The not-told learner's replicas of a cell whose probes are already in the log."""
    from rightsize.cohort.synthetic import SyntheticCohort

    cohort = SyntheticCohort(cell_config(cell["tokens"], cell["leads"], cell["gain"],
                                         cell["train"], cell["cohort_seed"]))
    pca_rank = int(params["train"].get("pca_rank", 32))
    return learner_rows(cell, cohort, pca_rank, seeds, steps, False)


def hardware() -> str:
    """This machine in one line (``_measure.machine_line``), Python, torch, 1 thread."""
    import torch

    from _measure import machine_line

    return (f"{machine_line()}, Python {platform.python_version()}, torch {torch.__version__}, "
            "1 thread")


def grid(a: argparse.Namespace) -> list[dict[str, Any]]:
    """The cells of the flags, in run order (cheap axes outermost last)."""
    return [{"tokens": t, "train": n, "leads": L, "gain": float(g), "cohort_seed": s}
            for t in a.tokens for n in a.train for s in a.cohort_seeds for L in a.leads
            for g in a.gains]


def _key(cell: dict[str, Any]) -> tuple:
    return (cell.get("recipe", "tokens"), cell["tokens"], cell["train"], cell["leads"],
            float(cell["gain"]), cell["cohort_seed"])


def run(a: argparse.Namespace) -> None:
    """Run every cell of the grid not yet in the log, appending as it goes."""
    import yaml

    params = yaml.safe_load(Path(a.params).read_text())
    log = Path(a.log)
    logged = [json.loads(x) for x in log.read_text().splitlines()
              if x.strip()] if log.exists() else []
    done = {_key(r) for r in logged}
    blind = {_key(r)[1:] for r in logged if r["kind"] == "blind_learner"}   # per cohort
    for cell in grid(a):
        cell = {**cell, "recipe": a.recipe}
        t0 = time.time()
        if a.blind_only:
            if _key(cell) not in done or _key(cell)[1:] in blind or not a.blind_seeds:
                continue
            rows = add_blind(cell, params, a.blind_seeds, a.learner_steps)
            blind.add(_key(cell)[1:])
        elif _key(cell) in done:
            continue
        else:
            rows = run_cell(cell, params, a.seeds, a.learner_seeds, a.learner_steps,
                            a.blind_seeds)
        with log.open("a", encoding="utf-8") as out:
            for r in rows:
                out.write(json.dumps(r) + "\n")
        heads = [r["best_head_val"] for r in rows if r["kind"] == "probes"]
        told = [r["weight"] for r in rows if r["kind"] == "told_learner"]
        not_told = [r["weight"] for r in rows if r["kind"] == "blind_learner"]
        print(f"{cell}: heads {np.round(heads, 3).tolist()} told {np.round(told, 3).tolist()} "
              f"not told {np.round(not_told, 3).tolist()} ({time.time() - t0:.0f} s)",
              flush=True)


def queue_commands(a: argparse.Namespace) -> list[str]:
    """The grid as ``dvc exp run --queue`` commands (one experiment per cell), each limited
    to the stages that hold its three numbers (and what they need)."""
    out = []
    for c in grid(a):
        k = c["train"] / TRAIN_SPLIT[0]
        val, test = round(TRAIN_SPLIT[1] * k), round(TRAIN_SPLIT[2] * k)
        out.append(
            f"dvc exp run --queue -S cohort.ecg_tokens={c['tokens']} "
            f"-S cohort.ecg_event_leads={c['leads']} -S cohort.ecg_event_gain={c['gain']:g} "
            f"-S cohort.ecg_event_energy=split -S cohort.seed={c['cohort_seed']} "
            f"-S cohort.n_subjects={c['train'] + val + test} -S cohort.splits.train={c['train']} "
            f"-S cohort.splits.val={val} -S cohort.splits.test={test} "
            f"-S train.seeds={a.seeds} -S planted_ceiling.learner_seeds={a.learner_seeds} "
            f"compare planted_ceiling")
    return out + ["dvc queue start -j 1"]


def main() -> None:
    """Run the grid, render the log, or print the queue commands."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--tokens", type=int, nargs="+", default=[93])
    ap.add_argument("--leads", type=int, nargs="+", default=[1, 3, 12])
    ap.add_argument("--gains", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    ap.add_argument("--train", type=int, nargs="+", default=[829])
    ap.add_argument("--cohort-seeds", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seeds", type=int, default=3, help="fused/concat replicas per cell")
    ap.add_argument("--learner-seeds", type=int, default=2)
    ap.add_argument("--blind-seeds", type=int, default=2,
                    help="seeds of the learner not told the code subspaces")
    ap.add_argument("--blind-only", action="store_true",
                    help="add the not-told learner to the logged cells of the grid only")
    ap.add_argument("--learner-steps", type=int, default=600)
    ap.add_argument("--recipe", default="tokens",
                    help="the fused recipe's name in the table: tokens (the shipped "
                         "train.fused.tokens), pooled (a --params without it: the pooled "
                         "cohort's block) or a name of your own; rows keep the block")
    ap.add_argument("--log", default=str(RESULTS / "token_detection.jsonl"))
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--render", action="store_true", help="write the table from the log")
    ap.add_argument("--queue", action="store_true", help="print the dvc exp queue commands")
    ap.add_argument("--command", default="", help="with --render: the command(s) that ran")
    a = ap.parse_args()
    if a.queue:
        print("\n".join(queue_commands(a)))
    elif a.render:
        from token_detection_table import render

        render(Path(a.log), a.out, a.command, hardware())
    else:
        import torch

        torch.set_num_threads(1)
        run(a)


if __name__ == "__main__":
    main()
