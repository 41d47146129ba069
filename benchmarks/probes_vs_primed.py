"""Our four probes against the PRIMED-AI reference's own training script, on one cohort.

The reference side runs the authors' ``scripts/train_probes.py`` (PRIMED-AI, which calls
``primed_ai.probes``: ``run_ecg_only``, ``run_echo_only``, ``run_concat_mlp``,
``run_cross_attn``) from a checkout the user points at (``--primed-src``: the folder holding
``scripts/`` and ``src/primed_ai``; never copied here), through a small driver that sets
``torch.set_num_threads(1)``, puts ``src`` on the path and calls their ``main()`` with
``--probe P``. Our side is the probe's ``dvc.yaml`` train stage command, exactly as
``dvc repro`` runs it (``rightsize train P ... --eval-json ... --missing-json ...``: train
every seed replica, save, evaluate with the bootstrap, missing-modality test). Every run is
a whole fresh process with 1 thread (OMP/MKL/OpenBLAS variables on both sides; our
``train.threads`` is 1); round 0 is a warm-up, then ``--rounds`` timed rounds; probes and
sides are interleaved (the side that goes first alternates by round); the table gives
medians and each side's test MAE beside its time.

**Data.** One synthetic cohort built by ``rightsize cohort`` with this tree's params
(1,208 subjects, 829/131/248, echo 1024-d x up to 8 clips, ECG 768-d pooled), except that no
modality is missing (``missing_echo_frac`` and ``missing_ecg_frac`` 0): the reference's
manifest reader drops every subject without both embeddings, for every probe, so with
missing modalities the two sides would train on different subjects. The same subjects,
splits, labels and float32 embeddings are then written in the reference's manifest layout
(what their ``build_echo_hubert_manifest.py`` writes and ``primed_ai.probes.manifest.load``
reads): ``subject_id``, ``split``, ``lvef``, ``ef_le_40``, ``n_echo_clips``,
``echo_embedding`` as a list of the subject's present clip vectors (``n_clips x 1024``; our
manifest stores ``max_clips x 1024`` with zero padding and ``n_clips``) and
``ecg_embedding`` as one 768-d list (``--max-clips 1``: the echo as one 1024-d vector, as
their default pooled build writes it, which their probes tile to 8 tokens). Differences
from their real manifest: no ``echo_study_id``/``ecg_study_id``/demographics/model-name
columns (``train_probes.py`` reads none of them), float32 instead of float64 ECG lists.

**Work each side does (the default is each side's default recipe, as the issue compared):**

- reference: one model per probe; ``--epochs`` 50 for echo, concat and fused alike (their
  script's default), batch 64, Adam lr 1e-3, best-validation-MAE state kept; echo also
  trains its linear ablation beside the attentive probe every epoch; ECG tiled to 4
  tokens; fused projects echo 1024 and ECG 768 to ``--fusion-dim`` (256) and evaluates
  val/test under full, echo-dropped and ECG-dropped inputs; ECG-only: StandardScaler, RidgeCV
  (25 alphas), LogisticRegressionCV (12 Cs, 5 folds) and a 2,000-resample bootstrap.
- ours: ``params.yaml`` as shipped: ``train.seeds`` replicas (5) per probe, epochs echo 30,
  concat 40, fused 50, batch 64, AdamW, inputs projected on 32 principal directions, the
  validation-chosen epoch; evaluation with a 2,000-resample bootstrap and the
  missing-modality test (1,000) for every probe.

``--same-epochs`` gives the reference our per-probe epochs (30/40/50) instead of its 50;
``--seeds N`` sets our ``train.seeds``. Their test MAE: ECG ``ridge_mae``, echo the attentive
probe's, fused the full-input one; ours: replica 0's (``metrics/eval/P.json`` ``test.mae``).

Usage (the reference's imports need torch, numpy, pandas, scikit-learn, pyarrow and joblib,
all in this environment; anything else goes in ``--deps``, appended to their path)::

    python benchmarks/probes_vs_primed.py --primed-src ../PRIMED-AI --rounds 3 --fused-1024
    python benchmarks/probes_vs_primed.py --primed-src DIR --primed-commit 3973bff ...  # not git
    python benchmarks/probes_vs_primed.py --primed-src ../PRIMED-AI --smoke    # ~1 min

Writes ``benchmarks/results/probes_vs_primed.md`` and ``.json`` (``--smoke``: a temp folder).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import machine_info, run_process, stamp, write_result  # noqa: E402
from probes_e2e_bench import _env, _project, probe_commands, run_ours  # noqa: E402
from rightsize.probe_names import PROBES  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
SIDES = ("reference", "rightsize")
Case = tuple[str, int]          # (probe, fusion_dim)

DRIVER = """
import importlib.util, sys
import torch
torch.set_num_threads(1)
src, deps, script = sys.argv[1:4]
sys.path.insert(0, src)
if deps:
    sys.path.append(deps)
