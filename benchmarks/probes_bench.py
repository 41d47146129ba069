"""Probe engine vs a naive tutorial-style baseline: wall time, test MAE and FLOP efficiency.

For every case (each probe at ``max_clips`` 1 and 8 with fusion_dim 256, and the fused
probe at fusion_dim 1024) two contenders run, each in its own fresh child process with
torch, BLAS and OpenMP at ``--threads`` (1) thread(s):

* **ours**: :func:`rightsize.probes.engine.train.train_probe` (one replica through the loop and
  accelerators ``rightsize train`` runs for every replica, with its :class:`RunLog` writing
  the event file and curve, as ``rightsize train`` does) then
  :func:`rightsize.probes.evaluation.evaluate.evaluate_probe` (vectorized 2,000-resample bootstrap);
* **baseline**: ``naive_probes.py``: the same architectures and initial parameters,
  computed by the probe's textbook forward (no accelerator), trained
  tutorial-style: per-row Dataset + ``DataLoader(batch_size=32, shuffle=True)``,
  ``torch.optim.AdamW``, per-batch ``.item()``, and a Python loop of 2,000 scikit-learn
  ``mean_absolute_error``/``roc_auc_score`` calls.

Timed: train + evaluate inside the child, after imports and the manifest load (reported
separately, with the whole process wall time). "all four" is the sum of the four per-probe
cases. FLOPs (``probe_flops.py``): each side's executed FLOPs counted by torch's
FlopCounterMode at the batch sizes it runs, and the model FLOPs ``6 * params * n_train *
epochs``; both are divided by ours' fit seconds and set next to the fp32 GFLOP/s torch
reaches on the probe's dominant matmul shape alone, measured in the same run (best of the
start and the end of the run).

Usage::

    python benchmarks/probes_bench.py            # ~13-15 min on 2 cores -> results/probes.md
    python benchmarks/probes_bench.py --clips 1 --probes echo fused --out-md /tmp/p.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import child_json, machine_info, run_process  # noqa: E402
from rightsize.probe_names import PROBES

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


# ----------------------------------------------------------------------------- children
def child_ours(manifest: str, probe: str, fusion_dim: int, threads: int,
               params: str) -> dict[str, Any]:
    """Train + evaluate ``probe`` with the engine; timings and metrics as a dict."""
    t_start = time.perf_counter()
    import dataclasses

    import_heavy()
    from rightsize.cohort.load_manifest import load_arrays
    from rightsize.params import load_block
    from rightsize.probes.engine.config import EvaluateConfig, TrainConfig
    from rightsize.probes.engine.data import Moments, split_data
    from rightsize.probes.engine.runlog import RunLog
    from rightsize.probes.engine.train import train_probe
    from rightsize.probes.evaluation.evaluate import evaluate_probe
    from rightsize.probes.registry import spec as probe_spec

    cfg = load_block(params, "train", TrainConfig)
    cfg = dataclasses.replace(cfg, threads=threads,
                              fused=dataclasses.replace(cfg.fused, fusion_dim=fusion_dim))
    # train_probe: one replica (seed train.seed) through the loop and accelerators the
    # pipeline's train.seeds replicas take; the baseline trains one seed too
    ecfg = load_block(params, "evaluate", EvaluateConfig)
    arrays = load_arrays(manifest)
    load_s = time.perf_counter() - t_start
    with tempfile.TemporaryDirectory(prefix="probes-bench-log-") as logdir:
        t0, c0 = time.perf_counter(), time.process_time()
        with RunLog(Path(logdir) / "events", Path(logdir) / "curve.csv", time.time()) as runlog:
            fit = train_probe(probe_spec(probe), arrays, cfg, "cpu", runlog)
        fit_s, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    metrics = evaluate_probe(fit.probe, {"best_epoch": fit.best_epoch, "epochs": fit.epochs},
                             arrays, ecfg)
    eval_s, eval_cpu = time.perf_counter() - t0, time.process_time() - c0
    test = metrics["test"]
    test_rows = split_data(arrays, "test")            # untimed: for the paired MAE comparison
    pred = fit.probe.predict(test_rows)[0]
    t0 = time.perf_counter()              # untimed, warm: the fit's input moments and PCA alone
    if probe != "ecg":
        Moments.fit(split_data(arrays, "train"), cfg.pca_rank, ecg=probe != "echo")
    prep_s = time.perf_counter() - t0
    return {"contender": "ours", "probe": probe, "fusion_dim": fusion_dim, "load_s": load_s,
            "fit_s": fit_s, "fit_cpu_s": fit_cpu, "prep_s": prep_s, "eval_s": eval_s,
            "eval_cpu_s": eval_cpu,
            "boot_s": metrics["bootstrap_s"], "epochs": fit.epochs, "best_epoch": fit.best_epoch,
            "steps": fit.steps, "arch": fit.arch, "n_train": int(arrays.index("train").size),
            "n_val": int(arrays.index("val").size), "n_test": int(test["n"]),
            "test_mae": test["mae"], "test_mae_lo": test["mae_lo"],
            "test_mae_hi": test["mae_hi"], "test_auroc": test["auroc"],
            "test_pred": pred.tolist(), "test_lvef": test_rows.lvef.tolist(),
            "load_avg_1min": os.getloadavg()[0]}


def import_heavy() -> None:
    """Import what either contender's timed region would otherwise import on first use.

    Both children call this before their timers start, so neither pays torch's,
    scikit-learn's or the probe modules' import inside the measurement.
    """
    import sklearn.linear_model  # noqa: F401
    import sklearn.metrics  # noqa: F401
    import sklearn.pipeline  # noqa: F401
    import sklearn.preprocessing  # noqa: F401
    import threadpoolctl  # noqa: F401
    import torch
    import torch.nn.functional  # noqa: F401
    import torch.utils.data  # noqa: F401

    import rightsize.probes.accel.adamw  # noqa: F401
    import rightsize.probes.models.concat  # noqa: F401
    import rightsize.probes.models.concat.stacked  # noqa: F401
    import rightsize.probes.models.ecg  # noqa: F401
    import rightsize.probes.models.echo  # noqa: F401
    import rightsize.probes.models.echo.numpy_model  # noqa: F401
    import rightsize.probes.models.fused  # noqa: F401
    import rightsize.probes.models.fused.step  # noqa: F401

    # Constructing the first torch.optim optimizer imports torch._dynamo (~1 s, hundreds of
    # modules); the baseline's AdamW would otherwise pay that import inside its timer.
    torch.optim.AdamW([torch.zeros(1, requires_grad=True)])
    torch.manual_seed(0)


def child_matmul(spec: str) -> dict[str, Any]:
    """FLOPs per case (ours, baseline, model) and fp32 matmul GFLOP/s (see probe_flops)."""
    import dataclasses

    import numpy as np

    from probe_flops import fit_flops, matmul_gflops, mix_gflops
    from rightsize.params import load_block
    from rightsize.probes.engine.config import TrainConfig
    from rightsize.probes.engine.data import SplitData
    from rightsize.probes.engine.estimator import Estimator
    from rightsize.probes.registry import spec as probe_spec

    req = json.loads(spec)
    cases, shapes = {}, {tuple(s) for s in req.get("shapes", [])}
    if req.get("cases"):
        cfg = load_block(req["params"], "train", TrainConfig)
        geometry = SplitData(np.zeros((1, 1, req["echo_dim"])), np.ones((1, 1), bool),
                             np.zeros((1, req["ecg_dim"])), np.ones(1, bool), np.zeros(1),
                             np.zeros(1, bool))
        for clips, probe, fd in req["cases"]:
            c = dataclasses.replace(cfg, fused=dataclasses.replace(cfg.fused, fusion_dim=fd))
            arch = Estimator(probe_spec(probe), c).arch(geometry)
            ff = fit_flops(arch, clips, req["n_train"], req["n_val"], cfg.batch_size)
            step_total = sum(r[3] for r in ff["shapes"])
            cases[f"{clips}/{probe}/{fd}"] = {
                "ours": ff["ours"], "baseline": ff["baseline"], "params": ff["params"],
                "dominant": ff["shapes"][0][:3], "dominant_share": ff["shapes"][0][3] / step_total,
                "mix": mix_gflops(ff["shapes"], req["threads"])}
            shapes.add(tuple(ff["shapes"][0][:3]))
    timed = {}
    for s in sorted(shapes):     # per thread count: each kernel, and the faster one as "t"
        rates = {f"{kn}{t}": matmul_gflops(*s, t, kernel=kn)
                 for t in (1, 2) for kn in ("mm", "onednn")}
        timed["x".join(map(str, s))] = {
            **rates, **{str(t): max(rates[f"mm{t}"], rates[f"onednn{t}"]) for t in (1, 2)}}
    return {"cases": cases, "shapes": timed}


def child_bootstrap(n: int, b: int, reps: int) -> dict[str, Any]:
    """Best-of-``reps`` seconds of the engine's bootstrap (MAE + AUROC, ``b`` resamples)."""
    import numpy as np

    from rightsize.probes.evaluation.bootstrap import bootstrap_indices, summarize

    rng = np.random.default_rng(0)
    y = rng.random(n) < 0.15
    truth = 52 + 12 * rng.standard_normal(n)
    pred = truth + 6 * rng.standard_normal(n)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        summarize(truth, pred, y, -pred, bootstrap_indices(n, b, 0), 0.95)
        best = min(best, time.perf_counter() - t0)
    return {"best_s": best}


