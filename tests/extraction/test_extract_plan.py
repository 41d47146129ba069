"""What is left: the Slurm executor's read-only survey and the local plan give one answer;
only the local plan clears the folder. Both executors' metrics come from one function."""

from __future__ import annotations

import contextlib
import csv
import io
import os
from pathlib import Path

import numpy as np
import pytest
import yaml
from extract_fixtures import REPO, extract, make_corpus, write_params

from rightsize.cli import main


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    make_corpus(tmp_path, 6)                      # 3 shards of 2 records
    write_params(tmp_path)
    return tmp_path


def _inputs(corpus: Path):
    from rightsize.extraction.config import ExtractConfig
    from rightsize.extraction.record_list import read_record_list
    from rightsize.params import load_block

    cfg = load_block(corpus / "params.yaml", "extract", ExtractConfig)
    return cfg, read_record_list(Path("corpus/record_list.csv"), Path("corpus"))


def _tasks_with(todo: list[int], shards: int, tasks: int) -> tuple[int, ...]:
    """Independent oracle: numpy's split of the shards into ``tasks`` near-equal runs."""
    runs = np.array_split(np.arange(shards), tasks)
    return tuple(t for t, run in enumerate(runs) if set(run.tolist()) & set(todo))


def test_survey_reads_only_and_agrees_with_the_plan(corpus: Path) -> None:
    from rightsize.extraction.plan import make_plan, survey

    assert extract(corpus) == 0
    out, shards = corpus / "out", corpus / "out" / "shards"
    (shards / "shard-00000.parquet").unlink()
    damaged = shards / "shard-00002.parquet"
    damaged.write_bytes(damaged.read_bytes()[:-100])
    leftover = shards / ".shard-00000.parquet.abc.tmp"
    leftover.write_bytes(b"a killed task's temporary file")
    names = sorted(os.listdir(out))
    cfg, records = _inputs(corpus)

    seen = survey(cfg, records, out)
    assert seen.todo == [0, 2] and sorted(seen.done) == [1] and seen.lock is None
    assert seen.why[0] == "no parquet file"
    assert seen.why[2] == "the parquet file changed"
    assert seen.todo_sizes == (2, 2)
    for tasks in (1, 2, 3):
        assert seen.tasks_left(tasks) == _tasks_with(seen.todo, seen.shards, tasks)
    assert sorted(os.listdir(out)) == names and leftover.exists()      # nothing touched

    plan = make_plan(cfg, records, out, None)
    assert (plan.todo, plan.why) == (seen.todo, seen.why)
    assert not leftover.exists() and not (out / "SHA256SUMS").exists()
    plan.lock.release()
    assert survey(cfg, records, out, (1, 2)).todo == [2]           # task 1 of 2: shard 2


def test_a_bad_record_now_readable_is_left_for_the_slurm_array_too(corpus: Path) -> None:
    """The dry run's array asks the same question as a local run: a shard whose bad record
    reads now is to do, so only its task is in the array (before, every shard looked done
    and the script listed all tasks)."""
    slurm = yaml.safe_load((REPO / "params.yaml").read_text())["extract"]["slurm"]
    write_params(corpus, slurm={**slurm, "tasks": 3, "time_s": 600})
    rows = list(csv.DictReader(open(corpus / "corpus/record_list.csv")))
    hea = corpus / "corpus" / (rows[5]["path"] + ".hea")           # list row 5: shard 2
    good = hea.read_text()
    st = hea.stat()
    hea.write_text(good.replace(" V4", " X4"))
    os.utime(hea, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert extract(corpus, "--skip-bad") == 0
    hea.write_text(good)
    os.utime(hea, ns=(st.st_atime_ns, st.st_mtime_ns))
    script = io.StringIO()
    with contextlib.redirect_stdout(script):
        assert main(["extract", "--params", "params.yaml", "--out", "out", "-q",
                     "--executor", "slurm", "--dry-run"]) == 0
    assert "#SBATCH --array=2\n" in script.getvalue(), script.getvalue()


def test_the_array_metrics_carry_the_job_and_the_corpus(corpus: Path) -> None:
    from rightsize.extraction.plan import survey
    from rightsize.extraction.report import ArrayRun, LocalRun, run_metrics
    from rightsize.extraction.run import RunStats

    cfg, records = _inputs(corpus)
    plan = survey(cfg, records, corpus / "out")
    ran = ArrayRun("77", 3, (0, 2), 900.0, "out/slurm")
    m = run_metrics(plan, ran, 8.0, 4, None)
    assert m == {"executor": "slurm", "job_id": "77", "tasks": 3, "tasks_submitted": [0, 2],
                 "time_limit_s": 900.0, "records": 4, "records_in_corpus": 6,
                 "shards_in_corpus": 3, "wall_s": 8.0, "records_per_s": 0.5,
                 "features": plan.identity["features"], "complete": False, "counts": None,
                 "task_logs": "out/slurm"}
    nothing = run_metrics(plan, ArrayRun(None, 3, (), 900.0, "out/slurm"), 0.2, 0, None)
    assert nothing["records_per_s"] is None and nothing["tasks_submitted"] == []
    local = run_metrics(plan, LocalRun(RunStats(), 1, (0, 3)), 2.0, 2, None)
    assert "executor" not in local and local["task"] == "0/3"
    assert local["shard_sizes"] == [2, 2, 2] and local["records_per_s"] == 1.0