sys.argv = [script, *sys.argv[4:]]
spec = importlib.util.spec_from_file_location("train_probes", script)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.main()
"""


def _params(args: argparse.Namespace, fusion_dim: int | None = None) -> dict[str, Any]:
    """This tree's params with no missing modality (and, for a case, its fused width)."""
    import yaml

    p = yaml.safe_load((REPO / "params.yaml").read_text())
    p["cohort"].update(missing_echo_frac=0.0, missing_ecg_frac=0.0)
    if args.smoke:
        p["cohort"].update(n_subjects=150, splits={"train": 100, "val": 25, "test": 25})
    if args.max_clips is not None:
        p["cohort"]["max_clips"] = args.max_clips
    if args.seeds is not None:
        p["train"]["seeds"] = args.seeds
    for probe in PROBES:
        block = p["train"][probe]
        if args.smoke and "epochs" in block:
            block["epochs"] = 2
    if fusion_dim is not None:
        p["train"]["fused"] = dict(p["train"]["fused"], fusion_dim=fusion_dim)
    return p


def build_cohort(folder: Path, args: argparse.Namespace) -> Path:
    """``rightsize cohort`` with :func:`_params` in ``folder``; the manifest's path."""
    import yaml

    folder.mkdir(parents=True)
    (folder / "params.yaml").write_text(yaml.safe_dump(_params(args), sort_keys=False))
    rightsize = str(Path(sys.executable).parent / "rightsize")
    m = run_process([rightsize, "cohort", "--params", "params.yaml", "--out",
                     "data/manifest.parquet", "--truth", "data/cohort.truth.parquet",
                     "--metrics", "metrics/cohort.json"], cwd=folder,
                    env=_env(1, REPO / "src"), timeout_s=args.timeout)
    if m.rc != 0:
        raise RuntimeError(f"rightsize cohort failed (exit {m.rc}): {m.stderr[-2000:]}")
    return folder / "data" / "manifest.parquet"


