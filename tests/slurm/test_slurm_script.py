"""The slurm executor's job script and submission, against the real one-node cluster."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rightsize.errors import InputError
from rightsize.extraction.slurm import (
    SchedulerError,
    SlurmJob,
    SlurmResources,
    array_spec,
    job_script,
    queued_states,
    slurm_time,
    submit,
    time_limit_s,
    wait,
)


def _job(tmp_path: Path, command: tuple[str, ...] = ("rightsize", "extract"), **res) -> SlurmJob:
    return SlurmJob(command=command, tasks=3, indices=(0, 1, 2),
                    resources=SlurmResources(**res), workdir=tmp_path, log_dir=tmp_path / "logs")


def _directives(script: str) -> list[str]:
    return [line.removeprefix("#SBATCH ") for line in script.splitlines()
            if line.startswith("#SBATCH ")]


def test_script_asks_for_what_the_resources_say(tmp_path: Path) -> None:
    script = job_script(_job(tmp_path, gpus_per_task=2, cpus_per_task=8, mem_mb=32000,
                             time_s=3601, partition="gpu"))
    d = _directives(script)
    for want in ("--array=0-2", "--gres=gpu:2", "--cpus-per-task=8", "--mem=32000M",
                 "--time=0-01:01:00", "--requeue", "--partition=gpu", "--open-mode=append"):
        assert want in d, (want, d)
    assert script.rstrip().endswith('--task "${SLURM_ARRAY_TASK_ID}/3"')
    assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0


def test_no_gpu_no_gres_line(tmp_path: Path) -> None:
    d = _directives(job_script(_job(tmp_path, gpus_per_task=0)))
    assert not [x for x in d if x.startswith("--gres")], d
    assert not [x for x in d if x.startswith("--partition")], d


def test_command_is_quoted_for_the_shell(tmp_path: Path) -> None:
    script = job_script(_job(tmp_path, command=("rightsize", "extract", "--out", "a dir/x;y")))
    assert "exec rightsize extract --out 'a dir/x;y' --task" in script


def test_array_spec_collapses_runs() -> None:
    assert array_spec([0, 1, 2]) == "0-2"
    assert array_spec([5, 0, 2, 1, 7, 8]) == "0-2,5,7-8"
    assert array_spec([4]) == "4"


def test_time_is_the_prediction_with_the_stated_margin() -> None:
    assert time_limit_s(0.0) == 600.0
    assert time_limit_s(1000.0) == pytest.approx(2100.0)
    assert slurm_time(0.5) == "0-00:01:00"      # Slurm counts minutes: never 0
    assert slurm_time(61) == "0-00:02:00"
    assert slurm_time(2 * 86400 + 3600) == "2-01:00:00"
    with pytest.raises(InputError):
        time_limit_s(float("nan"))


def test_bad_job_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="task 3 outside 0..2"):
        SlurmJob(command=("x",), tasks=3, indices=(3,), resources=SlurmResources(),
                 workdir=tmp_path, log_dir=tmp_path)
    with pytest.raises(InputError, match="gpus_per_task"):
        SlurmResources(gpus_per_task=-1)


def test_sbatch_accepts_the_script(slurm_cluster: None, tmp_path: Path) -> None:
    path = tmp_path / "job.sh"
    path.write_text(job_script(_job(tmp_path, mem_mb=100, time_s=60)))
    proc = subprocess.run(["sbatch", "--test-only", str(path)], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert "to start at" in proc.stderr, proc.stderr


def test_submission_failure_is_exit_5_with_the_schedulers_message(
        slurm_cluster: None, tmp_path: Path) -> None:
    path = tmp_path / "job.sh"
    path.write_text(job_script(_job(tmp_path, mem_mb=10**9, time_s=60)))   # 1 PB per task
    with pytest.raises(SchedulerError) as err:
        submit(path)
    assert err.value.exit_code == 5
    assert "sbatch: error:" in str(err.value) and "emory" in str(err.value), str(err.value)


def test_each_task_gets_its_index_and_count(slurm_cluster: None, tmp_path: Path) -> None:
    """The array runs each task's command once with --task I/N (a shell stands in for extract:
    what extract does with --task is extract's test)."""
    sh = shutil.which("sh")
    assert sh
    cmd = (sh, "-c", 'echo "$@" > "task_$SLURM_ARRAY_TASK_ID.args"', "sh")
    job = SlurmJob(command=cmd, tasks=3, indices=(0, 2), workdir=tmp_path,
                   log_dir=tmp_path / "logs", resources=SlurmResources(mem_mb=50, time_s=60))
    (tmp_path / "logs").mkdir()
    path = tmp_path / "job.sh"
    path.write_text(job_script(job))
    job_id = submit(path)
    seen: list[dict[str, str]] = []
    wait(job_id, poll_s=0.5, on_change=seen.append)
    assert seen and seen[-1] == {}
    assert queued_states(job_id) == {}
    assert sorted(p.name for p in tmp_path.glob("task_*.args")) == ["task_0.args", "task_2.args"]
    assert (tmp_path / "task_2.args").read_text().split() == ["--task", "2/3"]
    assert "restart 0" in (tmp_path / "logs" / "task_0.log").read_text()


def _corpus(tmp_path: Path, **slurm: object) -> list[str]:
    import yaml

    from rightsize.cli import main

    params = yaml.safe_load((Path(__file__).resolve().parents[2] / "params.yaml").read_text())
    params["ecg_demo"].update(records=4, seconds=6.0)
    params["extract"].update(records=str(tmp_path / "corpus" / "record_list.csv"),
                             root=str(tmp_path / "corpus"), shard_records=2)
    params["extract"]["slurm"].update(slurm)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    assert main(["ecg-demo", str(tmp_path / "corpus"), "--params", str(path), "-q"]) == 0
    return ["extract", "--params", str(path), "--out", str(tmp_path / "out"),
            "--executor", "slurm"]


def test_dry_run_prints_the_script_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rightsize.cli import main

    argv = _corpus(tmp_path, tasks=5, gpus_per_task=2, time_s=3600)
    running = tmp_path / "out" / "shards" / ".shard-00000.parquet.1234.tmp"  # a task's, mid-write
    running.parent.mkdir(parents=True)
    running.write_bytes(b"partial")
    capsys.readouterr()
    assert main([*argv, "--dry-run"]) == 0
    script = capsys.readouterr().out
    d = _directives(script)
    assert "--array=0-1" in d, d              # 2 shards: at most one task per shard
    assert "--gres=gpu:2" in d and "--time=0-01:00:00" in d, d
    assert '--executor local --task "${SLURM_ARRAY_TASK_ID}/2"' in script
    assert sorted(p.name for p in (tmp_path / "out").rglob("*")) == sorted(["shards", running.name])


def test_no_time_limit_and_no_prediction_is_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rightsize.cli import main

    argv = _corpus(tmp_path, time_s=None)
    capsys.readouterr()
    assert main([*argv, "--dry-run"]) == 2
    assert "extract.slurm.time_s: not set" in capsys.readouterr().err


def test_refused_submission_exits_5_naming_sbatchs_message(
        slurm_cluster: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rightsize.cli import main

    argv = _corpus(tmp_path, time_s=600, mem_mb=10**9)
    capsys.readouterr()
    assert main(argv) == 5
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("rightsize: error: sbatch ") and "sbatch: error:" in err[-1], err
    assert not (tmp_path / "out" / "shards").exists()
