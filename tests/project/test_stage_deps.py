"""Every dvc.yaml stage depends on every project module its verb imports (import_graph.py).

Two views of the same promise: the deps cover each stage's import closure (read from the
AST), and real DVC, after a module of each package is touched in a copy of the project,
marks every stage that imports it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import import_graph as g
import pytest
import yaml


def test_every_stage_depends_on_every_module_its_verb_imports():
    lines = []
    for st in g.load_stages():
        problems = g.missing_deps(st) + g.stale_deps(st)
        if problems:
            lines += [*problems, f"  (stage {st.name}: a dep list that covers it: "
                                 f"{', '.join(g.suggested_deps(st))})"]
    assert not lines, "\n".join(lines)


def test_source_deps_are_top_level_files_and_whole_package_folders():
    # The rule (import_graph.suggested_deps) keeps the deps, and so the dep columns of
    # `dvc exp show`, few: a stage lists the folder of a package it imports any module of.
    lines = []
    for st in g.load_stages():
        listed = sorted(d for d in st.deps if d.startswith("src/"))
        if listed != g.suggested_deps(st):
            lines.append(f"stage {st.name}: source deps {listed}, the rule gives "
                         f"{g.suggested_deps(st)}")
    assert not lines, "\n".join(lines)
    assert g.policy_dep("src/rightsize/probes/accel/kernels.py") == "src/rightsize/probes"
    assert g.policy_dep("src/rightsize/cli.py") == "src/rightsize/cli.py"
    assert g.policy_dep("src/rightsize/verbs/sizing.py") == "src/rightsize/verbs/sizing.py"


def test_the_check_names_stage_and_module_when_any_source_dep_is_removed():
    spec = yaml.safe_load((g.REPO / "dvc.yaml").read_text())
    tried = 0
    for st in g.load_stages():
        for dep in (d for d in st.deps if d.startswith("src/")):
            fewer = g.Stage(st.name, st.verb, tuple(d for d in st.deps if d != dep))
            lines = g.missing_deps(fewer)
            assert lines, f"removing {dep} from stage {st.name} went unnoticed"
            assert all(f"stage {st.name} " in line for line in lines)
            assert any(f" {dep}" in line or f" {dep}/" in line for line in lines), lines
            tried += 1
    assert tried >= 8 * len(spec["stages"])


def test_the_closure_follows_imports_inside_functions_and_skips_type_checking():
    via = g.closure(["rightsize.verbs.scalars"])
    assert "rightsize.telemetry.scalars" in via           # imported inside run_scalars
    assert g.chain(via, "rightsize.telemetry.wire").startswith("rightsize.verbs.scalars -> ")
    only_typing = g.handler_imports("rightsize.verbs.scalars", "register")
    assert "rightsize.telemetry.table" not in only_typing  # under `if TYPE_CHECKING:` only


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}"
    return proc.stdout


def _status(proj: Path, env: dict[str, str]) -> dict:
    """``dvc status --json`` less the machine stage, which runs on every repro
    (``always_changed``) and is listed for that reason alone."""
    status = json.loads(_run(["dvc", "status", "--json"], proj, env))
    assert status.pop("machine", ["always changed"]) == ["always changed"], status
    return status


# Creates an empty stand-in for every stage output, so `dvc commit` can record the current
# source hashes in dvc.lock without running the pipeline.
_PLACEHOLDERS = """
from pathlib import Path
from dvc.repo import Repo
with Repo(".") as repo:
    for stage in repo.index.stages:
        for out in stage.outs:
            p = Path(out.fs_path)
            if not p.exists():
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text("")
"""


def _marked(status: dict, path: str) -> set[str]:
    """Stages (foreach name) for which DVC reports a changed dep covering ``path``."""
    out = set()
    for stage, entries in status.items():
        for entry in entries:
            if isinstance(entry, dict) and any(
                    g.covered(path, [dep]) for dep in entry.get("changed deps", {})):
                out.add(stage.split("@")[0])
    return out


_COPIED = {"src", ".dvc", "measurements", "data", "dvc.yaml", "params.yaml", ".dvcignore",
           ".gitignore"}
_COMMITTED_INPUTS = {"benchmarks/results/token_detection.json"}   # the report reads it


@pytest.fixture
def committed_copy(tmp_path: Path, pipeline_env: dict[str, str]) -> Path:
    """The project's source, params and dvc.yaml in a git repo whose dvc.lock records the
    current source (outputs are empty stand-ins); ``dvc status`` is clean there."""
    proj = tmp_path / "proj"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"],
                            cwd=g.REPO, capture_output=True, check=True).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = g.REPO / rel
        if src.is_file() and (rel.split("/")[0] in _COPIED or rel in _COMMITTED_INPUTS):
            (proj / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, proj / rel)
    params = yaml.safe_load((proj / "params.yaml").read_text())
    params["extract"]["to_cohort"] = ["t"]     # extract_to_cohort@t: no stage while it is []
    (proj / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = pipeline_env
    _run(["git", "init", "-q"], proj, env)
    _run(["git", "add", "-A"], proj, env)
    _run(["git", "commit", "-qm", "copy"], proj, env)
    _run(["python", "-c", _PLACEHOLDERS], proj, env)
    _run(["dvc", "commit", "-f", "-q"], proj, env)
    assert _status(proj, env) == {}
    return proj


@pytest.mark.slow
def test_dvc_status_marks_every_stage_that_imports_a_touched_module(committed_copy,
                                                                    pipeline_env):
    proj, env = committed_copy, pipeline_env
    targets = g.touch_targets()
    packages = {m.rsplit(".", 1)[0] for m in targets}
    assert {"rightsize", "rightsize.cohort", "rightsize.probes", "rightsize.telemetry",
            "rightsize.sizing", "rightsize.reporting", "rightsize.verbs"} <= packages
    stages = g.load_stages()
    for module in targets:
        path = g.rel_file(module)
        importers = {st.name for st in stages if module in g.stage_closure(st)}
        assert importers, module
        original = (proj / path).read_bytes()
        (proj / path).write_bytes(original + b"\n# touched by test_stage_deps\n")
        marked = _marked(json.loads(_run(["dvc", "status", "--json"], proj, env)), path)
        assert importers <= marked, (f"{path} changed; dvc status does not mark "
                                     f"{sorted(importers - marked)} (marks {sorted(marked)})")
        (proj / path).write_bytes(original)

    # The same check fails once a stage loses the dep: drop train's dep on the touched
    # probes module, record that in dvc.lock, and dvc status no longer marks train.
    module = next(m for m in targets if m.startswith("rightsize.probes."))
    path = g.rel_file(module)
    spec = yaml.safe_load((proj / "dvc.yaml").read_text())
    deps = spec["stages"]["train"]["do"]["deps"]
    spec["stages"]["train"]["do"]["deps"] = [d for d in deps if not g.covered(path, [d])]
    (proj / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    _run(["dvc", "commit", "-f", "-q"], proj, env)
    (proj / path).write_bytes((proj / path).read_bytes() + b"\n# touched\n")
    marked = _marked(json.loads(_run(["dvc", "status", "--json"], proj, env)), path)
    assert "train" not in marked and "footprint" in marked


@pytest.mark.slow
def test_editing_one_verb_marks_only_its_own_stages(committed_copy, pipeline_env):
    # rightsize.cli imports only the verb's module, so each stage lists its own verb file:
    # editing verbs/sizing.py re-runs sizing (and, once its outputs change, the report)
    proj, env = committed_copy, pipeline_env
    path = "src/rightsize/verbs/sizing.py"
    (proj / path).write_bytes((proj / path).read_bytes() + b"\n# touched by test_stage_deps\n")
    status = _status(proj, env)
    assert _marked(status, path) == {"sizing"}
    assert {stage.split("@")[0] for stage in status} == {"sizing"}, sorted(status)


# Issue 45: the event writer, CRC, SHA-256 and safe opening moved to rightsize.ground, so
# the telemetry room's report code is a dep of the stages that read event files only;
# token-cost takes its epoch times from rightsize.probes.run's result, not the event file.
TELEMETRY_STAGES = {"demo_run", "verify", "telemetry", "probe_telemetry"}
COST_REPORT = "src/rightsize/telemetry/cost_report.py"


def test_editing_the_cost_report_reruns_only_telemetry_stages():
    # DVC re-runs a stage for a changed file iff one of its deps is the file or a folder
    # above it (g.covered); the dvc.status version of this check is the slow test below.
    stages = g.load_stages()
    rerun = {st.name for st in stages if g.covered(COST_REPORT, st.deps)}
    importers = {st.name for st in stages
                 if any(m.startswith("rightsize.telemetry.") for m in g.stage_closure(st))}
    assert rerun == importers == TELEMETRY_STAGES, (sorted(rerun), sorted(importers))
    assert not rerun & {"train", "footprint", "extract", "extract_to_cohort", "cohort"}


@pytest.mark.slow
def test_dvc_status_after_editing_the_cost_report_marks_only_telemetry_stages(
        committed_copy, pipeline_env):
    proj, env = committed_copy, pipeline_env
    (proj / COST_REPORT).write_bytes((proj / COST_REPORT).read_bytes() + b"\n# touched\n")
    status = _status(proj, env)
    assert {stage.split("@")[0] for stage in status} == TELEMETRY_STAGES, sorted(status)
    assert _marked(status, COST_REPORT) == TELEMETRY_STAGES


# The stages whose outputs hold a timing, rate, memory peak or free space (issue 41); a
# foreach stage counts with every one of its items.
MEASURING = ("cohort", "train", "token_cost_case", "encoder_bench", "footprint", "sizing",
             "extract")
MEASURING_DISK = ("footprint", "sizing", "extract")


def _expanded(proj: Path, names: tuple[str, ...]) -> set[str]:
    """Stage names as DVC lists them (``train@ecg``), foreach items from params.yaml."""
    params = yaml.safe_load((proj / "params.yaml").read_text())
    items = {"train": params["train"]["probes"], "token_cost_case": params["token_cost"]["tokens"],
             "encoder_bench": list(params["encoder_bench"]["models"])}
    return {f"{n}@{i}" for n in names for i in items.get(n, [])} | {
        n for n in names if n not in items}


@pytest.mark.slow
def test_a_new_machine_reruns_exactly_the_stages_that_measure(committed_copy, pipeline_env):
    proj, env = committed_copy, pipeline_env
    _run(["dvc", "repro", "machine"], proj, env)        # this host's fingerprint, for real
    _run(["dvc", "commit", "-f", "-q"], proj, env)      # ...and the measurements made here
    first = (proj / "metrics/machine.json").read_bytes()
    assert json.loads(first)["fingerprint"]["cpu"]["isa"]
    # the same machine again: the same bytes, so nothing downstream is stale
    assert "Running stage 'machine'" in _run(["dvc", "repro", "machine"], proj, env)
    assert (proj / "metrics/machine.json").read_bytes() == first
    assert _status(proj, env) == {}
    # another host (the test-only salt joins the fingerprint): the measuring stages, and the
    # report that reads every metrics file, and nothing else
    _run(["dvc", "repro", "machine"], proj, {**env, "RIGHTSIZE_MACHINE_TEST_SALT": "elsewhere"})
    status = _status(proj, env)
    assert set(status) == _expanded(proj, MEASURING) | {"report"}, sorted(status)
    for stage, entries in status.items():
        changed = {d for e in entries if isinstance(e, dict) for d in e.get("changed deps", {})}
        assert changed == ({"metrics"} if stage == "report" else {"metrics/machine.json"}), stage
    # back on this host: clean; another filesystem under a measured path: the disk's stages
    _run(["dvc", "repro", "machine"], proj, env)
    assert _status(proj, env) == {}
    disk = proj / "metrics/machine_disk.json"
    moved = json.loads(disk.read_text())
    moved["disks"][0]["fstype"] = "nfs4"
    disk.write_text(json.dumps(moved))
    status = json.loads(_run(["dvc", "status", "--json"], proj, env))  # machine: out changed
    assert set(status) == _expanded(proj, MEASURING_DISK) | {"report", "machine"}
