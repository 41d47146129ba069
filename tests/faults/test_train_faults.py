"""train under SIGKILL and SIGINT at seeded points (and right after the weights are renamed):
the model folder is the previous one or the new one, never a mix, and evaluate refuses a
folder whose files disagree. Leftovers of a kill are hidden and cleared by the next run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from fault_helpers import hidden, killed, points, rightsize, snapshot, visible, writes

from rightsize.errors import IntegrityError
from rightsize.probes.engine.integrity import CONTENTS, SELF, check_contents

PROBE = "concat"


def _args(project: Path, work: Path, params: Path) -> list:
    return ["train", PROBE, "--params", params, "--manifest", project / "manifest.parquet",
            "--out", work / "models" / PROBE, "--events", work / "runs" / PROBE,
            "--curve", work / "curve.csv", "--metrics", work / "train.json", "-q"]


def _params(project: Path, work: Path, seed: int) -> Path:
    data = yaml.safe_load((project / "params.yaml").read_text())
    data["train"]["seed"] = seed
    path = work.parent / f"params{seed}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _sidecar(model: Path) -> dict:
    return json.loads((model / "checkpoint.json").read_text())


def _weights(model: Path) -> dict[str, list]:
    """Every weights file of the folder as plain lists."""
    from safetensors.torch import load_file

    return {p.relative_to(model).as_posix(): {k: v.tolist() for k, v in load_file(p).items()}
            for p in sorted(model.rglob("weights.safetensors"))}


@pytest.fixture
def trained(project, tmp_path):
    """``(work, old)``: the probe trained once with seed 0 under ``work``; ``old`` holds the
    params of a second training (seed 1), the writes that training makes over a copy of
    ``work`` (``log``), and the model snapshot, event names and weights before and after."""
    work = tmp_path / "work"
    work.mkdir()
    res = rightsize(_args(project, work, _params(project, work, 0)))
    assert res.rc == 0, res.err
    shutil.copytree(work, tmp_path / "old")
    shutil.copytree(work, tmp_path / "ref")
    new_params = _params(project, work, 1)
    log = writes(tmp_path, _args(project, tmp_path / "ref", new_params), tmp_path / "w.log")
    return work, {"params": new_params, "log": log,
                  "model": snapshot(work / "models" / PROBE),
                  "events": visible(work / "runs" / PROBE),
                  "new_weights": _weights(tmp_path / "ref" / "models" / PROBE)}


def _state(work: Path, old: dict, mode: str) -> str:
    """"old" or "new" for the model folder (asserting it is one of them, whole); "absent"
    only after SIGKILL between the renames that put a run's outputs in place."""
    model = work / "models" / PROBE
    if not model.exists():
        assert mode == "kill"
        return "absent"
    if snapshot(model) == old["model"]:
        state = "old"
    else:
        side = _sidecar(model)
        assert check_contents(model, side) is True           # every file of one training
        assert side["config"]["seed"] == 1 and _weights(model) == old["new_weights"]
        state = "new"
    assert visible(work / "models") == {PROBE}
    events = visible(work / "runs" / PROBE)
    assert events == old["events"] or (len(events) == 1 and events != old["events"]), events
    assert visible(work) <= {"models", "runs", "curve.csv", "train.json"}
    return state


@pytest.mark.parametrize("mode", ["kill", "int"])
def test_killed_train_leaves_the_old_model_folder_or_the_new_one(trained, project, mode):
    work, old = trained
    log = old["log"]
    at = points(len(log), 3, seed=23 if mode == "kill" else 24)
    if mode == "int":      # the moment issue 26 names: right after the weights are renamed
        at.append(1 + next(i for i, w in enumerate(log)
                           if w.startswith("os.rename") and w.endswith("/weights.safetensors")))
    seen = set()
    for point in sorted(set(at)):
        res = killed(work.parent, _args(project, work, old["params"]), mode, point)
        assert res.rc == (-9 if mode == "kill" else 130), (point, res.rc, res.err[-500:])
        if mode == "int":
            assert res.error_line() == "rightsize: error: interrupted"
        state = _state(work, old, mode)
        seen.add(state)
        if state == "new":
            shutil.rmtree(work)
            shutil.copytree(work.parent / "old", work)
    assert "old" in seen
    res = rightsize(_args(project, work, old["params"]))      # clears what the kills left
    assert res.rc == 0, res.err
    assert _state(work, old, mode) == "new"
    assert not hidden(work / "models") and not hidden(work / "runs" / PROBE)


def test_evaluate_refuses_a_folder_whose_files_disagree(trained, project, tmp_path):
    work, old = trained
    model = work / "models" / PROBE
    other = tmp_path / "other"
    res = rightsize(_args(project, other, old["params"]))
    assert res.rc == 0, res.err
    evaluate = ["evaluate", PROBE, "--params", project / "params.yaml", "--manifest",
                project / "manifest.parquet", "--model", model, "--json", tmp_path / "e.json"]

    shutil.copy(other / "models" / PROBE / "weights.safetensors",         # new weights beside
                model / "weights.safetensors")                           # the old rest
    res = rightsize(evaluate)
    assert res.rc == 3
    assert f"{model / 'weights.safetensors'}: differs from the hash" in res.error_line()
    assert not (tmp_path / "e.json").exists()

    shutil.rmtree(model)
    shutil.copytree(work.parent / "old" / "models" / PROBE, model)
    shutil.copytree(other / "models" / PROBE / "replicas" / "r2", model / "replicas" / "r2",
                    dirs_exist_ok=True)                                  # a replica of another run
    with pytest.raises(IntegrityError, match="replicas/r2/checkpoint.json: differs"):
        check_contents(model, _sidecar(model))

    shutil.rmtree(model)
    shutil.copytree(work.parent / "old" / "models" / PROBE, model)
    side = _sidecar(model)
    del side[CONTENTS], side[SELF]                       # a folder from before the hashes
    (model / "checkpoint.json").write_text(json.dumps(side))
    res = rightsize(evaluate)
    assert res.rc == 0, res.err
    assert "written before model folders recorded their file hashes" in res.err
