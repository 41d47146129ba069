"""``rightsize extract --executor slurm`` against the real one-node cluster (.ci/slurm-up).

A 3-task array on a 12-record synthetic corpus (6 shards of 2, two per task), one task at a
time (each asks for all the node's cores): task 0 is killed with ``scancel`` after its first shard,
task 1 is requeued with ``scontrol requeue`` after its first shard. The array ends with task
0's second shard missing, so the executor exits 5 naming task 0; the same command again
submits task 0 alone, which keeps its first shard and writes the second. Every file of the
folder is then byte-identical to the ``local`` executor's.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
JOB_LINE = re.compile(r"rightsize: task (\d+) of job (\d+)")


def _params(tmp_path: Path) -> Path:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["ecg_demo"].update(records=12, seconds=6.0)
    # each task asks for every core of the node, so tasks run one at a time, and runs one
    # worker on them (threads_per_worker = cores), so a task writes its shards in order
    cores = int(subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True,
                               check=True).stdout.split()[0].rstrip("+"))
    # float32: a bf16 shard of two records is done in a fraction of a second on an AMX CPU,
    # less than the gap the requeue test needs between a task's first and second shard
    params["extract"].update(records="corpus/record_list.csv", root="corpus", size="small",
                             layers=[8], shard_records=2, batch_size=2, workers=1,
                             threads_per_worker=cores, compute_dtype="float32")
    params["extract"]["slurm"].update(tasks=3, cpus_per_task=cores, mem_mb=1500, time_s=900,
                                      poll_s=0.5)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    return path


def _rightsize(env: dict[str, str], cwd: Path, *args: str, check: bool = True
               ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["rightsize", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def _wait_for(what: str, ok, timeout: float = 300.0, every: float = 0.05):  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = ok()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _job_of(log: Path) -> str | None:
    if not log.is_file():
        return None
    m = JOB_LINE.search(log.read_text())
    return m.group(2) if m else None


def _state(task: str) -> str:
    proc = subprocess.run(["squeue", "-h", "-r", "-j", task, "-o", "%T"], capture_output=True,
                          text=True, check=False)
    return proc.stdout.strip()


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.parent.name != "slurm"}


def test_killed_and_requeued_tasks_redo_only_their_missing_shards(
        slurm_cluster: None, pipeline_env: dict[str, str], tmp_path: Path) -> None:
    _params(tmp_path)
    _rightsize(pipeline_env, tmp_path, "ecg-demo", "corpus", "--params", "params.yaml")
    _rightsize(pipeline_env, tmp_path, "extract", "--params", "params.yaml", "--out", "local")

    out = tmp_path / "array"
    shards, logs = out / "shards", out / "slurm"
    dry = _rightsize(pipeline_env, tmp_path, "extract", "--params", "params.yaml",
                     "--out", "array", "--executor", "slurm", "--dry-run")
    assert "#SBATCH --array=0-2" in dry.stdout and "--gres" not in dry.stdout, dry.stdout
    assert not shards.exists(), "--dry-run submitted or wrote something"

    run = subprocess.Popen(["rightsize", "extract", "--params", "params.yaml", "--out", "array",
                            "--executor", "slurm"], cwd=tmp_path, env=pipeline_env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    job = None
    try:
        job = _wait_for("task 0 to start", lambda: _job_of(logs / "task_0.log"))
        _wait_for("task 0's first shard", lambda: (shards / "shard-00000.parquet").is_file())
        subprocess.run(["scancel", f"{job}_0"], check=True)
        _wait_for("task 1's first shard", lambda: (shards / "shard-00002.parquet").is_file())
        subprocess.run(["scontrol", "requeue", f"{job}_1"], check=True)
        # a requeued job is held 2 minutes before it may start again; once it is pending,
        # let it start now
        _wait_for("task 1 pending again", lambda: _state(f"{job}_1") == "PENDING", every=0.2)
        subprocess.run(["scontrol", "update", f"JobId={job}_1", "StartTime=now"], check=True)
        _, err = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            run.kill()
            if job:
                subprocess.run(["scancel", job], check=False)
    assert not (shards / "shard-00001.parquet").exists(), \
        "task 0 wrote its second shard before scancel arrived: nothing to resume"
    assert run.returncode == 5, err
    assert re.search(r"task\(s\) 0 of 3 left shards missing", err), err

    task1 = (logs / "task_1.log").read_text()
    assert "restart 1" in task1, task1                          # Slurm requeued it ...
    assert "1 shard(s) (2 records) on 1 worker(s), 1 already done" in task1, task1  # ... resumed
    kept = {n: (shards / n).stat().st_mtime_ns for n in ("shard-00000.parquet",
                                                          "shard-00002.parquet")}

    again = _rightsize(pipeline_env, tmp_path, "extract", "--params", "params.yaml",
                       "--out", "array", "--executor", "slurm", "--metrics", "m.json")
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["executor"] == "slurm" and metrics["tasks_submitted"] == [0]
    assert metrics["records"] == 2 and metrics["complete"] is True, metrics   # shard 1 only
    assert "#SBATCH --array=0\n" in (logs / "job.sh").read_text()     # task 0 alone
    task0 = (logs / "task_0.log").read_text()
    assert task0.count("rightsize: task 0 of job") == 2, task0
    assert "1 shard(s) (2 records) on 1 worker(s), 1 already done" in task0, task0
    assert "complete, 12 good, 0 bad" in again.stderr, again.stderr
    assert {n: (shards / n).stat().st_mtime_ns for n in kept} == kept   # not rewritten

    local, array = _files(tmp_path / "local"), _files(out)
    assert sorted(local) == sorted(array)
    assert [n for n in local if local[n] != array[n]] == []
    assert any(n.startswith("shards/") and n.endswith(".parquet") for n in local)
    assert "SHA256SUMS" in local and "index.parquet" in local

    nothing = _rightsize(pipeline_env, tmp_path, "extract", "--params", "params.yaml",
                         "--out", "array", "--executor", "slurm")
    assert "already valid; nothing submitted" in nothing.stderr, nothing.stderr
