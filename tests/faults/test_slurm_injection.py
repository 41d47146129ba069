"""Values that reach a Slurm job script (issue 43, items 1, 10 and 14): a newline, ``#`` or
control character in a directive value is exit 2 naming the key, never a script line; a path
with spaces or ``#`` is quoted so sbatch reads it whole, and one with ``%`` (a file-name
pattern in ``--output``) is refused; the script is read back with Slurm's own parser
(``sbatch --test-only``, and a held submission's ``scontrol show job``) on the one-node
cluster (.ci/slurm-up)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from fault_helpers import rightsize

from rightsize.errors import ParamsError
from rightsize.extraction.slurm import SlurmJob, SlurmResources, job_script

ROOT = Path(__file__).resolve().parents[2]
MARK = "PWNED"
HOSTILE = ("a b", "x#y", "it's", "`touch PWNED`", "$(touch PWNED)", "a;touch PWNED")


@pytest.fixture(scope="module")
def slurm_cluster() -> None:
    """tests/slurm's cluster check: skip without a usable cluster, fail under CI=true."""
    spec = importlib.util.spec_from_file_location("slurm_conftest",
                                                  ROOT / "tests" / "slurm" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    problem = module.cluster_problem()
    if problem is not None and os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and the Slurm cluster is not usable: {problem}")
    if problem is not None:
        pytest.skip(problem)


def _with(corpus: Path, tmp: Path, **slurm: object) -> Path:
    params = yaml.safe_load((corpus / "params.yaml").read_text())
    params["extract"]["slurm"].update(slurm)
    path = tmp / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def _dry(corpus: Path, params: Path, out: str):  # noqa: ANN202
    return rightsize(["extract", "--params", params, "--out", out, "--executor", "slurm",
                      "--dry-run"], cwd=corpus)


@pytest.mark.parametrize("partition", ["debug\ntouch PWNED", "a#b", "debug\r", "p q", "'x'"])
def test_a_partition_that_would_break_its_directive_is_exit_2(partition, corpus, tmp_path):
    res = _dry(corpus, _with(corpus, tmp_path, partition=partition), str(tmp_path / "o"))
    assert res.rc == 2, res.out + res.err
    assert "extract.slurm.partition: " in res.error_line() and "#SBATCH" not in res.out
    assert not (corpus / MARK).exists()


@pytest.mark.parametrize("out", ["o\ntouch PWNED #", "o\ttab", "o%j", 'o"q', "o\\b"])
def test_an_output_folder_sbatch_cannot_carry_is_exit_2_naming_out(out, corpus, tmp_path):
    res = _dry(corpus, corpus / "params.yaml", str(tmp_path / out))
    assert res.rc == 2, res.out + res.err
    assert res.error_line().startswith("rightsize: error: --out: ") and "#SBATCH" not in res.out
    assert not (corpus / MARK).exists()


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1e300"])
def test_a_time_limit_that_is_not_finite_is_exit_2(value, corpus, tmp_path):
    params = _with(corpus, tmp_path)
    params.write_text(params.read_text().replace("time_s: 900", f"time_s: {value}"))
    res = _dry(corpus, params, str(tmp_path / "o"))
    assert res.rc == 2 and "extract.slurm.time_s: " in res.error_line(), res.err


def test_an_output_folder_with_spaces_and_hash_is_quoted_whole(corpus, tmp_path):
    out = tmp_path / "os 9#x"
    res = _dry(corpus, corpus / "params.yaml", str(out))
    assert res.rc == 0, res.err
    assert f'#SBATCH --output="{out.resolve()}/slurm/task_%a.log"' in res.out.splitlines()


def _job(workdir: Path, log_dir: Path, partition: str | None = None) -> SlurmJob:
    return SlurmJob(command=("printf", "%s\\n", *HOSTILE), tasks=1, indices=(0,),
                    resources=SlurmResources(time_s=120, partition=partition),
                    workdir=workdir, log_dir=log_dir)


def test_the_script_body_runs_no_value_as_a_command(tmp_path):
    work = tmp_path / "w d#'x"
    work.mkdir()
    script = job_script(_job(work, work / "logs"))
    proc = subprocess.run(["bash", "-c", script],
                          cwd=work, env={**os.environ, "SLURM_ARRAY_TASK_ID": "0"},
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:] == [*HOSTILE, "--task", "0/1"]
    assert not (work / MARK).exists() and not (tmp_path / MARK).exists()


@pytest.mark.parametrize("bad", ["\n", "\r", "\x1b", "%", '"', "\\"])
def test_job_script_refuses_a_path_sbatch_cannot_carry(bad, tmp_path):
    with pytest.raises(ParamsError, match=r"^current directory: .* cannot go on a #SBATCH"):
        job_script(_job(tmp_path / f"w{bad}x", tmp_path))
    with pytest.raises(ParamsError, match=r"^--out: .* cannot go on a #SBATCH"):
        job_script(_job(tmp_path, tmp_path / f"l{bad}x"))
    with pytest.raises(ParamsError, match=r"^extract\.slurm\.partition: "):
        job_script(_job(tmp_path, tmp_path, partition=f"p{bad}q"))


def test_sbatch_reads_hostile_paths_back_whole(slurm_cluster, tmp_path):
    work = tmp_path / "w d#'x $(touch PWNED)`touch PWNED`"
    work.mkdir()
    script = tmp_path / "job.sh"
    script.write_text(job_script(_job(work, work / "l o#g")))
    test = subprocess.run(["sbatch", "--test-only", str(script)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert test.returncode == 0, test.stderr
    assert "Invalid directive" not in test.stderr
    held = subprocess.run(["sbatch", "--parsable", "--hold", str(script)], capture_output=True,
                          text=True, timeout=60, check=True).stdout.strip().split(";")[0]
    try:
        show = subprocess.run(["scontrol", "show", "job", held], capture_output=True,
                              text=True, timeout=60, check=True).stdout
    finally:
        subprocess.run(["scancel", held], capture_output=True, timeout=60, check=False)
    assert re.search(r"^\s*WorkDir=(.*)$", show, re.M).group(1) == str(work)
    assert re.search(r"^\s*StdOut=(.*)/task_\d+\.log$", show, re.M).group(1) == \
        str(work / "l o#g")
    assert not list(tmp_path.rglob(MARK))
