"""End-to-end probe speed: the probe stages as ``dvc repro`` runs them vs the calibration workload.

For each probe (ecg, echo, concat, fused at fusion_dim 256, and fused at fusion_dim 1024)
it runs, in fresh processes, 1 thread (torch, BLAS and OpenMP), on one pooled manifest
(``max_clips`` 1, the default cohort geometry):

* **ours**: every stage command of ``dvc.yaml`` that belongs to the probe (its ``train``
  command, which also evaluates and runs the missing-modality test; an older revision's
  ``evaluate`` and ``missing_modality`` commands too; expanded as DVC expands ``foreach``,
  in file order), each as its own process with the ``rightsize`` console script, exactly as
  ``dvc repro`` runs them; the probe's time is the sum of its processes' wall times;
* **before** (``--before REV``, optional): the same for the ``dvc.yaml`` and ``src/`` of git
  revision REV (exported with ``git archive`` to a temporary folder, run with that
  ``src`` first on ``PYTHONPATH``);
* **calibration**: ``naive_probes.py`` (textbook forward, tutorial loop, 2,000-resample
  scikit-learn bootstrap loop) as one whole process per probe: import, manifest load,
  train, evaluate. Its model, training loop and bootstrap are its own; it shares
  rightsize's manifest reader, input moments/PCA and model construction, so a change
  there moves both sides alike (the PCA's smaller-Gram path, for one, made it faster too).

Contenders are interleaved (ours, before, calibration; repeated ``--runs`` times) and the
fastest run of each is reported with every run's seconds. One extra, untimed-for-the-ratio
run of each of ours' stage commands goes through ``stage_budget.py``, which splits its
wall time into interpreter start-up, imports, manifest load, training, evaluation, writes.

Usage::

    python benchmarks/probes_e2e_bench.py --before c50ba41     # ~10 min on 2 cores
    python benchmarks/probes_e2e_bench.py --runs 1 --no-1024 --out-md /tmp/e.md
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
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
VERBS = ("train", "evaluate", "missing-modality")
Case = tuple[str, int]          # (probe, fusion_dim)


def probe_commands(dvc_yaml: Path, params: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(stage, probe, cmd)`` of every probe stage in ``dvc_yaml``, foreach expanded.

    A probe stage is one whose command is ``rightsize train|evaluate|missing-modality``;
    its probe is the verb's first argument. ``${item}`` and ``${dotted.params}`` are
    substituted as DVC does.
    """
    import yaml

    stages = yaml.safe_load(dvc_yaml.read_text(encoding="utf-8"))["stages"]
    out = []
    for name, st in stages.items():
        raw = (st["do"] if "foreach" in st else st)["cmd"].split()
        if raw[:1] != ["rightsize"] or raw[1] not in VERBS:
            continue
        if "foreach" in st:
            items = _lookup(params, st["foreach"].strip("${} "))
            expanded = [(f"{name}@{it}", st["do"]["cmd"], {"item": it}) for it in items]
        else:
            expanded = [(name, st["cmd"], {})]
        for stage, cmd, local in expanded:
            cmd = re.sub(r"\$\{\s*([\w.]+)\s*\}",
                         lambda m, local=local: str(local.get(m.group(1))
                                                    or _lookup(params, m.group(1))), cmd)
            argv = shlex.split(cmd)            # dvc.yaml quotes substituted values
            out.append((stage, argv[2], " ".join(cmd.split())))
    return out


def _lookup(params: dict[str, Any], dotted: str) -> Any:
    node: Any = params
    for part in dotted.split("."):
        node = node[part]
    return node


def _env(threads: int, src: Path | None) -> dict[str, str]:
    """Thread variables at ``threads``; ``src`` first on PYTHONPATH; the ``rightsize``
    console script of ``src``'s tree (``<tree>/bin``, see :func:`_export`) or of this
    venv first on PATH."""
    env = dict(os.environ)
    env.update({v: str(threads) for v in THREAD_VARS})
    env.pop("PYTHONPATH", None)
    bindir = str(Path(sys.executable).parent)
    if src is not None:
        env["PYTHONPATH"] = str(src)
        bindir = str(src.parent / "bin") + os.pathsep + bindir
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


def _project(root: Path, manifest: Path, params: dict[str, Any]) -> Path:
    """A scratch project folder: params.yaml, data/manifest.parquet and, when the manifest's
    folder has one, the cohort's truth file beside it (symlinks; the train stages read both)."""
    import yaml

    root.mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "manifest.parquet").symlink_to(manifest)
    truth = manifest.parent / "cohort.truth.parquet"
    if truth.is_file():
        (root / "data" / "cohort.truth.parquet").symlink_to(truth)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return root


