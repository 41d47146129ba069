"""dvc.yaml commands quote what they interpolate (issue 43, item 2): a run name with
backticks, ``$()`` or ``;`` reaches ``rightsize`` as one literal argument when DVC's shell
runs the stage (``verify@`` has no ``--params``: nothing of ours reads the name first).

DVC itself renders the stages (``dvc.repo.Repo(...).index``) and its own command builder
runs them; ``rightsize`` is a stub on PATH that writes its arguments down."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("x`touch PWNED`", "y$(touch PWNED)", "z;touch PWNED", "w touch PWNED", "v|tee PWNED")


def _stub(bin_dir: Path, log: Path) -> None:
    bin_dir.mkdir()
    stub = bin_dir / "rightsize"
    stub.write_text(f"#!{sys.executable}\nimport json, sys\n"
                    f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n")
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)


def _shell_argv(cmd: str) -> list[str]:
    """How DVC runs a stage command on this machine (its own builder where it has one)."""
    try:
        from dvc.stage.run import _make_cmd, get_executable

        argv = _make_cmd(get_executable(), cmd)
    except ImportError:   # pragma: no cover - an older or newer DVC
        argv = None
    return argv if isinstance(argv, list) else ["/bin/sh", "-c", cmd]


@pytest.fixture(scope="module")
def stages(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A DVC project with this dvc.yaml and hostile run names: ``{stage name: cmd}``."""
    from dvc.repo import Repo

    root = tmp_path_factory.mktemp("dvc_quote")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    run = params["telemetry"]["runs"]["demo"]
    params["telemetry"]["runs"] = {name: run for name in NAMES}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    (root / "dvc.yaml").write_text((ROOT / "dvc.yaml").read_text())
    subprocess.run([sys.executable, "-m", "dvc", "init", "--no-scm", "-q"], cwd=root,
                   check=True, capture_output=True)
    cmds = {s.name: s.cmd for s in Repo(str(root)).index.stages}
    return root, cmds


@pytest.mark.parametrize("name", NAMES)
def test_a_run_name_reaches_rightsize_whole_and_runs_nothing(name, stages, tmp_path):
    root, cmds = stages
    log = tmp_path / "argv.jsonl"
    _stub(tmp_path / "bin", log)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    for stage in (f"verify@{name}", f"telemetry@{name}"):
        proc = subprocess.run(_shell_argv(cmds[stage]), cwd=root, env=env, capture_output=True,
                              text=True, timeout=60, check=False)
        assert proc.returncode == 0, (stage, proc.stderr)
    verify, telemetry = (json.loads(line) for line in log.read_text().splitlines())
    assert verify == ["verify", f"data/telemetry/{name}", "--json",
                      f"metrics/verify/{name}.json"]
    assert telemetry[:2] == ["telemetry", f"data/telemetry/{name}"]
    assert telemetry[telemetry.index("--run") + 1] == name
    assert not list(root.rglob("PWNED")) and not list(tmp_path.rglob("PWNED"))


def test_every_interpolation_in_a_command_is_single_quoted():
    text = (ROOT / "dvc.yaml").read_text()
    for stage, body in yaml.safe_load(text)["stages"].items():
        cmd = (body.get("do") or body)["cmd"]
        for token in cmd.split():
            if "${" in token:
                assert re.fullmatch(r"'[^']*'", token), (stage, token)