def child_manifest(out: str, clips: int, subjects: int, echo_dim: int, ecg_dim: int) -> dict:
    """Build the synthetic manifest (params.yaml's cohort block, geometry overridden)."""
    from rightsize.cohort.build import build_manifest
    from rightsize.cohort.config import CohortConfig
    from rightsize.params import load_params, parse

    block = dict(load_params(REPO / "params.yaml")["cohort"])
    train, val = split_sizes(subjects)
    block.update(source="synthetic", n_subjects=subjects, max_clips=clips, echo_dim=echo_dim,
                 ecg_dim=ecg_dim, splits={"train": train, "val": val,
                                          "test": subjects - train - val})
    rep = build_manifest(parse(CohortConfig, block, "cohort"), out)
    return {"rows": rep.summary.n_rows, "bytes": rep.manifest_bytes}


def split_sizes(subjects: int) -> tuple[int, int]:
    """Train and validation rows of the synthetic cohort (the default's 829/131/248 shares)."""
    return round(subjects * 829 / 1208), round(subjects * 131 / 1208)


# ----------------------------------------------------------------------------- driver
def _env(threads: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update({v: str(threads) for v in THREAD_VARS})
    src = str(REPO / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "") if env.get(
        "PYTHONPATH") else src
    return env


def _run_child(argv: list[str], env: dict[str, str], what: str,
               timeout_s: float) -> dict[str, Any]:
    m = run_process([sys.executable, *argv], cwd=REPO, env=env, timeout_s=timeout_s)
    out = child_json(m, what)
    out["process_s"], out["rss_mb"] = m.wall_s, m.max_rss_mb
    return out


def _engine_digest() -> str:
    """Short sha256 of the probe engine's sources (src/rightsize/probes/*.py)."""
    import hashlib

    h = hashlib.sha256()
    for path in sorted((REPO / "src" / "rightsize" / "probes").glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


def _cases(args: argparse.Namespace) -> list[tuple[int, str, int]]:
    cases = [(c, p, 256) for c in args.clips for p in args.probes]
    cases += [(c, "fused", 1024) for c in args.fused_1024_clips]
    return cases


def main() -> int:
    """Run the benchmark; write the results markdown (results/probes.md)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--probes", nargs="+", default=list(PROBES),
                    choices=PROBES)
    ap.add_argument("--fused-1024-clips", type=int, nargs="*", default=[1],
                    help="max_clips values at which to run fused with fusion_dim 1024")
    ap.add_argument("--subjects", type=int, default=1208)
    ap.add_argument("--echo-dim", type=int, default=1024)
    ap.add_argument("--ecg-dim", type=int, default=768)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-baseline", action="store_true", help="time the engine only")
    ap.add_argument("--no-profile", action="store_true",
                    help="skip the torch-profiler breakdown of the fused fits")
    ap.add_argument("--runs", type=int, default=3,
                    help="fresh children per contender and case, interleaved; the fastest "
                         "(train + evaluate) is reported, every run's seconds listed")
    ap.add_argument("--repeat", type=int, default=20, help="engine bootstrap: best of")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per child")
    ap.add_argument("--out-md", default=str(HERE / "results" / "probes.md"))
    args = ap.parse_args()

    from _measure import write_result
    from probes_report import render
    from rightsize.params import load_block
    from rightsize.probes.engine.config import TrainConfig

    cfg = load_block(REPO / "params.yaml", "train", TrainConfig)
    env, me = _env(args.threads), str(Path(__file__).resolve())
    cases = _cases(args)
    info = machine_info()
    digest = _engine_digest()
    t_all = time.perf_counter()
    n_train, n_val = split_sizes(args.subjects)
    mm_spec = json.dumps({"cases": [k for k in cases if k[1] != "ecg"], "threads": args.threads,
                          "echo_dim": args.echo_dim, "ecg_dim": args.ecg_dim,
                          "n_train": n_train, "n_val": n_val,
                          "params": str(REPO / "params.yaml")})
    mm0 = _run_child([me, "--child", "matmul", mm_spec], env, "matmul", args.timeout)
    results: dict[tuple[int, str, int], dict[str, Any]] = {}
    profiles: dict[tuple[int, str, int], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="probes-bench-") as tmp:
        for clips in sorted({c for c, _, _ in cases}):
            manifest = str(Path(tmp) / f"manifest_c{clips}.parquet")
            _run_child([me, "--child", "manifest", manifest, str(clips), str(args.subjects),
                        str(args.echo_dim), str(args.ecg_dim)], env, "manifest", args.timeout)
            for c, probe, fd in cases:
                if c != clips:
                    continue
                common = [manifest, probe, "--fusion-dim", str(fd), "--threads",
                          str(args.threads)]
                argvs = {"ours": [me, "--child", "ours", *common]}
                if not args.no_baseline:
                    argvs["baseline"] = [str(HERE / "naive_probes.py"), *common]
                runs: dict[str, list[dict[str, Any]]] = {who: [] for who in argvs}
                for _ in range(args.runs):           # interleaved: ours, baseline, ours, ...
                    for who, argv in argvs.items():
                        runs[who].append(_run_child(argv, env, f"{who} {probe} c{c} d{fd}",
                                                    args.timeout))
                row = {who: best_run(rs) for who, rs in runs.items()}
                results[(c, probe, fd)] = row
                _progress(c, probe, fd, row)
            for c, probe, fd in cases:
                if c != clips or probe != "fused" or args.no_profile:
                    continue
                profiles[(c, probe, fd)] = _run_child(
                    [me, "--child", "profile", manifest, probe, str(fd), str(args.threads)],
                    env, f"profile {probe} c{c} d{fd}", args.timeout)
    n_test = next(iter(results.values()))["ours"]["n_test"]
    boot = _run_child([me, "--child", "bootstrap", str(n_test), "2000", str(args.repeat)],
                      env, "bootstrap", args.timeout)
    shapes = [c["dominant"] for c in mm0["cases"].values()]
    mm1 = _run_child([me, "--child", "matmul", json.dumps({"shapes": shapes})], env,
                     "matmul", args.timeout)
    info["load average at end"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    end_digest = _engine_digest()
    info["engine sources (sha256 of src/rightsize/probes/*.py)"] = digest + (
        "" if end_digest == digest else f" -> {end_digest}: CHANGED DURING THE RUN")
    flops = _fit_flops(results, mm0, (n_train, n_val), info)
    md = render(args, cfg, info, results, flops, (mm0, mm1), boot, profiles,
                time.perf_counter() - t_all)
    write_result(args.out_md, md, "probes_bench.py", info)
    print(md)
    return 0


def best_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the least train + evaluate seconds, with every run's seconds attached.

    Each contender gets the same number of fresh children, so the minimum (as ``timeit``
    reports it) filters the same transient load from both sides.
    """
    best = dict(min(runs, key=lambda r: r["fit_s"] + r["eval_s"]))
    best["runs_s"] = [r["fit_s"] + r["eval_s"] for r in runs]
    return best


def _fit_flops(results: dict, mm0: dict, sizes: tuple[int, int],
               info: dict[str, str]) -> dict:
    """Per torch case: the FLOP counts plus each side's executed and the model fit FLOPs."""
    from probe_flops import fit_total, model_flops

    flops = {}
    for key, r in results.items():
        if key[1] == "ecg":
            continue
        case, o = mm0["cases"][f"{key[0]}/{key[1]}/{key[2]}"], r["ours"]
        if (o["n_train"], o["n_val"]) != sizes:
            info["FLOP counts"] = (f"made for train/val {sizes[0]}/{sizes[1]} rows but the "
                                   f"runs had {o['n_train']}/{o['n_val']}: approximate")
        b = r.get("baseline")
        flops[key] = {**case, "shape": tuple(case["dominant"]),
                      "fit": fit_total(case["ours"], o["n_train"], o["n_val"], o["epochs"]),
                      "fit_base": fit_total(case["baseline"], o["n_train"], o["n_val"],
                                            b["epochs"] if b else o["epochs"]),
                      "fit_model": model_flops(case["params"], o["n_train"], o["epochs"])}
    return flops


def _progress(c: int, probe: str, fd: int, row: dict[str, Any]) -> None:
    parts = [f"{k} {v['fit_s'] + v['eval_s']:.1f} s MAE {v['test_mae']:.2f}"
             for k, v in row.items()]
    print(f"c{c} {probe} d{fd}: " + "; ".join(parts), file=sys.stderr, flush=True)


def _child_main(argv: list[str]) -> int:
    kind, rest = argv[0], argv[1:]
    if kind == "ours":
        ap = argparse.ArgumentParser()
        ap.add_argument("manifest")
        ap.add_argument("probe")
        ap.add_argument("--fusion-dim", type=int, default=256)
        ap.add_argument("--threads", type=int, default=1)
        ap.add_argument("--params", default=str(REPO / "params.yaml"))
        a = ap.parse_args(rest)
        out = child_ours(a.manifest, a.probe, a.fusion_dim, a.threads, a.params)
    elif kind == "matmul":
        out = child_matmul(rest[0])
    elif kind == "profile":
        from probe_profile import profile_fit

        out = profile_fit(rest[0], rest[1], int(rest[2]), int(rest[3]),
                          str(REPO / "params.yaml"))
    elif kind == "bootstrap":
        out = child_bootstrap(int(rest[0]), int(rest[1]), int(rest[2]))
    elif kind == "manifest":
        out = child_manifest(rest[0], *(int(x) for x in rest[1:5]))
    else:
        raise SystemExit(f"unknown child {kind!r}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(_child_main(sys.argv[2:]))
    sys.exit(main())