def run_ours(cmds: list[tuple[str, str, str]], probe: str, proj: Path, env: dict[str, str],
             timeout: float) -> dict[str, Any]:
    """Run ``probe``'s stage commands in order; per-stage and summed wall, peak RSS.

    ``rightsize`` is the first one on ``env["PATH"]`` (see :func:`_env`).
    """
    stages = []
    for stage, p, cmd in cmds:
        if p != probe:
            continue
        m = run_process(["bash", "-c", f"exec {cmd}"], cwd=proj, env=env, timeout_s=timeout)
        if m.rc != 0:
            raise RuntimeError(f"{stage} failed (exit {m.rc}): {m.stderr[-2000:]}")
        stages.append({"stage": stage, "wall_s": m.wall_s, "rss_mb": m.max_rss_mb})
    return {"wall_s": sum(s["wall_s"] for s in stages),
            "rss_mb": max(s["rss_mb"] for s in stages), "stages": stages,
            **_quality(proj, probe)}


def _quality(proj: Path, probe: str) -> dict[str, Any]:
    path = proj / "metrics" / "eval" / f"{probe}.json"
    if not path.is_file():
        return {}
    test = json.loads(path.read_text())["test"]
    return {"test_mae": test["mae"], "test_auroc": test["auroc"]}


def entry_point(pyproject: Path) -> str:
    """The ``rightsize`` console script's function name in ``pyproject``."""
    m = re.search(r'^rightsize\s*=\s*"([\w.]+):(\w+)"', pyproject.read_text(), re.M)
    return m.group(2)


def budget_ours(cmds: list[tuple[str, str, str]], probe: str, proj: Path,
                env: dict[str, str], timeout: float, entry: str) -> list[dict[str, Any]]:
    """One run of each of ``probe``'s stages under ``stage_budget.py``: time by phase,
    ending the process as the console script with function ``entry`` does."""
    out = []
    for stage, p, cmd in cmds:
        if p != probe:
            continue
        argv = cmd.split()[1:]
        if entry == "console_main":
            argv = ["--os-exit", *argv]
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
            target = fh.name
        m = run_process([sys.executable, str(HERE / "stage_budget.py"), target, *argv],
                        cwd=proj, env=env, timeout_s=timeout)
        doc = json.loads(Path(target).read_text())
        os.unlink(target)
        if m.rc != 0:
            raise RuntimeError(f"budget {stage} failed (exit {m.rc}): {m.stderr[-2000:]}")
        phases = {"interpreter start-up + exit": m.wall_s - doc["in_process_s"],
                  **doc["phases"]}
        out.append({"stage": stage, "wall_s": m.wall_s, "rss_mb": m.max_rss_mb,
                    "phases": phases, "modules": doc["modules"]})
    return out


def run_calibration(manifest: Path, probe: str, fd: int, params: Path, env: dict[str, str],
                    timeout: float) -> dict[str, Any]:
    """``naive_probes.py`` as one whole process."""
    m = run_process([sys.executable, str(HERE / "naive_probes.py"), str(manifest), probe,
                     "--fusion-dim", str(fd), "--threads", "1", "--params", str(params)],
                    cwd=REPO, env=env, timeout_s=timeout)
    doc = child_json(m, f"calibration {probe} d{fd}")
    return {"wall_s": m.wall_s, "rss_mb": m.max_rss_mb, "test_mae": doc["test_mae"],
            "test_auroc": doc["test_auroc"], "in_process": {
                k: doc[k] for k in ("load_s", "fit_s", "eval_s")}}


def _export(rev: str, dest: Path) -> Path:
    """``git archive REV src dvc.yaml pyproject.toml params.yaml`` unpacked under ``dest``, plus
    ``dest/bin/rightsize``: the console script pip would write for that revision's entry
    point (``rightsize = "module:function"``), run by this interpreter."""
    dest.mkdir(parents=True)
    tar = subprocess.run(["git", "archive", rev, "src", "dvc.yaml", "pyproject.toml",
                          "params.yaml"],
                         cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
    func = entry_point(dest / "pyproject.toml")
    (dest / "bin").mkdir()
    script = dest / "bin" / "rightsize"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom rightsize.cli import {func}\n"
                      f"if __name__ == '__main__':\n    sys.exit({func}())\n")
    script.chmod(0o755)
    return dest


