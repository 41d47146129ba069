"""``rightsize extract``'s progress counts records, with a rate and the time left: plain lines
in a log (``RIGHTSIZE_PROGRESS_S``), a redrawn line on a terminal, nothing with ``-q``; the
workers' records reach the parent from worker processes too. Real runs in subprocesses."""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pytest
import yaml
from extract_fixtures import REPO, make_corpus, write_params

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from cli_helpers import run_cli  # noqa: E402

UNIT = r"([\d.,]+ records/s|[\d.]+ (s|min|h)/record)"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    make_corpus(tmp_path, 6)
    write_params(tmp_path)                       # 6 records, shards of 2, batches of 2 inputs
    return tmp_path


def _extract(corpus: Path, *args: str, tty: bool):
    return run_cli(["extract", "--params", "params.yaml", "--out", "out", *args],
                   tty=tty, cwd=corpus, timeout=300)


def _progress(err: str) -> list[str]:
    return [x for x in err.splitlines() if re.match(r"extract: \d+/6 records", x)]


def test_a_log_gets_records_done_rate_and_eta_after_each_batch(corpus, monkeypatch):
    write_params(corpus, crops_per_record=2)                 # one record per batch of 2 inputs
    monkeypatch.setenv("RIGHTSIZE_PROGRESS_S", "0.000001")   # a line at every update
    res = _extract(corpus, "--metrics", "-", tty=False)
    assert res.rc == 0, res.err
    assert json.loads(res.out)["records"] == 6               # stdout: the JSON alone
    assert "\r" not in res.err and "\x1b[" not in res.err
    progress = _progress(res.err)
    assert [int(re.match(r"extract: (\d+)/", x)[1]) for x in progress] == [1, 2, 3, 4, 5, 6]
    assert progress[0] == "extract: 1/6 records"             # one point: no rate yet
    for line in progress[1:-1]:
        assert re.fullmatch(rf"extract: [2-5]/6 records, {UNIT}, ETA [\d.]+ (s|min|h)", line)
    assert re.fullmatch(r"extract: 6/6 records in [\d.]+ (s|min)", progress[-1])


def test_worker_processes_report_their_records_to_the_parent(corpus, monkeypatch):
    monkeypatch.setenv("RIGHTSIZE_PROGRESS_S", "0.000001")   # a line at every poll
    res = _extract(corpus, "--workers", "2", "--events", "runs", tty=False)
    assert res.rc == 0, res.err
    lines = res.err.splitlines()
    assert "extract: starting 2 worker(s)" in lines
    progress = _progress(res.err)
    counts = [int(re.match(r"extract: (\d+)/", x)[1]) for x in progress]
    assert counts == sorted(counts) and counts[-1] == 6 and counts.count(6) == 1
    assert re.fullmatch(r"extract: 6/6 records in [\d.]+ (s|min)", progress[-1])
    assert progress[0].startswith("extract: 0/6 records (starting 2 worker(s), ")
    _readme_watch_command_works(corpus)


def _readme_watch_command_works(corpus: Path) -> None:
    """README's ``rightsize telemetry`` command for a running extraction: its folder is the
    extract stage's --events, its numbers the defaults, and it reads a run's event files."""
    readme = (REPO / "README.md").read_text(encoding="utf-8").replace("\n", " ")
    said = re.search(r"`rightsize telemetry (\S+) --train-records (\d+) --global-batch (\d+)`",
                     readme)
    assert said, "README no longer says how to watch an extraction"
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    stage = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["extract"]["cmd"]
    assert f"--events {said[1]} " in " ".join(stage.split()) + " "
    assert f"tensorboard --logdir {said[1]}`" in readme
    assert (int(said[2]), int(said[3])) == (params["ecg_demo"]["records"],
                                            params["extract"]["batch_size"])
    res = run_cli(["telemetry", "runs", "--train-records", "6", "--global-batch", "2"],
                  tty=False, cwd=corpus)
    assert res.rc == 0, res.err
    assert res.out.startswith("2 runs") and ".rank0" in res.out and ".rank1" in res.out


def test_a_terminal_redraws_the_count_and_quiet_prints_nothing(corpus):
    res = _extract(corpus, tty=True)                         # one worker, in the process
    assert res.rc == 0, res.err
    assert "extract: 0/6 records (starting 1 worker(s))" in res.err
    assert re.search(r"\r\x1b\[Kextract: 6/6 records in [\d.]+ (s|min)\r\n", res.err)
    assert "extract: starting 1 worker(s)\r\n" in res.err
    (corpus / "out").rename(corpus / "first")
    quiet = _extract(corpus, "-q", tty=True)
    assert quiet.rc == 0 and quiet.err == "" and quiet.out == ""
    assert (corpus / "out" / "SHA256SUMS").read_text() == \
        (corpus / "first" / "SHA256SUMS").read_text()        # progress changes no byte


def test_a_slurm_task_log_gets_the_progress_lines(tmp_path: Path) -> None:
    """The array job's script sends a task's stderr to its log (no --error, no redirect, no
    -q), so the plain progress lines land in ``task_<i>.log``."""
    from rightsize.extraction.slurm import SlurmJob, SlurmResources, job_script
    from rightsize.verbs.extract_slurm import task_command

    args = types.SimpleNamespace(params="params.yaml", out=str(tmp_path / "out"),
                                 events=None)
    cfg = types.SimpleNamespace(skip_bad=False, threads_per_worker=1, computes_in="float32",
                                slurm=types.SimpleNamespace(cpus_per_task=4))
    script = job_script(SlurmJob(command=task_command(args, cfg, ("rightsize",)), tasks=2,
                                 indices=(0, 1), resources=SlurmResources(),
                                 workdir=tmp_path, log_dir=tmp_path / "logs"))
    lines = script.splitlines()
    assert any(x.startswith("#SBATCH --output=") and x.endswith("task_%a.log") for x in lines)
    assert not any(x.startswith(("#SBATCH --error", "#SBATCH -e ")) for x in lines)
    run = next(x for x in lines if x.startswith("exec "))
    assert ">" not in run and " -q" not in run and "--quiet" not in run
