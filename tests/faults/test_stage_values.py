"""A params value with a single quote never reaches DVC's shell (issue 43, item 2): the
``stage_values`` stage checks every value dvc.yaml substitutes into a command, and every
stage whose command substitutes depends on it, so ``dvc repro`` stops there first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rightsize.errors import ParamsError
from rightsize.params import load_params
from rightsize.stage_values import check_substitutions, substitutions

ROOT = Path(__file__).resolve().parents[2]
CHECK_OUT = "metrics/stage_values.json"
HOSTILE = "x'; touch PWNED; echo '"


def _pipeline() -> dict:
    return yaml.safe_load((ROOT / "dvc.yaml").read_text())


def test_the_shipped_values_pass_and_cover_every_substituting_stage():
    pipeline, params = _pipeline(), load_params(ROOT / "params.yaml")
    assert check_substitutions(pipeline, params) > 0
    seen = {stage for stage, _, _ in substitutions(pipeline, params)}
    substituting = {name for name, body in pipeline["stages"].items()
                    if "${" in str((body.get("do") or body)["cmd"])}
    assert seen <= substituting       # a foreach over an empty list generates no stage
    assert {"verify", "telemetry", "machine", "train", "encoder_bench"} <= seen


def test_every_stage_that_substitutes_depends_on_the_check():
    stages = _pipeline()["stages"]
    assert CHECK_OUT in [next(iter(o)) if isinstance(o, dict) else o
                         for o in stages["stage_values"]["outs"]]
    assert "${" not in stages["stage_values"]["cmd"]
    for name, body in stages.items():
        do = body.get("do") or body
        if "${" in str(do["cmd"]):
            assert CHECK_OUT in do.get("deps", []), name


@pytest.mark.parametrize("where", ["sizing.disk.path", "train.probes", "token_cost.tokens",
                                   "encoder_bench.models"])
def test_a_quote_in_a_substituted_value_is_refused_naming_its_key(where):
    params = load_params(ROOT / "params.yaml")
    *path, key = where.split(".")
    node = params
    for part in path:
        node = node[part]
    value = node[key]
    if isinstance(value, dict):
        node[key] = {HOSTILE: next(iter(value.values()))}
    elif isinstance(value, list):
        node[key] = [*value[:-1], HOSTILE]
    else:
        node[key] = HOSTILE
    with pytest.raises(ParamsError, match=where.replace(".", r"\.")):
        check_substitutions(_pipeline(), params)


def test_a_control_character_is_refused():
    params = load_params(ROOT / "params.yaml")
    params["sizing"]["disk"]["path"] = "data\nrm -rf x"
    with pytest.raises(ParamsError, match=r"sizing\.disk\.path.*'\\n'"):
        check_substitutions(_pipeline(), params)


def test_dvc_repro_stops_at_the_check_and_runs_nothing(tmp_path):
    """Real DVC and the real ``rightsize``: a hostile ``sizing.disk.path`` (the ``machine``
    stage puts it on its command line) ends ``dvc repro machine`` at ``stage_values``."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["sizing"]["disk"]["path"] = HOSTILE
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    (tmp_path / "dvc.yaml").write_text((ROOT / "dvc.yaml").read_text())
    (tmp_path / "src").symlink_to(ROOT / "src")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=tmp_path,
                   check=True, capture_output=True, env=env)
    proc = subprocess.run([sys.executable, "-m", "dvc", "repro", "machine"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, env=env, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "sizing.disk.path" in out and "stage_values" in out
    assert "Running stage 'machine'" not in out
    assert not list(tmp_path.rglob("PWNED"))
