"""``rightsize train``'s outputs are one run's, whatever happens (issue 35: items 3, 11, 12
and "Also"): the model folder, the event files, the curve and the metrics files are staged
and renamed in together, the model folder last; a kill or a full disk before then leaves
the previous set. Model files are byte-reproducible, their sidecar is covered by a hash,
and a pickled weights file is refused without torch's advice to unpickle it."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml
from fault_helpers import killed, points, rightsize, writes
from test_full_disk import disk, fill  # noqa: F401 - disk: the tmpfs fixture

PROBE = "concat"
OUTPUTS = ("curve.csv", "train.json", "eval.json", "missing.json")


def _args(project: Path, work: Path, params: Path, probe: str = PROBE) -> list:
    return ["train", probe, "--params", params, "--manifest", project / "manifest.parquet",
            "--out", work / "model", "--events", work / "runs", "--curve", work / "curve.csv",
            "--metrics", work / "train.json", "--eval-json", work / "eval.json",
            "--missing-json", work / "missing.json", "-q"]


def _params(project: Path, folder: Path, seed: int) -> Path:
    data = yaml.safe_load((project / "params.yaml").read_text())
    data["train"]["seed"] = seed
    path = folder / f"params{seed}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _md5s(folder: Path) -> dict[str, str]:
    """md5 of every file under ``folder`` but hidden ones (a killed run's leftovers, which
    readers skip and the next run deletes)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            out[rel.as_posix()] = hashlib.md5(p.read_bytes()).hexdigest()
    return out


def _set(work: Path) -> dict[str, dict[str, str] | str | None]:
    """Every output of a train run in ``work``: md5s of the model and event folders and of
    each single file (None: absent)."""
    out: dict[str, dict[str, str] | str | None] = {
        "model": _md5s(work / "model") if (work / "model").exists() else None,
        "runs": _md5s(work / "runs") if (work / "runs").exists() else None}
    for name in OUTPUTS:
        path = work / name
        out[name] = hashlib.md5(path.read_bytes()).hexdigest() if path.exists() else None
    return out


@pytest.mark.parametrize("probe", ["concat", "echo"])     # torch; numpy (.npz)
def test_two_trainings_with_one_seed_write_identical_model_files(project, tmp_path, probe):
    """torch.save embedded a temporary name and a random id, np.savez the time, and the
    sidecar the timings: every file differed from run to run, so DVC cached a new model."""
    runs = []
    for k in range(2):
        out = tmp_path / f"m{k}"
        res = rightsize(["train", probe, "--params", project / "params.yaml", "--manifest",
                         project / "manifest.parquet", "--out", out, "-q"])
        assert res.rc == 0, res.err
        runs.append(_md5s(out))
    assert runs[0] == runs[1]
    assert "checkpoint.json" in runs[0] and any(n.startswith("replicas/") for n in runs[0])


@pytest.fixture(scope="module")
def trained(project, tmp_path_factory):
    """A full train run (seed 0) and a second (seed 1) elsewhere: ``(old, new)`` folders."""
    root = tmp_path_factory.mktemp("train_outputs")
    folders = []
    for seed in (0, 1):
        work = root / f"seed{seed}"
        res = rightsize(_args(project, work, _params(project, root, seed)))
        assert res.rc == 0, res.err
        folders.append(work)
    return folders[0], folders[1]


def test_an_edited_checkpoint_json_is_exit_3_naming_it(trained, project, tmp_path):
    """Its standardization is what turns predictions into LVEF: a changed mean gave MAE 50.9
    instead of 6.2 with exit 0."""
    model = tmp_path / "model"
    shutil.copytree(trained[0] / "model", model)
    side = json.loads((model / "checkpoint.json").read_text())
    side["standardization"]["mean"] += 40.0
    (model / "checkpoint.json").write_text(json.dumps(side, indent=2) + "\n")
    res = rightsize(["evaluate", PROBE, "--params", project / "params.yaml", "--manifest",
                     project / "manifest.parquet", "--model", model, "--json", tmp_path / "e.json"])
    assert res.rc == 3, res.err
    assert f"{model / 'checkpoint.json'}: its content differs from the hash" in res.error_line()
    assert not (tmp_path / "e.json").exists()