def main() -> int:
    """Run the benchmark; write results/probes_e2e.md."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", default=None, help="git revision to time as 'before'")
    ap.add_argument("--no-1024", action="store_true", help="skip fused at fusion_dim 1024")
    ap.add_argument("--probes", nargs="+", default=list(PROBES))
    ap.add_argument("--subjects", type=int, default=1208)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--out-md", default=str(HERE / "results" / "probes_e2e.md"))
    args = ap.parse_args()

    import yaml

    from _measure import write_result
    from probes_e2e_report import render

    info = machine_info()
    info["commit"] = _git("rev-parse", "--short", "HEAD") + (
        " + uncommitted changes" if _git("status", "--porcelain", "--", "src", "dvc.yaml")
        else "")
    base = yaml.safe_load((REPO / "params.yaml").read_text())
    cases: list[Case] = [(p, 256) for p in args.probes]
    if not args.no_1024:
        cases.append(("fused", 1024))
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="probes-e2e-") as tmp_s:
        tmp = Path(tmp_s)
        manifest = tmp / "manifest_c1.parquet"
        m = run_process([sys.executable, str(HERE / "probes_bench.py"), "--child", "manifest",
                         str(manifest), "1", str(args.subjects), "1024", "768"],
                        cwd=REPO, env=_env(1, REPO / "src"), timeout_s=args.timeout)
        child_json(m, "manifest")
        # One seed (train.seeds: 1): the goal is stated per single-seed probe; a revision
        # from before train.seeds existed gets the train block without the key.
        params = {fd: dict(base, train=dict(base["train"], seeds=1, fused=dict(
            base["train"]["fused"], fusion_dim=fd))) for fd in {fd for _, fd in cases}}
        trees = {"ours": (REPO / "dvc.yaml", None)}
        if args.before:
            src = _export(args.before, tmp / "before")
            trees["before"] = (src / "dvc.yaml", src / "src")
        projects, cmds = {}, {}
        for who, (dvc_yaml, src_dir) in trees.items():
            for fd, prm in params.items():
                if src_dir is not None and "seeds" not in _train_keys(src_dir.parent):
                    prm = dict(prm, train={k: v for k, v in prm["train"].items()
                                           if k != "seeds"})
                projects[(who, fd)] = _project(tmp / f"{who}-{fd}", manifest, prm)
                cmds[(who, fd)] = probe_commands(dvc_yaml, prm)
        calib_params = projects[("ours", 256)] / "params.yaml"
        runs: dict[tuple[str, Case], list[dict[str, Any]]] = {}
        for r in range(args.runs):
            for case in cases:
                probe, fd = case
                for who, (_, src) in trees.items():
                    res = run_ours(cmds[(who, fd)], probe, projects[(who, fd)],
                                   _env(1, src), args.timeout)
                    runs.setdefault((who, case), []).append(res)
                cal = run_calibration(manifest, probe, fd, projects[("ours", fd)] / "params.yaml"
                                      if fd != 256 else calib_params, _env(1, REPO / "src"),
                                      args.timeout)
                runs.setdefault(("calibration", case), []).append(cal)
                print(f"run {r + 1} {probe} d{fd}: " + "; ".join(
                    f"{who} {runs[(who, case)][-1]['wall_s']:.1f} s"
                    for who in (*trees, "calibration")), file=sys.stderr, flush=True)
        entries = {who: entry_point((src.parent if src else REPO) / "pyproject.toml")
                   for who, (_, src) in trees.items()}
        budgets = {(who, case): budget_ours(cmds[(who, case[1])], case[0],
                                            projects[(who, case[1])], _env(1, src),
                                            args.timeout, entries[who])
                   for case in cases for who, (_, src) in trees.items()}
        stage_cmds = {who: list(cmds[(who, 256)]) for who in trees}
    info["load average at end"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    md = render(args, info, cases, list(trees), runs, budgets, stage_cmds,
                time.perf_counter() - t_all)
    write_result(args.out_md, md, "probes_e2e_bench.py", info)
    print(md)
    return 0


def _train_keys(root: Path) -> set[str]:
    """Keys of the ``train`` block in ``root/params.yaml`` (a revision's own params)."""
    import yaml

    return set((yaml.safe_load((root / "params.yaml").read_text()) or {}).get("train") or {})


def _git(*args: str) -> str:
    if shutil.which("git") is None:
        return "?"
    proc = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True)
    return proc.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