def to_reference_layout(ours: Path, theirs: Path) -> dict[str, int]:
    """Write our manifest's subjects in the reference's joined-manifest layout."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(ours)
    geometry = json.loads(table.schema.metadata[b"rightsize.cohort"])["geometry"]
    if geometry.get("ecg_tokens", 1) != 1:
        raise ValueError("the reference's layout here takes pooled ECG (cohort.ecg_tokens 1)")
    n, clips, echo_dim = table.num_rows, geometry["max_clips"], geometry["echo_dim"]
    if not (table["has_echo"].to_numpy().all() and table["has_ecg"].to_numpy().all()):
        raise ValueError("a subject lacks a modality: the two sides would see other subjects")
    echo = np.asarray(table["echo"].combine_chunks().flatten(), np.float32).reshape(
        n, clips, echo_dim)
    n_clips = table["n_clips"].to_numpy().astype(np.int64)
    present = np.concatenate([echo[i, :k] for i, k in enumerate(n_clips)])
    clip_offsets = np.arange(len(present) + 1, dtype=np.int32) * echo_dim
    echo_list = pa.ListArray.from_arrays(clip_offsets, pa.array(present.reshape(-1)))
    if clips > 1:          # pooled (max_clips 1): one vector, as their default build writes
        study_offsets = np.concatenate([[0], np.cumsum(n_clips)]).astype(np.int32)
        echo_list = pa.ListArray.from_arrays(study_offsets, echo_list)
    ecg = table["ecg"].combine_chunks()
    ecg_list = pa.ListArray.from_arrays(
        np.arange(n + 1, dtype=np.int32) * geometry["ecg_dim"], ecg.flatten())
    out = pa.table({"subject_id": table["subject_id"], "split": table["split"],
                    "lvef": table["lvef"], "ef_le_40": table["ef_le_40"],
                    "n_echo_clips": pa.array(n_clips),
                    "echo_embedding": echo_list,
                    "ecg_embedding": ecg_list})
    pq.write_table(out, theirs)
    return {"subjects": n, "clips": int(n_clips.sum()), "echo_dim": echo_dim,
            "ecg_dim": geometry["ecg_dim"]}


def run_reference(args: argparse.Namespace, manifest: Path, case: Case, epochs: int | None,
                  work: Path, tag: str) -> dict[str, Any]:
    """Their ``train_probes.py --probe P`` as one whole process; wall, RSS, test MAE."""
    probe, fd = case
    out = work / f"reference-{probe}-{fd}-{tag}"
    argv = [sys.executable, "-c", DRIVER, str(Path(args.primed_src) / "src"), args.deps or "",
            str(Path(args.primed_src) / "scripts" / "train_probes.py"), "--manifest",
            str(manifest), "--probe", probe, "--out-dir", str(out), "--fusion-dim", str(fd)]
    if epochs is not None:
        argv += ["--epochs", str(epochs)]
    m = run_process(argv, cwd=work, env=_env(1, None), timeout_s=args.timeout)
    if m.rc != 0:
        raise RuntimeError(f"reference {probe} failed (exit {m.rc}): {m.stderr[-3000:]}")
    res = json.loads((out / "summary.json").read_text())[probe]
    return {"wall_s": m.wall_s, "rss_mb": m.max_rss_mb, "test_mae": reference_mae(res)}


def _checkout_commit(root: Path) -> str:
    """``git rev-parse HEAD`` in ``root``, or a note that it is not a git checkout."""
    import subprocess

    done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else "an unknown commit (not git)"


def reference_mae(res: dict[str, Any]) -> float:
    """The test MAE in one of their probes' results (each nests it its own way)."""
    if "splits" in res:
        return res["splits"]["test"]["ridge_mae"]
    test = res["test"]
    for key in ("attentive", "full"):
        if key in test:
            return test[key]["mae"]
    return test["mae"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--primed-src", required=True,
                    help="a PRIMED-AI checkout (holds scripts/train_probes.py, src/primed_ai)")
    ap.add_argument("--primed-commit", default=None, help="the checkout's commit, said in the "
                    "result (default: git rev-parse HEAD there, if it is a git checkout)")
    ap.add_argument("--deps", default=None, help="folder of extra packages their code imports "
                    "(appended to their path: this environment's torch and numpy win)")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds after one warm-up")
    ap.add_argument("--probes", nargs="+", default=list(PROBES), choices=list(PROBES))
    ap.add_argument("--fused-1024", action="store_true", help="also fused at fusion_dim 1024")
    ap.add_argument("--same-epochs", action="store_true",
                    help="give the reference our per-probe epochs instead of its 50")
    ap.add_argument("--seeds", type=int, default=None, help="our train.seeds (default: params)")
    ap.add_argument("--max-clips", type=int, default=None,
                    help="cohort.max_clips (default: params, 8; 1 = pooled echo)")
    ap.add_argument("--smoke", action="store_true",
                    help="150 subjects, 2 epochs, no warm-up, 1 round; writes to a temp folder")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--out-md", default=None,
                    help="default: benchmarks/results/probes_vs_primed.md (--smoke: temp)")
    args = ap.parse_args()
    args.primed_src = str(Path(args.primed_src).resolve())
    args.deps = str(Path(args.deps).resolve()) if args.deps else None
    if not (Path(args.primed_src) / "scripts" / "train_probes.py").is_file():
        raise SystemExit(f"{args.primed_src}: no scripts/train_probes.py")
    if args.smoke:
        args.rounds = 1
    out_md = Path(args.out_md or (Path(tempfile.gettempdir()) / "probes_vs_primed_smoke.md"
                                  if args.smoke else HERE / "results" / "probes_vs_primed.md"))
    info = machine_info()
    info["reference"] = "PRIMED-AI scripts/train_probes.py at " + (
        args.primed_commit or _checkout_commit(Path(args.primed_src)))
    info["load average at start"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    cases: list[Case] = [(p, 256) for p in args.probes]
    if args.fused_1024:
        cases.append(("fused", 1024))
    t_all = time.perf_counter()
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="probes-vs-primed-") as tmp_s:
        tmp = Path(tmp_s)
        manifest = build_cohort(tmp / "cohort", args)
        theirs = tmp / "reference_manifest.parquet"
        data = to_reference_layout(manifest, theirs)
        setup = {}
        for fd in sorted({fd for _, fd in cases}):
            prm = _params(args, fd)
            setup[fd] = (probe_commands(REPO / "dvc.yaml", prm),
                         _project(tmp / f"ours-{fd}", manifest, prm), prm)
        env = _env(1, REPO / "src")
        warm = 0 if args.smoke else 1
        for r in range(warm + args.rounds):
            for probe, fd in cases:
                cmds, proj, prm = setup[fd]
                epochs = prm["train"][probe].get("epochs") if (
                    args.same_epochs or args.smoke) else None
                for side in SIDES if r % 2 == 0 else SIDES[::-1]:
                    if side == "reference":
                        res = run_reference(args, theirs, (probe, fd), epochs, tmp, str(r))
                    else:
                        res = run_ours(cmds, probe, proj, env, args.timeout)
                        res = {k: res[k] for k in ("wall_s", "rss_mb", "test_mae")}
                    res["warm_up"] = r < warm
                    runs.setdefault(f"{side}:{probe}:{fd}", []).append(res)
                print(f"round {r}{' (warm-up)' if r < warm else ''} {probe} d{fd}: " + "; ".join(
                    f"{s} {runs[f'{s}:{probe}:{fd}'][-1]['wall_s']:.2f} s" for s in SIDES),
                    file=sys.stderr, flush=True)
        seeds = setup[cases[0][1]][2]["train"]["seeds"]
    info["load average at end"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    text = render(args, info, cases, runs, data, seeds, time.perf_counter() - t_all)
    target = write_result(out_md, text, Path(__file__).name, info)
    target.with_suffix(".json").write_text(json.dumps(
        {"stamp": stamp(Path(__file__).name, info), "machine": info, "data": data,
         "args": {k: v for k, v in vars(args).items() if k not in ("primed_src", "deps")},
         "our_seeds": seeds, "runs": runs}, indent=2) + "\n")
    print(text)
    print(f"wrote {target}", file=sys.stderr)
    return 0


def render(args: argparse.Namespace, info: dict[str, Any], cases: list[Case],
           runs: dict[str, list[dict[str, Any]]], data: dict[str, int], seeds: int,
           seconds: float) -> str:
    """The markdown result: one row per case, the four-probe sum, every run's seconds."""
    def timed(side: str, case: Case) -> list[dict[str, Any]]:
        return [x for x in runs[f"{side}:{case[0]}:{case[1]}"] if not x["warm_up"]]

    med = {(s, c): statistics.median(x["wall_s"] for x in timed(s, c)) for s in SIDES
           for c in cases}
    recipe = ("2 epochs on both sides (--smoke)" if args.smoke
              else "the reference given our per-probe epochs (--same-epochs)" if args.same_epochs
              else "each side's default recipe (reference: 50 epochs for every torch probe)")
    flags = " ".join(f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}")
                     for k, v in vars(args).items()
                     if v not in (None, False) and k in ("rounds", "fused_1024", "same_epochs",
                                                         "seeds", "max_clips", "smoke"))
    lines = [
        "# Our probes against the PRIMED-AI reference's `scripts/train_probes.py` (1 thread)", "",
        f"`python benchmarks/probes_vs_primed.py --primed-src DIR {flags}"
        f"{' --probes ' + ' '.join(args.probes) if args.probes != list(PROBES) else ''}`, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, {seconds / 60:.1f} min. Whole processes, "
        f"{'no warm-up' if args.smoke else '1 warm-up'} + {args.rounds} timed round(s), sides "
        f"and probes interleaved; {recipe}; ours trains {seeds} seed replica(s) per probe and "
        "evaluates each (bootstrap + missing-modality test). Same cohort on both sides: "
        f"{data['subjects']:,} subjects, {data['clips']:,} echo clips ({data['echo_dim']}-d), "
        f"pooled ECG ({data['ecg_dim']}-d), no missing modality (script docstring: layout "
        "and work differences).", ""]
    lines += [f"- {k}: {v}" for k, v in info.items()]
    lines += ["", "| probe | reference s (median) | rightsize s (median) | reference / rightsize "
              "| reference test MAE | rightsize test MAE | reference peak RSS MiB "
              "| rightsize peak RSS MiB |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cases:
        ref, ours = timed("reference", c), timed("rightsize", c)
        name = c[0] if c[1] == 256 else f"{c[0]}-{c[1]}"
        lines.append(f"| {name} | {med[('reference', c)]:.2f} | {med[('rightsize', c)]:.2f} | "
                     f"{med[('reference', c)] / med[('rightsize', c)]:.2f}x | "
                     f"{ref[0]['test_mae']:.3f} | {ours[0]['test_mae']:.3f} | "
                     f"{max(x['rss_mb'] for x in ref):.0f} | "
                     f"{max(x['rss_mb'] for x in ours):.0f} |")
    four = [c for c in cases if c[1] == 256]
    if len(four) == len(PROBES):
        a, b = (sum(med[(s, c)] for c in four) for s in SIDES)
        lines.append(f"| **four** | **{a:.2f}** | **{b:.2f}** | **{a / b:.2f}x** | | | | |")
    lines += ["", "Every run's seconds (round order, warm-up first):", ""]
    for c in cases:
        lines.append(f"- {c[0]} d{c[1]}: " + "; ".join(
            f"{s} " + ", ".join(f"{x['wall_s']:.2f}" + ("w" if x["warm_up"] else "")
                                for x in runs[f"{s}:{c[0]}:{c[1]}"]) for s in SIDES))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