def test_pickled_weights_are_refused_without_advice_to_unpickle(trained, project, tmp_path):
    """An older folder's weights.pt holding a pickled object besides tensors: torch's own
    message advises weights_only=False; rightsize says what it refused and why."""
    import argparse

    import torch

    model = tmp_path / "model"
    shutil.copytree(trained[0] / "model", model)
    torch.save({"w": torch.zeros(2), "extra": argparse.Namespace(a=1)}, model / "weights.pt")
    side = json.loads((model / "checkpoint.json").read_text())
    for key in ("contents", "sidecar_sha256", "wall_clock_s"):
        side.pop(key, None)                         # a folder from before the hashes
    side["weights"] = "weights.pt"
    (model / "checkpoint.json").write_text(json.dumps(side))
    res = rightsize(["evaluate", PROBE, "--params", project / "params.yaml", "--manifest",
                     project / "manifest.parquet", "--model", model, "--json", tmp_path / "e.json"])
    line = res.error_line()
    assert res.rc == 4 and str(model / "weights.pt") in line, res.err
    assert "refused: it holds a pickled Python object (argparse.Namespace)" in line, line
    for advice in ("weights_only", "can still be loaded", "trust the source"):
        assert advice not in res.err, res.err


def test_a_killed_train_leaves_one_run_s_outputs(trained, project, tmp_path):
    """SIGINT right after the first write of the curve (on main: the new event file was
    swapped in by then, beside the old model and curve), SIGKILL before writes at seeded points
    (tests/faults/test_train_faults.py covers more points for the model folder alone).
    Every output is the old run's, or every one the new run's; only SIGKILL inside the
    commit's renames may leave no model folder (never a mixed set)."""
    old_work, new_work = trained
    work = tmp_path / "work"
    shutil.copytree(old_work, work)
    params = _params(project, tmp_path, 1)
    log = writes(tmp_path, _args(project, tmp_path / "probe", params), tmp_path / "w.log")
    old, new = _set(old_work), _set(new_work)
    curve = 1 + next(i for i, w in enumerate(log) if "curve.csv" in w)
    cases = [("int", curve)] + [("kill", p) for p in points(len(log), 2, seed=35)]
    for mode, point in cases:
        res = killed(tmp_path, _args(project, work, params), mode, point)
        got = _set(work)
        if got["model"] is None:
            assert mode == "kill", (point, res.err[-300:])
        elif got["model"] == old["model"]:
            assert got == old, (point, {k: got[k] == old[k] for k in got})
        else:
            assert got["model"] == new["model"] and got["curve.csv"] == new["curve.csv"], point
            assert all(got[k] not in (None, old[k]) for k in ("runs", *OUTPUTS)), point
        shutil.rmtree(work)
        shutil.copytree(old_work, work)
    res = rightsize(_args(project, work, params))
    assert res.rc == 0, res.err
    assert _set(work)["model"] == new["model"]
    assert not [p for p in work.rglob(".*")]


@pytest.mark.parametrize("leave", [0, 3, 8])
def test_train_on_a_full_disk_is_exit_2_and_keeps_the_old_set(disk, trained,  # noqa: F811
                                                              project, tmp_path, leave):
    """The old run's outputs are on the disk; the new run finds ``leave`` pages free: exit
    2 naming one of its outputs (on main: exit 1, torch's inline_container.cc message or an
    OSError), and the old set as it was."""
    work = disk / "work"
    shutil.copytree(trained[0], work)
    old = _set(work)
    fill(disk, leave_pages=leave)
    res = rightsize(_args(project, work, _params(project, tmp_path, 1)))
    assert res.rc == 2, res.err
    line = res.error_line()
    assert line.startswith(f"rightsize: error: no space left writing {work}/"), line
    assert "inline_container" not in res.err and "internal" not in res.err
    assert _set(work) == old
    assert not [p for p in work.rglob(".*")]
