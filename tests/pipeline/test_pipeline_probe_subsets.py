"""``train.probes`` drives the pipeline: a fresh tiny clone reproduces with a subset.

Each subset runs ``dvc repro`` on its own fresh copy of the repository (the committed
metrics of the default four probes come along, as on a real clone); the two copies share
one DVC cache, so the second one's unchanged stages (demo run, cohort, encoder bench)
come from DVC's run cache.
"""

from __future__ import annotations

import json

import pytest
import yaml
from pipeline_helpers import dvc, dvc_status, git, load_json, repro_stages, tiny_clone

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("probes", "logged"), [(["ecg", "fused"], ["fused"]),
                                                (["echo"], ["echo"])])
def test_repro_with_a_subset_of_probes(tmp_path, pipeline_env, shared_dvc_cache, probes,
                                       logged):
    proj = tiny_clone(tmp_path, pipeline_env,
                      {"train.probes": probes, "train.telemetry_probes": logged})
    dvc(proj, pipeline_env, "cache", "dir", "--local", str(shared_dvc_cache))
    dvc(proj, pipeline_env, "repro")
    assert dvc_status(proj, pipeline_env) == {}

    # The stages that exist follow the lists (dvc.lock may keep the committed default's
    # entries of other probes: DVC prunes no lock entry of a stage that is gone).
    stages = dvc(proj, pipeline_env, "stage", "list", "--name-only").stdout.split()
    assert sorted(s for s in stages if s.startswith("train@")) == sorted(f"train@{p}"
                                                                         for p in probes)
    assert [s for s in stages if s.startswith("probe_telemetry@")] == [
        f"probe_telemetry@{p}" for p in logged]
    lock = yaml.safe_load((proj / "dvc.lock").read_text())["stages"]
    assert sorted(p.name for p in (proj / "models").iterdir()) == sorted(probes)

    footprint = load_json(proj / "metrics/footprint.json")
    assert sorted(footprint["checkpoints"]) == sorted(probes)
    report = (proj / "reports/report.md").read_text()
    for p in probes:
        assert lock[f"train@{p}"]["outs"], p
        assert f"| {p} |" in report or f"| {p} " in report, p

    plots = json.loads(dvc(proj, pipeline_env, "plots", "show", "--json").stdout)
    assert not plots.get("errors"), plots.get("errors")
    for p in probes:
        assert plots["data"][f"metrics/curves/{p}.csv"], p


def test_a_bad_probe_list_stops_repro_before_any_stage_runs(tmp_path, pipeline_env):
    proj = tiny_clone(tmp_path, pipeline_env, {"train.probes": ["ecg", "lasso"]})
    out = dvc(proj, pipeline_env, "repro", check=False)
    assert out.returncode != 0
    assert "train.probes[1]: unknown probe 'lasso'" in out.stdout + out.stderr
    # The first stage DVC ran refused at once: nothing written, the lock as committed.
    assert len(repro_stages(out.stdout)) == 1, out.stdout
    tracked = set(git(proj, pipeline_env, "ls-files", "data").stdout.split())
    assert {p.relative_to(proj).as_posix() for p in (proj / "data").rglob("*")
            if p.is_file()} == tracked          # data/ holds only what git tracks
    assert not (proj / "models").exists()
    assert git(proj, pipeline_env, "status", "--porcelain").stdout == ""
