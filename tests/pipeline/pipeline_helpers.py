"""Helpers shared by the pipeline tests: run git/dvc, copy projects, edit params, digest outs."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from rightsize.probe_names import PROBES
from rightsize.probes.registry import spec

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
RAMPNET = SHARED / "telemetry" / "rampnet1_stage2"

# Tiny geometry: every stage runs in seconds; keys are dotted paths into params.yaml.
TINY_PARAMS: dict[str, Any] = {
    "cohort.n_subjects": 120,
    "cohort.splits": {"train": 80, "val": 20, "test": 20},
    "cohort.echo_dim": 32,
    "cohort.ecg_dim": 24,
    "cohort.max_clips": 4,
    "cohort.row_group_size": 32,
    "train.batch_size": 16,
    "train.echo.epochs": 3,
    "train.concat.epochs": 3,
    "train.concat.hidden": 32,
    "train.fused.epochs": 3,
    "train.fused.fusion_dim": 32,
    "train.fused.hidden": 32,
    "train.fused.tokens.epochs": 3,   # the token-level recipe (its width, heads, hidden as shipped)
    "evaluate.n_bootstrap": 200,
    "evaluate.n_bootstrap_missing": 100,
    "footprint.clips": [1, 4],
    "token_cost.tokens": [1, 3],
    "token_cost.epochs_timed": 2,
    "encoder_bench.models.ecg.size": "small",
    "encoder_bench.models.ecg.batch_sizes": [1],
    "encoder_bench.models.ecg.preprocess_records": 5,
    "encoder_bench.models.echo.batch_sizes": [1],
    "ecg_demo.records": 12,
    "extract.size": "small",
    "extract.layers": [8],
    "extract.shard_records": 4,
    "extract.batch_size": 1,          # extract refuses a bench that did not time its batch
}

GRADIENT_TRAINED = tuple(p for p in PROBES if spec(p).closed_form is None)   # seeded
CMD_TIMEOUT_S = 600




def run(cmd: list[str], cwd: Path, env: Mapping[str, str], check: bool = True,
        timeout: float = CMD_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; with ``check``, fail the test showing the command and its output tail."""
    proc = subprocess.run(cmd, cwd=cwd, env=dict(env), capture_output=True, text=True,
                          timeout=timeout, check=False)
    if check and proc.returncode != 0:
        out = (proc.stdout + proc.stderr)[-4000:]
        pytest.fail(f"`{' '.join(cmd)}` in {cwd} exited {proc.returncode}:\n{out}",
                    pytrace=False)
    return proc


def dvc(cwd: Path, env: Mapping[str, str], *args: str,
        check: bool = True, timeout: float = CMD_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    """Run ``dvc ARGS`` in ``cwd``."""
    return run(["dvc", *args], cwd, env, check=check, timeout=timeout)


def git(cwd: Path, env: Mapping[str, str], *args: str,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``git ARGS`` in ``cwd``."""
    return run(["git", *args], cwd, env, check=check)


def commit_all(cwd: Path, env: Mapping[str, str], message: str) -> None:
    """``git add -A && git commit`` (no-op when nothing changed)."""
    git(cwd, env, "add", "-A")
    if git(cwd, env, "diff", "--cached", "--quiet", check=False).returncode:
        git(cwd, env, "commit", "-q", "-m", message)


def copy_project(src: Path, dst: Path) -> Path:
    """Copy a built project (git repo, DVC cache and all), keeping symlinks as links."""
    shutil.copytree(src, dst, symlinks=True)
    return dst


def set_params(project: Path, updates: Mapping[str, Any]) -> None:
    """Set dotted keys in ``project/params.yaml`` (parents must exist)."""
    path = project / "params.yaml"
    data = yaml.safe_load(path.read_text())
    for dotted, value in updates.items():
        *parents, leaf = dotted.split(".")
        node = data
        for part in parents:
            node = node[part]
        node[leaf] = value
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _source_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode()
    return sorted({f for f in out.split("\0") if f})


def tiny_clone(root: Path, env: dict[str, str], params: dict | None = None) -> Path:
    """The repository's git-visible files in ``root/proj`` as a git repo with a local remote
    (``root/dvc-store``), params.yaml shrunk to the tiny geometry (plus ``params``)."""
    proj = root / "proj"
    for rel in _source_files():
        src = REPO / rel
        if not src.is_file():
            continue  # deleted in the working tree
        dst = proj / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    set_params(proj, {**TINY_PARAMS, **(params or {})})
    git(proj, env, "init", "-q")
    store = root / "dvc-store"
    store.mkdir()
    dvc(proj, env, "remote", "add", "-d", "-f", "local", str(store))
    commit_all(proj, env, "tiny project")
    return proj


def load_json(path: Path) -> Any:
    """Parse a JSON file."""
    return json.loads(path.read_text())


def metrics_show(project: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """``dvc metrics show --json`` of the workspace as ``{file: data}``."""
    out = json.loads(dvc(project, env, "metrics", "show", "--json").stdout)
    files = out[""]["data"]
    return {path: entry.get("data", {}) for path, entry in files.items()}


def tracked_outs(project: Path) -> list[str]:
    """Every path DVC tracks in ``project``: stage outs in dvc.lock plus ``*.dvc`` files."""
    outs: list[str] = []
    lock = project / "dvc.lock"
    if lock.exists():
        for stage in (yaml.safe_load(lock.read_text()).get("stages") or {}).values():
            outs += [o["path"] for o in stage.get("outs") or []]
    for dvcfile in project.rglob("*.dvc"):
        if not dvcfile.is_file() or ".dvc" in dvcfile.relative_to(project).parts[:-1]:
            continue
        base = dvcfile.parent.relative_to(project)
        for o in yaml.safe_load(dvcfile.read_text()).get("outs") or []:
            outs.append(str(base / o["path"]))
    return sorted(set(outs))


def cached_outs(project: Path, env: Mapping[str, str]) -> list[str]:
    """Outputs DVC caches (``use_cache``), from the workspace row of ``dvc exp show --json``."""
    rows = json.loads(dvc(project, env, "exp", "show", "--json").stdout)
    outs = rows[0]["data"]["outs"]
    return sorted(path for path, info in outs.items() if info.get("use_cache"))


def file_digests(root: Path, rel_paths: Iterable[str]) -> dict[str, str]:
    """``{relative file path: sha256}`` for every file under the given paths of ``root``."""
    out: dict[str, str] = {}
    for rel in rel_paths:
        top = root / rel
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for f in files:
            out[str(f.relative_to(root))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


#: Stages that run on every repro (``always_changed``): the machine fingerprint. DVC names
#: them in every ``status`` and ``repro``; :func:`dvc_status` and :func:`repro_stages` leave
#: them out (their effect shows downstream: a changed fingerprint marks the measuring stages).
ALWAYS_CHANGED = ("machine",)


def repro_stages(output: str) -> list[str]:
    """Stage names DVC says it would run / ran (``Running stage 'x':``), the always-changed
    stages (:data:`ALWAYS_CHANGED`) left out."""
    return [s for s in re.findall(r"Running stage '([^']+)'", output)
            if s not in ALWAYS_CHANGED]


def dvc_status(cwd: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """``dvc status --json`` without the always-changed stages, each checked to be listed
    for that reason alone."""
    status = json.loads(dvc(cwd, env, "status", "--json").stdout)
    for name in ALWAYS_CHANGED:
        entry = status.pop(name, ["always changed"])
        assert entry == ["always changed"], f"{name}: {entry}"
    return status
